import { azureNames, roleAssignmentUuid, teamNames, type FederatedSubjectKind } from "./naming.js";
import type { RepoLayout } from "./layout.js";
import { allClusters, type Cluster, type Platform } from "./platform.js";
import type { Team } from "./team.js";
import type { Context } from "./placeholders.js";

/**
 * The values templates can reference. docs/templates.md lists every placeholder; keep the two in step.
 */

/** A copy of a string map with its keys in code-point order (locale-independent, unlike localeCompare). */
export function sortedByKey<T>(map: Readonly<Record<string, T>>): Record<string, T> {
  return Object.fromEntries(Object.entries(map).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function plainNames(team: string) {
  const {
    federatedCredential: _f,
    federatedCredentialIssuerConfigMap: _i,
    roleAssignment: _r,
    ...names
  } = teamNames(team);
  return names;
}

export function teamContext(team: Team, platform: Platform, layout: RepoLayout): Record<string, unknown> {
  const names = plainNames(team.name);
  const modes = federatedSubjectKinds(platform);
  return {
    team: {
      name: team.name,
      description: team.description,
      owners: team.owners,
      environments: team.environments,
      // Sorted, so the rendered labels do not depend on the order the request listed them in.
      labels: sortedByKey(team.labels),
    },
    names,
    quota: { ...(team.quota ?? platform.defaults.quota), pods: String((team.quota ?? platform.defaults.quota).pods) },
    limits: team.containerLimits ?? platform.defaults.containerLimits,
    rbac: {
      ownerSubjects: team.owners.map((id) => ({ kind: "Group", apiGroup: "rbac.authorization.k8s.io", name: id })),
    },
    /** One element when ASO's strict mode needs a per-team ServiceAccount, none otherwise. */
    asoWorkloadServiceAccounts: modes.includes("aso-workload") ? [{ name: names.asoWorkloadServiceAccount }] : [],
    platform: {
      asoNamespace: platform.asoNamespace,
      platformVarsConfigMap: platform.platformVarsConfigMap,
      fluxSource: platform.fluxSource,
      fluxServiceAccount: platform.fluxServiceAccount,
      federatedCredential: platform.federatedCredential,
      controller: platform.controller,
    },
    paths: { teamDir: layout.teamDir(team.name), teamSpec: layout.teamSpec(team.name) },
  };
}

/** The subjects ASO itself authenticates as, per the platform's subject mode. */
export function federatedSubjectKinds(platform: Platform): Array<Exclude<FederatedSubjectKind, "workload">> {
  const mode = platform.federatedCredential.subjectMode;
  return mode === "both" ? ["aso-controller", "aso-workload"] : [mode];
}

export function clusterContext(
  team: Team,
  cluster: Cluster,
  platform: Platform,
  layout: RepoLayout,
): Record<string, unknown> {
  const names = teamNames(team.name);
  const derived = azureNames(team.name, cluster.name);
  // Names an adopted team kept (team.azureNames) win: a new name would be a new resource in Azure.
  const azure = {
    ...derived,
    resourceGroup: team.azureNames?.resourceGroups?.[cluster.name] ?? derived.resourceGroup,
    identity: team.azureNames?.identities?.[cluster.name] ?? derived.identity,
  };
  const fc = platform.federatedCredential;
  const subjects: Record<FederatedSubjectKind, string> = {
    "aso-controller": `system:serviceaccount:${fc.asoNamespace}:${fc.asoServiceAccount}`,
    "aso-workload": `system:serviceaccount:${names.namespace}:${names.asoWorkloadServiceAccount}`,
    workload: `system:serviceaccount:${names.namespace}:${names.serviceAccount}`,
  };
  // ASO's subject(s) per the platform's mode, plus the team's own pods (its `workload` ServiceAccount).
  const federatedSubjects = [...federatedSubjectKinds(platform), "workload" as const].map((kind) => ({
    kind,
    objectName: names.federatedCredential(kind),
    azureName: azure.federatedCredential(kind),
    subject: subjects[kind],
    issuerConfigMap: names.federatedCredentialIssuerConfigMap(kind),
  }));
  // Azure refuses concurrent writes of credentials on one identity (409), so templates v3 chain them: the first
  // trusts the cluster's issuer, each next one reads it from the ConfigMap ASO exports from its predecessor once
  // that one exists in Azure (docs/templates.md).
  const federatedSubjectChain = {
    first: federatedSubjects.slice(0, 1),
    following: federatedSubjects.flatMap((subject, i) => {
      const previous = federatedSubjects[i - 1];
      return previous ? [{ ...subject, previousIssuerConfigMap: previous.issuerConfigMap }] : [];
    }),
  };
  const catalog = new Map(platform.roleCatalog.map((r) => [r.id, r]));
  const roleAssignments = team.roleAssignments.map(({ role }) => {
    const entry = catalog.get(role);
    // validateTeam refuses a role the catalog lacks, so a team that gets here has only known roles.
    if (!entry) throw new Error(`team ${team.name}: role ${role} is not in the platform's role catalog`);
    const owner =
      entry.scope.kind === "teamResourceGroup"
        ? { group: "resources.azure.com", kind: "ResourceGroup", name: names.resourceGroup }
        : { armId: entry.scope.armId };
    const scopeKey =
      entry.scope.kind === "teamResourceGroup" ? `resourceGroup:${azure.resourceGroup}` : entry.scope.armId;
    return {
      role,
      description: entry.description,
      roleDefinitionId: entry.roleDefinitionId,
      objectName: names.roleAssignment(role),
      azureName: roleAssignmentUuid(team.name, cluster.name, role, scopeKey),
      owner,
    };
  });
  return {
    ...teamContext(team, platform, layout),
    cluster: { name: cluster.name, environment: cluster.environment },
    flux: { sourceRef: teamSourceRef(team.name, platform) },
    azure: { resourceGroupName: azure.resourceGroup, identityName: azure.identity },
    federatedSubjects,
    federatedSubjectChain,
    roleAssignments,
    paths: {
      teamDir: layout.teamDir(team.name),
      teamSpec: layout.teamSpec(team.name),
      clusterDir: layout.clusterDir(team.name, cluster.name),
    },
  } satisfies Context;
}

/**
 * What the team's Flux Kustomization reads (ADR 0019): its own ExternalArtifact, beside it (no namespace: a
 * same-namespace reference, as Flux's multi-tenancy lockdown requires), or the fleet's GitRepository. The artifact
 * holds the team's folders at their repository paths, so the Kustomization's path is the same either way.
 */
export function teamSourceRef(team: string, platform: Platform): Record<string, string> {
  const source = platform.fluxSource;
  return source.kind === "ExternalArtifact"
    ? { kind: "ExternalArtifact", name: `${source.artifactPrefix}${team}` }
    : { kind: "GitRepository", name: source.name, namespace: source.namespace };
}

/** The clusters a team lands on: every cluster of each of its environments, in platform order. */
export function clustersOf(team: Team, platform: Platform): Cluster[] {
  const envs = new Set(team.environments);
  return allClusters(platform).filter((c) => envs.has(c.environment));
}
