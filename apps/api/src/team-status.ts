import { KubeConfig, CustomObjectsApi, ApiException } from "@kubernetes/client-node";
import { clusterStatusSchema, type ClusterStatus } from "@berth/api-contract";
import type { ClusterAccess } from "@berth/config";
import { TEAM_GROUP, TEAM_PLURAL, TEAM_VERSION, teamStatusSchema, type Cluster } from "@berth/core";
import { z } from "zod";

/**
 * A team's status per cluster, as the controller on that cluster wrote it to the Team object
 * (teams.berth.dev). The API does not compute status itself: it shows the controller's view.
 *
 * Reads go through one cache per cluster, shared by every caller (the status API, the CLI's
 * `status --watch`, every open status page): a cluster is listed at most once per TTL however many
 * viewers poll, and concurrent callers share one request in flight.
 */

export { clusterStatusSchema, type ClusterStatus };

/** The part of a Team object read from Kubernetes; anything else is ignored, anything malformed refused. */
const teamObjectSchema = z.object({
  metadata: z.object({ name: z.string(), generation: z.number().optional() }),
  status: teamStatusSchema.optional(),
});

export interface TeamStatusReader {
  read(team: string, clusters: Cluster[]): Promise<ClusterStatus[]>;
}

/** What one cluster says about one team. */
type Lookup = { kind: "found"; object: unknown } | { kind: "absent" } | { kind: "unreachable" };

/** A cluster's answer, kept for the TTL: every Team object by name, or the failure. */
type Listing = { ok: true; teams: Map<string, unknown> } | { ok: false; forbidden: boolean };

export interface StatusCacheOptions {
  /** How long one listing of a cluster serves every reader. 0 reads through (every call asks the cluster). */
  ttlMs?: number;
  /** A cluster that has not answered by then counts as unreachable for this read. */
  timeoutMs?: number;
  now?: () => number;
}

export interface StatusCacheStats {
  /** LIST requests sent to clusters. */
  lists: number;
  /** GET requests sent (only to clusters where the API may not list Team objects). */
  gets: number;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * One cluster's Team objects, listed at most once per TTL. Where RBAC allows only `get` (the API's
 * original least privilege), it falls back to one cached GET per team.
 */
class ClusterTeamsCache {
  private listing: { at: number; value: Promise<Listing> } | undefined;
  private readonly single = new Map<string, { at: number; value: Promise<Lookup> }>();
  private listForbidden = false;

  constructor(
    private readonly client: CustomObjectsApi,
    private readonly options: Required<StatusCacheOptions>,
    private readonly stats: StatusCacheStats,
  ) {}

  async lookup(team: string): Promise<Lookup> {
    if (!this.listForbidden) {
      const listing = await this.currentListing();
      if (listing.ok) {
        const object = listing.teams.get(team);
        return object === undefined ? { kind: "absent" } : { kind: "found", object };
      }
      if (!listing.forbidden) return { kind: "unreachable" };
      this.listForbidden = true;
    }
    return this.getOne(team);
  }

  private fresh(entry: { at: number } | undefined): boolean {
    return entry !== undefined && this.options.now() - entry.at < this.options.ttlMs;
  }

  private currentListing(): Promise<Listing> {
    if (this.fresh(this.listing)) return this.listing!.value;
    this.stats.lists += 1;
    const value = withTimeout(this.client.listClusterCustomObject({ group: TEAM_GROUP, version: TEAM_VERSION, plural: TEAM_PLURAL }), this.options.timeoutMs).then(
      (raw): Listing => {
        const items = z.object({ items: z.array(z.unknown()) }).safeParse(raw);
        const teams = new Map<string, unknown>();
        for (const item of items.success ? items.data.items : []) {
          const name = z.object({ metadata: z.object({ name: z.string() }) }).safeParse(item);
          if (name.success) teams.set(name.data.metadata.name, item);
        }
        return items.success ? { ok: true, teams } : { ok: false, forbidden: false };
      },
      (err: unknown): Listing => ({ ok: false, forbidden: err instanceof ApiException && err.code === 403 }),
    );
    this.listing = { at: this.options.now(), value };
    return value;
  }

  private getOne(team: string): Promise<Lookup> {
    const cached = this.single.get(team);
    if (this.fresh(cached)) return cached!.value;
    this.stats.gets += 1;
    const value = withTimeout(this.client.getClusterCustomObject({ group: TEAM_GROUP, version: TEAM_VERSION, plural: TEAM_PLURAL, name: team }), this.options.timeoutMs).then(
      (object): Lookup => ({ kind: "found", object }),
      (err: unknown): Lookup => (err instanceof ApiException && err.code === 404 ? { kind: "absent" } : { kind: "unreachable" }),
    );
    this.single.set(team, { at: this.options.now(), value });
    // Forget expired entries now and then, so teams nobody looks at any more do not pile up.
    if (this.single.size > 1000) for (const [key, entry] of this.single) if (!this.fresh(entry)) this.single.delete(key);
    return value;
  }
}

/** Reads Team objects over the Kubernetes API, one client and one shared cache per configured cluster. */
export class KubeTeamStatusReader implements TeamStatusReader {
  private readonly caches = new Map<string, ClusterTeamsCache>();
  private readonly counters: StatusCacheStats = { lists: 0, gets: 0 };

  static fromConfig(access: Record<string, ClusterAccess>, options: StatusCacheOptions = {}): KubeTeamStatusReader {
    const clients = new Map<string, CustomObjectsApi>();
    for (const [cluster, { kubeconfig, context }] of Object.entries(access)) {
      const kc = new KubeConfig();
      kc.loadFromFile(kubeconfig);
      if (context) kc.setCurrentContext(context);
      clients.set(cluster, kc.makeApiClient(CustomObjectsApi));
    }
    return new KubeTeamStatusReader(clients, options);
  }

  constructor(clients: Map<string, CustomObjectsApi>, options: StatusCacheOptions = {}) {
    const resolved: Required<StatusCacheOptions> = { ttlMs: options.ttlMs ?? 5_000, timeoutMs: options.timeoutMs ?? 5_000, now: options.now ?? Date.now };
    for (const [cluster, client] of clients) this.caches.set(cluster, new ClusterTeamsCache(client, resolved, this.counters));
  }

  stats(): StatusCacheStats {
    return { ...this.counters };
  }

  read(team: string, clusters: Cluster[]): Promise<ClusterStatus[]> {
    return Promise.all(clusters.map((cluster) => this.readOne(team, cluster)));
  }

  private async readOne(team: string, cluster: Cluster): Promise<ClusterStatus> {
    const base = { cluster: cluster.name, environment: cluster.environment, ready: false, stale: false, conditions: [] };
    const cache = this.caches.get(cluster.name);
    if (!cache) return { ...base, state: "not-configured" };
    const found = await cache.lookup(team);
    if (found.kind !== "found") return { ...base, state: found.kind };
    const parsed = teamObjectSchema.safeParse(found.object);
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
