import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { loadConfig, type BerthConfig } from "@berth/config";
import type { FluxRepo } from "@berth/gitops";
import type { FastifyInstance } from "fastify";
import pino from "pino";
import { parse, stringify } from "yaml";
import { buildServer, loggerOptions } from "../../apps/api/src/http/server.js";
import type { Clock } from "../../packages/kube-runtime/src/clock.js";
import type { TeamStatusReader } from "../../apps/api/src/adapters/team-status.js";
import { createServices, type ApiServices } from "../../apps/api/src/wiring.js";

export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const DEV_TOKEN = "test-dev-token-0123456789abcdef";

export interface RunningBerth {
  config: BerthConfig;
  server: FastifyInstance;
  /** Base URL when started with listen: true. */
  url: string;
  repo: FluxRepo;
  /** The shared per-cluster status reader (its stats() count the requests clusters received). */
  statusReader: TeamStatusReader;
  /** The services as main.ts builds them (the rollout engine among them). */
  services: ApiServices;
  /** Every log line written so far (JSON), for redaction checks. */
  logs: string[];
  /** The log lines from index `from` of `logs` on, parsed. */
  logEntries<T = Record<string, unknown>>(from?: number): T[];
  stop(): Promise<void>;
}

/**
 * Limits for tests that are not about rate limiting: far above what any test sends, so no test gets a 429 it
 * did not ask for. Tests of the limits pass their own `api.rateLimit`.
 */
const TEST_RATE_LIMITS = { reads: 1_000_000, writes: 1_000_000, unauthenticated: 1_000_000 };

/**
 * infra/local/berth.yaml as parsed, for a test to change before Berth reads it: loadConfig then validates it
 * like any deployment's file.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- edits reach any section at any depth, and the callers in tests/support/flux-platform.ts and tests/rollouts, tests/e2e/adoption-platform (being changed now) rely on it; a typed config input is follow-up work
export type RawConfig = Record<string, any>;

/**
 * A config edit: pull-request mode on `review`'s forge (fluxRepo.review, ADR 0030), on the layout that mode needs
 * (team artifacts applied by slices).
 */
export const inPullRequestMode =
  (review: { forge: "gitea" | "github"; url: string; owner: string; repository: string }) => (raw: RawConfig) => {
    raw.fluxRepo = { ...raw.fluxRepo, review: { mode: "pull-request", ...review } };
    raw.platform.fluxSource = { kind: "ExternalArtifact", artifactPrefix: "team-files-" };
    raw.platform.layout = { appliedBy: "slices" };
  };

/**
 * infra/local/berth.yaml with `api` settings merged over its own, written beside the work dir: the overrides
 * go through the same file parsing and validation as a deployment's config.
 */
export async function writeConfigFile(
  dir: string,
  api: Record<string, unknown>,
  edit?: (raw: RawConfig) => void,
): Promise<string> {
  const base = parse(await readFile(join(REPO_ROOT, "infra", "local", "berth.yaml"), "utf8")) as Record<
    string,
    unknown
  >;
  const file = join(dir, "berth.yaml");
  const merged = {
    ...base,
    templatesDir: join(REPO_ROOT, "templates"),
    api: {
      ...(base.api as Record<string, unknown>),
      ...api,
      rateLimit: { ...TEST_RATE_LIMITS, ...(api.rateLimit as object | undefined) },
    },
  };
  edit?.(merged);
  await writeFile(file, stringify(merged));
  return file;
}

/**
 * Berth's API wired exactly as main.ts wires it (infra/local/berth.yaml, the real git adapter), against
 * the given remote. Extra env overrides config (e.g. BERTH_AUTH_MODE=oidc, BERTH_GIT_TOKEN); `api` is merged
 * over the file's `api` section (timeouts, rateLimit, ...).
 */
export async function startBerth(options: {
  remoteUrl: string;
  env?: Record<string, string>;
  listen?: boolean;
  /** Merged over the file's `api` section (timeouts, rateLimit, ...). */
  api?: Record<string, unknown>;
  /** Changes to infra/local/berth.yaml for this instance (e.g. platform.templateVersion, api.rollouts). */
  config?: (raw: RawConfig) => void;
  /** Replace the rollout engine's clock and the cluster status reader (default: real time, the kubeconfigs). */
  clock?: Clock;
  statusReader?: TeamStatusReader;
  /** Start the rollout engine's loop (default true); false: the test steps it with services.engine.tick(). */
  startEngine?: boolean;
}): Promise<RunningBerth> {
  const workDir = await mkdtemp(join(tmpdir(), "berth-work-"));
  const config = loadConfig(
    {
      BERTH_CONFIG_FILE: await writeConfigFile(workDir, options.api ?? {}, options.config),
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
  const services = await createServices(config, logger, {
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.statusReader ? { statusReader: options.statusReader } : {}),
  });
  const server = await buildServer(services.deps, {
    logger,
    bodyLimit: config.api.bodyLimitBytes,
    timeouts: config.api.timeouts,
    trustProxy: config.api.trustProxy,
  });
  const url = options.listen ? await server.listen({ host: "127.0.0.1", port: 0 }) : "";
  if (options.startEngine !== false) await services.start();
  return {
    config,
    server,
    url,
    repo: services.repo,
    services,
    statusReader: services.statusReader,
    logs,
    logEntries: <T>(from = 0) =>
      logs
        .slice(from)
        .flatMap((chunk) => chunk.split("\n").filter(Boolean))
        .map((line) => JSON.parse(line) as T),
    async stop() {
      await server.close();
      await services.close();
      await rm(workDir, { recursive: true, force: true });
    },
  };
}

/** A status-page session of the dev token's caller: the cookie to send with `/ui` requests. */
export async function uiSessionCookie(berth: Pick<RunningBerth, "server">): Promise<string> {
  const signIn = await berth.server.inject({
    method: "POST",
    url: "/ui/sign-in",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    payload: new URLSearchParams({ token: DEV_TOKEN, next: "/ui" }).toString(),
  });
  return String(signIn.headers["set-cookie"]).split(";")[0]!;
}
