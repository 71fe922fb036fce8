import type { RepoTree } from "@berth/core";
import { GitTree, IndexCache, type TreeSource } from "./git-tree.js";
import { GitRunner } from "./git-runner.js";
import { TrailerIndex } from "./history.js";
import { ObjectReader } from "./object-reader.js";
import { buildGitEnvironment } from "./remote-auth.js";

/**
 * Read-only trees of a clone that a FluxRepo writes, for work moved off the API's event loop into another
 * thread (drift). It never fetches, locks or writes: git objects are immutable, so reading a commit the
 * writer reported needs no coordination with it.
 */
export class RepoReader {
  private readonly src: TreeSource;

  private constructor(
    private readonly runner: GitRunner,
    timeoutMs: number,
  ) {
    this.src = {
      reader: new ObjectReader(runner, timeoutMs),
      runner,
      indexes: new IndexCache(runner, 3),
      // Trees read here never look for idempotency trailers; the index stays empty.
      history: new TrailerIndex(runner, { windowMs: 0, maxCommits: 0, committerEmail: "" }),
    };
  }

  /** Reads the bare clone in `gitDir` (a FluxRepo's workDir). Does no I/O until a tree is read. */
  static open(gitDir: string, timeoutMs = 60_000): RepoReader {
    const env = buildGitEnvironment({ gitDir, auth: { kind: "none" }, connectTimeoutSec: 1 });
    return new RepoReader(new GitRunner(env, { cwd: gitDir, timeoutMs, pingTimeoutMs: timeoutMs }), timeoutMs);
  }

  /**
   * The tree of `revision`. With `previous` (a commit read just before), its file index is derived from that
   * one's with `git diff-tree` instead of listing the whole tree again.
   */
  treeAt(revision: string | undefined, previous?: string): RepoTree {
    if (revision !== undefined) this.src.indexes.hintDiffBase(revision, previous);
    return new GitTree(this.src, revision);
  }

  /** Every file path that differs between two commits (added, modified or deleted), sorted. */
  async changedPaths(from: string, to: string): Promise<string[]> {
    const out = await this.runner.run(["diff-tree", "-r", "-z", "--no-renames", "--name-only", from, to], {
      what: "git diff-tree",
    });
    return out
      .split("\0")
      .filter((p) => p !== "")
      .sort();
  }

  close(): void {
    this.src.reader.close();
  }
}
