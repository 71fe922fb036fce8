import { teamConditionSchema, type Platform } from "@berth/core";
import {
  ASO_KINDS,
  CLIENT_ID_ANNOTATION,
  FLUX_KUSTOMIZATION,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  PLATFORM_KEY,
  TEAM_GROUP,
  TEAM_LABEL,
  TEAM_PLURAL,
  TEAM_ROLE_BINDING,
  TEAM_VERSION,
  teamKey,
  WAKE_ANNOTATION,
} from "./names.js";
import {
  type ConditionLike,
  type ConfigMapLike,
  type KubeObject,
  type KustomizationLike,
  type Meta,
  type SecretLike,
  type TeamObject,
  type WithConditions,
} from "./reconcile/objects.js";
import { PLATFORM_CREDENTIAL_SECRET } from "./reconcile/platform.js";

/**
 * What the controller watches, what it keeps of each object, and which work-queue keys a change maps to.
 * Informers only enqueue keys; reconcilers read these caches (never the events) to decide.
 *
 * Each watch keeps only the fields the reconcilers read (`keep`): no managedFields (a Secret's are
 * summarised to who owns which data key), no other annotations, no unused data or status. That is most
 * of the controller's memory, and a cached object is small enough to copy and compare cheaply.
 */

/** The read side of an informer handle. */
export interface Store<T> {
  get(namespace: string | undefined, name: string): T | undefined;
  list(): T[];
  /** Objects whose index `index` has `value` (WatchSpec.indexers); scans list() when absent (test fakes). */
  byIndex?(index: string, value: string): T[];
}

export interface WatchSpec {
  name: string;
  /** Collection path the informer lists and watches. */
  path: string;
  labelSelector?: string;
  /**
   * Sent with the list and the watch. `metadata.name=<name>` lets RBAC authorize the list/watch against
   * `resourceNames` (the apiserver treats it as a request for that name).
   */
  fieldSelector?: string;
  /** What is cached of each object: only what the reconcilers read. */
  keep(raw: KubeObject): KubeObject;
  indexers?: Record<string, (obj: KubeObject) => string[]>;
  /** Work-queue keys an object of this watch maps to. */
  keys(obj: KubeObject): string[];
}

/** Index of objects by their `berth.dev/team` label. */
export const BY_TEAM = "team";
/** Index of `<team>-identity` ConfigMaps by clientId (whose identity a credential points at). */
export const BY_CLIENT_ID = "clientId";

// ---- what is kept of each kind --------------------------------------------------------------------------

function pick<T extends Record<string, unknown>>(
  from: T | undefined,
  keys: readonly string[],
): Record<string, string> | undefined {
  if (!from) return undefined;
  let out: Record<string, string> | undefined;
  for (const k of keys) {
    const v = from[k];
    if (typeof v === "string") (out ??= {})[k] = v;
  }
  return out;
}

/** Identity, version and lifecycle: what every kept object has. */
function baseMeta(m: Meta | undefined, extra: Partial<Meta> = {}): Meta {
  const out: Meta = { name: m?.name ?? "", resourceVersion: m?.resourceVersion ?? "" };
  if (m?.namespace) out.namespace = m.namespace;
  if (m?.uid) out.uid = m.uid;
  if (m?.generation !== undefined) out.generation = m.generation;
  if (m?.deletionTimestamp) out.deletionTimestamp = m.deletionTimestamp;
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}

const teamLabel = (m: Meta | undefined) => pick(m?.labels, [TEAM_LABEL]);

/** The Ready condition only: the one every status check reads. */
function readyOnly(status: { conditions?: ConditionLike[] } | undefined): ConditionLike[] | undefined {
  const ready = status?.conditions?.find((c) => c?.type === "Ready");
  return ready ? [ready] : undefined;
}

/** A Secret's managedFields reduced to who owns which `data` key (tamper attribution reads nothing else). */
function dataOwnership(m: Meta | undefined): Meta["managedFields"] {
  return m?.managedFields?.map((e) => {
    const data = (e.fieldsV1 as Record<string, unknown> | undefined)?.["f:data"];
    return {
      ...(e.manager ? { manager: e.manager } : {}),
      ...(data && typeof data === "object" ? { fieldsV1: { "f:data": data } } : {}),
    };
  });
}

function keepTeam(raw: KubeObject): TeamObject {
  const o = raw as TeamObject;
  const roles = Array.isArray(o.spec?.roleAssignments)
    ? o.spec.roleAssignments.filter((r) => typeof r?.role === "string").map((r) => ({ role: r.role }))
    : undefined;
  // The boundary: status conditions are read back (lastTransitionTime is kept across passes); a malformed
  // one (hand-edited) is dropped here, and the next status write replaces it.
  const conditions = (o.status?.conditions ?? []).filter((c) => teamConditionSchema.safeParse(c).success);
  const status = o.status ? { ...o.status, conditions } : undefined;
  return {
    metadata: baseMeta(o.metadata),
    ...(roles ? { spec: { roleAssignments: roles } } : {}),
    ...(status ? { status } : {}),
  };
}

function keepAsoConfigMap(platform: Platform) {
  return (raw: KubeObject): ConfigMapLike => {
    const o = raw as ConfigMapLike;
    const name = o.metadata?.name ?? "";
    if (name === platform.platformVarsConfigMap) {
      return {
        metadata: baseMeta(o.metadata, { labels: o.metadata?.labels, annotations: o.metadata?.annotations }),
        ...(o.data ? { data: o.data } : {}),
      };
    }
    if (name.endsWith("-identity")) {
      const data = pick(o.data, ["clientId", "tenantId"]);
      return { metadata: baseMeta(o.metadata), ...(data ? { data } : {}) };
    }
    // Some other ConfigMap of the namespace (a credential's issuer, say): its name, and when it was woken last.
    const annotations = pick(o.metadata?.annotations, [WAKE_ANNOTATION]);
    return { metadata: baseMeta(o.metadata, annotations ? { annotations } : {}) };
  };
}

function keepSecret(raw: KubeObject): SecretLike {
  const o = raw as SecretLike;
  const m = o.metadata;
  return {
    metadata: baseMeta(m, {
      labels: m?.labels,
      annotations: m?.annotations,
      finalizers: m?.finalizers,
      managedFields: dataOwnership(m),
    }),
    ...(o.type ? { type: o.type } : {}),
    ...(o.data ? { data: o.data } : {}),
  };
}

function keepServiceAccount(raw: KubeObject): KubeObject {
  const m = raw.metadata;
  return { metadata: baseMeta(m, { labels: teamLabel(m), annotations: pick(m?.annotations, [CLIENT_ID_ANNOTATION]) }) };
}

function keepRoleBinding(raw: KubeObject): KubeObject {
  const m = raw.metadata;
  return { metadata: baseMeta(m, { labels: teamLabel(m), finalizers: m?.finalizers }) };
}

function keepKustomization(raw: KubeObject): KustomizationLike {
  const o = raw as KustomizationLike;
  const s = o.status;
  // Ready, and Healthy: Flux sets it once its apply succeeded (the team's objects are on the cluster).
  const conditions = s?.conditions?.filter((c) => c?.type === "Ready" || c?.type === "Healthy");
  const status = s
    ? {
        ...(conditions?.length ? { conditions } : {}),
        ...pick(s as Record<string, unknown>, [
          "lastAppliedRevision",
          "lastAttemptedRevision",
          "lastAppliedOriginRevision",
        ]),
      }
    : undefined;
  // The source it reads: on a failed apply, the reconciler reads that ExternalArtifact for the commit it came from.
  const sourceRef = o.spec?.sourceRef;
  return {
    metadata: baseMeta(o.metadata, { labels: teamLabel(o.metadata) }),
    ...(sourceRef ? { spec: { sourceRef: pick(sourceRef, ["kind", "name", "namespace"]) } } : {}),
    ...(status ? { status } : {}),
  };
}

function keepAsoObject(raw: KubeObject): WithConditions {
  const o = raw as WithConditions & {
    spec?: { issuer?: unknown; issuerFromConfig?: unknown };
    status?: { issuer?: unknown };
  };
  const conditions = readyOnly(o.status);
  // What a federated credential trusts: its issuer, or (templates v3) the ConfigMap it reads it from and the
  // issuer ASO last wrote to Azure.
  const issuer = typeof o.spec?.issuer === "string" ? o.spec.issuer : undefined;
  const fromConfig = o.spec?.issuerFromConfig !== undefined;
  const inAzure = fromConfig && typeof o.status?.issuer === "string" ? o.status.issuer : undefined;
  return {
    metadata: baseMeta(o.metadata, { labels: teamLabel(o.metadata) }),
    ...(issuer || fromConfig
      ? {
          spec: {
            ...(issuer ? { issuer } : {}),
            ...(fromConfig ? { issuerFromConfig: o.spec?.issuerFromConfig } : {}),
          },
        }
      : {}),
    ...(conditions || inAzure
      ? { status: { ...(conditions ? { conditions } : {}), ...(inAzure ? { issuer: inAzure } : {}) } }
      : {}),
  } as WithConditions;
}

export const byTeamLabel = (o: KubeObject) => (o.metadata?.labels?.[TEAM_LABEL] ? [o.metadata.labels[TEAM_LABEL]] : []);

/** The controller's watches, for one platform config. Paths are the exact collections RBAC grants. */
export function watchSpecs(platform: Platform): Record<WatchName, WatchSpec> {
  const aso = platform.asoNamespace;
  const nameOf = (o: KubeObject) => o.metadata?.name ?? "";
  const labelTeam = (o: KubeObject) => byTeamLabel(o).map(teamKey);
  const asoSpecs = Object.fromEntries(
    ASO_KINDS.map((k) => [
      `aso:${k.kind}`,
      {
        name: `aso-${k.plural}`,
        path: `/apis/${k.group}/${k.version}/namespaces/${aso}/${k.plural}`,
        labelSelector: TEAM_LABEL,
        keep: keepAsoObject,
        indexers: { [BY_TEAM]: byTeamLabel },
        keys: labelTeam,
      },
    ]),
  ) as Record<`aso:${string}`, WatchSpec>;
  return {
    teams: {
      name: "teams",
      path: `/apis/${TEAM_GROUP}/${TEAM_VERSION}/${TEAM_PLURAL}`,
      keep: keepTeam,
      keys: (o) => [teamKey(nameOf(o))],
    },
    asoConfigMaps: {
      name: "aso-configmaps",
      path: `/api/v1/namespaces/${aso}/configmaps`,
      keep: keepAsoConfigMap(platform),
      indexers: {
        [BY_CLIENT_ID]: (o) => {
          const id = (o as ConfigMapLike).data?.clientId?.trim();
          return id && nameOf(o).endsWith("-identity") ? [id] : [];
        },
      },
      keys: (o) => {
        const name = nameOf(o);
        if (name === platform.platformVarsConfigMap) return [PLATFORM_KEY];
        return name.endsWith("-identity") && name.length > 9 ? [teamKey(name.slice(0, -9))] : [];
      },
    },
    asoSecrets: {
      name: "aso-secrets",
      path: `/api/v1/namespaces/${aso}/secrets`,
      labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}`,
      keep: keepSecret,
      keys: (o) => (nameOf(o) === PLATFORM_CREDENTIAL_SECRET ? [PLATFORM_KEY] : []),
    },
    teamSecrets: {
      name: "team-secrets",
      path: "/api/v1/secrets",
      labelSelector: TEAM_LABEL,
      keep: keepSecret,
      keys: (o) => {
        if (nameOf(o) !== "aso-credential" || o.metadata?.namespace === aso) return [];
        // The namespace is the team; a label naming another team is tampering, so look at both.
        return [...new Set([teamKey(o.metadata?.namespace ?? ""), ...labelTeam(o)])];
      },
    },
    serviceAccounts: {
      name: "serviceaccounts",
      path: "/api/v1/serviceaccounts",
      labelSelector: TEAM_LABEL,
      keep: keepServiceAccount,
      keys: (o) => (nameOf(o) === "workload" ? [teamKey(o.metadata?.namespace ?? "")] : []),
    },
    // The controller's own RoleBinding in each team namespace: offboarding releases its finalizer last.
    // Name-selected, so RBAC grants the list/watch for that name only.
    roleBindings: {
      name: "rolebindings",
      path: "/apis/rbac.authorization.k8s.io/v1/rolebindings",
      fieldSelector: `metadata.name=${TEAM_ROLE_BINDING}`,
      labelSelector: TEAM_LABEL,
      keep: keepRoleBinding,
      keys: (o) =>
        nameOf(o) === TEAM_ROLE_BINDING && o.metadata?.namespace && o.metadata.namespace !== aso
          ? [teamKey(o.metadata.namespace)]
          : [],
    },
    kustomizations: {
      name: "kustomizations",
      path: `/apis/${FLUX_KUSTOMIZATION.group}/${FLUX_KUSTOMIZATION.version}/namespaces/${aso}/${FLUX_KUSTOMIZATION.plural}`,
      labelSelector: TEAM_LABEL,
      keep: keepKustomization,
      keys: labelTeam,
    },
    ...asoSpecs,
  };
}

export type WatchName =
  | "teams"
  | "asoConfigMaps"
  | "asoSecrets"
  | "teamSecrets"
  | "serviceAccounts"
  | "roleBindings"
  | "kustomizations"
  | `aso:${string}`;

/**
 * The watch whose cache holds an object the controller has just written (read-your-writes): the answer
 * of an apply goes there at once, so the next pass does not act on the state from before the write.
 */
export function watchOf(platform: Platform, obj: KubeObject): WatchName | undefined {
  const ns = obj.metadata?.namespace;
  switch (obj.kind) {
    case "Team":
      return "teams";
    case "ConfigMap":
      return ns === platform.asoNamespace ? "asoConfigMaps" : undefined;
    case "Secret":
      return ns === platform.asoNamespace ? "asoSecrets" : "teamSecrets";
    case "ServiceAccount":
      return "serviceAccounts";
    case "RoleBinding":
      return "roleBindings";
    default:
      return undefined;
  }
}
