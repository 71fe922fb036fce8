import { isAbsolute, resolve } from "node:path";
import { silentLogger, type Logger } from "@berth/logging";
import { GitOpsError } from "./errors.js";

export type FluxRepoAuth =
  | { kind: "none" }
  /** HTTPS: sent as `Authorization: Basic base64(username:token)`; username defaults to `x-access-token`. */
  | { kind: "token"; token: string; username?: string }
  /** SSH deploy key. Without knownHostsPath the host key is trusted on first use (accept-new). */
  | { kind: "ssh"; privateKeyPath: string; knownHostsPath?: string };

export interface FluxRepoConfig {
  /** https://, http://, ssh://, scp-like `git@host:path`, file:// or an absolute local path. No password in it. */
  url: string;
  branch: string;
  /** Where the long-lived clone lives (a bare repository owned by this process alone). */
  workDir: string;
  author: { name: string; email: string };
  auth: FluxRepoAuth;
  /** A git command that makes no progress (no output) for this long is killed. Default 30 000. */
  timeoutMs?: number;
  /** Push attempts per batch before giving up with a `conflict` GitOpsError. Default 50. */
  maxPushAttempts?: number;
  /**
   * Wall-clock budget for one batch's push retries. A busy foreign writer is outrun by retrying at once, not by
   * waiting; this bounds how long a request may wait for that. Default 20 000.
   */
  pushBudgetMs?: number;
  /**
   * Most transactions committed by one push: a safety bound, not a tuning knob. A batch takes every waiting
   * transaction (each push and fetch round is the expensive part, planning one more transaction is not).
   * Default 1000.
   */
  maxBatchSize?: number;
  /** How far back findCommit looks: this many hours (default 24) and at most this many commits (default 20 000). */
  history?: { windowHours?: number; maxCommits?: number };
  logger?: Logger;
  /** Told the outcome of every group commit (the API turns it into metrics). Must not throw. */
  onBatch?: (batch: FluxRepoBatch) => void;
}

/** What one group commit did: how many transactions, how it ended, how long it took and where. */
export interface FluxRepoBatch {
  /** pushed: commits reached the remote; unchanged: nothing to commit; failed: nothing was written. */
  result: "pushed" | "unchanged" | "failed";
  transactions: number;
  commits: number;
  /** Pushes the remote rejected because it had moved (each retried on the new head). */
  rejectedPushes: number;
  /** From the batch's start to its end, retries included. */
  ms: number;
  /** The last attempt's phases. */
  planMs: number;
  importMs: number;
  pushMs: number;
  /** When pushed: the new head, and every path the batch's commits wrote or deleted (sorted). */
  pushed?: { revision: string; paths: readonly string[] };
}

export interface ResolvedConfig {
  url: string;
  branch: string;
  workDir: string;
  author: { name: string; email: string };
  auth: FluxRepoAuth;
  timeoutMs: number;
  pingTimeoutMs: number;
  maxPushAttempts: number;
  pushBudgetMs: number;
  maxBatchSize: number;
  history: { windowMs: number; maxCommits: number };
  logger: Logger;
  onBatch: (batch: FluxRepoBatch) => void;
}

function fail(message: string): never {
  throw new GitOpsError("config", message);
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Same rules as `git check-ref-format --branch`, minus the exotic ones we never need. */
export function assertBranchName(branch: string): void {
  if (
    typeof branch !== "string" ||
    branch.length === 0 ||
    branch.length > 200 ||
    !/^[A-Za-z0-9._/+-]+$/.test(branch) ||
    branch.startsWith("-") ||
    branch.startsWith("/") ||
    branch.endsWith("/") ||
    branch.endsWith(".") ||
    branch.endsWith(".lock") ||
    branch.includes("..") ||
    branch.includes("//") ||
    branch.split("/").some((s) => s.startsWith(".")) ||
    branch === "HEAD"
  ) {
    fail(`invalid branch name ${JSON.stringify(branch)}`);
  }
}

export function assertRemoteUrl(url: string): void {
  if (typeof url !== "string" || url.length === 0 || url.length > 2048) fail("url is empty or too long");
  if (CONTROL.test(url) || /\s/.test(url)) fail("url contains whitespace or control characters");
  if (url.startsWith("-")) fail("url starts with '-'");
  if (/^(https?|ssh|file):\/\//i.test(url)) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      fail("url is not a valid URL");
    }
    if (parsed.password) fail("url holds a password: pass the credential in auth instead");
    if (/^https?:$/i.test(parsed.protocol) && parsed.username)
      fail("url holds a user name: pass it in auth.username instead");
    return;
  }
  if (/^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/]/.test(url) || /^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:\//.test(url)) return; // git@host:org/repo
  if (isAbsolute(url)) return;
  fail(
    "url must be https://, http://, ssh://, git@host:path, file:// or an absolute path (ext:: and other transports are refused)",
  );
}

function assertIdentity(what: string, value: string): void {
  if (
    typeof value !== "string" ||
    value.trim() === "" ||
    value.length > 200 ||
    CONTROL.test(value) ||
    /[<>]/.test(value)
  ) {
    fail(`author.${what} must be 1-200 printable characters without '<' or '>'`);
  }
}

function positiveInt(name: string, value: number | undefined, dflt: number, max: number): number {
  if (value === undefined) return dflt;
  if (!Number.isInteger(value) || value < 1 || value > max) fail(`${name} must be an integer in 1..${max}`);
  return value;
}

export function resolveConfig(cfg: FluxRepoConfig): ResolvedConfig {
  if (cfg === null || typeof cfg !== "object") fail("config must be an object");
  assertRemoteUrl(cfg.url);
  assertBranchName(cfg.branch);
  if (typeof cfg.workDir !== "string" || cfg.workDir.trim() === "") fail("workDir is required");
  if (CONTROL.test(cfg.workDir)) fail("workDir contains control characters");
  assertIdentity("name", cfg.author?.name);
  assertIdentity("email", cfg.author?.email);
  const auth = cfg.auth;
  switch (auth?.kind) {
    case "none":
      break;
    case "token":
      if (typeof auth.token !== "string" || auth.token === "" || CONTROL.test(auth.token))
        fail("auth.token must be a non-empty string");
      if (
        auth.username !== undefined &&
        (auth.username === "" || /[:\s]/.test(auth.username) || CONTROL.test(auth.username))
      ) {
        fail("auth.username must be non-empty without ':' or whitespace");
      }
      if (!/^https?:\/\//i.test(cfg.url)) fail("token auth needs an http(s) url");
      break;
    case "ssh":
      if (
        typeof auth.privateKeyPath !== "string" ||
        !isAbsolute(auth.privateKeyPath) ||
        CONTROL.test(auth.privateKeyPath)
      ) {
        fail("auth.privateKeyPath must be an absolute path");
      }
      if (
        auth.knownHostsPath !== undefined &&
        (!isAbsolute(auth.knownHostsPath) || CONTROL.test(auth.knownHostsPath))
      ) {
        fail("auth.knownHostsPath must be an absolute path");
      }
      if (/^(https?|file):\/\//i.test(cfg.url) || isAbsolute(cfg.url))
        fail("ssh auth needs an ssh:// or git@host:path url");
      break;
    default:
      fail('auth.kind must be "none", "token" or "ssh"');
  }
  const timeoutMs = positiveInt("timeoutMs", cfg.timeoutMs, 30_000, 3_600_000);
  return {
    url: cfg.url,
    branch: cfg.branch,
    workDir: resolve(cfg.workDir),
    author: { name: cfg.author.name.trim(), email: cfg.author.email.trim() },
    auth,
    timeoutMs,
    pingTimeoutMs: Math.min(timeoutMs, 5_000),
    maxPushAttempts: positiveInt("maxPushAttempts", cfg.maxPushAttempts, 50, 1000),
    pushBudgetMs: positiveInt("pushBudgetMs", cfg.pushBudgetMs, 20_000, 600_000),
    maxBatchSize: positiveInt("maxBatchSize", cfg.maxBatchSize, 1000, 10_000),
    history: {
      windowMs: positiveInt("history.windowHours", cfg.history?.windowHours, 24, 24 * 365) * 3_600_000,
      maxCommits: positiveInt("history.maxCommits", cfg.history?.maxCommits, 20_000, 1_000_000),
    },
    logger: cfg.logger ?? silentLogger,
    onBatch: cfg.onBatch ?? (() => {}),
  };
}
