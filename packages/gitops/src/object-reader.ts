import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { GitOpsError } from "./errors.js";
import type { GitRunner } from "./git-runner.js";
import { LRUCache } from "lru-cache";

export type ObjectKind = "blob" | "tree" | "commit" | "tag";
export interface TreeObjectEntry {
  name: string;
  /** "tree" for a folder, "blob" for a file or symlink, "commit" for a submodule. */
  kind: "blob" | "tree" | "commit";
  oid: string;
}
export interface GitObject {
  kind: ObjectKind;
  /** The object id: equal ids, equal content. */
  oid: string;
  /** utf-8 text for blobs and commits (headers and message); empty for trees and tags (we never need their bytes). */
  text: string;
  /** A tree's entries, in git's order; empty for other kinds. */
  entries: TreeObjectEntry[];
}

/** The entries of a tree object: `<mode> <name>\0<raw id>` repeated. */
function treeEntries(content: Buffer, idBytes: number): TreeObjectEntry[] {
  const out: TreeObjectEntry[] = [];
  let at = 0;
  while (at < content.length) {
    const space = content.indexOf(0x20, at);
    const nul = content.indexOf(0, space + 1);
    if (space === -1 || nul === -1 || nul + 1 + idBytes > content.length) break;
    const mode = content.subarray(at, space).toString("latin1");
    const name = content.subarray(space + 1, nul).toString("utf8");
    const oid = content.subarray(nul + 1, nul + 1 + idBytes).toString("hex");
    out.push({ name, oid, kind: mode === "40000" ? "tree" : mode === "160000" ? "commit" : "blob" });
    at = nul + 1 + idBytes;
  }
  return out;
}

const HEADER = /^([0-9a-f]{40}|[0-9a-f]{64}) (blob|tree|commit|tag) (\d+)$/;

interface Pending {
  spec: string;
  resolve(o: GitObject | undefined): void;
  reject(e: Error): void;
}

/**
 * An LRU keyed by immutable object names (`<sha>:<path>`), bounded by entries and bytes; an entry over a
 * quarter of the budget is not kept. `false` records "names nothing" (lru-cache holds no undefined/null).
 */
export function objectCache<V extends NonNullable<unknown>>(maxEntries: number, maxBytes: number): LRUCache<string, V> {
  return new LRUCache<string, V>({ max: maxEntries, maxSize: maxBytes, maxEntrySize: maxBytes / 4 });
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
  private body: { size: number; kind: ObjectKind; oid: string } | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly cache = objectCache<GitObject | false>(20_000, 64 * 1024 * 1024);

  constructor(
    private readonly runner: GitRunner,
    private readonly timeoutMs: number,
  ) {}

  /** `spec` is `<full sha>:<path>` or a full sha. Resolves undefined when it names nothing. */
  async read(spec: string): Promise<GitObject | undefined> {
    const cached = this.cache.get(spec);
    if (cached !== undefined) return cached || undefined;
    const obj = await this.request(spec);
    // A bare object name that is missing may arrive with the next fetch: only `<sha>:<path>` misses are final.
    if (obj !== undefined || spec.includes(":")) {
      this.cache.set(spec, obj ?? false, {
        size: spec.length + (obj?.text.length ?? 0) + (obj?.entries.length ?? 0) * 96 + 64,
      });
    }
    return obj;
  }

  close(): void {
    this.closed = true;
    this.stop(new GitOpsError("closed", "object reader closed"));
  }

  private request(spec: string): Promise<GitObject | undefined> {
    if (this.closed) return Promise.reject(new GitOpsError("closed", "object reader closed"));
    if (/[\r\n]/.test(spec))
      return Promise.reject(new GitOpsError("invalid-change", "object name contains a line break"));
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
        const [, oid, kind, size] = HEADER.exec(line) ?? [];
        if (oid === undefined || kind === undefined) {
          // "<spec> missing" (or "ambiguous"): nothing by that name.
          this.queue.shift();
          head.resolve(undefined);
          continue;
        }
        this.body = { oid, kind: kind as ObjectKind, size: Number(size) };
      }
      if (this.buf.length < this.body.size + 1) return;
      const content = this.buf.subarray(0, this.body.size);
      this.buf = this.buf.subarray(this.body.size + 1);
      const { kind, oid } = this.body;
      this.body = undefined;
      this.queue.shift();
      head.resolve({
        kind,
        oid,
        text: kind === "blob" || kind === "commit" ? content.toString("utf8") : "",
        entries: kind === "tree" ? treeEntries(content, oid.length / 2) : [],
      });
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
