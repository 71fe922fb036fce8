import { z } from "zod";
import { teamConditionSchema } from "@berth/core";
import { brokenTeamsSchema, pullRequestSchema, revisionSchema, type PullRequestRef } from "./teams.js";

/**
 * A team's status per cluster, as the controller on that cluster wrote it to the Team object
 * (teams.berth.dev), and how a reader walks it: the status chain and one phase per cluster. The API
 * serves the shapes; the CLI (`berth status --watch`) and the status page read them with the same rules.
 */

/** A Team condition as the controller writes it (the shape is @berth/core's, shared with the controller). */
export const conditionSchema = teamConditionSchema;
export type Condition = z.infer<typeof conditionSchema>;

export const clusterStatusSchema = z.object({
  cluster: z.string(),
  environment: z.string(),
  /** reported: the controller wrote status; pending: the Team exists without status; absent: not applied (yet). */
  state: z.enum(["reported", "pending", "absent", "unreachable", "not-configured"]),
  ready: z.boolean(),
  revision: z
    .string()
    .optional()
    .describe(
      "The fleet commit Flux last applied or attempted there, `<branch>@sha1:<commit>`; a slice branch's commit " +
        "(per-slice fetch) is told as the main-branch commit it stands for",
    ),
  clientId: z.string().optional(),
  stale: z.boolean().describe("The status describes an older generation of the Team than the one applied"),
  conditions: z.array(conditionSchema),
});
export type ClusterStatus = z.infer<typeof clusterStatusSchema>;

export const statusResponse = z.object({
  team: z.string(),
  revision: revisionSchema.describe("The Flux repo commit the team spec was read from"),
  ready: z.boolean().describe("Ready on every cluster the team lands on"),
  clusters: z.array(clusterStatusSchema),
  review: pullRequestSchema
    .optional()
    .describe(
      "Pull-request mode: the team's last pull request, open, merged or closed without merge (recent ones only). A team " +
        "whose onboarding is in review, or was closed, has no cluster yet",
    ),
});
export type StatusResponse = z.infer<typeof statusResponse>;

/**
 * Where a team's last pull request stands, in words. `inFluxRepo`: the team is in the Flux repo (its earlier state
 * stands while a change to it is reviewed, and after one is closed).
 */
export function describeReview(review: PullRequestRef, inFluxRepo: boolean): string {
  const pr = `pull request #${review.number}`;
  switch (review.state) {
    case "open":
      return `${pr} waits for review; it applies once merged`;
    case "approved":
      return `${pr} is approved; it applies once merged`;
    case "changes-requested":
      return `${pr}: a reviewer requested changes`;
    case "merged":
      return `${pr} is merged`;
    case "closed":
      return inFluxRepo
        ? `${pr} was closed without merge: its change was dropped, the team stays as the Flux repo holds it`
        : `${pr} was closed without merge: nothing of it was applied`;
  }
}

/**
 * The steps a team walks on a cluster, in order: committed → Flux applied → each ASO kind Ready →
 * credential written → Ready. Each step lists the Team conditions (apps/controller's status chain) that
 * must all be True for it to be done.
 */
export const STATUS_CHAIN = [
  { step: "committed", label: "committed", short: "commit", conditions: [] },
  { step: "flux", label: "Flux applied", short: "flux", conditions: ["Rendered"] },
  { step: "resource-group", label: "resource group", short: "rg", conditions: ["ResourceGroupReady"] },
  { step: "identity", label: "identity", short: "identity", conditions: ["IdentityReady"] },
  {
    step: "federation",
    label: "federated credential",
    short: "fic",
    conditions: ["FederatedCredentialsReady", "FederationMatchesIssuer"],
  },
  { step: "role-assignments", label: "role assignments", short: "roles", conditions: ["RoleAssignmentsReady"] },
  { step: "credential", label: "credential written", short: "cred", conditions: ["CredentialWritten"] },
  // Flux's own Ready: its health checks pass once the ASO objects are Ready, so it completes last.
  { step: "ready", label: "Ready", short: "ready", conditions: ["KustomizationReady", "Ready"] },
] as const satisfies ReadonlyArray<{ step: string; label: string; short: string; conditions: readonly string[] }>;

export type ChainStepName = (typeof STATUS_CHAIN)[number]["step"];
export type StepState = "done" | "active" | "failed" | "waiting";

export interface ChainStep {
  step: ChainStepName;
  label: string;
  short: string;
  state: StepState;
  /** The condition that decides this step's state (the first one not True), when the controller reported it. */
  condition?: Condition;
}

/**
 * One word per team and cluster, for tables, fleet cells and counts:
 * ready; failed (an ASO object or the chain reports an Error); progressing (the controller reports, not
 * Ready yet); waiting (Flux has not applied the Team, or the controller has not reported yet);
 * unreachable (the API cannot read the cluster now); unobserved (the API has no access to that cluster).
 */
export const PHASES = ["ready", "progressing", "failed", "waiting", "unreachable", "unobserved"] as const;
export type Phase = (typeof PHASES)[number];

/** How a phase is written for people (tables, badges, the watch view). */
export const PHASE_LABELS: Record<Phase, string> = {
  ready: "Ready",
  progressing: "Progressing",
  failed: "Failed",
  waiting: "Waiting",
  unreachable: "Unreachable",
  unobserved: "Not observed",
};

const isTrue = (c: Condition | undefined) => c?.status === "True";
/** ASO marks what needs a person with severity Error; Warning and Info mean it is still retrying. */
export const isFailedCondition = (c: Condition) => c.status === "False" && c.severity === "Error";

/** The condition that explains why the team is not Ready on this cluster: the first Error, else the first not True. */
export function blockingCondition(status: ClusterStatus): Condition | undefined {
  const ordered = status.conditions.filter((c) => c.type !== "Ready");
  return (
    ordered.find(isFailedCondition) ??
    ordered.find((c) => c.status !== "True") ??
    status.conditions.find((c) => c.type === "Ready" && c.status !== "True")
  );
}

export function phaseOf(status: ClusterStatus): Phase {
  switch (status.state) {
    case "not-configured":
      return "unobserved";
    case "unreachable":
      return "unreachable";
    case "absent":
    case "pending":
      return "waiting";
    case "reported":
      // Ready wins: the controller keeps a team Ready through conditions that only inform, such as
      // PlatformValuesFresh=False (Azure unreachable, or the cluster's OIDC issuer off) with severity Error.
      if (status.ready && !status.stale) return "ready";
      if (
        status.conditions.some(isFailedCondition) ||
        status.conditions.some((c) => c.type === "Ready" && c.status === "False" && c.reason === "Failed")
      ) {
        return "failed";
      }
      return "progressing";
  }
}

/** The chain for one cluster: which steps are done, which one is active or failed, which still wait. */
export function statusChain(status: ClusterStatus): ChainStep[] {
  const byType = new Map(status.conditions.map((c) => [c.type, c]));
  let activeSeen = false;
  return STATUS_CHAIN.map((def): ChainStep => {
    const base = { step: def.step, label: def.label, short: def.short };
    if (def.step === "committed") return { ...base, state: "done" };
    if (status.state !== "reported") {
      // Nothing past "committed" is known until the controller reports. While the Team is absent or has no
      // status yet, Flux applying it is the step under way; an unreadable cluster shows no step under way.
      const waitingForFlux = status.state === "absent" || status.state === "pending";
      const state: StepState = def.step === "flux" && waitingForFlux ? "active" : "waiting";
      return { ...base, state };
    }
    const conditions = def.conditions.map((type) => byType.get(type));
    const firstNotTrue = conditions.findIndex((c) => !isTrue(c));
    const deciding = conditions[firstNotTrue];
    if (firstNotTrue === -1) {
      return {
        ...base,
        state: def.step === "ready" && status.stale ? "active" : "done",
        ...(conditions[0] ? { condition: conditions[0] } : {}),
      };
    }
    const failed = conditions.find((c) => c !== undefined && isFailedCondition(c));
    if (failed) {
      activeSeen = true;
      return { ...base, state: "failed", condition: failed };
    }
    const state: StepState = activeSeen ? "waiting" : "active";
    activeSeen = true;
    return { ...base, state, ...(deciding ? { condition: deciding } : {}) };
  });
}

/** One line saying where the team stands on the cluster, in words (for a CLI line or a cell's title). */
export function describeClusterStatus(status: ClusterStatus): string {
  switch (status.state) {
    case "not-configured":
      return "the API has no access to this cluster (api.clusters)";
    case "unreachable":
      return "the API cannot read this cluster right now";
    case "absent":
      return "waiting for Flux to apply the team";
    case "pending":
      return "waiting for the controller's first status";
    case "reported": {
      if (status.ready && !status.stale) return "Ready";
      if (status.ready && status.stale)
        return "Ready (status describes an older generation; the controller has not caught up)";
      const c = blockingCondition(status);
      if (!c) return "waiting for the controller";
      return describeCondition(c);
    }
  }
}

/** `IdentityReady: AzureError (Error): the message` — type, reason, ASO's severity when set, message. */
export function describeCondition(c: Condition): string {
  const reason = c.reason ? `: ${c.reason}` : "";
  const severity = c.severity ? ` (severity ${c.severity})` : "";
  const message = c.message && c.message !== c.reason ? `: ${c.message}` : "";
  return `${c.type}${reason}${severity}${message}`;
}

export const fleetTeamSchema = z.object({
  team: z.string(),
  ready: z.boolean(),
  clusters: z.array(clusterStatusSchema),
});
export const fleetResponse = z.object({
  revision: revisionSchema,
  teams: z.array(fleetTeamSchema),
  broken: brokenTeamsSchema,
});
export type FleetTeam = z.infer<typeof fleetTeamSchema>;
export type FleetResponse = z.infer<typeof fleetResponse>;
