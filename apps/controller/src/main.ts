import { ConfigError, loadControllerConfig, type ControllerConfig } from "@berth/config";
import type { PlatformValuesProvider } from "@berth/core";
import { KubeConfig } from "@kubernetes/client-node";
import pino from "pino";
import { Registry } from "prom-client";
import { Controller } from "./controller.js";
import { StaticValuesProvider } from "./providers/static.js";
import { startHealthServer } from "./runtime/index.js";

/** Process concerns only: configuration, logger, kubeconfig, metrics/health server, signals. */

function providerFor(config: ControllerConfig): PlatformValuesProvider {
  if (config.provider === "static") return new StaticValuesProvider();
  // Live discovery (packages/azure) is not wired yet: fail at start rather than run without values.
  throw new ConfigError([`BERTH_PROVIDER: "${config.provider}" is not available yet; use "static"`]);
}

/** KUBECONFIG when set (local runs), else the pod's ServiceAccount (in-cluster). */
function kubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  if (process.env.KUBECONFIG) kc.loadFromDefault();
  else kc.loadFromCluster();
  return kc;
}

async function main(): Promise<void> {
  let config: ControllerConfig;
  let provider: PlatformValuesProvider;
  try {
    config = loadControllerConfig();
    provider = providerFor(config);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`berth controller: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const logger = pino({ level: config.logLevel, base: { component: "berth-controller", identity: config.identity } });
  const registry = new Registry();
  const controller = new Controller({ kubeConfig: kubeConfig(), config, provider, logger, registry });
  const health = await startHealthServer({ port: config.metricsPort, registry, ready: () => controller.ready(), logger });
  logger.info({ cluster: config.cluster.name, asoNamespace: config.platform.asoNamespace, leaderElection: config.leaderElection, metricsPort: config.metricsPort }, "berth controller starting");

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, "shutting down: releasing the lease");
    const force = setTimeout(() => process.exit(1), 20_000).unref();
    await controller.stop();
    await health.close();
    clearTimeout(force);
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));

  await controller.start();
}

main().catch((err: unknown) => {
  process.stderr.write(`berth controller failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
