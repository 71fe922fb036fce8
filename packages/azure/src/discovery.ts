import { AuthorizationManagementClient } from "@azure/arm-authorization";
import { ContainerServiceClient } from "@azure/arm-containerservice";
import { ManagedServiceIdentityClient } from "@azure/arm-msi";
import { ResourceManagementClient } from "@azure/arm-resources";
import { SubscriptionClient } from "@azure/arm-resources-subscriptions";
import type { Pipeline, PipelinePolicy } from "@azure/core-rest-pipeline";
import { DefaultAzureCredential, type TokenCredential } from "@azure/identity";
import {
  azureNames,
  GUID,
  teamNameSchema,
  ValueUnavailableError,
  type Cluster,
  type ClusterFacts,
  type PlatformCredential,
  type PlatformValuesProvider,
  type TeamIdentity,
} from "@berth/core";
import type { Logger } from "@berth/logging";
import { register as defaultRegistry, type Registry } from "prom-client";
import { TtlCache, type Loaded } from "./cache.js";
import { describe, isNotFound } from "./errors.js";
import { credentialMetricsPolicy, discoveryMetrics, metricsPolicy, type DiscoveryMetrics } from "./metrics.js";
import {
  BrokenCircuitError,
  DEFAULT_BREAKER,
  DEFAULT_RETRY,
  Resilience,
  type BreakerSettings,
  type CircuitName,
  type RetrySettings,
} from "./resilience.js";

/** A pipeline policy added to every client (as `additionalPolicies` of @azure/core-client). */
export interface AdditionalPolicyConfig {
  policy: PipelinePolicy;
  position: "perCall" | "perRetry";
}

/** Where a cluster lives in Azure, and which identity ASO uses for the platform's own resources. */
export interface ClusterAzureConfig {
  subscriptionId: string;
  /** Resource group of the AKS managed cluster. */
  resourceGroup: string;
  managedClusterName: string;
  /** Region for team resources; default: the managed cluster's location. */
  location?: string;
  /** The user-assigned identity ASO uses for platform resources (its clientId goes into the ASO credential). */
  platformIdentity: { resourceGroup: string; name: string };
}

export interface CacheTtls {
  /** Managed cluster facts (OIDC issuer, location). Default 10 min. */
  cluster: number;
  /** An identity that exists (clientId / principalId never change for its lifetime), a subscription's tenant, a registered resource provider. Default 60 min. */
  identity: number;
  /** Role name → role definition id. Default 24 h. */
  roleDefinition: number;
  /** "Does not exist" / "not ready" answers (404, issuer not enabled yet). Default 30 s. */
  negative: number;
  /** How long after expiry the last good value may still be served while Azure fails. Default 6 h. */
  maxStale: number;
  /** After a failed refresh served a stale value, wait this long before trying Azure again. Default 30 s. */
  retryStaleAfter: number;
}

export const DEFAULT_TTLS: CacheTtls = {
  cluster: 10 * 60_000,
  identity: 60 * 60_000,
  roleDefinition: 24 * 60 * 60_000,
  negative: 30_000,
  maxStale: 6 * 60 * 60_000,
  retryStaleAfter: 30_000,
};

export interface AzureDiscoveryConfig {
  /** Default: `new DefaultAzureCredential()` (workload identity in the cluster), with token requests counted. */
  credential?: TokenCredential;
  /** Per cluster name (as in platform config). */
  clusters: Record<string, ClusterAzureConfig>;
  /** For tests only (a local ARM endpoint); production passes nothing. */
  clientOptions?: { endpoint?: string; credentialScopes?: string[]; additionalPolicies?: AdditionalPolicyConfig[] };
  cacheTtlMs?: Partial<CacheTtls>;
  /** ARM calls in flight at once, all operations together. Default 8. */
  maxConcurrency?: number;
  /** Timeout of one HTTP attempt (a list: all its pages). Default 10 s. */
  callTimeoutMs?: number;
  /** prom-client registry for the metrics. Default: prom-client's global registry. */
  registry?: Registry;
  /** Retry tuning (defaults in DEFAULT_RETRY; see docs/azure.md). */
  retry?: Partial<RetrySettings>;
  /** Circuit breaker tuning (defaults in DEFAULT_BREAKER). */
  breaker?: Partial<BreakerSettings>;
  /** Clock for cache TTLs (tests and the benchmark). Default Date.now. */
  now?: () => number;
  /** Most cache entries kept. Default 20,000. */
  maxCacheEntries?: number;
  /** pino-compatible logger for stale-value warnings. */
  logger?: Logger;
}

interface ClusterRead {
  found: boolean;
  issuerURL?: string;
  location?: string;
}
interface IdentityRead {
  found: boolean;
  clientId?: string;
  principalId?: string;
  tenantId?: string;
}

/** ARM operation ids: metric labels (as the pipeline policy derives them) and circuit breaker keys. */
export const OPERATIONS = {
  managedCluster: "ManagedClusters_Get",
  subscription: "Subscriptions_Get",
  identity: "UserAssignedIdentities_Get",
  roleDefinitions: "RoleDefinitions_List",
  resourceProvider: "Providers_Get",
} as const;

/** Runs `read`; a 404 becomes `undefined` (an answer, so it neither trips the breaker nor is retried). */
async function orUndefinedOn404<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

function unavailable(what: string, err: unknown): ValueUnavailableError {
  if (err instanceof ValueUnavailableError) return err;
  const reason = err instanceof BrokenCircuitError ? err.message : describe(err);
  return new ValueUnavailableError(`${what}: ${reason}`, { cause: err, reason: "AzureUnavailable" });
}

const isHttpsUrl = (s: string | undefined): s is string => {
  if (!s) return false;
  try {
    return new URL(s).protocol === "https:";
  } catch {
    return false;
  }
};

function withMetricsAfterSign<T extends { pipeline: Pipeline }>(client: T, policy: PipelinePolicy): T {
  // After the Sign phase: one count per HTTP attempt, token acquisition not included in the duration.
  client.pipeline.addPolicy(policy, { afterPhase: "Sign" });
  return client;
}

/**
 * PlatformValuesProvider backed by live Azure reads (ARM + Entra ID), with few calls: see docs/azure.md.
 *
 * In steady state the controller takes team identities from ASO's ConfigMaps and makes no per-team ARM
 * call; `teamIdentity` is the fallback (ConfigMap missing) and a verification tool.
 */
export class AzureDiscovery implements PlatformValuesProvider {
  private readonly cache: TtlCache;
  private readonly res: Resilience;
  private readonly ttl: CacheTtls;
  private readonly metrics: DiscoveryMetrics;
  private readonly armPolicy: PipelinePolicy;
  private readonly clients = new Map<string, unknown>();

  private constructor(
    private readonly credential: TokenCredential,
    private readonly clusters: Record<string, ClusterAzureConfig>,
    private readonly clientOptions: NonNullable<AzureDiscoveryConfig["clientOptions"]>,
    o: {
      ttl: CacheTtls;
      metrics: DiscoveryMetrics;
      retry: RetrySettings;
      breaker: BreakerSettings;
      maxConcurrency: number;
      callTimeoutMs: number;
      now: () => number;
      maxCacheEntries: number;
      logger: AzureDiscoveryConfig["logger"];
    },
  ) {
    this.ttl = o.ttl;
    this.metrics = o.metrics;
    this.armPolicy = metricsPolicy(o.metrics);
    this.res = new Resilience({
      retry: o.retry,
      breaker: o.breaker,
      maxConcurrency: o.maxConcurrency,
      callTimeoutMs: o.callTimeoutMs,
      metrics: o.metrics,
    });
    this.cache = new TtlCache({
      now: o.now,
      maxEntries: o.maxCacheEntries,
      maxStaleMs: o.ttl.maxStale,
      retryStaleAfterMs: o.ttl.retryStaleAfter,
      onResult: (kind, result) => this.metrics.cache.inc({ kind, result }),
      onStale: (kind, key, err) =>
        o.logger?.warn({ kind, key, err: describe(err) }, "Azure read failed; serving the last good value"),
    });
  }

  static fromConfig(config: AzureDiscoveryConfig): AzureDiscovery {
    for (const [name, c] of Object.entries(config.clusters)) {
      if (!GUID.test(c.subscriptionId))
        throw new Error(`azure discovery: cluster ${name}: subscriptionId must be a GUID`);
      for (const [k, v] of Object.entries({
        resourceGroup: c.resourceGroup,
        managedClusterName: c.managedClusterName,
        "platformIdentity.resourceGroup": c.platformIdentity?.resourceGroup,
        "platformIdentity.name": c.platformIdentity?.name,
      })) {
        if (typeof v !== "string" || v.trim() === "" || /[/?#\s]/.test(v))
          throw new Error(`azure discovery: cluster ${name}: ${k} must be a non-empty Azure name`);
      }
    }
    const registry = config.registry ?? defaultRegistry;
    const positive = (n: number | undefined, d: number, what: string) => {
      const v = n ?? d;
      if (!Number.isFinite(v) || v <= 0) throw new Error(`azure discovery: ${what} must be a positive number`);
      return v;
    };
    const ttl = { ...DEFAULT_TTLS, ...config.cacheTtlMs };
    for (const [k, v] of Object.entries(ttl))
      if (!Number.isFinite(v) || v < 0) throw new Error(`azure discovery: cacheTtlMs.${k} must be ≥ 0`);
    const credential =
      config.credential ?? new DefaultAzureCredential({ additionalPolicies: [credentialMetricsPolicy(registry)] });
    return new AzureDiscovery(credential, { ...config.clusters }, config.clientOptions ?? {}, {
      ttl,
      metrics: discoveryMetrics(registry),
      retry: { ...DEFAULT_RETRY, ...config.retry },
      breaker: { ...DEFAULT_BREAKER, ...config.breaker },
      maxConcurrency: positive(config.maxConcurrency, 8, "maxConcurrency"),
      callTimeoutMs: positive(config.callTimeoutMs, 10_000, "callTimeoutMs"),
      now: config.now ?? Date.now,
      maxCacheEntries: positive(config.maxCacheEntries, 20_000, "maxCacheEntries"),
      logger: config.logger,
    });
  }

  // ---------------------------------------------------------------- PlatformValuesProvider

  async clusterFacts(cluster: Cluster): Promise<ClusterFacts> {
    const cfg = this.config(cluster);
    const what = `cluster facts of ${clusterName(cluster)}`;
    const [mc, tenantId] = await Promise.all([
      this.managedCluster(cfg, what),
      this.subscriptionTenant(cfg.subscriptionId, what),
    ]);
    if (!mc.found)
      throw new ValueUnavailableError(
        `${what}: managed cluster ${cfg.resourceGroup}/${cfg.managedClusterName} not found in subscription ${cfg.subscriptionId}`,
        { reason: "ManagedClusterNotFound", severity: "Error" },
      );
    if (!mc.issuerURL)
      throw new ValueUnavailableError(
        `${what}: the managed cluster has no OIDC issuer (oidcIssuerProfile not enabled)`,
        { reason: "OIDCIssuerNotEnabled", severity: "Error" },
      );
    const location = cfg.location ?? mc.location;
    if (!location) throw new ValueUnavailableError(`${what}: the managed cluster reports no location`);
    return { tenantId, subscriptionId: cfg.subscriptionId, oidcIssuerUrl: mc.issuerURL, location };
  }

  async platformCredential(cluster: Cluster): Promise<PlatformCredential> {
    const cfg = this.config(cluster);
    const what = `platform credential of ${clusterName(cluster)}`;
    const { resourceGroup, name } = cfg.platformIdentity;
    const [id, tenantId] = await Promise.all([
      this.identity(cfg.subscriptionId, resourceGroup, name, what),
      this.subscriptionTenant(cfg.subscriptionId, what),
    ]);
    if (!id.found)
      throw new ValueUnavailableError(
        `${what}: identity ${resourceGroup}/${name} not found in subscription ${cfg.subscriptionId}`,
        { reason: "IdentityNotFound", severity: "Error" },
      );
    if (!id.clientId) throw new ValueUnavailableError(`${what}: identity ${resourceGroup}/${name} has no clientId yet`);
    return { tenantId, subscriptionId: cfg.subscriptionId, clientId: id.clientId };
  }

  /** The team's identity as Azure reports it; undefined when it does not exist (yet). Fallback / verification only. */
  async teamIdentity(team: string, cluster: Cluster | string): Promise<TeamIdentity | undefined> {
    const cfg = this.config(cluster);
    const names = teamAzureNames(team, clusterName(cluster));
    const what = `identity of team ${team} on ${clusterName(cluster)}`;
    const id = await this.identity(cfg.subscriptionId, names.resourceGroup, names.identity, what);
    if (!id.found) return undefined;
    const tenantId = id.tenantId ?? (await this.subscriptionTenant(cfg.subscriptionId, what));
    if (!id.clientId || !id.principalId || !tenantId)
      throw new ValueUnavailableError(
        `${what}: identity ${names.identity} is incomplete (clientId/principalId not assigned yet)`,
      );
    return { clientId: id.clientId, principalId: id.principalId, tenantId };
  }

  // ---------------------------------------------------------------- platform checks (what ASO cannot see)

  /** The GUID of the role definition named `roleName` in the cluster's subscription; undefined when there is none. */
  async roleDefinitionId(cluster: Cluster | string, roleName: string): Promise<string | undefined> {
    const id = await this.resolveRoleDefinition(this.config(cluster).subscriptionId, roleName);
    return id?.split("/").pop()?.toLowerCase();
  }

  /**
   * The registration state of a resource provider namespace (e.g. "Microsoft.ManagedIdentity") in the
   * cluster's subscription: "Registered", "NotRegistered", "Registering", ...; undefined when ARM does not
   * know the namespace. ASO can create no resource of an unregistered namespace.
   */
  async resourceProviderState(cluster: Cluster | string, namespace: string): Promise<string | undefined> {
    if (!/^[A-Za-z][A-Za-z0-9]*(\.[A-Za-z0-9]+)+$/.test(namespace))
      throw new Error(`resourceProviderState: invalid namespace ${JSON.stringify(namespace)}`);
    const cfg = this.config(cluster);
    const what = `resource provider ${namespace} in subscription ${cfg.subscriptionId}`;
    const key = `provider|${cfg.subscriptionId}|${namespace}`.toLowerCase();
    return this.read("resourceProvider", key, what, async () => {
      const found = await this.res.call(OPERATIONS.resourceProvider, cfg.subscriptionId, (abortSignal) =>
        // An unknown namespace is a 404 InvalidResourceNamespace.
        orUndefinedOn404(() => this.rm(cfg.subscriptionId).providers.get(namespace, { abortSignal })),
      );
      const state = found?.registrationState;
      // Registered stays so for the subscription's life unless someone unregisters it: the identity TTL.
      return { value: state, ttlMs: state === "Registered" ? this.ttl.identity : this.ttl.negative };
    });
  }

  /** The ARM id of the role definition named `roleName` (as Azure shows it); undefined when there is none. */
  async resolveRoleDefinition(subscriptionId: string, roleName: string): Promise<string | undefined> {
    if (!GUID.test(subscriptionId)) throw new Error(`resolveRoleDefinition: subscriptionId must be a GUID`);
    if (!roleName || roleName.length > 512) throw new Error(`resolveRoleDefinition: invalid role name`);
    const what = `role definition '${roleName}'`;
    const key = `roledef|${subscriptionId}|${roleName}`.toLowerCase();
    const ids = await this.read("roleDefinition", key, what, async () => {
      const found = await this.res.call(OPERATIONS.roleDefinitions, subscriptionId, async (abortSignal) => {
        const out: string[] = [];
        const filter = `roleName eq '${roleName.replace(/'/g, "''")}'`;
        // A scope without the leading "/" (the SDK puts one in front of it).
        for await (const d of this.authz(subscriptionId).roleDefinitions.list(`subscriptions/${subscriptionId}`, {
          filter,
          abortSignal,
        })) {
          if (d.id && d.roleName?.toLowerCase() === roleName.toLowerCase()) out.push(d.id);
        }
        return out;
      });
      return { value: found, ttlMs: found.length === 1 ? this.ttl.roleDefinition : this.ttl.negative };
    });
    if (ids.length > 1)
      throw new ValueUnavailableError(`${what}: ${ids.length} role definitions have this name`, {
        reason: "RoleNameAmbiguous",
        severity: "Error",
      });
    return ids[0];
  }

  /** Circuit state per ARM operation (for a status page). */
  circuits(): Record<string, CircuitName> {
    return this.res.circuits();
  }

  /** Forget cached reads (all, or one kind: "cluster", "subscription", "identity", "roledef", "provider"). */
  invalidate(kind?: "cluster" | "subscription" | "identity" | "roledef" | "provider"): void {
    this.cache.invalidate(kind === undefined ? undefined : `${kind}|`);
  }

  // ---------------------------------------------------------------- reads

  private async read<T>(kind: string, key: string, what: string, load: () => Promise<Loaded<T>>): Promise<T> {
    try {
      return await this.cache.get(kind, key, load);
    } catch (err) {
      throw unavailable(what, err);
    }
  }

  private managedCluster(cfg: ClusterAzureConfig, what: string): Promise<ClusterRead> {
    const key = `cluster|${cfg.subscriptionId}|${cfg.resourceGroup}|${cfg.managedClusterName}`.toLowerCase();
    return this.read("cluster", key, what, async () => {
      const mc = await this.res.call(OPERATIONS.managedCluster, cfg.subscriptionId, (abortSignal) =>
        orUndefinedOn404(() =>
          this.aks(cfg.subscriptionId).managedClusters.get(cfg.resourceGroup, cfg.managedClusterName, { abortSignal }),
        ),
      );
      if (!mc) return { value: { found: false }, ttlMs: this.ttl.negative };
      const p = mc.oidcIssuerProfile;
      const issuerURL = p && p.enabled !== false && isHttpsUrl(p.issuerURL) ? p.issuerURL : undefined;
      const value: ClusterRead = {
        found: true,
        ...(issuerURL ? { issuerURL } : {}),
        ...(mc.location ? { location: mc.location } : {}),
      };
      return { value, ttlMs: issuerURL && mc.location ? this.ttl.cluster : this.ttl.negative };
    });
  }

  private async subscriptionTenant(subscriptionId: string, what: string): Promise<string> {
    const key = `subscription|${subscriptionId}`.toLowerCase();
    const tenantId = await this.read("subscription", key, what, async () => {
      const s = await this.res.call(OPERATIONS.subscription, subscriptionId, (abortSignal) =>
        orUndefinedOn404(() => this.subscriptions().subscriptions.get(subscriptionId, { abortSignal })),
      );
      const t = s?.tenantId && GUID.test(s.tenantId) ? s.tenantId : undefined;
      // A subscription's tenant changes only when the subscription is moved to another directory: identity TTL.
      return { value: t, ttlMs: t ? this.ttl.identity : this.ttl.negative };
    });
    if (!tenantId)
      throw new ValueUnavailableError(`${what}: subscription ${subscriptionId} not found or has no tenantId`);
    return tenantId;
  }

  private identity(subscriptionId: string, resourceGroup: string, name: string, what: string): Promise<IdentityRead> {
    const key = `identity|${subscriptionId}|${resourceGroup}|${name}`.toLowerCase();
    return this.read("identity", key, what, async () => {
      const id = await this.res.call(OPERATIONS.identity, subscriptionId, (abortSignal) =>
        orUndefinedOn404(() =>
          this.msi(subscriptionId).userAssignedIdentities.get(resourceGroup, name, { abortSignal }),
        ),
      );
      if (!id) return { value: { found: false }, ttlMs: this.ttl.negative };
      const value: IdentityRead = {
        found: true,
        ...(id.clientId ? { clientId: id.clientId } : {}),
        ...(id.principalId ? { principalId: id.principalId } : {}),
        ...(id.tenantId ? { tenantId: id.tenantId } : {}),
      };
      return { value, ttlMs: id.clientId && id.principalId ? this.ttl.identity : this.ttl.negative };
    });
  }

  // ---------------------------------------------------------------- clients (one per subscription, built on first use)

  private config(cluster: Cluster | string): ClusterAzureConfig {
    const name = clusterName(cluster);
    const cfg = Object.hasOwn(this.clusters, name) ? this.clusters[name] : undefined;
    if (!cfg) throw new ValueUnavailableError(`cluster ${name} has no Azure discovery configuration`);
    return cfg;
  }

  private client<T>(key: string, build: () => T): T {
    let c = this.clients.get(key) as T | undefined;
    if (!c) {
      c = build();
      this.clients.set(key, c);
    }
    return c;
  }

  /** Options for the core-client based clients (arm-msi, arm-resources, arm-authorization, subscriptions). */
  private coreOptions() {
    const o = this.clientOptions;
    return {
      ...(o.endpoint ? { endpoint: o.endpoint } : {}),
      ...(o.credentialScopes ? { credentialScopes: o.credentialScopes } : {}),
      additionalPolicies: [...(o.additionalPolicies ?? [])],
      retryOptions: { maxRetries: 0 },
      userAgentOptions: { userAgentPrefix: "berth-azure-discovery" },
    };
  }

  private aks(subscriptionId: string): ContainerServiceClient {
    return this.client(`aks|${subscriptionId}`, () => {
      const o = this.clientOptions;
      const client = new ContainerServiceClient(this.credential, subscriptionId, {
        ...(o.endpoint ? { endpoint: o.endpoint } : {}),
        ...(o.credentialScopes ? { credentials: { scopes: o.credentialScopes } } : {}),
        additionalPolicies: [...(o.additionalPolicies ?? [])],
        retryOptions: { maxRetries: 0 },
        userAgentOptions: { userAgentPrefix: "berth-azure-discovery" },
      });
      return withMetricsAfterSign(client, this.armPolicy);
    });
  }

  private msi(subscriptionId: string): ManagedServiceIdentityClient {
    return this.client(`msi|${subscriptionId}`, () =>
      withMetricsAfterSign(
        new ManagedServiceIdentityClient(this.credential, subscriptionId, this.coreOptions()),
        this.armPolicy,
      ),
    );
  }

  private authz(subscriptionId: string): AuthorizationManagementClient {
    return this.client(`authz|${subscriptionId}`, () =>
      withMetricsAfterSign(
        new AuthorizationManagementClient(this.credential, subscriptionId, this.coreOptions()),
        this.armPolicy,
      ),
    );
  }

  private rm(subscriptionId: string): ResourceManagementClient {
    return this.client(`rm|${subscriptionId}`, () =>
      withMetricsAfterSign(
        new ResourceManagementClient(this.credential, subscriptionId, this.coreOptions()),
        this.armPolicy,
      ),
    );
  }

  private subscriptions(): SubscriptionClient {
    return this.client("subs", () =>
      withMetricsAfterSign(new SubscriptionClient(this.credential, this.coreOptions()), this.armPolicy),
    );
  }
}

function clusterName(cluster: Cluster | string): string {
  return typeof cluster === "string" ? cluster : cluster.name;
}

function teamAzureNames(team: string, cluster: string) {
  if (!teamNameSchema.safeParse(team).success) throw new Error(`invalid team name ${JSON.stringify(team)}`);
  return azureNames(team, cluster);
}
