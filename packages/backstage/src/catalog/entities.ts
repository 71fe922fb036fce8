import { phaseOf, type ClusterStatus, type FleetTeam } from "@berth/api-contract";
import { azureNames, teamNames, type Team } from "@berth/core";
import type { Entity } from "@backstage/catalog-model";

/**
 * How Berth's teams appear in the catalog (docs/decisions/0029-berth-in-backstage.md): each team a Group in
 * the `default` namespace, and per cluster it lands on four Resources in a catalog namespace named after the
 * team (so `<cluster>-resource-group` fits the 63-character name limit for the longest team and cluster
 * names): its Kubernetes namespace, Azure identity, Azure resource group and Flux Kustomization. Each links to
 * the team's page on Berth's status page and says whether the team is Ready there.
 */

export const ANNOTATION_TEAM = "berth.dev/team";
export const ANNOTATION_CLUSTER = "berth.dev/cluster";
export const ANNOTATION_READY = "berth.dev/ready";
export const ANNOTATION_PHASE = "berth.dev/phase";
export const ANNOTATION_CLIENT_ID = "berth.dev/client-id";
export const ANNOTATION_AZURE_NAME = "berth.dev/azure-name";
export const ANNOTATION_OWNER_GROUPS = "berth.dev/owner-groups";
/** The Kubernetes plugin shows the workloads of this namespace on the entity's page. */
export const ANNOTATION_KUBERNETES_NAMESPACE = "backstage.io/kubernetes-namespace";

export interface BerthLinks {
  /** The team's page on Berth's status page. */
  teamPage(team: string): string;
  /** Where the entities come from, for the catalog's managed-by annotations (Berth's base URL). */
  origin: string;
}

/** Every entity of one team: its Group and, per cluster in its status, four Resources. */
export function teamEntities(team: Team, status: FleetTeam | undefined, links: BerthLinks): Entity[] {
  const page = links.teamPage(team.name);
  const managed = {
    "backstage.io/managed-by-location": `url:${page}`,
    "backstage.io/managed-by-origin-location": `url:${links.origin}`,
  };
  const link = [{ url: page, title: "Berth status", icon: "dashboard" }];
  const ready = status?.ready ?? false;
  const group: Entity = {
    apiVersion: "backstage.io/v1alpha1",
    kind: "Group",
    metadata: {
      name: team.name,
      namespace: "default",
      ...(team.description ? { description: team.description } : {}),
      annotations: {
        ...managed,
        [ANNOTATION_TEAM]: team.name,
        [ANNOTATION_READY]: String(ready),
        [ANNOTATION_OWNER_GROUPS]: team.owners.join(","),
      },
      labels: { "berth.dev/team": team.name },
      links: link,
    },
    spec: { type: "team", children: [], profile: { displayName: team.name } },
  };
  const owner = `group:default/${team.name}`;
  const resources = (status?.clusters ?? []).flatMap((cluster) => {
    const names = teamNames(team.name);
    const azure = azureNames(team.name, cluster.cluster);
    const resource = (suffix: string, type: string, title: string, annotations: Record<string, string>): Entity => ({
      apiVersion: "backstage.io/v1alpha1",
      kind: "Resource",
      metadata: {
        name: `${cluster.cluster}-${suffix}`,
        namespace: team.name,
        title: `${title} of ${team.name} on ${cluster.cluster}`,
        annotations: {
          ...managed,
          [ANNOTATION_TEAM]: team.name,
          [ANNOTATION_CLUSTER]: cluster.cluster,
          [ANNOTATION_READY]: String(cluster.ready && !cluster.stale),
          [ANNOTATION_PHASE]: phaseOf(cluster),
          ...annotations,
        },
        labels: { "berth.dev/team": team.name, "berth.dev/environment": cluster.environment },
        links: link,
      },
      spec: { type, owner },
    });
    return [
      resource("namespace", "kubernetes-namespace", "Namespace", {
        [ANNOTATION_KUBERNETES_NAMESPACE]: names.namespace,
      }),
      resource("identity", "azure-managed-identity", "Azure identity", {
        [ANNOTATION_AZURE_NAME]: team.azureNames?.identities?.[cluster.cluster] ?? azure.identity,
        ...clientId(cluster),
      }),
      resource("resource-group", "azure-resource-group", "Azure resource group", {
        [ANNOTATION_AZURE_NAME]: team.azureNames?.resourceGroups?.[cluster.cluster] ?? azure.resourceGroup,
      }),
      resource("kustomization", "flux-kustomization", "Flux Kustomization", {
        "berth.dev/flux-kustomization": names.fluxKustomization,
      }),
    ];
  });
  return [group, ...resources];
}

function clientId(cluster: ClusterStatus): Record<string, string> {
  return cluster.clientId ? { [ANNOTATION_CLIENT_ID]: cluster.clientId } : {};
}

/** Every team's entities, teams without a status row (a cluster never read) with their Group only. */
export function fleetEntities(teams: Team[], statuses: FleetTeam[], links: BerthLinks): Entity[] {
  const byName = new Map(statuses.map((s) => [s.team, s]));
  return teams.flatMap((team) => teamEntities(team, byName.get(team.name), links));
}
