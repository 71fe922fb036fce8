import type { CommitInfo, RepoTree, Trailer, TreeEntry } from "@berth/core";
import type { GitRunner } from "./git-runner.js";
import { commitChanges, type TrailerIndex } from "./history.js";
import type { ObjectKind, ObjectReader } from "./object-reader.js";
import { mergeSorted, TreeIndex } from "./tree-index.js";
import { assertReadablePath, normalizeDir, parents } from "./paths.js";

/** What a GitTree reads through; shared by every tree of one FluxRepo. */
export interface TreeSource {
  reader: ObjectReader;
  runner: GitRunner;
  indexes: IndexCache;
  history: TrailerIndex;
}

/**
 * Tree indexes by commit id, a few at a time (the head and the commits just before it are what is read).
 * A commit's index is loaded once (`git ls-tree -r`), or derived without listing the whole tree: from its
 * parent's and the change Berth itself committed, or from an older commit's and `git diff-tree`.
 */
export class IndexCache {
  private readonly entries = new Map<string, Promise<TreeIndex>>();
  /** For a commit whose index is not loaded yet: a commit whose index may be, to diff against. */
  private readonly diffBases = new Map<string, string>();

  constructor(
    private readonly runner: GitRunner,
    private readonly max = 6,
  ) {}

  get(revision: string): Promise<TreeIndex> {
    let entry = this.entries.get(revision);
    if (entry) {
      this.entries.delete(revision);
      this.entries.set(revision, entry);
      return entry;
    }
    entry = this.load(revision);
    entry.catch(() => this.entries.delete(revision));
    this.remember(revision, entry);
    return entry;
  }

  has(revision: string): boolean {
    return this.entries.has(revision);
  }

  /** The index of `revision`, known without git: `base`'s with `changes` applied (Berth's own commit). */
  derive(base: string | undefined, revision: string, changes: Iterable<readonly [string, string | null]>): void {
    const from =
      base === undefined ? Promise.resolve(new TreeIndex(new Map(), formatOf(revision))) : this.entries.get(base);
    if (!from) return;
    const list = [...changes];
    this.remember(
      revision,
      from.then((index) => index.withChanges(list)),
    );
  }

  /** When `revision` is first read, diff it against `older` (if that index is loaded) instead of listing it. */
  hintDiffBase(revision: string, older: string | undefined): void {
    if (older !== undefined && older !== revision && !this.entries.has(revision)) this.diffBases.set(revision, older);
  }

  private remember(revision: string, entry: Promise<TreeIndex>): void {
    this.entries.set(revision, entry);
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.max) break;
      this.entries.delete(oldest);
    }
  }

  private async load(revision: string): Promise<TreeIndex> {
    const older = this.diffBases.get(revision);
    this.diffBases.delete(revision);
    const base = older === undefined ? undefined : this.entries.get(older);
    if (base && older !== undefined) {
      const out = await this.runner.run(["diff-tree", "-r", "-z", "--no-renames", older, revision], {
        what: "git diff-tree",
      });
      return (await base).withDiff(out);
    }
    const out = await this.runner.run(["ls-tree", "-r", "-z", "--full-tree", revision], { what: "git ls-tree" });
    return await TreeIndex.parse(out, formatOf(revision));
  }
}

function formatOf(revision: string): "sha1" | "sha256" {
  return revision.length === 64 ? "sha256" : "sha1";
}

/**
 * A read-only view of one commit, answered from the commit's TreeIndex: listing, existence and content
 * comparisons without a git process; file contents read by blob id through one long-lived `git cat-file`.
 * Any number of trees can be read while the writer fetches and pushes (objects are immutable).
 */
export class GitTree implements RepoTree {
  constructor(
    private readonly src: TreeSource,
    readonly revision: string | undefined,
  ) {}

  private index(): Promise<TreeIndex | undefined> {
    return this.revision === undefined ? Promise.resolve(undefined) : this.src.indexes.get(this.revision);
  }

  async read(path: string): Promise<string | undefined> {
    assertReadablePath(path);
    const oid = (await this.index())?.oid(path);
    if (oid === undefined) return undefined;
    const obj = await this.src.reader.read(oid);
    return obj?.kind === "blob" ? obj.text : undefined;
  }

  /** What `path` names at this commit: "blob" (a file or symlink), "tree" (a folder), or undefined. */
  async kind(path: string): Promise<ObjectKind | undefined> {
    assertReadablePath(path);
    const index = await this.index();
    if (!index) return undefined;
    return index.isFile(path) ? "blob" : index.isDir(path) ? "tree" : undefined;
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

  async list(dir: string): Promise<readonly string[]> {
    const d = normalizeDir(dir);
    // The index's own listing, not a copy: a batch lists each cluster's teams folder once per transaction.
    return (await this.index())?.list(d) ?? [];
  }

  async hasContent(path: string, content: string): Promise<boolean> {
    assertReadablePath(path);
    return (await this.index())?.hasContent(path, content) ?? false;
  }
}

/**
 * The changes of a batch's transactions so far, each tagged with the transaction's position. The view of
 * transaction n sees exactly the changes of transactions before n, without a copy per transaction: a batch
 * of 100 onboardings into a 1,000-team repo would otherwise copy and scan thousands of paths per view
 * (quadratic in the batch). Listing a folder costs the overlaid paths below it, not the whole overlay.
 */
export class BatchOverlay {
  /** Per path, each transaction's content for it in order (null: deleted). */
  private readonly versions = new Map<string, Array<{ position: number; content: string | null }>>();
  /** Per folder ("" = the root), every overlaid path below it at any depth. */
  private readonly below = new Map<string, Set<string>>();

  /** Records transaction `position`'s effective changes (positions only grow). */
  add(position: number, files: ReadonlyMap<string, string | null>): void {
    for (const [path, content] of files) {
      let list = this.versions.get(path);
      if (!list) {
        list = [];
        this.versions.set(path, list);
        for (const dir of ["", ...parents(path)]) {
          let set = this.below.get(dir);
          if (!set) this.below.set(dir, (set = new Set()));
          set.add(path);
        }
      }
      list.push({ position, content });
    }
  }

  /** What transaction `position` sees: the changes of the transactions before it. */
  at(position: number): OverlayAt {
    return {
      lookup: (path) => this.lookup(path, position),
      below: (dir) => this.pathsBelow(dir, position),
    };
  }

  private lookup(path: string, position: number): { content: string | null } | undefined {
    const list = this.versions.get(path);
    if (!list) return undefined;
    return list.findLast((v) => v.position < position);
  }

  private *pathsBelow(dir: string, position: number): Iterable<readonly [string, string | null]> {
    for (const path of this.below.get(dir) ?? []) {
      const hit = this.lookup(path, position);
      if (hit) yield [path, hit.content] as const;
    }
  }
}

/** One transaction's window on a BatchOverlay. */
export interface OverlayAt {
  /** The overlaid content of `path` (null: deleted), or undefined when the overlay does not touch it. */
  lookup(path: string): { content: string | null } | undefined;
  /** Every overlaid path below `dir` ("" = all) with its content. */
  below(dir: string): Iterable<readonly [string, string | null]>;
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
    private readonly overlay: OverlayAt,
  ) {}

  get revision(): string | undefined {
    return this.base.revision;
  }

  async read(path: string): Promise<string | undefined> {
    assertReadablePath(path);
    this.reads.add(path);
    const hit = this.overlay.lookup(path);
    if (hit) return hit.content ?? undefined;
    return this.base.read(path);
  }

  async hasContent(path: string, content: string): Promise<boolean> {
    assertReadablePath(path);
    this.reads.add(path);
    const hit = this.overlay.lookup(path);
    if (hit) return hit.content === content;
    return this.base.hasContent(path, content);
  }

  async list(dir: string): Promise<readonly string[]> {
    const d = normalizeDir(dir);
    this.lists.add(d);
    const base = await this.base.list(d);
    const overlaid = [...this.overlay.below(d)];
    // Most views list a folder the batch has not touched yet: the base's listing is already sorted.
    if (overlaid.length === 0) return base;
    // Otherwise merge the (few) overlaid paths into it rather than sorting the whole folder again.
    const removed = new Set<string>();
    const added: string[] = [];
    for (const [p, content] of overlaid) {
      if (content === null) removed.add(p);
      else added.push(p);
    }
    return mergeSorted(base, added, (p) => removed.has(p));
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
    const hit = this.overlay.lookup(path);
    if (hit) return hit.content !== null;
    return (await this.base.kind(path)) === "blob";
  }

  /** True when `path` is a folder holding at least one file in this view. */
  async isDir(path: string): Promise<boolean> {
    this.reads.add(path);
    for (const [, content] of this.overlay.below(path)) if (content !== null) return true;
    if ((await this.base.kind(path)) !== "tree") return false;
    return (await this.list(path)).length > 0;
  }
}
