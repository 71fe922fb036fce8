import { hash } from "node:crypto";

/**
 * Every file of one commit: path → blob id, parsed once from `git ls-tree -r` (or derived from another
 * commit's index and a change) and then answered from memory. Listing a folder, "is this a file / a
 * folder", and "does this file hold exactly this text" (its git blob id) need no git process; only file
 * contents are read from git, by blob id (shared by every commit that has the same content).
 * docs/decisions/0010-rollouts.md ("where the time went").
 */
export class TreeIndex {
  /** Paths in code-point order, for prefix ranges. */
  private readonly sorted: string[];

  constructor(
    private readonly blobs: ReadonlyMap<string, string>,
    /** "sha1" or "sha256": how blob ids are computed (the repository's object format). */
    readonly format: "sha1" | "sha256",
  ) {
    this.sorted = [...blobs.keys()].sort(compare);
  }

  /** Parses `git ls-tree -r -z --full-tree` output (`<mode> <type> <oid>\t<path>\0`...): blobs only. */
  static parse(output: string, format: "sha1" | "sha256"): TreeIndex {
    const blobs = new Map<string, string>();
    let start = 0;
    while (start < output.length) {
      let end = output.indexOf("\0", start);
      if (end === -1) end = output.length;
      const record = output.slice(start, end);
      start = end + 1;
      const tab = record.indexOf("\t");
      if (tab === -1) continue;
      const [, type, oid] = record.slice(0, tab).split(" ");
      if (type === "blob" && oid) blobs.set(record.slice(tab + 1), oid);
    }
    return new TreeIndex(blobs, format);
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
    const i = lowerBound(this.sorted, prefix);
    return i < this.sorted.length && this.sorted[i]!.startsWith(prefix);
  }

  /** Every file below `dir` ("" = all), sorted. */
  list(dir: string): string[] {
    if (dir === "") return [...this.sorted];
    const prefix = `${dir}/`;
    const out: string[] = [];
    for (let i = lowerBound(this.sorted, prefix); i < this.sorted.length && this.sorted[i]!.startsWith(prefix); i++) out.push(this.sorted[i]!);
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
    for (const [path, content] of changes) {
      if (content === null) next.delete(path);
      else next.set(path, blobId(content, this.format));
    }
    return new TreeIndex(next, this.format);
  }

  /** The index after `git diff-tree -r -z --no-renames` output (`:<m> <m> <old> <new> <status>\0<path>\0`...). */
  withDiff(output: string): TreeIndex {
    const next = new Map(this.blobs);
    const parts = output.split("\0");
    for (let i = 0; i + 1 < parts.length; i += 2) {
      const meta = parts[i]!.replace(/^\n/, "");
      const path = parts[i + 1]!;
      if (!meta.startsWith(":")) continue;
      const [, newMode, , newOid, status] = meta.slice(1).split(" ");
      if (status === "D" || newMode === "000000") next.delete(path);
      else if (newMode !== "160000" && newOid) next.set(path, newOid); // not a submodule: a blob
    }
    return new TreeIndex(next, this.format);
  }
}

/**
 * git's id of a blob holding `content`: hash of `blob <bytes>\0<content>`. One-shot hash() of one string,
 * no Buffer per file: a fleet rollout hashes tens of thousands of rendered files.
 */
export function blobId(content: string, format: "sha1" | "sha256" = "sha1"): string {
  return hash(format, `blob ${Buffer.byteLength(content, "utf8")}\0${content}`, "hex");
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function lowerBound(sorted: readonly string[], key: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
