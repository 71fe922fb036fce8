/**
 * Errors of the git adapter. Domain errors (TeamExistsError, ...) thrown by a transaction's `mutate` are
 * passed through untouched; everything the adapter itself fails on is a GitOpsError with a `kind` the API
 * can map to a status (invalid-change → 500, conflict/unavailable/auth/timeout → 503, closed → 503, refused → 502).
 */

export type GitOpsErrorKind =
  /** The FluxRepoConfig is unusable (bad URL, branch name, workDir, ...). */
  | "config"
  /** A RepoChange or a read asked for an unsafe path, or a file/directory clash. */
  | "invalid-change"
  /** The remote branch kept moving: gave up after maxPushAttempts rejected pushes or pushBudgetMs. */
  | "conflict"
  /** The remote refused our credentials (or the SSH host key). */
  | "auth"
  /**
   * The remote declined the push by a rule of its own (a protected branch, a pre-receive hook): a retry gets the
   * same answer. Its message quotes the remote.
   */
  | "refused"
  /** A git command made no progress for timeoutMs. */
  | "timeout"
  /** The remote cannot be reached, or git failed in another way. */
  | "unavailable"
  /** close() was called. */
  | "closed";

export class GitOpsError extends Error {
  override readonly name = "GitOpsError";
  constructor(
    readonly kind: GitOpsErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Internal: the remote refused a fast-forward because another writer pushed first. Retried. */
export class PushRejectedError extends Error {
  override readonly name = "PushRejectedError";
}
