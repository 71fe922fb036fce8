import { hostname } from "node:os";
import { allClusters, platformSchema, type Cluster, type Platform } from "@berth/core";
import { z } from "zod";
import { ConfigError, portFromEnv, readConfigFile, type Env } from "./load.js";

/**
 * The controller's configuration: the `platform` section of the same YAML file the API reads
 * (BERTH_CONFIG_FILE; the controller ignores the API's own sections) plus per-deployment env variables.
 */

const DNS_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

const booleanFromEnv = z
  .string()
  .trim()
  .toLowerCase()
  .refine((v) => ["true", "false", "1", "0", "yes", "no"].includes(v), 'must be "true" or "false"')
  .transform((v) => v === "true" || v === "1" || v === "yes");

export const controllerEnvSchema = z.object({
  BERTH_LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace"]).optional(),
  BERTH_CLUSTER_NAME: z.string({ error: "is required: the name of this cluster in platform config" }).min(1, "is required"),
  BERTH_CONTROLLER_NAMESPACE: z.string().regex(DNS_LABEL, "must be a namespace name").max(63).default("berth-system"),
  BERTH_METRICS_PORT: portFromEnv.default(8081),
  BERTH_LEADER_ELECTION: booleanFromEnv.default(true),
  /** This replica's identity in the Lease; the Deployment sets it from metadata.name (downward API). */
  BERTH_POD_NAME: z.string().min(1).max(128).optional(),
  BERTH_PROVIDER: z.enum(["static", "azure"]).default("static"),
});

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
  provider: "static" | "azure";
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
  if (!fileLogLevel.success) problems.push(`logLevel: ${fileLogLevel.error.issues[0]!.message}`);

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
  if (problems.length || !platform.success || !vars.success || !cluster || !fileLogLevel.success) throw new ConfigError(problems);

  return {
    logLevel: vars.data.BERTH_LOG_LEVEL ?? fileLogLevel.data,
    platform: platform.data,
    cluster,
    namespace: vars.data.BERTH_CONTROLLER_NAMESPACE,
    metricsPort: vars.data.BERTH_METRICS_PORT,
    leaderElection: vars.data.BERTH_LEADER_ELECTION,
    identity: vars.data.BERTH_POD_NAME ?? `${hostname()}-${process.pid}`,
    provider: vars.data.BERTH_PROVIDER,
  };
}
