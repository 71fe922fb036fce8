/**
 * The closed set of domain errors. Adapters and the API map these to HTTP statuses; nothing else in the
 * domain throws on purpose.
 */

export interface FieldIssue {
  /** Dotted path of the offending field, e.g. `roleAssignments.0.role`. */
  field: string;
  /** The rule that failed, in words. */
  rule: string;
}

export class TeamValidationError extends Error {
  override readonly name = "TeamValidationError";
  constructor(readonly issues: FieldIssue[]) {
    super(`invalid team: ${issues.map((i) => `${i.field} ${i.rule}`).join("; ")}`);
  }
}

export class TeamExistsError extends Error {
  override readonly name = "TeamExistsError";
  constructor(readonly team: string) {
    super(`team "${team}" already exists`);
  }
}

export class TeamNotFoundError extends Error {
  override readonly name = "TeamNotFoundError";
  constructor(readonly team: string) {
    super(`team "${team}" does not exist`);
  }
}

/** A template or the data in the repo cannot be rendered; an operator must fix templates or config. */
export class RenderError extends Error {
  override readonly name = "RenderError";
  constructor(
    message: string,
    readonly source?: string,
  ) {
    super(source ? `${source}: ${message}` : message);
  }
}

/** A file read from the Flux repo is not what Berth wrote (hand edit, corruption). */
export class RepoContentError extends Error {
  override readonly name = "RepoContentError";
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
  }
}

/**
 * A planned change would write or delete a path the acting team does not own (another team's file, or a
 * layout file such as a cluster's teams index written other than as the index). Nothing is committed.
 */
export class PathOwnershipError extends Error {
  override readonly name = "PathOwnershipError";
  constructor(
    readonly team: string,
    readonly path: string,
    readonly owner: string,
  ) {
    super(`a change for team "${team}" may not write ${path}: it is ${owner}`);
  }
}
