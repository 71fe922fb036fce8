/**
 * What the domain needs from the Flux repo, and what it hands back. The git adapter (@berth/gitops)
 * implements RepoTree over a commit and applies a RepoChange as one commit.
 */

export type FileStatus = "added" | "modified" | "deleted";
export interface FileChange {
  path: string;
  status: FileStatus;
}

/** One entry of a folder, with a content id: the same id means the same content (a git object id). */
export interface TreeEntry {
  name: string;
  kind: "file" | "folder";
  id: string;
}

/** A commit found in a tree's history (see RepoTree.findCommit). */
export interface CommitInfo {
  revision: string;
  committedAt: Date;
  trailers: readonly Trailer[];
  /** The repo as this commit left it. */
  tree: RepoTree;
  /** What the commit changed against its first parent, sorted by path. */
  changes(): Promise<FileChange[]>;
}

/** A read-only view of the Flux repo at one commit. Paths are POSIX, relative to the repo root. */
export interface RepoTree {
  /** The commit this view reads, or undefined for an empty repository. */
  readonly revision: string | undefined;
  /** The file's text, or undefined when it does not exist. */
  read(path: string): Promise<string | undefined>;
  /**
   * Every file path below `dir` (recursive), sorted. Empty when the folder does not exist. Read-only: an
   * adapter may answer the same listing to every caller.
   */
  list(dir: string): Promise<readonly string[]>;
  /**
   * Whether the file exists with exactly this content. The git adapter compares blob ids without reading
   * the file; an adapter without ids compares what `read` returns.
   */
  hasContent(path: string, content: string): Promise<boolean>;
  /**
   * The immediate entries of folder `dir` with content ids, sorted by name (empty when it does not exist).
   * Optional, because it is only a cache key: readers that derive something from a folder cache it by id
   * (parse each team once). A tree without ids gets the same answers, each folder read again every time.
   */
  entries?(dir: string): Promise<TreeEntry[]>;
  /** The content id of a file or folder, or undefined when absent. Optional, as `entries`: only a cache key. */
  contentId?(path: string): Promise<string | undefined>;
  /**
   * The earliest commit in this tree's recent history (the tree's own commit included) whose trailers hold
   * every one of `trailers` (keys compared case-insensitively, values exactly), among the commits the
   * adapter itself wrote within its look-back window. Required: idempotent writes find an earlier request's
   * commit here, and an adapter that could leave it out would turn idempotency off without a word. A tree
   * with no history (in memory) answers undefined: no commit of it holds the trailers.
   */
  findCommit(trailers: readonly Trailer[]): Promise<CommitInfo | undefined>;
}

/** One commit's worth of change. A `null` content deletes the file. */
export interface RepoChange {
  files: Map<string, string | null>;
  /** First line of the commit message: names the team and the action. */
  subject: string;
  /** Optional body lines, after a blank line and before the trailers. */
  body?: string[];
}

/**
 * One commit trailer (`Key: value`, as git interpret-trailers reads them). Keys are `Berth-` followed by
 * letters, digits and single dashes; values are one line of plain text (cleaned, bounded).
 */
export interface Trailer {
  key: string;
  value: string;
}

/**
 * Whom the caller said it acts for (a portal's user behind its token): a claim, recorded beside the actor, never in
 * its place.
 */
export const TRAILER_ON_BEHALF_OF = "Berth-On-Behalf-Of";

/** The on-behalf-of claim among an origin's trailers, if it has one. */
export const onBehalfOfIn = (origin: ChangeOrigin): string | undefined =>
  origin.trailers?.find((t) => t.key === TRAILER_ON_BEHALF_OF)?.value;

/** Who asked for a change; recorded as commit trailers, never passed to git as an option. */
export interface ChangeOrigin {
  actor: string;
  requestId: string;
  /**
   * Further trailers for the commit, after `Berth-Requested-By` and `Berth-Request-Id`, in this order
   * (the API's action/team/idempotency key, a rollout id...). Each caller owns the keys it adds.
   */
  trailers?: readonly Trailer[];
}
