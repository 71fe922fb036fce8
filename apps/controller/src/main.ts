import { AzureDiscovery, DEFAULT_TTLS } from "@berth/azure";
import { ConfigError, loadControllerConfig, type ControllerConfig } from "@berth/config";
import type { PlatformValuesProvider } from "@berth/core";
import { KubeConfig } from "@kubernetes/client-node";
import pino from "pino";
import { Registry } from "prom-client";
import { Controller } from "./controller.js";
import { StaticValuesProvider } from "./providers/static.js";
import { startHealthServer } from "./runtime/index.js";

/** Process concerns only: configuration, logger, kubeconfig, metrics/health server, signals. */

/**
 * The platform values provider, and how often the platform reconciler should ask it again.
 * "azure": live discovery with production settings — DefaultAzureCredential (workload identity in the
 * pod), default endpoints — and only the documented tuning (BERTH_AZURE_TUNING, unset in production).
 */
function providerFor(config: ControllerConfig, registry: Registry, logger: pino.Logger): { provider: PlatformValuesProvider; factsRefreshMs?: number } {
  if (config.provider === "static") return { provider: new StaticValuesProvider() };
  const azure = config.cluster.azure;
  // loadControllerConfig refuses BERTH_PROVIDER=azure without them; kept for the type and for callers that build configs by hand.
  if (!azure) throw new ConfigError([`BERTH_PROVIDER=azure: cluster "${config.cluster.name}" has no azure section in platform config`]);
  const { cacheTtlMs, retry, breaker, callTimeoutMs, maxConcurrency } = config.azureTuning;
  let provider: AzureDiscovery;
  try {
    provider = AzureDiscovery.fromConfig({
      clusters: { [config.cluster.name]: azure },
      registry,
      logger: logger.child({ component: "azure-discovery" }),
      ...(cacheTtlMs ? { cacheTtlMs } : {}),
      ...(retry ? { retry } : {}),
      ...(breaker ? { breaker } : {}),
      ...(callTimeoutMs ? { callTimeoutMs } : {}),
      ...(maxConcurrency ? { maxConcurrency } : {}),
    });
  } catch (err) {
    throw new ConfigError([(err as Error).message]);
  }
  return { provider, factsRefreshMs: cacheTtlMs?.cluster ?? DEFAULT_TTLS.cluster };
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
  let values: ReturnType<typeof providerFor>;
  let logger: pino.Logger;
  const registry = new Registry();
  try {
    config = loadControllerConfig();
    logger = pino({ level: config.logLevel, base: { component: "berth-controller", identity: config.identity } });
    values = providerFor(config, registry, logger);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`berth controller: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const controller = new Controller({
    kubeConfig: kubeConfig(),
    config,
    provider: values.provider,
    logger,
    registry,
    ...(values.factsRefreshMs ? { timings: { factsRefreshMs: values.factsRefreshMs } } : {}),
  });
  const health = await startHealthServer({ port: config.metricsPort, registry, ready: () => controller.ready(), logger });
  logger.info(
    { cluster: config.cluster.name, asoNamespace: config.platform.asoNamespace, leaderElection: config.leaderElection, metricsPort: config.metricsPort, provider: config.provider },
    "berth controller starting",
  );

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
