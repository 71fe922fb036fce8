import { KubeConfig, CustomObjectsApi, ApiException } from "@kubernetes/client-node";
import type { ClusterAccess } from "@berth/config";
import { TEAM_GROUP, TEAM_PLURAL, TEAM_VERSION, teamConditionSchema, teamStatusSchema, type Cluster } from "@berth/core";
import { z } from "zod";

/**
 * A team's status per cluster, as the controller on that cluster wrote it to the Team object
 * (teams.berth.dev). The API does not compute status itself: it shows the controller's view.
 */

/** The part of a Team object read from Kubernetes; anything else is ignored, anything malformed refused. */
const teamObjectSchema = z.object({
  metadata: z.object({ name: z.string(), generation: z.number().optional() }),
  status: teamStatusSchema.optional(),
});

export const clusterStatusSchema = z.object({
  cluster: z.string(),
  environment: z.string(),
  /** reported: the controller wrote status; pending: the Team exists without status; absent: not applied (yet). */
  state: z.enum(["reported", "pending", "absent", "unreachable", "not-configured"]),
  ready: z.boolean(),
  revision: z.string().optional(),
  clientId: z.string().optional(),
  stale: z.boolean().describe("The status describes an older generation of the Team than the one applied"),
  conditions: z.array(teamConditionSchema),
});
export type ClusterStatus = z.infer<typeof clusterStatusSchema>;

export interface TeamStatusReader {
  read(team: string, clusters: Cluster[]): Promise<ClusterStatus[]>;
}

/** Reads Team objects over the Kubernetes API, one client per configured cluster. */
export class KubeTeamStatusReader implements TeamStatusReader {
  private readonly clients = new Map<string, CustomObjectsApi>();

  static fromConfig(access: Record<string, ClusterAccess>): KubeTeamStatusReader {
    const clients = new Map<string, CustomObjectsApi>();
    for (const [cluster, { kubeconfig, context }] of Object.entries(access)) {
      const kc = new KubeConfig();
      kc.loadFromFile(kubeconfig);
      if (context) kc.setCurrentContext(context);
      clients.set(cluster, kc.makeApiClient(CustomObjectsApi));
    }
    return new KubeTeamStatusReader(clients);
  }

  constructor(clients: Map<string, CustomObjectsApi>) {
    this.clients = clients;
  }

  read(team: string, clusters: Cluster[]): Promise<ClusterStatus[]> {
    return Promise.all(clusters.map((cluster) => this.readOne(team, cluster)));
  }

  private async readOne(team: string, cluster: Cluster): Promise<ClusterStatus> {
    const base = { cluster: cluster.name, environment: cluster.environment, ready: false, stale: false, conditions: [] };
    const client = this.clients.get(cluster.name);
    if (!client) return { ...base, state: "not-configured" };
    let raw: unknown;
    try {
      raw = await client.getClusterCustomObject({ group: TEAM_GROUP, version: TEAM_VERSION, plural: TEAM_PLURAL, name: team });
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return { ...base, state: "absent" };
      return { ...base, state: "unreachable" };
    }
    const parsed = teamObjectSchema.safeParse(raw);
    if (!parsed.success || !parsed.data.status) return { ...base, state: parsed.success ? "pending" : "unreachable" };
    const { status, metadata } = parsed.data;
    return {
      ...base,
      state: "reported",
      ready: status.conditions.some((c) => c.type === "Ready" && c.status === "True"),
      stale: metadata.generation !== undefined && status.observedGeneration !== undefined && status.observedGeneration < metadata.generation,
      conditions: status.conditions,
      ...(status.revision ? { revision: status.revision } : {}),
      ...(status.identity ? { clientId: status.identity.clientId } : {}),
    };
  }
}
