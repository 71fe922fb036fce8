import type { FileChange, Trailer } from "@berth/core";
import { parseTrailers } from "./commit-message.js";
import type { GitRunner } from "./git-runner.js";
import { assertReadablePath } from "./paths.js";
import { pairs } from "./tree-index.js";

/** One commit of the Flux repo as a history view shows it. */
export interface CommitSummary {
  sha: string;
  /** Author date, ISO 8601. */
  date: string;
  author: string;
  subject: string;
  /** The commit's trailers (`Berth-Requested-By`, `Berth-Request-Id`, ...), last value per key. */
  trailers: Record<string, string>;
}

/**
 * The trailers of Berth's own recent commits, indexed so a writer can ask "did a commit with these trailers
 * already land?" (an idempotency key, docs/decisions/0011-idempotency-in-git-trailers.md). The index is
 * derived from the branch's history, never the source of truth: a restarted process or another replica
 * rebuilds the same answers from the same commits.
 */

export interface IndexedCommit {
  revision: string;
  /** Committer time, ms since the epoch. */
  committedAt: number;
  trailers: Trailer[];
}

export interface HistoryWindow {
  /** Commits older than this are not answered (and dropped from the index). */
  windowMs: number;
  /** At most this many commits are indexed. */
  maxCommits: number;
  /** Only commits with this committer email are Berth's own; anyone else's trailers are ignored. */
  committerEmail: string;
}

const FIELD = "\x1f";
const RECORD = "\x1e";

/**
 * The newest commits reachable from `revision` that touch any of `paths` (files or folders), newest first.
 * Paths are matched literally (no globs or pathspec magic), and reach git only after `--`.
 */
export async function commitsTouching(
  runner: GitRunner,
  revision: string,
  paths: readonly string[],
  limit: number,
): Promise<CommitSummary[]> {
  if (!/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(revision)) throw new TypeError(`not a commit id: ${revision}`);
  for (const path of paths) assertReadablePath(path);
  if (paths.length === 0 || limit < 1) return [];
  const format = ["%H", "%aI", "%an", "%s", "%(trailers:only,unfold)"].join(FIELD) + RECORD;
  const out = await runner.run(
    ["--literal-pathspecs", "log", `--max-count=${Math.floor(limit)}`, `--format=${format}`, revision, "--", ...paths],
    { what: "git log" },
  );
  return out
    .split(RECORD)
    .map((record) => record.replace(/^\n+/, ""))
    .filter((record) => record.trim() !== "")
    .map((record) => {
      const [sha = "", date = "", author = "", subject = "", trailerText = ""] = record.split(FIELD);
      const trailers = Object.fromEntries(parseTrailers(trailerText).map((t) => [t.key, t.value]));
      return { sha, date, author, subject, trailers };
    });
}

const LOG_FORMAT = `--format=%H${FIELD}%ct${FIELD}%ce${FIELD}%(trailers:only,unfold)${RECORD}`;

const trailerKey = (t: Trailer) => `${t.key.toLowerCase()}\0${t.value}`;

function matches(commit: IndexedCommit, wanted: readonly Trailer[]): boolean {
  return wanted.every((w) =>
    commit.trailers.some((t) => t.key.toLowerCase() === w.key.toLowerCase() && t.value === w.value),
  );
}

/** The trailer paragraph of a message Berth built (its last paragraph). */
export function trailersOfMessage(message: string): Trailer[] {
  const paragraphs = message.trimEnd().split("\n\n");
  return parseTrailers(paragraphs[paragraphs.length - 1] ?? "");
}

export class TrailerIndex {
  /** The newest commit the index covers; undefined until built. */
  private tip: string | undefined;
  private readonly commits = new Map<string, IndexedCommit>(); // oldest first
  private readonly byTrailer = new Map<string, string[]>(); // trailer → revisions, oldest first
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly runner: GitRunner,
    private readonly window: HistoryWindow,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The earliest commit reachable from `revision`, within the window, whose trailers include all of `wanted`.
   * Undefined for an empty `revision` (no branch yet).
   */
  find(revision: string | undefined, wanted: readonly Trailer[]): Promise<IndexedCommit | undefined> {
    const [first] = wanted;
    if (revision === undefined || first === undefined) return Promise.resolve(undefined);
    const run = this.chain.then(async () => {
      const position = await this.catchUp(revision);
      const oldest = this.now() - this.window.windowMs;
      for (const rev of this.byTrailer.get(trailerKey(first)) ?? []) {
        const c = this.commits.get(rev);
        if (!c || c.committedAt < oldest || !matches(c, wanted)) continue;
        // Behind the index (a snapshot older than our last push): only the commits it can reach count.
        if (position === "behind" && c.revision !== revision && !(await this.runner.isAncestor(c.revision, revision)))
          continue;
        return c;
      }
      return undefined;
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  /**
   * Commits this process just pushed on top of `parent`, recorded without asking git. Ignored unless the
   * index is at `parent` (the next find() then catches up through git).
   */
  recordPushed(
    parent: string | undefined,
    pushed: ReadonlyArray<{ revision: string; message: string }>,
    at: Date,
  ): void {
    const last = pushed.at(-1);
    if (parent === undefined || this.tip !== parent || last === undefined) return;
    for (const p of pushed)
      this.add({
        revision: p.revision,
        committedAt: Math.floor(at.getTime() / 1000) * 1000,
        trailers: trailersOfMessage(p.message),
      });
    this.tip = last.revision;
    this.trim();
  }

  /**
   * Brings the index to `revision` when `revision` is at or ahead of it ("current"). A `revision` the index has
   * already passed is "behind": the index holds its history too. Anything else (first use, a rewritten
   * history, a gap wider than the index) rebuilds the index from `revision`.
   */
  private async catchUp(revision: string): Promise<"current" | "behind"> {
    if (this.tip === revision) return "current";
    if (this.tip !== undefined) {
      if (await this.runner.isAncestor(this.tip, revision)) {
        const fresh = await this.log([`${this.tip}..${revision}`]);
        if (fresh.length < this.window.maxCommits) {
          for (const c of fresh.reverse()) this.add(c);
          this.tip = revision;
          this.trim();
          return "current";
        }
      } else if (await this.runner.isAncestor(revision, this.tip)) {
        return "behind";
      }
    }
    this.commits.clear();
    this.byTrailer.clear();
    for (const c of (await this.log([revision])).reverse()) this.add(c);
    this.tip = revision;
    this.trim();
    return "current";
  }

  /** Berth's own commits in `range` within the window, newest first. */
  private async log(range: string[]): Promise<IndexedCommit[]> {
    const since = Math.floor((this.now() - this.window.windowMs) / 1000);
    const out = await this.runner.run(
      ["log", LOG_FORMAT, `--max-count=${this.window.maxCommits}`, `--since=@${since}`, ...range, "--"],
      { what: "git log" },
    );
    const commits: IndexedCommit[] = [];
    for (const record of out.split(RECORD)) {
      const [sha, time, email, trailers] = record.replace(/^\n/, "").split(FIELD);
      if (!sha || !/^[0-9a-f]{40,64}$/.test(sha) || email !== this.window.committerEmail) continue;
      commits.push({ revision: sha, committedAt: Number(time) * 1000, trailers: parseTrailers(trailers ?? "") });
    }
    return commits;
  }

  private add(commit: IndexedCommit): void {
    if (this.commits.has(commit.revision)) return;
    this.commits.set(commit.revision, commit);
    for (const t of commit.trailers) {
      const k = trailerKey(t);
      const list = this.byTrailer.get(k);
      if (list) list.push(commit.revision);
      else this.byTrailer.set(k, [commit.revision]);
    }
  }

  /** Drops the oldest commits beyond maxCommits or outside the window. */
  private trim(): void {
    const oldest = this.now() - this.window.windowMs;
    for (const [rev, c] of this.commits) {
      if (this.commits.size <= this.window.maxCommits && c.committedAt >= oldest) break;
      this.commits.delete(rev);
      for (const t of c.trailers) {
        const k = trailerKey(t);
        const rest = (this.byTrailer.get(k) ?? []).filter((r) => r !== rev);
        if (rest.length) this.byTrailer.set(k, rest);
        else this.byTrailer.delete(k);
      }
    }
  }
}

/** What a commit changed against its first parent (every file added for a root commit), sorted by path. */
export async function commitChanges(runner: GitRunner, revision: string): Promise<FileChange[]> {
  const out = await runner.run(
    ["diff-tree", "-r", "--root", "--no-commit-id", "--no-renames", "--name-status", "-z", revision],
    { what: "git diff-tree" },
  );
  const parts = out.split("\0").filter((p) => p !== "");
  const changes: FileChange[] = [];
  for (const [code, path] of pairs(parts)) {
    const status = code.startsWith("A") ? "added" : code.startsWith("D") ? "deleted" : "modified";
    changes.push({ path, status });
  }
  return changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
