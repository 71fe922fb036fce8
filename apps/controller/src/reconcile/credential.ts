import { GUID, teamNames, type ClusterFacts } from "@berth/core";
import { CLIENT_ID_ANNOTATION, CREDENTIAL_FINALIZER, MANAGED_BY, MANAGED_BY_LABEL, TEAM_LABEL } from "../names.js";
import { unb64, type ConfigMapLike, type KubeObject, type SecretLike } from "./objects.js";
import { encodeData, foreignDataOwners, type Decision } from "./platform.js";

/**
 * Team credential decisions (pure): what the team's `aso-credential` Secret and the `workload`
 * ServiceAccount's client-id annotation must be, and how the live Secret differs from that.
 */

export interface TeamCredential {
  tenantId: string;
  subscriptionId: string;
  clientId: string;
}

/** The client id ASO exported for a team, or undefined when the ConfigMap or key is missing/blank. */
export function clientIdOf(identity: ConfigMapLike | undefined): string | undefined {
  const id = identity?.data?.clientId?.trim();
  return id ? id : undefined;
}

/**
 * The credential once every value is known: clientId (and tenantId when ASO wrote it) from the
 * `<team>-identity` ConfigMap, the subscription (and tenant otherwise) from the provider. Anything
 * missing or malformed → not ok, and nothing is written.
 */
export function desiredTeamCredential(
  team: string,
  identity: ConfigMapLike | undefined,
  facts: Pick<ClusterFacts, "tenantId" | "subscriptionId"> | undefined,
  asoNamespace: string,
): Decision<TeamCredential> {
  const cmName = teamNames(team).identityConfigMap;
  if (!identity)
    return {
      ok: false,
      reason: "IdentityPending",
      message: `waiting for ASO to write ConfigMap ${asoNamespace}/${cmName}`,
    };
  const clientId = clientIdOf(identity);
  if (!clientId)
    return { ok: false, reason: "IdentityPending", message: `ConfigMap ${asoNamespace}/${cmName} has no clientId yet` };
  if (!GUID.test(clientId))
    return {
      ok: false,
      reason: "IdentityInvalid",
      message: `ConfigMap ${asoNamespace}/${cmName} has a clientId that is not a GUID`,
    };
  const tenantId = identity.data?.tenantId?.trim() || facts?.tenantId;
  if (!tenantId)
    return {
      ok: false,
      reason: "TenantUnknown",
      message: "the tenant id is not known yet (neither ASO nor the platform values provider gave one)",
    };
  if (!GUID.test(tenantId))
    return { ok: false, reason: "IdentityInvalid", message: `tenant id of ${cmName} is not a GUID` };
  if (facts?.tenantId && tenantId !== facts.tenantId) {
    return {
      ok: false,
      reason: "TenantMismatch",
      message: `ConfigMap ${cmName} names tenant ${tenantId}, the cluster's tenant is ${facts.tenantId}`,
    };
  }
  if (!facts?.subscriptionId)
    return {
      ok: false,
      reason: "SubscriptionUnknown",
      message: "the subscription id is not known yet (platform values provider)",
    };
  return { ok: true, value: { tenantId, subscriptionId: facts.subscriptionId, clientId } };
}

/** The team's aso-credential Secret as the controller applies it (data base64: SSA merges `data`, not `stringData`). */
export function teamCredentialSecret(team: string, cred: TeamCredential): SecretLike {
  const names = teamNames(team);
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: names.asoCredentialSecret,
      namespace: names.namespace,
      labels: { [TEAM_LABEL]: team, [MANAGED_BY_LABEL]: MANAGED_BY },
      finalizers: [CREDENTIAL_FINALIZER],
    },
    type: "Opaque",
    data: encodeData({
      AZURE_TENANT_ID: cred.tenantId,
      AZURE_SUBSCRIPTION_ID: cred.subscriptionId,
      AZURE_CLIENT_ID: cred.clientId,
      USE_WORKLOAD_IDENTITY_AUTH: "true",
    }),
  };
}

/** Only the client-id annotation: the rest of the ServiceAccount belongs to Flux. */
export function workloadServiceAccountPatch(team: string, clientId: string): KubeObject {
  const names = teamNames(team);
  return {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: {
      name: names.serviceAccount,
      namespace: names.namespace,
      annotations: { [CLIENT_ID_ANNOTATION]: clientId },
    },
  };
}

export type CredentialDrift =
  | { kind: "in-sync" }
  | { kind: "missing" }
  /** Data intact, but our labels or finalizer were removed. */
  | { kind: "metadata" }
  /** Our own earlier value (the identity's client id changed, or a new subscription/tenant): a rotation. */
  | { kind: "rotated"; fromClientId: string | undefined; toClientId: string }
  /** Someone else changed or added data: reverted, and reported as a Warning. */
  | {
      kind: "tampered";
      changed: string[];
      extraKeys: string[];
      owners: string[];
      clientId: string | undefined;
      otherTeam: string | undefined;
    };

/**
 * How the live Secret differs from the desired one. A change is "tampered" when another field manager
 * owns a changed key, when a key was added, or when the client id is another team's (ASO #4810: a team
 * pointing its credential at another team's identity is privilege escalation).
 */
export function classifyDrift(
  current: SecretLike | undefined,
  desired: SecretLike,
  clientIdOwners: { get(clientId: string): string | undefined },
  team: string,
): CredentialDrift {
  if (!current) return { kind: "missing" };
  const have = current.data ?? {};
  const want = desired.data ?? {};
  const changed = Object.keys(want).filter((k) => have[k] !== want[k]);
  const extraKeys = Object.keys(have)
    .filter((k) => !(k in want))
    .sort();
  const labelsOk = Object.entries(desired.metadata?.labels ?? {}).every(
    ([k, v]) => current.metadata?.labels?.[k] === v,
  );
  const finalizerOk = (desired.metadata?.finalizers ?? []).every((f) => current.metadata?.finalizers?.includes(f));
  if (!changed.length && !extraKeys.length) return labelsOk && finalizerOk ? { kind: "in-sync" } : { kind: "metadata" };

  const clientId = unb64(have.AZURE_CLIENT_ID);
  const owner = clientId !== undefined ? clientIdOwners.get(clientId) : undefined;
  const otherTeam = owner !== undefined && owner !== team ? owner : undefined;
  const owners = foreignDataOwners(current, [...changed, ...extraKeys]);
  // Without managedFields (stripped by a cache) a change cannot be attributed: treat it as tampering.
  const attributable = (current.metadata?.managedFields?.length ?? 0) > 0;
  if (owners.length || extraKeys.length || otherTeam || !attributable) {
    return { kind: "tampered", changed: changed.sort(), extraKeys, owners, clientId, otherTeam };
  }
  const toClientId = unb64(want.AZURE_CLIENT_ID);
  if (toClientId === undefined) throw new Error("the desired credential Secret has no AZURE_CLIENT_ID"); // Berth always writes one
  return { kind: "rotated", fromClientId: clientId, toClientId };
}

/** One line for the Warning Event; never includes secret values other than client ids (which are not secret). */
export function tamperMessage(team: string, d: Extract<CredentialDrift, { kind: "tampered" }>): string {
  const parts: string[] = [];
  if (d.otherTeam)
    parts.push(`AZURE_CLIENT_ID was set to the identity of team ${d.otherTeam} (privilege escalation, ASO #4810)`);
  else if (d.changed.length) parts.push(`${d.changed.join(", ")} changed`);
  if (d.extraKeys.length) parts.push(`unexpected keys ${d.extraKeys.join(", ")} added`);
  if (d.owners.length) parts.push(`by ${d.owners.join(", ")}`);
  return `aso-credential of team ${team} was modified outside Berth: ${parts.join("; ")}; restored to the team's own identity`;
}
