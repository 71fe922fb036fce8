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

/** A rollout request that cannot be carried out as asked (no such version, a team in no wave, ...). */
export class RolloutValidationError extends Error {
  override readonly name = "RolloutValidationError";
  constructor(readonly issues: FieldIssue[]) {
    super(`invalid rollout: ${issues.map((i) => `${i.field} ${i.rule}`).join("; ")}`);
  }
}

export class RolloutNotFoundError extends Error {
  override readonly name = "RolloutNotFoundError";
  constructor(readonly id: string) {
    super(`rollout "${id}" does not exist`);
  }
}

/** The rollout is not in a phase that allows the action (resume a completed rollout, ...). */
export class RolloutStateError extends Error {
  override readonly name = "RolloutStateError";
  constructor(
    readonly id: string,
    readonly phase: string,
    action: string,
  ) {
    super(`rollout "${id}" is ${phase}: it cannot be ${action}`);
  }
}

/** Another active rollout already moves some of these teams. */
export class RolloutConflictError extends Error {
  override readonly name = "RolloutConflictError";
  constructor(
    readonly other: string,
    readonly teams: string[],
  ) {
    super(`rollout "${other}" (not finished) already moves ${teams.length} of these teams: ${teams.slice(0, 10).join(", ")}${teams.length > 10 ? ", ..." : ""}`);
  }
}

/** Teams that cannot be rendered: nothing is committed, each is reported with why. */
export class FleetRenderError extends Error {
  override readonly name = "FleetRenderError";
  constructor(readonly failures: Array<{ team: string; error: string }>) {
    super(`${failures.length} team(s) cannot be rendered: ${failures.slice(0, 5).map((f) => `${f.team} (${f.error})`).join("; ")}${failures.length > 5 ? "; ..." : ""}`);
  }
}
