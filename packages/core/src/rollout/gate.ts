import { clustersOf } from "../context.js";
import type { Platform } from "../platform.js";
import type { Team } from "../team.js";
import type { GateTeamReport } from "./model.js";

/** The gate of a wave: pure, judged from the status observations and the time the caller gives. */

/** A team's status on one cluster, as the API reads it (GET /v1/teams/{name}/status), for the gate. */
export interface GateObservation {
  team: string;
  cluster: string;
  /** reported, pending, absent, unreachable, not-configured. */
  state: string;
  ready: boolean;
  stale: boolean;
  /** Does the revision this status describes include the wave's commit? undefined: no revision reported. */
  includesWave: boolean | undefined;
  revision?: string | undefined;
  conditions: ReadonlyArray<{
    type: string;
    status: string;
    reason?: string | undefined;
    message?: string | undefined;
    severity?: string | undefined;
  }>;
}

export interface GateDecision {
  verdict: "pass" | "wait" | "halt";
  reason?: "Failed" | "Timeout";
  message: string;
  teams: GateTeamReport[];
}

/** Judges one team on one cluster: ready, failed (a condition False with severity Error), or waiting (why). */
export function judge(o: GateObservation): GateTeamReport {
  const base = { team: o.team, cluster: o.cluster, state: o.state };
  if (o.state !== "reported") return { ...base, result: "waiting", message: stateMessage(o.state) };
  if (o.includesWave !== true) {
    const notApplied = `Flux has not applied the wave's commit on this cluster yet${o.revision ? ` (applied: ${o.revision})` : ""}`;
    // Flux applies a new revision only once the health checks of the one it is applying end (by default at the
    // Kustomization's timeout): what holds that revision (e.g. ASO retrying AuthorizationFailed) is what to fix.
    const holding = o.conditions.find((c) => c.type !== "Ready" && c.status !== "True");
    if (!holding) return { ...base, result: "waiting", message: notApplied };
    const fields = conditionFields(holding);
    return {
      ...base,
      result: "waiting",
      ...fields,
      message: `${notApplied}; it is held by ${holding.type}${fields.message ? `: ${fields.message}` : ""}`.slice(
        0,
        1000,
      ),
    };
  }
  if (o.stale) return { ...base, result: "waiting", message: "the controller has not observed the applied Team yet" };
  const failed = o.conditions.find((c) => c.status === "False" && c.severity === "Error");
  if (failed) return { ...base, result: "failed", ...conditionFields(failed) };
  if (o.ready) return { ...base, result: "ready" };
  const holding =
    o.conditions.find((c) => c.type !== "Ready" && c.status !== "True") ?? o.conditions.find((c) => c.type === "Ready");
  return {
    ...base,
    result: "waiting",
    ...(holding ? conditionFields(holding) : { message: "no conditions reported yet" }),
  };
}

function conditionFields(c: GateObservation["conditions"][number]): Partial<GateTeamReport> {
  return {
    condition: c.type,
    ...(c.reason ? { reason: c.reason } : {}),
    ...(c.severity ? { severity: c.severity } : {}),
    ...(c.message ? { message: c.message.slice(0, 1000) } : {}),
  };
}

function stateMessage(state: string): string {
  switch (state) {
    case "absent":
      return "Flux has not applied the Team on this cluster yet";
    case "pending":
      return "the controller has not reported the Team's status yet";
    case "unreachable":
      return "the cluster cannot be reached";
    case "not-configured":
      return "the API has no access to this cluster (api.clusters)";
    default:
      return state;
  }
}

/**
 * The gate of a committed wave: pass when every team is Ready on every cluster it lands on (for the
 * wave's commit), halt at once when one failed, halt when the wave is not Ready `timeoutSeconds` after
 * `gateSince`, otherwise wait. Pure: the observations and the time are the caller's.
 */
export function gateDecision(input: {
  observations: readonly GateObservation[];
  now: Date;
  gateSince: Date;
  timeoutSeconds: number;
}): GateDecision {
  const teams = input.observations.map(judge);
  const failed = teams.filter((t) => t.result === "failed");
  const [first] = failed;
  if (first) {
    return {
      verdict: "halt",
      reason: "Failed",
      message:
        `${failed.length} team/cluster pair(s) failed; first: ${first.team} on ${first.cluster}: ${first.condition} ${first.reason ?? ""}`.trim(),
      teams: failed,
    };
  }
  const waiting = teams.filter((t) => t.result !== "ready");
  if (waiting.length === 0) return { verdict: "pass", message: `${teams.length} team/cluster pair(s) Ready`, teams };
  const elapsed = (input.now.getTime() - input.gateSince.getTime()) / 1000;
  if (elapsed > input.timeoutSeconds) {
    return {
      verdict: "halt",
      reason: "Timeout",
      message: `${waiting.length} team/cluster pair(s) not Ready after ${input.timeoutSeconds} s`,
      teams: waiting,
    };
  }
  return { verdict: "wait", message: `${teams.length - waiting.length}/${teams.length} Ready`, teams };
}

/** The clusters a team lands on (the gate checks each). */
export function gateClusters(team: Team, platform: Platform): string[] {
  return clustersOf(team, platform).map((c) => c.name);
}
