import { conditionSeverities, conditionStatuses } from "@berth/core";
import { ASO_KINDS, TEAM_LABEL, type AsoKind } from "../names.js";
import type { ConditionLike, ConfigMapLike, KustomizationLike, TeamObject, WithConditions } from "./objects.js";
import { clientIdOf } from "./credential.js";

/**
 * A team's status as one view, computed from what Flux, ASO and the controller report (pure). The
 * controller writes it to `Team.status`; the API serves the same view at GET /v1/teams/{name}/status.
 *
 * Conditions chain in the order a team comes up (checked against real Flux: its `wait: true` health checks pass only
 * once the ASO objects are Ready, so Flux's Ready follows them):
 *   Rendered → ResourceGroupReady → IdentityReady → FederatedCredentialsReady → FederationMatchesIssuer →
 *   RoleAssignmentsReady → KustomizationReady → PlatformValuesFresh → CredentialWritten → Ready
 * Each condition states its own fact; Ready is True only when every other one is, and otherwise names
 * the first that is not — except PlatformValuesFresh: it says whether the platform values provider
 * (Azure) answers right now, not what the team can do. In an outage the team keeps a credential that
 * matches the last known values and stays Ready; an outage that does break something shows in the
 * condition it breaks (CredentialWritten, FederationMatchesIssuer).
 */

export type ConditionStatus = (typeof conditionStatuses)[number];
export type Severity = (typeof conditionSeverities)[number];

export interface TeamCondition {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  /** ASO's severity, carried for the per-kind conditions when ASO set one. */
  severity?: Severity;
  lastTransitionTime: string;
  observedGeneration: number;
}

/** What the credential step did on its last reconcile. */
export interface CredentialState {
  written: boolean;
  reason: string;
  message: string;
}

/** Whether the platform values provider answered this pass, and if not, why and what stood in. */
export type ValuesState =
  | { fresh: true }
  | { fresh: false; reason: string; severity: "Error" | "Warning"; message: string; lastKnownFrom?: string };

export const VALUES_CONDITION = "PlatformValuesFresh";

export interface TeamStatusInputs {
  team: TeamObject;
  /** The team's Flux Kustomization (`team-<team>` in the ASO namespace), when it exists. */
  kustomization?: KustomizationLike | undefined;
  /** The team's ASO objects (label berth.dev/team) by kind, e.g. { ResourceGroup: [...] }. */
  asoObjects: Partial<Record<string, WithConditions[]>>;
  /** The `<team>-identity` ConfigMap ASO writes. */
  identity?: ConfigMapLike | undefined;
  credential: CredentialState;
  /** Default: fresh. */
  values?: ValuesState;
  /**
   * The cluster's OIDC issuer as the platform values provider knows it now (what platform-vars carries);
   * undefined when not known. The team's FederatedIdentityCredential objects must trust exactly this one.
   */
  clusterIssuer?: string | undefined;
  /** Conditions as last written: lastTransitionTime is kept while a condition's status stays the same. */
  previous?: ConditionLike[] | undefined;
  /**
   * The commit behind an artifact Flux failed to apply (`artifactAttempt`): the team's ExternalArtifact's origin
   * revision while it still is that artifact. Read only then, by the reconciler.
   */
  attemptedOrigin?: string | undefined;
  now: Date;
}

export interface TeamStatusView {
  conditions: TeamCondition[];
  identity?: { clientId: string };
  revision?: string;
  observedGeneration: number;
  ready: boolean;
}

/** The team's federated credentials trust the cluster's current OIDC issuer (see federationCondition). */
export const FEDERATION_CONDITION = "FederationMatchesIssuer";
export const ISSUER_CHANGED = "IssuerChanged";

type Draft = Omit<TeamCondition, "lastTransitionTime" | "observedGeneration">;

export function teamStatusView(inputs: TeamStatusInputs): TeamStatusView {
  const { team, kustomization } = inputs;
  const name = team.metadata?.name ?? "";
  const generation = team.metadata?.generation ?? 0;
  const attempt = fluxFailedAttempt(kustomization);
  // A failed artifact (ADR 0019) is described by the commit it was cut from, when the reconciler could tell it.
  const failedAttempt = attempt && isArtifactRevision(attempt) ? (inputs.attemptedOrigin ?? attempt) : attempt;
  // The revision this status describes: the commit Flux applied (for an ExternalArtifact, the commit the artifact was
  // cut from), or the newer one it failed to apply (a rollout's gate must see that the wave's commit failed, not the
  // older revision still running).
  const s = kustomization?.status;
  const revision =
    failedAttempt ?? (s?.lastAppliedOriginRevision || s?.lastAppliedRevision || s?.lastAttemptedRevision || undefined);

  const drafts: Draft[] = [renderedCondition(kustomization, revision, failedAttempt !== undefined, name)];
  for (const kind of ASO_KINDS) {
    const objects = inputs.asoObjects[kind.kind] ?? [];
    drafts.push(asoCondition(kind, objects, expectedCount(kind, team), name));
    if (kind.kind === "FederatedIdentityCredential")
      drafts.push(federationCondition(objects, inputs.clusterIssuer, name));
  }
  // Flux's Ready comes after the ASO objects: with `wait: true` its health checks pass only once they are Ready.
  const fluxReady = fromReady("KustomizationReady", kustomization, `Flux Kustomization team-${name}`);
  drafts.push(failedAttempt ? { ...fluxReady, severity: "Error" } : fluxReady);
  drafts.push(valuesCondition(inputs.values ?? { fresh: true }));
  drafts.push({
    type: "CredentialWritten",
    status: inputs.credential.written ? "True" : "False",
    reason: inputs.credential.reason,
    message: inputs.credential.message,
  });
  const gating = drafts.filter((d) => d.type !== VALUES_CONDITION);
  const notTrue = gating.find((d) => d.status !== "True");
  const failed = gating.find((d) => d.status === "False" && d.severity === "Error");
  drafts.push(
    !notTrue
      ? {
          type: "Ready",
          status: "True",
          reason: "Ready",
          message: "the team's namespace, Azure resources and credential are in place",
        }
      : {
          type: "Ready",
          status: "False",
          reason: failed ? "Failed" : "Waiting",
          message: `${(failed ?? notTrue).type}: ${(failed ?? notTrue).reason}: ${(failed ?? notTrue).message}`,
        },
  );

  const conditions = drafts.map((d): TeamCondition => {
    const before = inputs.previous?.find((p) => p.type === d.type);
    const since =
      before && before.status === d.status && before.lastTransitionTime
        ? toIso(before.lastTransitionTime)
        : inputs.now.toISOString();
    // Never an empty message: a condition always says why.
    return {
      ...d,
      message: (d.message || d.reason).slice(0, 1024),
      lastTransitionTime: since,
      observedGeneration: generation,
    };
  });
  const clientId = clientIdOf(inputs.identity);
  return {
    conditions,
    ...(clientId ? { identity: { clientId } } : {}),
    ...(revision ? { revision } : {}),
    observedGeneration: generation,
    ready: !notTrue,
  };
}

function valuesCondition(v: ValuesState): Draft {
  const type = VALUES_CONDITION;
  if (v.fresh)
    return {
      type,
      status: "True",
      reason: "ValuesCurrent",
      message: "the platform values provider answers: tenant, subscription and OIDC issuer are current",
    };
  const standIn = v.lastKnownFrom
    ? `; the last known values (ConfigMap ${v.lastKnownFrom}) stand in until it answers again`
    : "; no last known values to stand in";
  return { type, status: "False", reason: v.reason, severity: v.severity, message: `${v.message}${standIn}` };
}

function expectedCount(kind: AsoKind, team: TeamObject): number {
  if (kind.kind === "RoleAssignment") return team.spec?.roleAssignments?.length ?? 0;
  return 1;
}

function readyOf(o: WithConditions | undefined): ConditionLike | undefined {
  return o?.status?.conditions?.find((c) => c.type === "Ready");
}

/** Ready of one object; Unknown when it has none yet or it describes an older generation. */
function fromReady(type: string, o: WithConditions | undefined, what: string): Draft {
  if (!o) return { type, status: "Unknown", reason: "NotFound", message: `${what} does not exist (yet)` };
  const ready = readyOf(o);
  if (!ready) return { type, status: "Unknown", reason: "Pending", message: `${what} has no Ready condition yet` };
  const gen = o.metadata?.generation;
  if (ready.observedGeneration !== undefined && gen !== undefined && ready.observedGeneration < gen) {
    return { type, status: "Unknown", reason: "Reconciling", message: `${what}: generation ${gen} not observed yet` };
  }
  return {
    type,
    status: asStatus(ready.status),
    reason: ready.reason || (ready.status === "True" ? "Ready" : "NotReady"),
    message: ready.message ?? "",
    ...(isSeverity(ready.severity) ? { severity: ready.severity } : {}),
  };
}

/**
 * Whether Flux has applied the team's manifests (at the revision the status describes): its apply succeeded, so the
 * objects are on the cluster, whether or not its health checks have passed yet (`Healthy` appears after the apply).
 * A build or apply Flux gave up on is False with severity Error.
 */
function renderedCondition(
  kustomization: KustomizationLike | undefined,
  revision: string | undefined,
  failed: boolean,
  team: string,
): Draft {
  const type = "Rendered";
  if (!kustomization)
    return {
      type,
      status: "False",
      reason: "KustomizationNotFound",
      message: `Flux Kustomization team-${team} does not exist (yet)`,
    };
  const ready = readyOf(kustomization);
  const readyReason = ready?.reason;
  if (failed && readyReason && NOT_APPLIED.has(readyReason)) {
    return {
      type,
      status: "False",
      reason: readyReason,
      severity: "Error",
      message: `Flux could not apply revision ${revision}: ${ready?.message ?? ""}`,
    };
  }
  const healthy = kustomization.status?.conditions?.some((c) => c.type === "Healthy");
  if (revision && (ready?.status === "True" || healthy))
    return { type, status: "True", reason: "Applied", message: `Flux applied revision ${revision}` };
  return {
    type,
    status: "Unknown",
    reason: "Pending",
    message: ready?.message
      ? `Flux has not applied the team's manifests yet: ${ready.message}`
      : "Flux has not applied the team's manifests yet",
  };
}

/** Flux's reasons for a revision it could not put on the cluster (build or apply); the others come after the apply. */
const NOT_APPLIED = new Set(["BuildFailed", "ReconciliationFailed", "ArtifactFailed"]);

/**
 * Flux's reasons for giving up on a revision: the build, the apply, the prune or the health checks failed. Flux
 * retries at retryInterval, but the same revision fails the same way; other reasons (a dependency or the source not
 * ready yet) are waits.
 */
const FLUX_FAILURES = new Set(["BuildFailed", "ReconciliationFailed", "PruneFailed", "HealthCheckFailed"]);

/** An ExternalArtifact's revision (`latest@sha256:<digest of its content>`), not a commit. */
function isArtifactRevision(revision: string): boolean {
  return revision.startsWith("latest@");
}

/**
 * The artifact revision Flux failed to apply, when the Kustomization reads an ExternalArtifact: the reconciler then
 * reads that artifact for the commit it was cut from (`attemptedOrigin`). Undefined otherwise.
 */
export function failedArtifactAttempt(kustomization: KustomizationLike | undefined): string | undefined {
  const attempt = fluxFailedAttempt(kustomization);
  return attempt && isArtifactRevision(attempt) ? attempt : undefined;
}

/** The revision Flux tried and failed to apply (newer than the one it runs), or undefined. */
function fluxFailedAttempt(kustomization: KustomizationLike | undefined): string | undefined {
  const ready = kustomization ? readyOf(kustomization) : undefined;
  const { lastAppliedRevision, lastAttemptedRevision } = kustomization?.status ?? {};
  if (ready?.status !== "False" || !FLUX_FAILURES.has(ready.reason ?? "") || !lastAttemptedRevision) return undefined;
  return lastAttemptedRevision !== lastAppliedRevision ? lastAttemptedRevision : undefined;
}

const RANK: Record<string, number> = {
  "False/Error": 0,
  "False/Warning": 1,
  "False/": 2,
  "False/Info": 2,
  "Unknown/": 3,
};
function rank(d: Draft): number {
  if (d.status === "True") return 9;
  return RANK[`${d.status}/${d.severity ?? ""}`] ?? (d.status === "False" ? 2 : 3);
}

/** The worst Ready of the team's objects of one ASO kind (Error before Warning before pending). */
function asoCondition(kind: AsoKind, objects: WithConditions[], expected: number, team: string): Draft {
  const type = kind.condition;
  const each = objects
    .map((o) => ({ name: o.metadata?.name ?? "?", d: fromReady(type, o, `${kind.kind} ${o.metadata?.name ?? "?"}`) }))
    .sort((a, b) => rank(a.d) - rank(b.d) || a.name.localeCompare(b.name));
  const [worst] = each;
  if (!worst) {
    return expected === 0
      ? { type, status: "True", reason: "NoneRequested", message: `the team requests no ${kind.kind}` }
      : { type, status: "Unknown", reason: "NotFound", message: `no ${kind.kind} labelled ${TEAM_LABEL}=${team} yet` };
  }
  if (worst.d.status === "True") {
    return {
      type,
      status: "True",
      reason: worst.d.reason,
      message: objects.length === 1 ? worst.d.message : `${objects.length} ${kind.kind} objects Ready`,
    };
  }
  const notReady = each.filter((e) => e.d.status !== "True").length;
  const prefix = objects.length > 1 ? `${notReady}/${objects.length} not Ready; ` : "";
  // Objects as bad as the worst are named too, with their own reason: one must not hide the other's (two credentials
  // that wait, one on ASO's retry of Azure's 409 and one on another Warning, are both what holds the team).
  const worstRank = rank(worst.d);
  const tied = each.slice(1).filter((e) => rank(e.d) === worstRank);
  const others = tied.slice(0, MAX_TIED_NAMED).map((e) => `; ${e.name} (${e.d.reason}): ${e.d.message}`);
  const more = tied.length > MAX_TIED_NAMED ? `; and ${tied.length - MAX_TIED_NAMED} more` : "";
  return { ...worst.d, message: `${prefix}${worst.name}: ${worst.d.message}${others.join("")}${more}` };
}
const MAX_TIED_NAMED = 3;

type FederatedCredentialLike = WithConditions & {
  spec?: { issuer?: unknown; issuerFromConfig?: unknown };
  status?: { issuer?: unknown };
};

/**
 * The issuer a FederatedIdentityCredential object trusts: `spec.issuer` as Flux applied it after substitution, or
 * for one that reads its issuer from a ConfigMap (templates v3 chain a team's credentials), the issuer ASO last
 * wrote to Azure (`status.issuer`).
 */
export function issuerOf(fic: WithConditions): string | undefined {
  const { spec, status } = fic as FederatedCredentialLike;
  const issuer = readsIssuerFromConfig(fic) ? status?.issuer : spec?.issuer;
  return typeof issuer === "string" && issuer ? issuer : undefined;
}

/** A credential of templates v3's chain after the first: no issuer of its own, it reads one from a ConfigMap. */
function readsIssuerFromConfig(fic: WithConditions): boolean {
  const { spec } = fic as FederatedCredentialLike;
  return spec?.issuerFromConfig !== undefined && !spec.issuer;
}

/** A chained credential ASO has not written to Azure yet trusts nothing so far: FederatedCredentialsReady says why it waits. */
function notInAzureYet(fic: WithConditions): boolean {
  return readsIssuerFromConfig(fic) && issuerOf(fic) === undefined;
}

/**
 * Do the team's FederatedIdentityCredential objects trust the cluster's current OIDC issuer? After the
 * issuer changes (cluster rebuilt, OIDC re-enabled) every credential still trusting the old one makes the
 * team's workload-identity tokens useless, although ASO still reports them Ready: False (IssuerChanged,
 * severity Warning) until Flux re-applies them with the new value from platform-vars. Computed from the
 * watched ASO objects only: no Azure call.
 */
export function federationCondition(fics: WithConditions[], clusterIssuer: string | undefined, team: string): Draft {
  const type = FEDERATION_CONDITION;
  if (fics.length === 0)
    return {
      type,
      status: "Unknown",
      reason: "NotFound",
      message: `no FederatedIdentityCredential labelled ${TEAM_LABEL}=${team} yet`,
    };
  if (!clusterIssuer)
    return {
      type,
      status: "Unknown",
      reason: "IssuerUnknown",
      message: "the cluster's OIDC issuer is not known (yet)",
    };
  const placed = fics.filter((f) => !notInAzureYet(f));
  const stale = placed
    .filter((f) => issuerOf(f) !== clusterIssuer)
    .sort((a, b) => (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? ""));
  if (stale.length === 0) {
    const waiting = fics.length - placed.length;
    return {
      type,
      status: "True",
      reason: "IssuerMatches",
      message:
        waiting > 0
          ? `the ${placed.length} federated credential(s) in Azure so far trust the cluster's OIDC issuer ${clusterIssuer}; ${waiting} wait(s) for the one before them`
          : `${fics.length === 1 ? "the federated credential trusts" : `all ${fics.length} federated credentials trust`} the cluster's OIDC issuer ${clusterIssuer}`,
    };
  }
  const old = [...new Set(stale.map((f) => issuerOf(f) ?? "(no issuer)"))].sort();
  const names = stale.map((f) => f.metadata?.name ?? "?");
  return {
    type,
    status: "False",
    reason: ISSUER_CHANGED,
    severity: "Warning",
    message:
      `the cluster's OIDC issuer changed from ${old.join(", ")} to ${clusterIssuer}: ` +
      `FederatedIdentityCredential ${names.join(", ")} still ${names.length === 1 ? "trusts" : "trust"} the old issuer; ` +
      `workload identity fails until Flux re-applies ${names.length === 1 ? "it" : "them"} with the new value of platform-vars` +
      (stale.some(readsIssuerFromConfig)
        ? " (a credential that reads its issuer from the one before it follows once ASO has updated that one)"
        : ""),
  };
}

function asStatus(s: string | undefined): ConditionStatus {
  return s === "True" || s === "False" ? s : "Unknown";
}

function isSeverity(s: string | undefined): s is Severity {
  return s === "Error" || s === "Warning" || s === "Info";
}

function toIso(t: Date | string): string {
  return typeof t === "string" ? t : t.toISOString();
}

/** True when two views would write the same status (so the write can be skipped). */
export function sameStatus(a: TeamStatusView, current: Record<string, unknown> | undefined): boolean {
  if (!current) return false;
  const norm = (v: unknown) => JSON.stringify(canonical(v));
  return (
    norm(statusBody(a)) ===
    norm({
      conditions: current.conditions,
      ...(current.identity ? { identity: current.identity } : {}),
      ...(current.revision ? { revision: current.revision } : {}),
      observedGeneration: current.observedGeneration,
    })
  );
}

/** The `status` object written to the Team. */
export function statusBody(v: TeamStatusView): Record<string, unknown> {
  return {
    conditions: v.conditions,
    ...(v.identity ? { identity: v.identity } : {}),
    ...(v.revision ? { revision: v.revision } : {}),
    observedGeneration: v.observedGeneration,
  };
}

/** JSON with sorted keys and dates as ISO strings: the apiserver returns custom resources' keys sorted. */
function canonical(v: unknown): unknown {
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === "object") {
    return Object.fromEntries(
      Object.entries(v as Record<string, unknown>)
        .filter(([, x]) => x !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, x]) => [k, canonical(x)]),
    );
  }
  return v;
}
