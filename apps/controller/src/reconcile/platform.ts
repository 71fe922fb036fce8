import {
  CORE_PLATFORM_VARS,
  type Cluster,
  type ClusterFacts,
  type Platform,
  type PlatformCredential,
} from "@berth/core";
import { FIELD_MANAGER, MANAGED_BY, MANAGED_BY_LABEL } from "../names.js";
import { b64, type ConfigMapLike, type SecretLike } from "./objects.js";

/**
 * Platform decisions (pure): what `platform-vars` and the platform `aso-credential` must contain. Either
 * every value is known, or the answer says what is missing and nothing is written: Flux substitutes
 * strictly, and a half-written platform-vars would render teams with empty or stale values.
 */

export type Decision<T> = { ok: true; value: T } | { ok: false; reason: string; message: string };

/** The platform-vars data: the core keys from the provider's facts, plus every key the platform declares. */
export function platformVarsData(
  platform: Platform,
  cluster: Cluster,
  facts: ClusterFacts,
): Decision<Record<string, string>> {
  const core: Record<keyof typeof CORE_PLATFORM_VARS, string> = {
    TENANT_ID: facts.tenantId,
    SUBSCRIPTION_ID: facts.subscriptionId,
    CLUSTER_NAME: cluster.name,
    ENVIRONMENT: cluster.environment,
    CLUSTER_OIDC_ISSUER_URL: facts.oidcIssuerUrl,
    CLUSTER_OIDC: facts.oidcIssuerUrl,
    AZURE_LOCATION: facts.location,
  };
  const data: Record<string, string> = {};
  const missing: string[] = [];
  for (const [key, value] of Object.entries(core)) {
    if (value.trim()) data[key] = value;
    else missing.push(key);
  }
  for (const key of Object.keys(platform.platformVars)) {
    if (key in core) continue; // the core value wins; it is always written
    const value = cluster.vars[key];
    if (value?.trim()) data[key] = value;
    else missing.push(key);
  }
  if (missing.length) {
    return {
      ok: false,
      reason: "PlatformVarsIncomplete",
      message: `not writing ${platform.platformVarsConfigMap}: cluster ${cluster.name} has no value for ${missing.sort().join(", ")} (declared in platform.platformVars or required by Berth; set environments[].clusters[].vars)`,
    };
  }
  return { ok: true, value: sortKeys(data) };
}

export function platformVarsConfigMap(platform: Platform, data: Record<string, string>): ConfigMapLike {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: platform.platformVarsConfigMap,
      namespace: platform.asoNamespace,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY },
    },
    data,
  };
}

export const PLATFORM_CREDENTIAL_SECRET = "aso-credential";

/** ASO's credential for the platform's own resources (in the ASO namespace); data base64 as SSA needs. */
export function platformCredentialSecret(platform: Platform, cred: PlatformCredential): Decision<SecretLike> {
  const values = {
    AZURE_TENANT_ID: cred.tenantId,
    AZURE_SUBSCRIPTION_ID: cred.subscriptionId,
    AZURE_CLIENT_ID: cred.clientId,
  };
  const empty = Object.entries(values)
    .filter(([, v]) => !v.trim())
    .map(([k]) => k);
  if (empty.length)
    return {
      ok: false,
      reason: "PlatformCredentialIncomplete",
      message: `not writing the platform aso-credential: no value for ${empty.join(", ")}`,
    };
  return {
    ok: true,
    value: {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: PLATFORM_CREDENTIAL_SECRET,
        namespace: platform.asoNamespace,
        labels: { [MANAGED_BY_LABEL]: MANAGED_BY },
      },
      type: "Opaque",
      data: encodeData({ ...values, USE_WORKLOAD_IDENTITY_AUTH: "true" }),
    },
  };
}

export function encodeData(values: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(sortKeys(values)).map(([k, v]) => [k, b64(v)]));
}

function sortKeys(o: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * True when `current` already holds everything `desired` sets (data, labels, annotations, finalizers):
 * the apply would change nothing, so it is skipped. Fields others added are not our business here.
 */
export function satisfies(
  current: (ConfigMapLike & SecretLike) | undefined,
  desired: ConfigMapLike & SecretLike,
): boolean {
  if (!current) return false;
  const sub = (have: Record<string, string> | undefined, want: Record<string, string> | undefined) =>
    Object.entries(want ?? {}).every(([k, v]) => have?.[k] === v);
  return (
    sub(current.data, desired.data) &&
    sub(current.metadata?.labels, desired.metadata?.labels) &&
    sub(current.metadata?.annotations, desired.metadata?.annotations) &&
    (desired.metadata?.finalizers ?? []).every((f) => current.metadata?.finalizers?.includes(f))
  );
}

/** Field managers other than ours that own any of `fields` under `data` (a hand edit, another tool). */
export function foreignDataOwners(current: SecretLike | ConfigMapLike | undefined, fields: string[]): string[] {
  const owners = new Set<string>();
  for (const entry of current?.metadata?.managedFields ?? []) {
    if (!entry.manager || entry.manager === FIELD_MANAGER) continue;
    const data = (entry.fieldsV1 as Record<string, Record<string, unknown>> | undefined)?.["f:data"];
    if (data && fields.some((f) => `f:${f}` in data)) owners.add(entry.manager);
  }
  return [...owners].sort();
}
