import { hash } from "node:crypto";
import { setImmediate as yieldToEventLoop } from "node:timers/promises";

/**
 * Every file of one commit: path → blob id, parsed once from `git ls-tree -r` (or derived from another
 * commit's index and a change) and then answered from memory. Listing a folder, "is this a file / a
 * folder", and "does this file hold exactly this text" (its git blob id) need no git process; only file
 * contents are read from git, by blob id (shared by every commit that has the same content).
 * docs/decisions/0010-rollouts.md ("where the time went").
 */
export class TreeIndex {
  /** Paths in code-point order, for prefix ranges. */
  private readonly sorted: readonly string[];
  /**
   * Folder listings already answered. The index never changes, and a batch of onboardings lists the same
   * cluster folders once per transaction: 100 transactions into a 1,000-team fleet listed 300,000 paths.
   */
  private readonly listings = new Map<string, readonly string[]>();

  constructor(
    private readonly blobs: ReadonlyMap<string, string>,
    /** "sha1" or "sha256": how blob ids are computed (the repository's object format). */
    readonly format: "sha1" | "sha256",
    /** `blobs`' paths already in code-point order (a derived index merges instead of sorting again). */
    sorted?: readonly string[],
  ) {
    this.sorted = sorted ?? [...blobs.keys()].sort(compare);
  }

  /**
   * Parses `git ls-tree -r -z --full-tree` output (`<mode> <type> <oid>\t<path>\0`...): blobs only. A fleet's
   * tree is 130,000 files at 5,000 teams: the parse yields to the event loop every PARSE_SLICE records, so the
   * API's other requests (and /healthz) keep answering while it runs, and it keeps git's order, already the
   * code-point order of the paths, rather than sorting them again.
   */
  static async parse(output: string, format: "sha1" | "sha256"): Promise<TreeIndex> {
    const blobs = new Map<string, string>();
    const inOrder: string[] = [];
    let ordered = true;
    let start = 0;
    for (let records = 1; start < output.length; records++) {
      if (records % PARSE_SLICE === 0) await yieldToEventLoop();
      let end = output.indexOf("\0", start);
      if (end === -1) end = output.length;
      const record = output.slice(start, end);
      start = end + 1;
      const tab = record.indexOf("\t");
      if (tab === -1) continue;
      const [, type, oid] = record.slice(0, tab).split(" ");
      if (type !== "blob" || !oid) continue;
      const path = record.slice(tab + 1);
      // git orders by bytes; a path with characters outside the BMP may sort differently by code point.
      const previous = inOrder.at(-1);
      if (ordered && previous !== undefined && compare(previous, path) >= 0) ordered = false;
      blobs.set(path, oid);
      inOrder.push(path);
    }
    return new TreeIndex(blobs, format, ordered ? inOrder : undefined);
  }

  get size(): number {
    return this.blobs.size;
  }

  /** The blob id of a file, undefined when no file has that path. */
  oid(path: string): string | undefined {
    return this.blobs.get(path);
  }

  isFile(path: string): boolean {
    return this.blobs.has(path);
  }

  /** True when some file lies below `dir`. */
  isDir(dir: string): boolean {
    if (dir === "") return this.sorted.length > 0;
    const prefix = `${dir}/`;
    return this.sorted[lowerBound(this.sorted, prefix)]?.startsWith(prefix) ?? false;
  }

  /** Every file below `dir` ("" = all), sorted. */
  list(dir: string): readonly string[] {
    if (dir === "") return this.sorted;
    let out = this.listings.get(dir);
    if (out === undefined) {
      const prefix = `${dir}/`;
      const start = lowerBound(this.sorted, prefix);
      let end = start;
      while (this.sorted[end]?.startsWith(prefix)) end++;
      out = this.sorted.slice(start, end);
      if (this.listings.size >= MAX_LISTINGS) this.listings.clear();
      this.listings.set(dir, out);
    }
    return out;
  }

  /** Whether `path` is a file holding exactly `content` (compared by blob id: nothing is read). */
  hasContent(path: string, content: string): boolean {
    const oid = this.blobs.get(path);
    return oid !== undefined && oid === blobId(content, this.format);
  }

  /** The index after a change (null deletes), blob ids computed from the contents. */
  withChanges(changes: Iterable<readonly [string, string | null]>): TreeIndex {
    const next = new Map(this.blobs);
    const touched: string[] = [];
    for (const [path, content] of changes) {
      if (content === null) next.delete(path);
      else next.set(path, blobId(content, this.format));
      touched.push(path);
    }
    return this.derived(next, touched);
  }

  /** The index after `git diff-tree -r -z --no-renames` output (`:<m> <m> <old> <new> <status>\0<path>\0`...). */
  withDiff(output: string): TreeIndex {
    const next = new Map(this.blobs);
    const touched: string[] = [];
    for (const [rawMeta, path] of pairs(output.split("\0"))) {
      const meta = rawMeta.replace(/^\n/, "");
      if (!meta.startsWith(":")) continue;
      const [, newMode, , newOid, status] = meta.slice(1).split(" ");
      if (status === "D" || newMode === "000000") next.delete(path);
      else if (newMode !== "160000" && newOid) next.set(path, newOid); // not a submodule: a blob
      touched.push(path);
    }
    return this.derived(next, touched);
  }

  /**
   * An index of `next`, a copy of this one's map in which only `touched` paths may differ: its sorted paths are
   * this index's with the few removed ones cut out and the few added ones put in, found by binary search, not a
   * scan or a sort of every path (a commit into a 5,000-team fleet touches tens of its 130,000 paths).
   */
  private derived(next: ReadonlyMap<string, string>, touched: readonly string[]): TreeIndex {
    const added: string[] = [];
    const removed: string[] = [];
    for (const path of new Set(touched)) {
      const was = this.blobs.has(path);
      if (next.has(path) !== was) (was ? removed : added).push(path);
    }
    return new TreeIndex(next, this.format, spliceSorted(this.sorted, added, removed));
  }
}

/**
 * git's id of a blob holding `content`: hash of `blob <bytes>\0<content>`. One-shot hash() of one string,
 * no Buffer per file: a fleet rollout hashes tens of thousands of rendered files.
 */
export function blobId(content: string, format: "sha1" | "sha256" = "sha1"): string {
  return hash(format, `blob ${Buffer.byteLength(content, "utf8")}\0${content}`, "hex");
}

/**
 * `sorted` (paths in code-point order) without `removed` (each in it) and with `added` (none in it) at their places.
 * The positions come from binary search and the runs between them are copied whole: linear copying, no per-path
 * comparison. `sorted` itself when nothing is added or removed (an index's paths are never changed in place).
 */
export function spliceSorted(
  sorted: readonly string[],
  added: readonly string[],
  removed: readonly string[],
): readonly string[] {
  if (added.length === 0 && removed.length === 0) return sorted;
  const edits = [
    ...removed.map((path) => ({ at: lowerBound(sorted, path), path, remove: true })),
    ...added.map((path) => ({ at: lowerBound(sorted, path), path, remove: false })),
  ].sort((a, b) => a.at - b.at || compare(a.path, b.path));
  const runs: string[][] = [];
  let from = 0;
  for (const edit of edits) {
    runs.push(sorted.slice(from, edit.at));
    if (edit.remove) from = edit.at + 1;
    else {
      runs.push([edit.path]);
      from = edit.at;
    }
  }
  runs.push(sorted.slice(from));
  return runs.flat();
}

/**
 * `sorted` (paths in code-point order) without the `removed` ones, with `added` merged in at their places;
 * a path in both is listed once. Linear in `sorted`: the few paths a change adds are sorted, not all.
 */
export function mergeSorted(
  sorted: readonly string[],
  added: readonly string[],
  removed: (path: string) => boolean,
): string[] {
  const extra = [...added].sort(compare);
  const out: string[] = [];
  let a = 0;
  for (const path of sorted) {
    for (let e = extra[a]; e !== undefined && e < path; e = extra[++a]) out.push(e);
    if (extra[a] === path) a++;
    if (!removed(path)) out.push(path);
  }
  return out.concat(extra.slice(a));
}

/** `[a, b, c, d]` as `[a, b]`, `[c, d]` (git's `-z` output alternates two fields); an unpaired last item is left out. */
export function* pairs<T>(items: Iterable<T>): Generator<[T, T]> {
  let first: { item: T } | undefined;
  for (const item of items) {
    if (first === undefined) first = { item };
    else {
      yield [first.item, item];
      first = undefined;
    }
  }
}

/** ls-tree records parsed between yields to the event loop: a few milliseconds of work. */
const PARSE_SLICE = 5_000;

/** Folder listings one index remembers; past that it starts over (a fleet-wide read lists every team folder). */
const MAX_LISTINGS = 50_000;

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function lowerBound(sorted: readonly string[], key: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const at = sorted[mid]; // (lo <= mid < hi <= length: always there)
    if (at !== undefined && at < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
