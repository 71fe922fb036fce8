import type { WriteAction } from "./team-service.js";

/**
 * The audit trail's one line per change to the Flux repo (docs/operations.md, "Who changed a team"): every write
 * request (the HTTP audit plugin) and every commit the rollout engine makes on its own, in one shape, so one `jq`
 * over the API's logs finds them all.
 *
 * `proposed`: committed on a pull request's branch, not on the Flux repo's (pull-request mode); `withdrawn`: a pull
 * request closed without merge (a team only in review was offboarded).
 */
export type AuditOutcome = "committed" | "proposed" | "withdrawn" | "unchanged" | "replayed" | "refused" | "failed";
/**
 * Every write the API commits: a team's, an adoption, a rollout's start and its pause, resume and abort; and the
 * rollout engine's own steps: a wave committed, a wave's gate passed, a rollout halted.
 */
export type AuditedAction =
  | WriteAction
  | "adopt"
  | "rollout-start"
  | "rollout-pause"
  | "rollout-resume"
  | "rollout-abort"
  | "rollout-wave"
  | "rollout-wave-ready"
  | "rollout-halt";

export interface AuditLine {
  /** Who: the caller's principal, or the engine's own name for its steps. */
  principal: string | null;
  onBehalfOf: string | null;
  action: AuditedAction;
  team: string | null;
  rollout: string | null;
  /** The request's id; null for the engine's steps (no request). */
  requestId: string | null;
  idempotencyKey: string | null;
  revision: string | null;
  pullRequest: number | null;
  outcome: AuditOutcome;
  /** The HTTP status answered; null for the engine's steps. */
  status: number | null;
  problem: string | null;
}

/** Where audit lines go: written at info level whatever the log level (an audit trail is not optional). */
export type AuditSink = (line: AuditLine) => void;
