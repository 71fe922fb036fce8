import { KubeConfig } from "@kubernetes/client-node";
import { clusterStatusSchema, type ClusterStatus } from "@berth/api-contract";
import type { ClusterAccess } from "@berth/config";
import { TEAM_GROUP, TEAM_PLURAL, TEAM_VERSION, teamStatusSchema, type Cluster } from "@berth/core";
import { isKubeApiError, KubeClient } from "@berth/kube-runtime";
import { z } from "zod";

/**
 * A team's status per cluster, as the controller on that cluster wrote it to the Team object
 * (teams.berth.dev). The API does not compute status itself: it shows the controller's view.
 *
 * Reads go through one cache per cluster, shared by every caller (the status API, the CLI's
 * `status --watch`, every open status page): a cluster is listed at most once per TTL however many
 * viewers poll, and concurrent callers share one request in flight.
 *
 * Requests go through kube-runtime's client (`KubeClient`), whose failures are `KubeApiError`s: a 403 on
 * the listing means "may only get", a 404 on a GET means "no such Team", anything else "unreachable".
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

/** What a cluster says about a team, parsed once per object version: everything of ClusterStatus but where. */
type TeamView = Omit<ClusterStatus, "cluster" | "environment">;

/** What one cluster says about one team. */
type Lookup = { kind: "found"; view: TeamView } | { kind: "absent" } | { kind: "unreachable" };

/** A cluster's answer: every Team object's view by name, or the failure. */
type Listing = { ok: true; teams: Map<string, TeamView> } | { ok: false; forbidden: boolean };

export interface StatusCacheOptions {
  /** How long one listing of a cluster serves every reader. 0 reads through (every call asks the cluster). */
  ttlMs?: number;
  /** A cluster that has not answered a request (a page of a listing, a GET) by then counts as unreachable. */
  timeoutMs?: number;
  /** Team objects per LIST request: a large cluster is read in pages, so no one answer holds the event loop long. */
  pageSize?: number;
  now?: () => number;
}

export interface StatusCacheStats {
  /** Listings of a cluster's Team objects (each may take several LIST requests, one per page). */
  lists: number;
  /** GET requests sent (only to clusters where the API may not list Team objects). */
  gets: number;
  /** Reads (one team on one cluster) answered from a fresh listing or GET, without waiting. */
  hits: number;
  /** Reads answered from the last listing while the next one was being read. */
  stale: number;
  /** Reads that waited for the cluster to answer. */
  misses: number;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The Team objects' collection on a cluster. */
const TEAMS_PATH = `/apis/${TEAM_GROUP}/${TEAM_VERSION}/${TEAM_PLURAL}`;

const metadataSchema = z.object({ name: z.string(), resourceVersion: z.string().optional() });
const pageSchema = z.object({
  items: z.array(z.unknown()),
  metadata: z.object({ continue: z.string().optional() }).optional(),
});

/** A Team object as the status views show it: "unreachable" for one that is not a Team object as Berth knows it. */
function viewOf(object: unknown): TeamView {
  const base = { ready: false, stale: false, conditions: [] };
  const parsed = teamObjectSchema.safeParse(object);
  if (!parsed.success || !parsed.data.status) return { ...base, state: parsed.success ? "pending" : "unreachable" };
  const { status, metadata } = parsed.data;
  return {
    ...base,
    state: "reported",
    ready: status.conditions.some((c) => c.type === "Ready" && c.status === "True"),
    stale:
      metadata.generation !== undefined &&
      status.observedGeneration !== undefined &&
      status.observedGeneration < metadata.generation,
    conditions: status.conditions,
    ...(status.revision ? { revision: status.revision } : {}),
    ...(status.identity ? { clientId: status.identity.clientId } : {}),
  };
}

/**
 * One cluster's Team objects, listed at most once per TTL. Where RBAC allows only `get` (the API's
 * original least privilege), it falls back to one cached GET per team.
 *
 * At fleet scale (thousands of teams) the cost is ours, not the cluster's: a listing is read in pages, each
 * object is parsed once per resourceVersion (an unchanged Team is not parsed again at the next listing), and
 * a read never waits for a refresh while the previous listing is at most TTL + timeout old.
 */
class ClusterTeamsCache {
  private listing: { at: number; value: Promise<Listing>; settled: boolean } | undefined;
  /** The last listing that answered, served while the next one is under way. */
  private lastGood: { at: number; listing: Listing & { ok: true } } | undefined;
  /** Each object's view by name, with the resourceVersion it was parsed at. */
  private views = new Map<string, { version: string; view: TeamView }>();
  private readonly single = new Map<string, { at: number; value: Promise<Lookup> }>();
  private listForbidden = false;

  constructor(
    private readonly client: KubeClient,
    private readonly options: Required<StatusCacheOptions>,
    private readonly stats: StatusCacheStats,
  ) {}

  async lookup(team: string): Promise<Lookup> {
    if (!this.listForbidden) {
      const listing = await this.currentListing();
      if (listing.ok) {
        const view = listing.teams.get(team);
        return view === undefined ? { kind: "absent" } : { kind: "found", view };
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
    const current = this.listing;
    const latest = !current || (current.settled && !this.fresh(current)) ? this.startListing() : current;
    if (latest.settled) {
      this.stats.hits += 1;
      return latest.value;
    }
    // A refresh is under way: the last listing that answered serves meanwhile, if it is recent enough.
    const last = this.lastGood;
    if (this.options.ttlMs > 0 && last && this.options.now() - last.at < this.options.ttlMs + this.options.timeoutMs) {
      this.stats.stale += 1;
      return Promise.resolve(last.listing);
    }
    this.stats.misses += 1;
    return latest.value;
  }

  private startListing(): { at: number; value: Promise<Listing>; settled: boolean } {
    this.stats.lists += 1;
    const at = this.options.now();
    const entry: { at: number; value: Promise<Listing>; settled: boolean } = {
      at,
      value: Promise.resolve({ ok: false, forbidden: false }),
      settled: false,
    };
    entry.value = this.listAll().then(
      (teams): Listing => {
        entry.settled = true;
        const listing = { ok: true as const, teams };
        if (!this.lastGood || this.lastGood.at <= at) this.lastGood = { at, listing };
        return listing;
      },
      (err: unknown): Listing => {
        entry.settled = true;
        // 403 only: a 401 (bad credentials) is a cluster the API cannot read, not one where it may only get.
        return { ok: false, forbidden: isKubeApiError(err) && err.status === 403 };
      },
    );
    this.listing = entry;
    return entry;
  }

  /** Every Team object, page by page, parsed only where its resourceVersion changed. */
  private async listAll(): Promise<Map<string, TeamView>> {
    const teams = new Map<string, TeamView>();
    const views = new Map<string, { version: string; view: TeamView }>();
    let next: string | undefined;
    do {
      // Each page must come within the timeout: a cluster that stops answering is unreachable, a large one is not.
      const request = this.client.request(TEAMS_PATH, {
        query: { limit: this.options.pageSize, continue: next },
        timeoutMs: this.options.timeoutMs,
      });
      const raw: unknown = await withTimeout(request, this.options.timeoutMs);
      const page = pageSchema.safeParse(raw);
      if (!page.success) throw new Error("not a list of Team objects");
      for (const item of page.data.items) {
        const meta = metadataSchema.safeParse((item as { metadata?: unknown } | null)?.metadata);
        if (!meta.success) continue;
        const { name, resourceVersion } = meta.data;
        const known = this.views.get(name);
        const entry =
          known && resourceVersion !== undefined && known.version === resourceVersion
            ? known
            : { version: resourceVersion ?? "", view: viewOf(item) };
        views.set(name, entry);
        teams.set(name, entry.view);
      }
      next = page.data.metadata?.continue || undefined;
    } while (next);
    this.views = views; // objects gone from the cluster are forgotten
    return teams;
  }

  private getOne(team: string): Promise<Lookup> {
    const cached = this.single.get(team);
    if (cached && this.fresh(cached)) {
      this.stats.hits += 1;
      return cached.value;
    }
    this.stats.gets += 1;
    this.stats.misses += 1;
    const request = this.client.request(`${TEAMS_PATH}/${encodeURIComponent(team)}`, {
      timeoutMs: this.options.timeoutMs,
    });
    const value = withTimeout(request, this.options.timeoutMs).then(
      (object): Lookup => ({ kind: "found", view: viewOf(object) }),
      (err: unknown): Lookup => (isKubeApiError(err, "not-found") ? { kind: "absent" } : { kind: "unreachable" }),
    );
    this.single.set(team, { at: this.options.now(), value });
    // Forget expired entries now and then, so teams nobody looks at any more do not pile up.
    if (this.single.size > 1000)
      for (const [key, entry] of this.single) if (!this.fresh(entry)) this.single.delete(key);
    return value;
  }
}

/** Reads Team objects over the Kubernetes API, one client and one shared cache per configured cluster. */
export class KubeTeamStatusReader implements TeamStatusReader {
  private readonly caches = new Map<string, ClusterTeamsCache>();
  private readonly counters: StatusCacheStats = { lists: 0, gets: 0, hits: 0, stale: 0, misses: 0 };

  static fromConfig(access: Record<string, ClusterAccess>, options: StatusCacheOptions = {}): KubeTeamStatusReader {
    const clients = new Map<string, KubeClient>();
    for (const [cluster, { kubeconfig, context }] of Object.entries(access)) {
      // client-node loads the kubeconfig file (contexts, exec plugins); kube-runtime's client sends the requests.
      const kc = new KubeConfig();
      kc.loadFromFile(kubeconfig);
      if (context) kc.setCurrentContext(context);
      clients.set(cluster, new KubeClient(kc));
    }
    return new KubeTeamStatusReader(clients, options);
  }

  constructor(clients: Map<string, KubeClient>, options: StatusCacheOptions = {}) {
    const resolved: Required<StatusCacheOptions> = {
      ttlMs: options.ttlMs ?? 5_000,
      timeoutMs: options.timeoutMs ?? 5_000,
      pageSize: options.pageSize ?? 500,
      now: options.now ?? Date.now,
    };
    for (const [cluster, client] of clients)
      this.caches.set(cluster, new ClusterTeamsCache(client, resolved, this.counters));
  }

  stats(): StatusCacheStats {
    return { ...this.counters };
  }

  read(team: string, clusters: Cluster[]): Promise<ClusterStatus[]> {
    return Promise.all(clusters.map((cluster) => this.readOne(team, cluster)));
  }

  private async readOne(team: string, cluster: Cluster): Promise<ClusterStatus> {
    const where = { cluster: cluster.name, environment: cluster.environment };
    const cache = this.caches.get(cluster.name);
    if (!cache) return { ...where, state: "not-configured", ready: false, stale: false, conditions: [] };
    const found = await cache.lookup(team);
    if (found.kind !== "found") return { ...where, state: found.kind, ready: false, stale: false, conditions: [] };
    return { ...where, ...found.view };
  }
}
