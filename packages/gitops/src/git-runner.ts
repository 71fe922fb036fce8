import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { GitPluginError, simpleGit, type SimpleGit } from "simple-git";
import { GitOpsError, type GitOpsErrorKind } from "./errors.js";
import type { GitEnvironment } from "./remote-auth.js";

const AUTH_FAILURE =
  /authentication failed|could not read (username|password)|HTTP Basic: Access denied|The requested URL returned error: 40[13]|\b401\b|\b403 Forbidden|Permission denied \(publickey|Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED|No .* host key is known|invalid credentials|terminal prompts disabled/i;

/** A git process being fed its stdin (GitRunner.startWithInput). */
export interface StreamingGit {
  write(chunks: readonly Buffer[]): void;
  /** Closes stdin; resolves with stdout once git exits 0. Throws GitOpsError. */
  end(): Promise<string>;
  abort(): void;
}

/**
 * Runs git in the long-lived clone. One-shot commands go through simple-git (argument checks, `timeout.block`
 * progress timeout); the two that stream stdin/stdout (fast-import, cat-file --batch) are spawned directly
 * with the same environment. Every error leaving here is a GitOpsError with secrets redacted.
 */
export class GitRunner {
  private readonly git: SimpleGit;
  private readonly probeGit: SimpleGit;

  constructor(
    private readonly gitEnv: GitEnvironment,
    private readonly opts: { cwd: string; timeoutMs: number; pingTimeoutMs: number },
  ) {
    this.git = this.make(opts.timeoutMs, 4);
    this.probeGit = this.make(opts.pingTimeoutMs, 2);
  }

  private make(timeoutMs: number, maxConcurrentProcesses: number): SimpleGit {
    return simpleGit({
      baseDir: this.opts.cwd,
      maxConcurrentProcesses,
      timeout: { block: timeoutMs },
      allowEnvironment: this.gitEnv.allowEnvironment,
      unsafe: this.gitEnv.unsafe,
      trimmed: false,
    }).env(this.gitEnv.env);
  }

  redact(text: string): string {
    return this.gitEnv.redact(text);
  }

  /** `git <args>`; resolves with stdout. */
  async run(args: string[], opts: { probe?: boolean; what?: string } = {}): Promise<string> {
    try {
      return await (opts.probe ? this.probeGit : this.git).raw(args);
    } catch (err) {
      throw this.toError(
        err,
        opts.what ?? `git ${args[0]}`,
        opts.probe ? this.opts.pingTimeoutMs : this.opts.timeoutMs,
      );
    }
  }

  /** Like run, but resolves with the raw failure text instead of throwing on a non-zero exit. */
  async tryRun(
    args: string[],
  ): Promise<{ ok: true; stdout: string } | { ok: false; output: string; error: GitOpsError }> {
    try {
      return { ok: true, stdout: await this.git.raw(args) };
    } catch (err) {
      const error = this.toError(err, `git ${args[0]}`);
      return { ok: false, output: this.redact(err instanceof Error ? err.message : String(err)), error };
    }
  }

  /**
   * Whether commit `ancestor` is reachable from `descendant` (or is it). Not `merge-base --is-ancestor`:
   * simple-git resolves a non-zero exit without stderr as success, so its answer would always be yes.
   */
  async isAncestor(ancestor: string, descendant: string): Promise<boolean> {
    const r = await this.tryRun(["merge-base", ancestor, descendant]);
    return r.ok && r.stdout.trim() === ancestor;
  }

  /**
   * `git <args>` fed on stdin piece by piece while the caller produces its input (fast-import of a batch
   * whose commits are still being planned). `end()` closes stdin and resolves with stdout; from then on
   * git has timeoutMs to finish. `abort()` kills it (nothing it wrote is referenced).
   */
  startWithInput(args: string[], what: string): StreamingGit {
    const child = spawn("git", args, { cwd: this.opts.cwd, env: this.gitEnv.env, stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let spawnError: Error | undefined;
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => err.push(b));
    child.stdin.on("error", () => {}); // EPIPE when git dies early; reported through 'close'
    const closed = new Promise<number | null>((resolve) => {
      child.on("error", (e) => {
        spawnError = e;
        resolve(null);
      });
      child.on("close", (code) => resolve(code));
    });
    return {
      write: (chunks) => {
        if (child.stdin.destroyed) return;
        // One writev for the pieces, without copying them into one buffer first.
        child.stdin.cork();
        for (const chunk of chunks) child.stdin.write(chunk);
        process.nextTick(() => child.stdin.uncork());
      },
      abort: () => {
        child.kill("SIGKILL");
      },
      end: async () => {
        let timedOut = false;
        const timer = setTimeout(() => {
          timedOut = true;
          child.kill("SIGKILL");
        }, this.opts.timeoutMs);
        child.stdin.end();
        const code = await closed;
        clearTimeout(timer);
        if (spawnError)
          throw new GitOpsError("unavailable", `${what}: cannot run git: ${this.redact(spawnError.message)}`, {
            cause: spawnError,
          });
        if (timedOut) throw new GitOpsError("timeout", `${what}: no result after ${this.opts.timeoutMs} ms`);
        if (code !== 0) {
          const text = this.redact(Buffer.concat(err).toString("utf8").trim()).slice(0, 2000);
          throw new GitOpsError("unavailable", `${what} failed (exit ${code}): ${text}`);
        }
        return Buffer.concat(out).toString("utf8");
      },
    };
  }

  /** A long-running `git <args>` with piped stdio (cat-file --batch). */
  spawnPersistent(args: string[]): ChildProcessWithoutNullStreams {
    return spawn("git", args, { cwd: this.opts.cwd, env: this.gitEnv.env, stdio: ["pipe", "pipe", "pipe"] });
  }

  toError(err: unknown, what: string, timeoutMs = this.opts.timeoutMs): GitOpsError {
    if (err instanceof GitOpsError) return err;
    const raw = err instanceof Error ? err.message : String(err);
    const text = this.redact(raw).trim().slice(0, 2000);
    let kind: GitOpsErrorKind = "unavailable";
    if (err instanceof GitPluginError && err.plugin === "timeout") kind = "timeout";
    else if (AUTH_FAILURE.test(raw)) kind = "auth";
    const message =
      kind === "timeout"
        ? `${what}: git made no progress for ${timeoutMs} ms and was killed`
        : `${what} failed: ${text}`;
    // No `cause`: the simple-git error carries the argument list and raw output; keep only the redacted text.
    return new GitOpsError(kind, message);
  }
}
