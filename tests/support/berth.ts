import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { loadConfig, loadTemplateSet, type BerthConfig } from "@berth/config";
import { Onboarding } from "@berth/core";
import { FluxRepo } from "@berth/gitops";
import type { FastifyInstance } from "fastify";
import pino from "pino";
import { authenticatorFor } from "../../apps/api/src/plugins/auth.js";
import { buildServer, loggerOptions } from "../../apps/api/src/server.js";
import { StatusBoard } from "../../apps/api/src/status-board.js";
import { TeamService } from "../../apps/api/src/team-service.js";
import { KubeTeamStatusReader } from "../../apps/api/src/team-status.js";

export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const DEV_TOKEN = "test-dev-token-0123456789abcdef";

export interface RunningBerth {
  config: BerthConfig;
  server: FastifyInstance;
  /** Base URL when started with listen: true. */
  url: string;
  repo: FluxRepo;
  /** The shared per-cluster status reader (its stats() count the requests clusters received). */
  statusReader: KubeTeamStatusReader;
  /** Every log line written so far (JSON), for redaction checks. */
  logs: string[];
  stop(): Promise<void>;
}

/**
 * Berth's API wired exactly as main.ts wires it (infra/local/berth.yaml, the real git adapter), against
 * the given remote. Extra env overrides config (e.g. BERTH_AUTH_MODE=oidc, BERTH_GIT_TOKEN).
 */
export async function startBerth(options: { remoteUrl: string; env?: Record<string, string>; listen?: boolean }): Promise<RunningBerth> {
  const workDir = await mkdtemp(join(tmpdir(), "berth-work-"));
  const config = loadConfig(
    {
      BERTH_CONFIG_FILE: join(REPO_ROOT, "infra", "local", "berth.yaml"),
      BERTH_GIT_URL: options.remoteUrl,
      BERTH_GIT_WORKDIR: join(workDir, "clone"),
      BERTH_AUTH_MODE: "dev",
      BERTH_DEV_TOKEN: DEV_TOKEN,
      BERTH_LOG_LEVEL: "info",
      ...options.env,
    },
    REPO_ROOT,
  );
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const logger = pino(loggerOptions(config.logLevel), sink);
  const templates = await loadTemplateSet(config.templatesDir, config.platform.templateVersion);
  const repo = FluxRepo.fromConfig({ ...config.fluxRepo, logger: logger.child({ component: "flux-repo" }) });
  await repo.init();
  const onboarding = new Onboarding(config.platform, templates);
  const statusReader = KubeTeamStatusReader.fromConfig(config.api.clusters, { ttlMs: config.api.statusCacheSeconds * 1000 });
  const server = await buildServer(
    {
      teams: new TeamService(onboarding, repo, statusReader),
      store: repo,
      authenticator: authenticatorFor(config.api.auth),
      board: new StatusBoard(onboarding, repo, statusReader),
      ui: { auth: config.api.auth, config: config.api.ui },
    },
    { logger, bodyLimit: config.api.bodyLimitBytes },
  );
  const url = options.listen ? await server.listen({ host: "127.0.0.1", port: 0 }) : "";
  return {
    config,
    server,
    url,
    repo,
    statusReader,
    logs,
    async stop() {
      await server.close();
      await repo.close();
      await rm(workDir, { recursive: true, force: true });
    },
  };
}
