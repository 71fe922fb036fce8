import type { PipelinePolicy, PipelineRequest } from "@azure/core-rest-pipeline";
import { Counter, Gauge, Histogram, register as defaultRegistry, type Registry } from "prom-client";

/**
 * Metrics of Azure discovery. Every HTTP request to ARM or Entra ID is counted by a pipeline policy, so
 * paging, token requests and any retry inside the SDK are counted as the requests they are.
 */
export const ARM_REQUESTS_TOTAL = "berth_arm_requests_total";
export const ARM_REQUEST_DURATION = "berth_arm_request_duration_seconds";
export const DISCOVERY_CACHE_TOTAL = "berth_azure_discovery_cache_total";
export const DISCOVERY_RETRIES_TOTAL = "berth_azure_discovery_retries_total";
export const DISCOVERY_RETRY_BUDGET_EXHAUSTED_TOTAL = "berth_azure_discovery_retry_budget_exhausted_total";
export const DISCOVERY_CIRCUIT_STATE = "berth_azure_discovery_circuit_state";

export interface DiscoveryMetrics {
  requests: Counter<"operation" | "code">;
  duration: Histogram<"operation" | "code">;
  cache: Counter<"kind" | "result">;
  retries: Counter<"operation" | "reason">;
  retryBudgetExhausted: Counter<"operation" | "reason">;
  circuit: Gauge<"operation">;
}

function getOrCreate<T>(registry: Registry, name: string, create: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? create();
}

/** The discovery metrics on `registry` (created once; later calls return the same metric objects). */
export function discoveryMetrics(registry: Registry = defaultRegistry): DiscoveryMetrics {
  const registers = [registry];
  return {
    requests: getOrCreate(
      registry,
      ARM_REQUESTS_TOTAL,
      () =>
        new Counter({
          name: ARM_REQUESTS_TOTAL,
          help: "HTTP requests Berth sent to Azure Resource Manager and Entra ID, by operation and status code (network_error / aborted when no answer came)",
          labelNames: ["operation", "code"],
          registers,
        }),
    ),
    duration: getOrCreate(
      registry,
      ARM_REQUEST_DURATION,
      () =>
        new Histogram({
          name: ARM_REQUEST_DURATION,
          help: "Duration of HTTP requests to Azure Resource Manager and Entra ID",
          labelNames: ["operation", "code"],
          buckets: [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
          registers,
        }),
    ),
    cache: getOrCreate(
      registry,
      DISCOVERY_CACHE_TOTAL,
      () =>
        new Counter({
          name: DISCOVERY_CACHE_TOTAL,
          help: "Azure discovery reads by cache outcome: hit, miss (fetched), coalesced (joined an in-flight fetch), stale (served the last good value after a failure), error",
          labelNames: ["kind", "result"],
          registers,
        }),
    ),
    retries: getOrCreate(
      registry,
      DISCOVERY_RETRIES_TOTAL,
      () =>
        new Counter({
          name: DISCOVERY_RETRIES_TOTAL,
          help: "Retries Berth scheduled for ARM reads, by operation and reason (throttled, transient)",
          labelNames: ["operation", "reason"],
          registers,
        }),
    ),
    retryBudgetExhausted: getOrCreate(
      registry,
      DISCOVERY_RETRY_BUDGET_EXHAUSTED_TOTAL,
      () =>
        new Counter({
          name: DISCOVERY_RETRY_BUDGET_EXHAUSTED_TOTAL,
          help: "Failed ARM attempts Berth did not retry because the process-wide retry budget was spent, by operation and reason (throttled, transient)",
          labelNames: ["operation", "reason"],
          registers,
        }),
    ),
    circuit: getOrCreate(
      registry,
      DISCOVERY_CIRCUIT_STATE,
      () =>
        new Gauge({
          name: DISCOVERY_CIRCUIT_STATE,
          help: "Circuit breaker state per ARM operation: 0 closed, 1 open, 2 half-open",
          labelNames: ["operation"],
          registers,
        }),
    ),
  };
}

const upperFirst = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

const VERB: Record<string, string> = {
  HEAD: "CheckExistence",
  PUT: "CreateOrUpdate",
  PATCH: "Update",
  DELETE: "Delete",
};
/** Names as in the Azure REST specs where the generic rule differs. */
const RENAMES: Record<string, string> = { RoleAssignments_List: "RoleAssignments_ListForScope" };

/**
 * The Azure REST operation id of a request, derived from its method and URL (bounded label values:
 * resource type × verb). E.g. GET .../managedClusters/x → ManagedClusters_Get,
 * GET .../userAssignedIdentities/x/federatedIdentityCredentials → FederatedIdentityCredentials_List.
 */
export function operationOf(method: string, url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return "Unknown";
  }
  const m = method.toUpperCase();
  const segs = u.pathname.split("/").filter(Boolean);
  const lower = segs.map((s) => s.toLowerCase());
  const path = lower.join("/");
  if (path.startsWith("metadata/identity")) return "ManagedIdentity_Token";
  if (path.endsWith("oauth2/v2.0/token") || path.endsWith("oauth2/token")) return "Entra_Token";
  if (path.endsWith(".well-known/openid-configuration")) return "Entra_OpenIdConfiguration";
  if (path.endsWith("discovery/instance")) return "Entra_InstanceDiscovery";
  if (path.endsWith("discovery/v2.0/keys") || path.endsWith("discovery/keys")) return "Entra_Keys";
  if (lower[0] !== "subscriptions" && lower[0] !== "providers")
    return u.hostname.startsWith("login.") ? "Entra_Other" : "Unknown";

  let type: string | undefined;
  let collection: boolean;
  const p = lower.lastIndexOf("providers");
  if (p >= 0 && segs.length > p + 2) {
    const typeSegs = segs.slice(p + 2); // type, name, type, name, ...
    collection = typeSegs.length % 2 === 1;
    type = typeSegs[collection ? typeSegs.length - 1 : typeSegs.length - 2];
  } else if (lower[0] === "subscriptions") {
    // /subscriptions[/{id}[/resourcegroups[/{name}]]]
    const rest = segs.slice(2);
    if (rest.length === 0) {
      type = "subscriptions";
      collection = segs.length === 1;
    } else {
      type = rest.length >= 2 ? rest[rest.length - 2] : rest[0];
      collection = rest.length % 2 === 1;
      if (type?.toLowerCase() === "resourcegroups") type = "resourceGroups";
    }
  } else {
    return "Unknown";
  }
  if (type === undefined) return "Unknown"; // (each branch indexes a segment it checked is there)
  const verb = m === "GET" ? (collection ? "List" : "Get") : m === "POST" ? "Action" : (VERB[m] ?? m);
  const id = `${upperFirst(type)}_${verb}`;
  return RENAMES[id] ?? id;
}

function codeOf(err: unknown): string {
  const e = err as { name?: string; statusCode?: number };
  if (typeof e?.statusCode === "number") return String(e.statusCode);
  if (e?.name === "AbortError") return "aborted";
  return "network_error";
}

/**
 * A pipeline policy that counts and times every HTTP request it sees. Add it where it sees each attempt:
 * ARM clients get it after the Sign phase (AzureDiscovery does this); a credential gets it through
 * `additionalPolicies: [{ policy, position: "perRetry" }]` (see `credentialMetricsPolicy`).
 */
export function metricsPolicy(metrics: Pick<DiscoveryMetrics, "requests" | "duration">): PipelinePolicy {
  return {
    name: "berthArmMetricsPolicy",
    async sendRequest(request: PipelineRequest, next) {
      const operation = operationOf(request.method, request.url);
      const started = performance.now();
      const done = (code: string) => {
        metrics.requests.inc({ operation, code });
        metrics.duration.observe({ operation, code }, (performance.now() - started) / 1000);
      };
      try {
        const response = await next(request);
        done(String(response.status));
        return response;
      } catch (err) {
        done(codeOf(err));
        throw err;
      }
    },
  };
}

/**
 * `additionalPolicies` entry for @azure/identity credentials, so token requests are counted in
 * berth_arm_requests_total too. Use it for a credential you build yourself:
 * `new WorkloadIdentityCredential({ additionalPolicies: [credentialMetricsPolicy(registry)] })`.
 */
export function credentialMetricsPolicy(registry: Registry = defaultRegistry): {
  policy: PipelinePolicy;
  position: "perRetry";
} {
  return { policy: metricsPolicy(discoveryMetrics(registry)), position: "perRetry" };
}
