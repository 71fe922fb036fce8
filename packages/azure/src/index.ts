export {
  AzureDiscovery,
  DEFAULT_TTLS,
  OPERATIONS,
  type AdditionalPolicyConfig,
  type AzureDiscoveryConfig,
  type CacheTtls,
  type ClusterAzureConfig,
} from "./discovery.js";
export {
  DEFAULT_BREAKER,
  DEFAULT_RETRY,
  RetryBudget,
  ThrottleGate,
  type BreakerSettings,
  type CircuitName,
  type RetrySettings,
} from "./resilience.js";
export { TtlCache, type CacheResult, type Loaded } from "./cache.js";
export { classify, retryAfterMs, type Classified, type FailureKind } from "./errors.js";
export {
  ARM_REQUESTS_TOTAL,
  ARM_REQUEST_DURATION,
  DISCOVERY_CACHE_TOTAL,
  DISCOVERY_CIRCUIT_STATE,
  DISCOVERY_RETRIES_TOTAL,
  credentialMetricsPolicy,
  discoveryMetrics,
  metricsPolicy,
  operationOf,
  type DiscoveryMetrics,
} from "./metrics.js";
export { Registry } from "prom-client";
