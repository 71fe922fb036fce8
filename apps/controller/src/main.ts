import { ConfigError, loadControllerConfig, type ControllerConfig } from "@berth/config";
import { layoutNotices, type PlatformValuesProvider } from "@berth/core";
import { loadKubeConfig, startHealthServer } from "@berth/kube-runtime";
import pino from "pino";
import { Registry } from "prom-client";
import { Controller } from "./controller.js";
import { StaticValuesProvider } from "./providers/static.js";

/** Process concerns only: configuration, logger, kubeconfig, metrics/health server, signals. */

/**
 * The platform values provider, and how often the platform reconciler should ask it again.
 * "azure": live discovery with production settings — DefaultAzureCredential (workload identity in the
 * pod), default endpoints — and only the documented tuning (BERTH_AZURE_TUNING, unset in production).
 * The Azure SDK is imported only then: a static-provider controller does not carry it.
 */
async function providerFor(
  config: ControllerConfig,
  registry: Registry,
  logger: pino.Logger,
): Promise<{ provider: PlatformValuesProvider; factsRefreshMs?: number }> {
  if (config.provider === "static") return { provider: new StaticValuesProvider() };
  const azure = config.cluster.azure;
  // loadControllerConfig refuses BERTH_PROVIDER=azure without them; kept for the type and for callers that build configs by hand.
  if (!azure)
    throw new ConfigError([
      `BERTH_PROVIDER=azure: cluster "${config.cluster.name}" has no azure section in platform config`,
    ]);
  const { AzureDiscovery, DEFAULT_TTLS } = await import("@berth/azure");
  const { cacheTtlMs, retry, breaker, callTimeoutMs, maxConcurrency } = config.azureTuning;
  let provider: PlatformValuesProvider;
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

async function main(): Promise<void> {
  let config: ControllerConfig;
  let values: Awaited<ReturnType<typeof providerFor>>;
  let logger: pino.Logger;
  const registry = new Registry();
  try {
    config = loadControllerConfig();
    // `app`, not `component`: the runtime's parts bind `component`, and a line carries each key once.
    logger = pino({ level: config.logLevel, base: { app: "berth-controller", identity: config.identity } });
    // A layout flux/ no longer installs still works, until its end date (docs/repo-layout.md, "Retiring a layout").
    for (const notice of layoutNotices(config.platform)) logger.warn(notice);
    values = await providerFor(config, registry, logger);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`berth controller: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const controller = new Controller({
    // In-cluster (the pod's ServiceAccount) unless KUBECONFIG is set (local runs).
    kubeConfig: await loadKubeConfig(),
    config,
    provider: values.provider,
    logger,
    registry,
    ...(values.factsRefreshMs ? { timings: { factsRefreshMs: values.factsRefreshMs } } : {}),
  });
  const health = await startHealthServer({
    port: config.metricsPort,
    registry,
    ready: () => controller.ready(),
    logger,
  });
  logger.info(
    {
      cluster: config.cluster.name,
      asoNamespace: config.platform.asoNamespace,
      leaderElection: config.leaderElection,
      metricsPort: config.metricsPort,
      provider: config.provider,
    },
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
