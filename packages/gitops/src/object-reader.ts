import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { GitOpsError } from "./errors.js";
import type { GitRunner } from "./git-runner.js";

export type ObjectKind = "blob" | "tree" | "commit" | "tag";
export interface GitObject {
  kind: ObjectKind;
  /** utf-8 text for blobs; empty for other kinds (we never need their bytes). */
  text: string;
}

const HEADER = /^([0-9a-f]{40}|[0-9a-f]{64}) (blob|tree|commit|tag) (\d+)$/;

interface Pending {
  spec: string;
  resolve(o: GitObject | undefined): void;
  reject(e: Error): void;
}

/** A small LRU keyed by immutable object names (`<sha>:<path>`), bounded by entries and bytes. */
export class LruCache<V> {
  private readonly map = new Map<string, { value: V; size: number }>();
  private bytes = 0;
  constructor(
    private readonly maxEntries: number,
    private readonly maxBytes: number,
  ) {}
  get(key: string): V | undefined {
    const hit = this.map.get(key);
    if (!hit) return undefined;
    this.map.delete(key);
    this.map.set(key, hit);
    return hit.value;
  }
  set(key: string, value: V, size: number): void {
    if (size > this.maxBytes / 4) return;
    const old = this.map.get(key);
    if (old) {
      this.bytes -= old.size;
      this.map.delete(key);
    }
    this.map.set(key, { value, size });
    this.bytes += size;
    while (this.map.size > this.maxEntries || this.bytes > this.maxBytes) {
      const first = this.map.keys().next();
      if (first.done) break;
      this.bytes -= this.map.get(first.value)?.size ?? 0;
      this.map.delete(first.value);
    }
  }
}

/**
 * Reads objects through one long-lived `git cat-file --batch`: a read costs a pipe round trip instead of a
 * process, and requests from concurrent readers are pipelined. Objects are immutable, so answers are
 * cached by name. The process is restarted on demand if it dies; a stalled one is killed after timeoutMs.
 */
export class ObjectReader {
  private proc: ChildProcessWithoutNullStreams | undefined;
  private queue: Pending[] = [];
  private buf: Buffer = Buffer.alloc(0);
  private body: { size: number; kind: ObjectKind } | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly cache = new LruCache<GitObject | null>(20_000, 64 * 1024 * 1024);

  constructor(
    private readonly runner: GitRunner,
    private readonly timeoutMs: number,
  ) {}

  /** `spec` is `<full sha>:<path>` or a full sha. Resolves undefined when it names nothing. */
  async read(spec: string): Promise<GitObject | undefined> {
    const cached = this.cache.get(spec);
    if (cached !== undefined) return cached ?? undefined;
    const obj = await this.request(spec);
    // A bare object name that is missing may arrive with the next fetch: only `<sha>:<path>` misses are final.
    if (obj !== undefined || spec.includes(":")) this.cache.set(spec, obj ?? null, spec.length + (obj?.text.length ?? 0) + 64);
    return obj;
  }

  close(): void {
    this.closed = true;
    this.stop(new GitOpsError("closed", "object reader closed"));
  }

  private request(spec: string): Promise<GitObject | undefined> {
    if (this.closed) return Promise.reject(new GitOpsError("closed", "object reader closed"));
    if (/[\r\n]/.test(spec)) return Promise.reject(new GitOpsError("invalid-change", "object name contains a line break"));
    return new Promise((resolve, reject) => {
      const proc = this.ensureProcess();
      if (this.queue.length === 0) this.arm();
      this.queue.push({ spec, resolve, reject });
      proc.stdin.write(`${spec}\n`);
    });
  }

  private ensureProcess(): ChildProcessWithoutNullStreams {
    if (this.proc) return this.proc;
    const proc = this.runner.spawnPersistent(["cat-file", "--batch"]);
    this.proc = proc;
    this.buf = Buffer.alloc(0);
    this.body = undefined;
    let stderr = "";
    proc.stdout.on("data", (chunk: Buffer) => {
      this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
      this.drain();
      if (this.queue.length > 0) this.arm();
      else this.disarm();
    });
    proc.stderr.on("data", (b: Buffer) => {
      stderr = (stderr + b.toString("utf8")).slice(-2000);
    });
    proc.stdin.on("error", () => {});
    const onEnd = (why: string) => {
      if (this.proc !== proc) return;
      this.proc = undefined;
      this.stop(new GitOpsError("unavailable", `git cat-file ${why}: ${this.runner.redact(stderr.trim())}`));
    };
    proc.on("error", (e) => onEnd(`failed to start (${e.message})`));
    proc.on("close", (code) => onEnd(`exited (${code})`));
    return proc;
  }

  private drain(): void {
    for (;;) {
      const head = this.queue[0];
      if (!head) return;
      if (!this.body) {
        const nl = this.buf.indexOf(10);
        if (nl === -1) return;
        const line = this.buf.subarray(0, nl).toString("utf8");
        this.buf = this.buf.subarray(nl + 1);
        const m = HEADER.exec(line);
        if (!m) {
          // "<spec> missing" (or "ambiguous"): nothing by that name.
          this.queue.shift();
          head.resolve(undefined);
          continue;
        }
        this.body = { kind: m[2] as ObjectKind, size: Number(m[3]) };
      }
      if (this.buf.length < this.body.size + 1) return;
      const content = this.buf.subarray(0, this.body.size);
      this.buf = this.buf.subarray(this.body.size + 1);
      const kind = this.body.kind;
      this.body = undefined;
      this.queue.shift();
      head.resolve({ kind, text: kind === "blob" ? content.toString("utf8") : "" });
    }
  }

  private arm(): void {
    this.disarm();
    this.watchdog = setTimeout(() => {
      this.stop(new GitOpsError("timeout", `git cat-file made no progress for ${this.timeoutMs} ms and was killed`));
    }, this.timeoutMs);
    this.watchdog.unref();
  }

  private disarm(): void {
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = undefined;
  }

  private stop(error: Error): void {
    this.disarm();
    const proc = this.proc;
    this.proc = undefined;
    if (proc) {
      proc.stdin.end();
      proc.kill("SIGKILL");
    }
    const pending = this.queue;
    this.queue = [];
    this.buf = Buffer.alloc(0);
    this.body = undefined;
    for (const p of pending) p.reject(error);
  }
}
