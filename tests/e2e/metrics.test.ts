/**
 * The API's Prometheus metrics, scraped over HTTP from GET /metrics on the metrics port (served as main.ts
 * serves it) after real traffic against a real git remote: requests by route and status with their latency, group commits (result, batch size, duration),
 * idempotent replays, problems by type (adoption refusals among them), rollouts by phase and gate
 * evaluations. Status-cache reads are scraped in status-cache.test.ts, against a real kube-apiserver. And the built
 * API with its metrics port taken: it stops before it listens on its main port.
 */
// needs: dist
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { startHealthServer, type HealthServer } from "@berth/kube-runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, REPO_ROOT, startBerth, type RunningBerth } from "../support/berth.js";
import { API_ENTRY, ensureBuilt } from "../support/build.js";
import { readProblem } from "../support/contract.js";
import { ManualClock } from "../support/clock.js";
import { createBareRepo, makeTempDir, type BareRepo } from "../support/git-remotes.js";
import { freePort } from "../support/ports.js";
import { sample } from "../support/prometheus.js";
import { ScriptedStatusReader } from "../support/scripted-status.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const auth = { authorization: `Bearer ${DEV_TOKEN}` };

describe("the API's metrics", () => {
  let remote: BareRepo;
  let berth: RunningBerth;
  let metricsServer: HealthServer;

  beforeAll(async () => {
    remote = await createBareRepo();
    berth = await startBerth({
      remoteUrl: remote.url,
      listen: true,
      startEngine: false,
      clock: new ManualClock(),
      statusReader: new ScriptedStatusReader(),
      env: { BERTH_LOG_LEVEL: "warn" },
      config: (raw) => {
        raw.api.clusters = Object.fromEntries(
          ["aks-dev-weu", "aks-prod-weu", "aks-prod-neu"].map((c) => [c, { kubeconfig: "/dev/null" }]),
        );
      },
    });
    metricsServer = await startHealthServer({
      port: 0,
      host: "127.0.0.1",
      registry: berth.services.metrics.registry,
      ready: () => true,
    });
  }, 120_000);
  afterAll(async () => {
    await metricsServer?.close();
    await berth?.stop();
    await remote?.remove();
  });

  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(`${berth.url}${path}`, {
      method,
      headers: { ...auth, ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  it("exports requests, commits, replays, problems, rollouts and gate evaluations at GET /metrics on its own port", async () => {
    const team = { name: "payments", owners: [OWNER], environments: ["dev"] };
    expect((await call("POST", "/v1/teams", team, { "idempotency-key": "metrics-1" })).status).toBe(201);
    const replay = await call("POST", "/v1/teams", team, { "idempotency-key": "metrics-1" });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect((await call("POST", "/v1/teams", { ...team, name: "Bad Name" })).status).toBe(422);
    const adoption = await call("POST", "/v1/teams/ghost/adopt/preview", {});
    expect(adoption.status).toBeGreaterThanOrEqual(400);
    const adoptionType = (await readProblem(adoption)).type.replace("https://berth.dev/problems/", "");
    expect((await call("GET", "/v1/teams/payments")).status).toBe(200);
    const staged = await call("POST", "/v1/rollouts", {
      target: { templateVersion: "v3" },
      waves: [{ name: "all" }],
      gate: { timeoutSeconds: 600 },
    });
    expect(staged.status).toBe(201);
    await berth.services.engine.tick(); // commits the wave, then evaluates its gate: nobody is Ready yet

    // Not on the API's port, which the ingress exposes.
    expect((await fetch(`${berth.url}/metrics`)).status).toBe(404);
    const scrape = await fetch(`http://127.0.0.1:${metricsServer.port}/metrics`);
    expect(scrape.status).toBe(200);
    expect(scrape.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await scrape.text();

    expect(
      sample(text, "berth_api_http_request_duration_seconds_count", {
        method: "POST",
        route: "/v1/teams",
        status_code: "201",
      }),
    ).toBe(2);
    expect(
      sample(text, "berth_api_http_request_duration_seconds_count", {
        method: "POST",
        route: "/v1/teams",
        status_code: "422",
      }),
    ).toBe(1);
    expect(
      sample(text, "berth_api_http_request_duration_seconds_count", {
        method: "GET",
        route: "/v1/teams/:name",
        status_code: "200",
      }),
    ).toBe(1);
    expect(
      sample(text, "berth_api_http_request_duration_seconds_bucket", {
        method: "GET",
        route: "/v1/teams/:name",
        status_code: "200",
        le: "+Inf",
      }),
    ).toBe(1);
    expect(sample(text, "berth_api_idempotent_replays_total", { route: "/v1/teams" })).toBe(1);
    expect(sample(text, "berth_api_problems_total", { route: "/v1/teams", type: "invalid-request" })).toBe(1);
    expect(
      sample(text, "berth_api_problems_total", { route: "/v1/teams/:name/adopt/preview", type: adoptionType }),
    ).toBe(1);
    // Three commits pushed: the team, the rollout file, the wave.
    expect(sample(text, "berth_api_git_batches_total", { result: "pushed" })).toBe(3);
    expect(sample(text, "berth_api_git_batch_transactions_count")).toBe(3);
    expect(sample(text, "berth_api_git_commit_duration_seconds_count", { result: "pushed" })).toBe(3);
    expect(sample(text, "berth_api_git_push_duration_seconds_count")).toBe(3);
    expect(sample(text, "berth_api_git_push_retries_total")).toBe(0);
    expect(sample(text, "berth_api_rollouts", { phase: "Running" })).toBe(1);
    expect(sample(text, "berth_api_rollouts", { phase: "Completed" })).toBe(0);
    expect(sample(text, "berth_api_rollout_gate_evaluations_total", { verdict: "wait" })).toBe(1);
    expect(sample(text, "berth_api_rollout_gate_evaluation_duration_seconds_count")).toBe(1);
    expect(sample(text, "berth_api_process_resident_memory_bytes")).toBeGreaterThan(0);
    // Labels are route templates and problem types: never a team name or a request.
    expect(text).not.toContain("payments");
  });
});

describe("the API process with its metrics port taken", () => {
  let remote: BareRepo;
  let taken: Server;

  beforeAll(async () => {
    const built = ensureBuilt();
    remote = await createBareRepo();
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    await built;
  }, 600_000);
  afterAll(async () => {
    await new Promise((resolve) => taken?.close(resolve));
    await remote?.remove();
  });

  it("stops with a message naming the port before it listens on its main port", async () => {
    const metricsPort = (taken.address() as { port: number }).port;
    const port = await freePort();
    const child = spawn(process.execPath, [API_ENTRY], {
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: process.env.HOME ?? "/tmp",
        BERTH_CONFIG_FILE: join(REPO_ROOT, "infra", "local", "berth.yaml"),
        BERTH_HOST: "127.0.0.1",
        BERTH_PORT: String(port),
        BERTH_METRICS_PORT: String(metricsPort),
        BERTH_GIT_URL: remote.url,
        BERTH_GIT_WORKDIR: join(await makeTempDir("berth-metrics-port-"), "clone"),
        BERTH_AUTH_MODE: "dev",
        BERTH_DEV_TOKEN: DEV_TOKEN,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d) => (output += String(d)));
    child.stderr.on("data", (d) => (output += String(d)));
    // Until it exits, whether anything ever answered on the main port.
    let served = false;
    const watching = setInterval(() => {
      void fetch(`http://127.0.0.1:${port}/healthz`).then(
        () => (served = true),
        () => undefined,
      );
    }, 10);
    const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
    clearInterval(watching);
    expect(code, output).toBe(1);
    expect(output).toContain(
      `berth api cannot start: the metrics port 127.0.0.1:${metricsPort} (api.metricsPort, BERTH_METRICS_PORT) is in use`,
    );
    expect(output).not.toContain("Server listening");
    expect(served).toBe(false);
  });
});
