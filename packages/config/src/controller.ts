import { hostname } from "node:os";
import { allClusters, DNS_LABEL, platformSchema, type Cluster, type Platform } from "@berth/core";
import { z } from "zod";
import { ConfigError, portFromEnv, readConfigFile, type Env } from "./load.js";

/**
 * The controller's configuration: the `platform` section of the same YAML file the API reads
 * (BERTH_CONFIG_FILE; the controller ignores the API's own sections) plus per-deployment env variables.
 */

const booleanFromEnv = z
  .string()
  .trim()
  .toLowerCase()
  .refine((v) => ["true", "false", "1", "0", "yes", "no"].includes(v), 'must be "true" or "false"')
  .transform((v) => v === "true" || v === "1" || v === "yes");

export const controllerEnvSchema = z.object({
  BERTH_LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace"]).optional(),
  BERTH_CLUSTER_NAME: z
    .string({ error: "is required: the name of this cluster in platform config" })
    .min(1, "is required"),
  BERTH_CONTROLLER_NAMESPACE: z.string().regex(DNS_LABEL, "must be a namespace name").max(63).default("berth-system"),
  BERTH_METRICS_PORT: portFromEnv.default(8081),
  BERTH_LEADER_ELECTION: booleanFromEnv.default(true),
  /** This replica's identity in the Lease; the Deployment sets it from metadata.name (downward API). */
  BERTH_POD_NAME: z.string().min(1).max(128).optional(),
  BERTH_PROVIDER: z.enum(["static", "azure"]).default("static"),
  /** JSON overrides of Azure discovery's defaults (docs/azure.md); tests shorten TTLs and backoffs with it. */
  BERTH_AZURE_TUNING: z.string().optional(),
});

const durationMs = z.number().finite().nonnegative();
const positiveMs = z.number().finite().positive();

/**
 * BERTH_AZURE_TUNING: overrides of AzureDiscovery's documented defaults (cache TTLs, retries, breaker,
 * timeout, concurrency), as JSON with the same names as `AzureDiscovery.fromConfig` takes. Unset in
 * production; every key is optional and unknown keys are refused, so a typo fails at start.
 */
export const azureTuningSchema = z
  .object({
    cacheTtlMs: z
      .object({
        cluster: durationMs,
        identity: durationMs,
        roleDefinition: durationMs,
        negative: durationMs,
        maxStale: durationMs,
        retryStaleAfter: durationMs,
      })
      .partial()
      .strict()
      .optional(),
    retry: z
      .object({
        maxAttempts: z.number().int().min(1).max(10),
        baseDelayMs: positiveMs,
        maxDelayMs: positiveMs,
        throttleBaseDelayMs: positiveMs,
        maxWaitMs: positiveMs,
        budgetRatio: z.number().min(0).max(1),
        budgetMinRetries: z.number().int().min(0),
        budgetWindowMs: positiveMs,
      })
      .partial()
      .strict()
      .optional(),
    breaker: z
      .object({
        consecutiveFailures: z.number().int().min(1),
        halfOpenAfterMs: positiveMs,
        maxHalfOpenAfterMs: positiveMs,
      })
      .partial()
      .strict()
      .optional(),
    callTimeoutMs: positiveMs.optional(),
    maxConcurrency: z.number().int().min(1).max(64).optional(),
  })
  .strict();
export type AzureTuning = z.infer<typeof azureTuningSchema>;

export interface ControllerConfig {
  logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace";
  platform: Platform;
  /** This cluster, from platform config, with its environment. */
  cluster: Cluster;
  /** Where the controller's Lease lives (its own namespace). */
  namespace: string;
  metricsPort: number;
  leaderElection: boolean;
  /** Leader-election identity. */
  identity: string;
  /** Where platform values come from; with "azure", `cluster.azure` is set (checked at load). */
  provider: "static" | "azure";
  /** BERTH_AZURE_TUNING, parsed; empty when unset. */
  azureTuning: AzureTuning;
}

/**
 * Loads and validates the controller's configuration. Throws ConfigError listing every problem, so a
 * misconfigured Deployment fails at start with one readable message instead of writing wrong values.
 */
export function loadControllerConfig(env: Env = process.env, cwd = process.cwd()): ControllerConfig {
  const problems: string[] = [];
  const { raw } = readConfigFile(env.BERTH_CONFIG_FILE, cwd, problems);
  if (!env.BERTH_CONFIG_FILE) problems.push("BERTH_CONFIG_FILE: is required (the platform config file the API uses)");

  const platform = platformSchema.safeParse(raw.platform ?? {});
  if (env.BERTH_CONFIG_FILE && !platform.success) {
    for (const issue of platform.error.issues) problems.push(`platform.${issue.path.join(".")}: ${issue.message}`);
  }
  const vars = controllerEnvSchema.safeParse(env);
  if (!vars.success) {
    for (const issue of vars.error.issues) problems.push(`${issue.path.join(".")}: ${issue.message}`);
  }
  const fileLogLevel = z.enum(["fatal", "error", "warn", "info", "debug", "trace"]).safeParse(raw.logLevel ?? "info");
  if (!fileLogLevel.success)
    problems.push(`logLevel: ${fileLogLevel.error.issues[0]?.message ?? fileLogLevel.error.message}`);

  let cluster: Cluster | undefined;
  if (platform.success && vars.success) {
    const clusters = allClusters(platform.data);
    cluster = clusters.find((c) => c.name === vars.data.BERTH_CLUSTER_NAME);
    if (!cluster) {
      problems.push(
        `BERTH_CLUSTER_NAME: "${vars.data.BERTH_CLUSTER_NAME}" is not a cluster of platform config (known: ${clusters.map((c) => c.name).join(", ")})`,
      );
    }
  }
  if (vars.success && vars.data.BERTH_PROVIDER === "azure" && cluster && !cluster.azure) {
    problems.push(
      `BERTH_PROVIDER=azure: cluster "${cluster.name}" has no Azure coordinates: set environments[].clusters[].azure ` +
        `{ subscriptionId, resourceGroup, managedClusterName, platformIdentity: { resourceGroup, name } } in platform config (docs/azure.md)`,
    );
  }
  let azureTuning: AzureTuning = {};
  const tuningText = vars.success ? vars.data.BERTH_AZURE_TUNING?.trim() : undefined;
  if (tuningText) {
    let json: unknown;
    try {
      json = JSON.parse(tuningText);
    } catch (err) {
      problems.push(`BERTH_AZURE_TUNING: not JSON: ${(err as Error).message}`);
    }
    if (json !== undefined) {
      const tuning = azureTuningSchema.safeParse(json);
      if (tuning.success) azureTuning = tuning.data;
      else
        for (const issue of tuning.error.issues)
          problems.push(`BERTH_AZURE_TUNING${issue.path.length ? `.${issue.path.join(".")}` : ""}: ${issue.message}`);
    }
  }
  if (problems.length || !platform.success || !vars.success || !cluster || !fileLogLevel.success)
    throw new ConfigError(problems);

  return {
    logLevel: vars.data.BERTH_LOG_LEVEL ?? fileLogLevel.data,
    platform: platform.data,
    cluster,
    namespace: vars.data.BERTH_CONTROLLER_NAMESPACE,
    metricsPort: vars.data.BERTH_METRICS_PORT,
    leaderElection: vars.data.BERTH_LEADER_ELECTION,
    identity: vars.data.BERTH_POD_NAME ?? `${hostname()}-${process.pid}`,
    provider: vars.data.BERTH_PROVIDER,
    azureTuning,
  };
}
