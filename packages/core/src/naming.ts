import { v5 as uuidv5 } from "uuid";

/**
 * Every name Berth derives from a team. Kubernetes object names live in a cluster's ASO namespace next to
 * every other team's, so they carry the team name; Azure names carry the cluster too, because two clusters
 * may share a subscription.
 *
 * Limits (checked by test/naming.test.ts for the longest team and cluster names):
 *   namespace ≤ 63 · resource group ≤ 90 · identity 3–128 · federated credential ^[a-zA-Z0-9][a-zA-Z0-9-_]{2,119}$
 */

/** Fixed namespace for RoleAssignment UUIDs: changing it would rename every assignment in Azure. */
const ROLE_ASSIGNMENT_UUID_NAMESPACE = "1b6f3c52-6a1d-4d0e-9a53-7f3e0c2b8d41";

export const LIMITS = {
  namespace: 63,
  kubernetesObject: 253,
  resourceGroup: 90,
  identityMin: 3,
  identityMax: 128,
} as const;
export const FEDERATED_CREDENTIAL_NAME = /^[a-zA-Z0-9][a-zA-Z0-9-_]{2,119}$/;

/**
 * Whose tokens an identity trusts: ASO's controller (it exchanges its own token for the team identity when
 * it reconciles the team's resources), ASO in strict mode (a per-team `aso-workload` account), and the
 * team's own `workload` ServiceAccount (the team's pods).
 */
export type FederatedSubjectKind = "aso-controller" | "aso-workload" | "workload";

export function teamNames(team: string) {
  return {
    namespace: team,
    /** The team's own workload-identity ServiceAccount in its namespace. */
    serviceAccount: "workload",
    /** ServiceAccount ASO impersonates in strict mode (subject mode aso-workload). */
    asoWorkloadServiceAccount: "aso-workload",
    /** Namespace-scoped ASO credential secret the controller writes. */
    asoCredentialSecret: "aso-credential",
    ownersRoleBinding: "team-owners",
    resourceGroup: team,
    identity: team,
    identityConfigMap: `${team}-identity`,
    fluxKustomization: `team-${team}`,
    federatedCredential: (kind: FederatedSubjectKind) => `${team}--${kind}`,
    /** Where ASO exports the issuer a credential trusts in Azure, for the next credential of the chain (templates v3). */
    federatedCredentialIssuerConfigMap: (kind: FederatedSubjectKind) => `${team}--${kind}-issuer`,
    /** The cluster's OIDC issuer, which Flux writes from platform-vars for the first credential to read (templates v6). */
    clusterIssuerConfigMap: `${team}--cluster-issuer`,
    /** `--` cannot occur in a team name, so no other team's assignment can get the same name. */
    roleAssignment: (roleId: string) => `${team}--${roleId}`,
  };
}

export function azureNames(team: string, cluster: string) {
  return {
    // `--` separates team and cluster: a team name never contains it, so `rg-a-b-c` cannot be both team
    // `a` on cluster `b-c` and team `a-b` on cluster `c` (clusters may share a subscription).
    resourceGroup: `rg-${team}--${cluster}`,
    identity: `id-${team}--${cluster}`,
    federatedCredential: (kind: FederatedSubjectKind) => kind,
  };
}

/** A stable RoleAssignment name: the same team, cluster, role and scope always give the same UUID. */
export function roleAssignmentUuid(team: string, cluster: string, roleId: string, scope: string): string {
  return uuidv5(`${team}\n${cluster}\n${roleId}\n${scope}`, ROLE_ASSIGNMENT_UUID_NAMESPACE);
}
