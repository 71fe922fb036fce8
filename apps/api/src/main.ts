import { loadConfig, ConfigError, type BerthConfig } from "@berth/config";
import { layoutNotices } from "@berth/core";
import { startHealthServer, type HealthServer } from "@berth/kube-runtime";
import pino from "pino";
import { buildServer, loggerOptions } from "./http/server.js";
import { createServices } from "./wiring.js";

/** Process concerns only: configuration, logger, wiring, listen, signals, graceful close. */

function devBanner(config: BerthConfig, url: string): string {
  if (config.api.auth.mode !== "dev") return "";
  // The platform schema requires at least one environment; the example names the first.
  const env = config.platform.environments[0]?.name;
  if (env === undefined) throw new Error("the platform configuration lists no environment");
  const body = JSON.stringify({
    name: "payments",
    description: "Payments team",
    owners: ["0b9a3c1e-1111-4222-8333-444455556666"],
    environments: [env],
  });
  return [
    "",
    `Berth is running at ${url} (docs: ${url}/docs) with the Flux repo ${config.fluxRepo.url}`,
    "Onboard a team:",
    `  curl -sS -X POST ${url}/v1/teams -H 'authorization: Bearer ${config.api.auth.token}' -H 'content-type: application/json' -d '${body}'`,
    `Then: git clone ${config.fluxRepo.url} /tmp/flux-repo && ls -R /tmp/flux-repo`,
    ...(config.api.ui.enabled ? [`Status page: ${url}/ui (sign in with the development token)`] : []),
    "",
  ].join("\n");
}

async function main(): Promise<void> {
  let config: BerthConfig;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const logger = pino(loggerOptions(config.logLevel));
  if (config.api.auth.mode === "dev") {
    logger.warn(
      "authentication is in development mode: one static token grants every role; never use this outside a laptop",
    );
  }

  // A layout flux/ no longer installs is still written, until its end date (docs/repo-layout.md, "Retiring a layout").
  for (const notice of layoutNotices(config.platform)) logger.warn(notice);

  const services = await createServices(config, logger);
  const server = await buildServer(services.deps, {
    logger,
    bodyLimit: config.api.bodyLimitBytes,
    timeouts: config.api.timeouts,
    trustProxy: config.api.trustProxy,
  });
  // Parse every team once now, in the background, so the first GET /v1/teams after a start is not the slow one.
  void services.deps.teams
    .list()
    .catch((err: unknown) => logger.warn({ err }, "could not read the teams at start; the first list will"));
  // Prometheus scrapes its own port: the API's port is what the ingress exposes. Bound first, so a taken metrics
  // port stops the process before the main port takes any request.
  let metricsServer: HealthServer;
  try {
    metricsServer = await startHealthServer({
      port: config.api.metricsPort,
      host: config.api.host,
      registry: services.metrics.registry,
      ready: () => true,
      logger,
    });
  } catch (err) {
    const { code, message } = err as NodeJS.ErrnoException;
    const why = code === "EADDRINUSE" ? "is in use" : `cannot be bound (${message})`;
    process.stderr.write(
      `berth api cannot start: the metrics port ${config.api.host}:${config.api.metricsPort} (api.metricsPort, BERTH_METRICS_PORT) ${why}\n`,
    );
    process.exit(1);
  }
  const address = await server.listen({ host: config.api.host, port: config.api.port });
  const { catalog } = services.onboarding;
  logger.info(
    {
      address,
      remote: config.fluxRepo.url,
      branch: config.fluxRepo.branch,
      templates: catalog.versions(),
      defaultTemplates: catalog.defaultVersion,
    },
    "berth api listening",
  );
  await services.start();
  const banner = devBanner(config, address.replace("[::1]", "localhost"));
  if (banner) process.stdout.write(`${banner}\n`);

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, "shutting down: finishing in-flight requests");
    const force = setTimeout(() => process.exit(1), 30_000).unref();
    await server.close();
    await services.close();
    await metricsServer.close();
    clearTimeout(force);
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

main().catch((err: unknown) => {
  process.stderr.write(`berth api failed to start: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
