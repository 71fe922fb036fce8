import { loadConfig, loadTemplateSet, ConfigError, type BerthConfig } from "@berth/config";
import { Onboarding } from "@berth/core";
import { FluxRepo } from "@berth/gitops";
import pino from "pino";
import { authenticatorFor } from "./plugins/auth.js";
import { buildServer, loggerOptions } from "./server.js";
import { StatusBoard } from "./status-board.js";
import { TeamService } from "./team-service.js";
import { KubeTeamStatusReader } from "./team-status.js";

/** Process concerns only: configuration, logger, wiring, listen, signals, graceful close. */

function devBanner(config: BerthConfig, url: string): string {
  if (config.api.auth.mode !== "dev") return "";
  const env = config.platform.environments[0]!.name;
  const body = JSON.stringify({ name: "payments", description: "Payments team", owners: ["0b9a3c1e-1111-4222-8333-444455556666"], environments: [env] });
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
    logger.warn("authentication is in development mode: one static token grants every role; never use this outside a laptop");
  }

  const templates = await loadTemplateSet(config.templatesDir, config.platform.templateVersion);
  const onboarding = new Onboarding(config.platform, templates);
  const repo = FluxRepo.fromConfig({ ...config.fluxRepo, history: config.api.idempotency, logger: logger.child({ component: "flux-repo" }) });
  await repo.init();

  // One status reader, so the status API, CLI watchers and every open status page share its per-cluster cache.
  const statusReader = KubeTeamStatusReader.fromConfig(config.api.clusters, { ttlMs: config.api.statusCacheSeconds * 1000 });
  const teams = new TeamService(onboarding, repo, statusReader);
  // Parse every team once now, in the background, so the first GET /v1/teams after a start is not the slow one.
  void teams.list().catch((err: unknown) => logger.warn({ err }, "could not read the teams at start; the first list will"));
  const server = await buildServer(
    {
      teams,
      store: repo,
      authenticator: authenticatorFor(config.api.auth),
      limits: config.api.rateLimit,
      board: new StatusBoard(onboarding, repo, statusReader),
      ui: { auth: config.api.auth, config: config.api.ui },
    },
    { logger, bodyLimit: config.api.bodyLimitBytes, timeouts: config.api.timeouts, trustProxy: config.api.trustProxy },
  );
  const address = await server.listen({ host: config.api.host, port: config.api.port });
  logger.info({ address, remote: config.fluxRepo.url, branch: config.fluxRepo.branch, templates: templates.version }, "berth api listening");
  const banner = devBanner(config, address.replace("[::1]", "localhost"));
  if (banner) process.stdout.write(`${banner}\n`);

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, "shutting down: finishing in-flight requests");
    const force = setTimeout(() => process.exit(1), 30_000).unref();
    await server.close();
    await repo.close();
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
