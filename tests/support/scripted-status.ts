import type { Cluster } from "@berth/core";
import type { ClusterStatus, TeamStatusReader } from "../../apps/api/src/adapters/team-status.js";

type Condition = ClusterStatus["conditions"][number];

/**
 * A TeamStatusReader whose answers the test writes: what each cluster's controller would report for a
 * team (GET /v1/teams/{name}/status). Unset pairs are `absent` (Flux has not applied the Team there).
 * For the rollout engine's logic; the end-to-end tests read real Team objects from a kube-apiserver.
 */
export class ScriptedStatusReader implements TeamStatusReader {
  private readonly statuses = new Map<string, Omit<ClusterStatus, "cluster" | "environment">>();
  /** Every (team, cluster) read, in order: what the gate looked at. */
  readonly reads: Array<{ team: string; cluster: string }> = [];

  async read(team: string, clusters: Cluster[]): Promise<ClusterStatus[]> {
    return clusters.map((c) => {
      this.reads.push({ team, cluster: c.name });
      const s = this.statuses.get(`${team}/${c.name}`) ?? {
        state: "absent" as const,
        ready: false,
        stale: false,
        conditions: [],
      };
      return { cluster: c.name, environment: c.environment, ...s };
    });
  }

  /**
   * The controller reports the team Ready at `revision` (a commit sha; reported as Flux does, `<ref>@sha1:<sha>`, the
   * main branch unless told: a slice's branch with per-slice fetch).
   */
  ready(team: string, cluster: string, revision: string, ref = "main"): void {
    this.statuses.set(`${team}/${cluster}`, {
      state: "reported",
      ready: true,
      stale: false,
      revision: `${ref}@sha1:${revision}`,
      conditions: [condition("Ready", "True", "Ready")],
    });
  }

  /** One of the team's ASO kinds reports Ready=False with severity Error (ASO gave up), at `revision`. */
  failed(team: string, cluster: string, revision: string, type: string, reason: string, message: string): void {
    this.statuses.set(`${team}/${cluster}`, {
      state: "reported",
      ready: false,
      stale: false,
      revision: `main@sha1:${revision}`,
      conditions: [
        condition(type, "False", reason, message, "Error"),
        condition("Ready", "False", "Failed", `${type}: ${reason}: ${message}`),
      ],
    });
  }

  /** Reported but not Ready yet (e.g. ASO still creating), at `revision`. */
  waiting(team: string, cluster: string, revision: string, type = "IdentityReady"): void {
    this.statuses.set(`${team}/${cluster}`, {
      state: "reported",
      ready: false,
      stale: false,
      revision: `main@sha1:${revision}`,
      conditions: [
        condition(type, "Unknown", "Reconciling", "ASO is creating the resource"),
        condition("Ready", "False", "Waiting", type),
      ],
    });
  }
}

function condition(
  type: string,
  status: "True" | "False" | "Unknown",
  reason: string,
  message = reason,
  severity?: string,
): Condition {
  return {
    type,
    status,
    reason,
    message,
    ...(severity ? { severity } : {}),
    lastTransitionTime: "2026-11-24T12:00:00Z",
    observedGeneration: 1,
  };
}
