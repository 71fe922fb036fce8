/**
 * What the domain needs from the Flux repo, and what it hands back. The git adapter (@berth/gitops)
 * implements RepoTree over a commit and applies a RepoChange as one commit.
 */

/** A read-only view of the Flux repo at one commit. Paths are POSIX, relative to the repo root. */
export interface RepoTree {
  /** The commit this view reads, or undefined for an empty repository. */
  readonly revision: string | undefined;
  /** The file's text, or undefined when it does not exist. */
  read(path: string): Promise<string | undefined>;
  /** Every file path below `dir` (recursive), sorted. Empty when the folder does not exist. */
  list(dir: string): Promise<string[]>;
  /**
   * Whether the file exists with exactly this content. Optional: an adapter that can answer without
   * reading the file (git compares blob ids) provides it; otherwise callers compare `read`.
   */
  hasContent?(path: string, content: string): Promise<boolean>;
}

/** `tree.hasContent` when the tree has it, else a comparison of what `read` returns. */
export async function hasContent(tree: RepoTree, path: string, content: string): Promise<boolean> {
  return tree.hasContent ? tree.hasContent(path, content) : (await tree.read(path)) === content;
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
