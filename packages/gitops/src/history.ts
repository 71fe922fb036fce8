import { parseTrailers } from "./commit-message.js";
import type { GitRunner } from "./git-runner.js";
import { assertReadablePath } from "./paths.js";

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

const FIELD = "\x1f";
const RECORD = "\x1e";

/**
 * The newest commits reachable from `revision` that touch any of `paths` (files or folders), newest first.
 * Paths are matched literally (no globs or pathspec magic), and reach git only after `--`.
 */
export async function commitsTouching(runner: GitRunner, revision: string, paths: readonly string[], limit: number): Promise<CommitSummary[]> {
  if (!/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(revision)) throw new TypeError(`not a commit id: ${revision}`);
  for (const path of paths) assertReadablePath(path);
  if (paths.length === 0 || limit < 1) return [];
  const format = ["%H", "%aI", "%an", "%s", "%(trailers:only,unfold)"].join(FIELD) + RECORD;
  const out = await runner.run(["--literal-pathspecs", "log", `--max-count=${Math.floor(limit)}`, `--format=${format}`, revision, "--", ...paths], { what: "git log" });
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
