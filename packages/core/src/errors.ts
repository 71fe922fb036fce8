/**
 * The domain's errors: one base class and a closed set of codes. The HTTP edge maps each code to one status and
 * title (apps/api/src/http/plugins/problem.ts); nothing else in the domain throws on purpose.
 */

export interface FieldIssue {
  /** Dotted path of the offending field, e.g. `roleAssignments.0.role`. */
  field: string;
  /** The rule that failed, in words. */
  rule: string;
}

export const DOMAIN_ERROR_CODES = [
  "invalid-team",
  "team-exists",
  "team-not-found",
  "render-failed",
  "template-version-retired",
  "path-ownership",
  "invalid-rollout",
  "rollout-not-found",
  "rollout-state",
  "rollout-conflict",
  "rollout-render-failed",
  "adoption-limit",
  "adoption-unmappable",
  "adoption-recreates-azure-resources",
] as const;
export type DomainErrorCode = (typeof DOMAIN_ERROR_CODES)[number];

export abstract class DomainError extends Error {
  abstract readonly code: DomainErrorCode;
  /** What failed, field by field, when the error knows (a problem's `errors`). */
  get issues(): FieldIssue[] {
    return [];
  }
}

export class TeamValidationError extends DomainError {
  override readonly name = "TeamValidationError";
  readonly code = "invalid-team";
  constructor(private readonly fieldIssues: FieldIssue[]) {
    super(`invalid team: ${fieldIssues.map((i) => `${i.field} ${i.rule}`).join("; ")}`);
  }

  override get issues(): FieldIssue[] {
    return this.fieldIssues;
  }
}

export class TeamExistsError extends DomainError {
  override readonly name = "TeamExistsError";
  readonly code = "team-exists";
  constructor(readonly team: string) {
    super(`team "${team}" already exists`);
  }
}

export class TeamNotFoundError extends DomainError {
  override readonly name = "TeamNotFoundError";
  readonly code = "team-not-found";
  constructor(readonly team: string) {
    super(`team "${team}" does not exist`);
  }
}

/** A template or the data in the repo cannot be rendered; an operator must fix templates or config. */
export class RenderError extends DomainError {
  override readonly name = "RenderError";
  readonly code = "render-failed";
  constructor(
    message: string,
    readonly source?: string,
  ) {
    super(source ? `${source}: ${message}` : message);
  }
}

/**
 * The team is rendered with a template version this Berth no longer has (retired: docs/templates.md, "Retiring a
 * version"). Not a broken install: a rollout moves the team to an installed version, and then it can change again.
 */
export class TemplateVersionRetiredError extends DomainError {
  override readonly name = "TemplateVersionRetiredError";
  readonly code = "template-version-retired";
  constructor(
    readonly team: string,
    readonly version: string,
    readonly installed: readonly string[],
  ) {
    super(
      `team "${team}" is rendered with template version ${version}, which is no longer installed ` +
        `(installed: ${installed.join(", ")}): move it with a rollout first (POST /v1/rollouts, target.templateVersion)`,
    );
  }
}

/** A file read from the Flux repo is not what Berth wrote (hand edit, corruption). */
export class RepoContentError extends DomainError {
  override readonly name = "RepoContentError";
  readonly code = "render-failed";
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
export class PathOwnershipError extends DomainError {
  override readonly name = "PathOwnershipError";
  readonly code = "path-ownership";
  constructor(
    readonly team: string,
    readonly path: string,
    readonly owner: string,
  ) {
    super(`a change for team "${team}" may not write ${path}: it is ${owner}`);
  }
}

/** A rollout request that cannot be carried out as asked (no such version, a team in no wave, ...). */
export class RolloutValidationError extends DomainError {
  override readonly name = "RolloutValidationError";
  readonly code = "invalid-rollout";
  constructor(private readonly fieldIssues: FieldIssue[]) {
    super(`invalid rollout: ${fieldIssues.map((i) => `${i.field} ${i.rule}`).join("; ")}`);
  }

  override get issues(): FieldIssue[] {
    return this.fieldIssues;
  }
}

export class RolloutNotFoundError extends DomainError {
  override readonly name = "RolloutNotFoundError";
  readonly code = "rollout-not-found";
  constructor(readonly id: string) {
    super(`rollout "${id}" does not exist`);
  }
}

/** The rollout is not in a phase that allows the action (resume a completed rollout, ...). */
export class RolloutStateError extends DomainError {
  override readonly name = "RolloutStateError";
  readonly code = "rollout-state";
  constructor(
    readonly id: string,
    readonly phase: string,
    action: string,
  ) {
    super(`rollout "${id}" is ${phase}: it cannot be ${action}`);
  }
}

/** Another active rollout already moves some of these teams. */
export class RolloutConflictError extends DomainError {
  override readonly name = "RolloutConflictError";
  readonly code = "rollout-conflict";
  constructor(
    readonly other: string,
    readonly teams: string[],
  ) {
    super(
      `rollout "${other}" (not finished) already moves ${teams.length} of these teams: ${teams.slice(0, 10).join(", ")}${teams.length > 10 ? ", ..." : ""}`,
    );
  }
}

/** Teams that cannot be rendered: nothing is committed, each is reported with why. */
export class FleetRenderError extends DomainError {
  override readonly name = "FleetRenderError";
  readonly code = "rollout-render-failed";
  constructor(readonly failures: Array<{ team: string; error: string }>) {
    super(
      `${failures.length} team(s) cannot be rendered: ${failures
        .slice(0, 5)
        .map((f) => `${f.team} (${f.error})`)
        .join("; ")}${failures.length > 5 ? "; ..." : ""}`,
    );
  }

  /** Each team that cannot be rendered, and why: the team file or the platform config must change first. */
  override get issues(): FieldIssue[] {
    return this.failures.map((f) => ({ field: `teams.${f.team}`, rule: f.error }));
  }
}
