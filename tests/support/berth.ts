import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { loadConfig, loadTemplateSet, type BerthConfig } from "@berth/config";
import { Onboarding } from "@berth/core";
import { FluxRepo } from "@berth/gitops";
import type { FastifyInstance } from "fastify";
import pino from "pino";
import { parse, stringify } from "yaml";
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
 * Limits for tests that are not about rate limiting: far above what any test sends, so no test gets a 429 it
 * did not ask for. Tests of the limits pass their own `api.rateLimit`.
 */
const TEST_RATE_LIMITS = { reads: 1_000_000, writes: 1_000_000, unauthenticated: 1_000_000 };

/**
 * infra/local/berth.yaml with `api` settings merged over its own, written beside the work dir: the overrides
 * go through the same file parsing and validation as a deployment's config.
 */
export async function writeConfigFile(dir: string, api: Record<string, unknown>): Promise<string> {
  const base = parse(await readFile(join(REPO_ROOT, "infra", "local", "berth.yaml"), "utf8")) as Record<string, unknown>;
  const file = join(dir, "berth.yaml");
  const merged = {
    ...base,
    templatesDir: join(REPO_ROOT, "templates"),
    api: { ...(base.api as Record<string, unknown>), ...api, rateLimit: { ...TEST_RATE_LIMITS, ...(api.rateLimit as object | undefined) } },
  };
  await writeFile(file, stringify(merged));
  return file;
}

/**
 * Berth's API wired exactly as main.ts wires it (infra/local/berth.yaml, the real git adapter), against
 * the given remote. Extra env overrides config (e.g. BERTH_AUTH_MODE=oidc, BERTH_GIT_TOKEN); `api` is merged
 * over the file's `api` section (timeouts, rateLimit, ...).
 */
export async function startBerth(options: { remoteUrl: string; env?: Record<string, string>; listen?: boolean; api?: Record<string, unknown> }): Promise<RunningBerth> {
  const workDir = await mkdtemp(join(tmpdir(), "berth-work-"));
  const config = loadConfig(
    {
      BERTH_CONFIG_FILE: await writeConfigFile(workDir, options.api ?? {}),
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
  const repo = FluxRepo.fromConfig({ ...config.fluxRepo, history: config.api.idempotency, logger: logger.child({ component: "flux-repo" }) });
  await repo.init();
  const onboarding = new Onboarding(config.platform, templates);
  const statusReader = KubeTeamStatusReader.fromConfig(config.api.clusters, { ttlMs: config.api.statusCacheSeconds * 1000 });
  const server = await buildServer(
    {
      teams: new TeamService(onboarding, repo, statusReader),
      store: repo,
      authenticator: authenticatorFor(config.api.auth),
      limits: config.api.rateLimit,
      board: new StatusBoard(onboarding, repo, statusReader),
      ui: { auth: config.api.auth, config: config.api.ui },
    },
    { logger, bodyLimit: config.api.bodyLimitBytes, timeouts: config.api.timeouts, trustProxy: config.api.trustProxy },
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
