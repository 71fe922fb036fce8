import type { CommitInfo, RepoTree, Trailer, TreeEntry } from "@berth/core";
import type { GitRunner } from "./git-runner.js";
import type { LRUCache } from "lru-cache";
import { commitChanges, type TrailerIndex } from "./history.js";
import { objectCache, type ObjectKind, type ObjectReader } from "./object-reader.js";
import { assertReadablePath, normalizeDir } from "./paths.js";

/** What a GitTree reads through; shared by every tree of one FluxRepo. */
export interface TreeSource {
  reader: ObjectReader;
  runner: GitRunner;
  listCache: LRUCache<string, string[]>;
  history: TrailerIndex;
}

export function newListCache(): LRUCache<string, string[]> {
  return objectCache<string[]>(2_000, 32 * 1024 * 1024);
}

/**
 * A read-only view of one commit. It reads immutable objects only (cat-file / ls-tree on a sha), so any
 * number of trees can be read while the writer fetches and pushes.
 */
export class GitTree implements RepoTree {
  constructor(
    private readonly src: TreeSource,
    readonly revision: string | undefined,
  ) {}

  async read(path: string): Promise<string | undefined> {
    assertReadablePath(path);
    if (this.revision === undefined) return undefined;
    const obj = await this.src.reader.read(`${this.revision}:${path}`);
    return obj?.kind === "blob" ? obj.text : undefined;
  }

  /** What `path` names at this commit: "blob" (a file or symlink), "tree" (a folder), or undefined. */
  async kind(path: string): Promise<ObjectKind | undefined> {
    assertReadablePath(path);
    if (this.revision === undefined) return undefined;
    return (await this.src.reader.read(`${this.revision}:${path}`))?.kind;
  }

  async entries(dir: string): Promise<TreeEntry[]> {
    const d = normalizeDir(dir);
    if (this.revision === undefined) return [];
    const obj = await this.src.reader.read(d === "" ? `${this.revision}^{tree}` : `${this.revision}:${d}`);
    if (obj?.kind !== "tree") return [];
    return obj.entries
      .filter((e) => e.kind !== "commit")
      .map((e) => ({ name: e.name, kind: e.kind === "tree" ? ("folder" as const) : ("file" as const), id: e.oid }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async contentId(path: string): Promise<string | undefined> {
    const d = normalizeDir(path);
    if (this.revision === undefined) return undefined;
    return (await this.src.reader.read(d === "" ? `${this.revision}^{tree}` : `${this.revision}:${d}`))?.oid;
  }

  async findCommit(trailers: readonly Trailer[]): Promise<CommitInfo | undefined> {
    const found = await this.src.history.find(this.revision, trailers);
    if (!found) return undefined;
    const { runner } = this.src;
    return {
      revision: found.revision,
      committedAt: new Date(found.committedAt),
      trailers: found.trailers,
      tree: new GitTree(this.src, found.revision),
      changes: () => commitChanges(runner, found.revision),
    };
  }

  async list(dir: string): Promise<string[]> {
    const d = normalizeDir(dir);
    if (this.revision === undefined) return [];
    const key = `${this.revision}\0${d}`;
    const cached = this.src.listCache.get(key);
    if (cached) return [...cached];
    // List the folder's own tree object (`<sha>:<dir>`): no pathspec, so no glob or magic in `dir` applies.
    let files: string[] = [];
    const target = d === "" ? this.revision : `${this.revision}:${d}`;
    if (d === "" || (await this.kind(d)) === "tree") {
      const out = await this.src.runner.run(["ls-tree", "-r", "--name-only", "-z", target], { what: "git ls-tree" });
      files = out
        .split("\0")
        .filter((p) => p !== "")
        .map((p) => (d === "" ? p : `${d}/${p}`))
        .sort();
    }
    this.src.listCache.set(key, files, { size: files.reduce((n, p) => n + p.length + 16, 64) });
    return [...files];
  }
}

/**
 * The tree one transaction of a batch sees: the batch's base commit plus the changes of the transactions
 * before it (not yet committed), recording every path it reads and every folder it lists. Those records
 * decide whether the transaction's result still holds when the remote moves under the batch.
 */
export class TxnView implements RepoTree {
  readonly reads = new Set<string>();
  readonly lists = new Set<string>();
  /** Set when the transaction asked the branch's history (findCommit): any move of the remote may change that answer. */
  readsHistory = false;

  constructor(
    private readonly base: GitTree,
    private readonly overlay: ReadonlyMap<string, string | null>,
  ) {}

  get revision(): string | undefined {
    return this.base.revision;
  }

  async read(path: string): Promise<string | undefined> {
    assertReadablePath(path);
    this.reads.add(path);
    if (this.overlay.has(path)) return this.overlay.get(path) ?? undefined;
    return this.base.read(path);
  }

  async list(dir: string): Promise<string[]> {
    const d = normalizeDir(dir);
    this.lists.add(d);
    const files = new Set(await this.base.list(d));
    for (const [p, content] of this.overlay) {
      if (d !== "" && !p.startsWith(`${d}/`)) continue;
      if (content === null) files.delete(p);
      else files.add(p);
    }
    return [...files].sort();
  }

  /**
   * History as of the batch's base commit. Commits of earlier transactions in the same batch are not seen:
   * callers keep one key out of two concurrent transactions of one process themselves.
   */
  async findCommit(trailers: readonly Trailer[]): Promise<CommitInfo | undefined> {
    this.readsHistory = true;
    return this.base.findCommit(trailers);
  }

  /** True when `path` is a file in this view. */
  async isFile(path: string): Promise<boolean> {
    this.reads.add(path);
    if (this.overlay.has(path)) return this.overlay.get(path) !== null;
    return (await this.base.kind(path)) === "blob";
  }

  /** True when `path` is a folder holding at least one file in this view. */
  async isDir(path: string): Promise<boolean> {
    this.reads.add(path);
    for (const [p, content] of this.overlay) if (content !== null && p.startsWith(`${path}/`)) return true;
    if ((await this.base.kind(path)) !== "tree") return false;
    return (await this.list(path)).length > 0;
  }
}
