/**
 * Rollouts end to end: Berth's API (real wiring, its rollout engine running on real time) against a real
 * git remote, two real kube-apiservers (clusters aks-dev-weu and aks-prod-weu) each with Berth's
 * controller running under its own RBAC, and Flux and ASO played on each cluster by ClusterSim
 * (tests/support/cluster-sim.ts). The API reads Team status as its own least-privileged user, exactly as
 * GET /v1/teams/{name}/status does. In order:
 *
 *   1. v1 → v2 in two waves (dev-only teams, then the rest) completes;
 *   2. v2 → v1 halts because a wave-1 team's identity turns Failed (Ready=False, severity Error) and does
 *      not touch wave 2; after the fix, resume completes it;
 *   3. an abort while wave 1 is gated leaves each team on exactly one version and says which;
 *   4. the API is restarted while wave 1 is gated; the new process carries on from the repo.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { loadControllerConfig } from "@berth/config";
import pino from "pino";
import { stringify } from "yaml";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Controller } from "../../apps/controller/src/controller.js";
import { StaticValuesProvider } from "../../apps/controller/src/providers/static.js";
import { Admin, CONTROLLER_GROUPS, CONTROLLER_USER, INFRA, readManifests } from "../controller/helpers.js";
import { eventually } from "../support/wait.js";
import { DEV_TOKEN, startBerth, type RunningBerth } from "../support/berth.js";
import { ClusterSim } from "../support/cluster-sim.js";
import { createBareRepo, type BareRepo } from "../support/git-remotes.js";
import { skipWithoutKubeBinaries, startKubeCluster, type KubeCluster } from "../support/kube-cluster.js";

const skip = skipWithoutKubeBinaries();
const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const auth = { authorization: `Bearer ${DEV_TOKEN}` };
const ASO_NS = "flux-config";
const TENANT = "11111111-1111-4111-8111-111111111111";
const CLUSTERS = ["aks-dev-weu", "aks-prod-weu"] as const;
type ClusterName = (typeof CLUSTERS)[number];
const ENV_OF: Record<ClusterName, string> = { "aks-dev-weu": "dev", "aks-prod-weu": "prod" };
/** alpha and delta land on dev only (wave 1); bravo on prod; charlie on both. */
const TEAMS: Record<string, string[]> = { alpha: ["dev"], delta: ["dev"], bravo: ["prod"], charlie: ["dev", "prod"] };
const waves = (version: string, extra: object = {}) => ({
  description: `fleet to ${version}`,
  target: { templateVersion: version },
  waves: [{ name: "dev", selector: { onlyEnvironments: ["dev"] } }, { name: "rest" }],
  gate: { timeoutSeconds: 300 },
  ...extra,
});

const PLATFORM = {
  asoNamespace: ASO_NS,
  templateVersion: "v1",
  environments: CLUSTERS.map((c, i) => ({
    name: ENV_OF[c],
    clusters: [
      {
        name: c,
        vars: {
          TENANT_ID: TENANT,
          SUBSCRIPTION_ID: `22222222-2222-4222-8222-22222222222${i}`,
          CLUSTER_OIDC_ISSUER_URL: `https://westeurope.oic.prod-aks.azure.com/${TENANT}/${c}/`,
          AZURE_LOCATION: "westeurope",
          PLATFORM_CLIENT_ID: "33333333-3333-4333-8333-333333333333",
        },
      },
    ],
  })),
};

describe.skipIf(skip)("rollouts end to end: real remote, two kube-apiservers with the controller, Flux and ASO played", () => {
  const clusters = new Map<ClusterName, { cluster: KubeCluster; admin: Admin; sim: ClusterSim; controller: Controller }>();
  let remote: BareRepo;
  let berth: RunningBerth;
  let apiKubeconfigs: Record<string, string>;
  const logs: string[] = [];

  const startApi = async () =>
    startBerth({
      remoteUrl: remote.url,
      env: { BERTH_LOG_LEVEL: "info" },
      config: (raw) => {
        raw.platform = PLATFORM;
        raw.api.clusters = Object.fromEntries(Object.entries(apiKubeconfigs).map(([c, kubeconfig]) => [c, { kubeconfig }]));
        raw.api.rollouts = { pollIntervalMs: 300, gateTimeoutSeconds: 300 };
      },
    });

  beforeAll(async () => {
    const t0 = Date.now();
    remote = await createBareRepo();
    const dir = mkdtempSync(join(tmpdir(), "berth-rollout-e2e-"));
    const configFile = join(dir, "berth.yaml");
    writeFileSync(configFile, stringify({ platform: PLATFORM }));
    apiKubeconfigs = {};
    await Promise.all(
      CLUSTERS.map(async (name) => {
        const cluster = await startKubeCluster({ crds: readManifests(join(INFRA, "crds")) });
        const admin = new Admin(cluster.kubeConfig());
        await admin.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: ASO_NS } });
        for (const obj of readManifests(INFRA, (f) => f === "namespace.yaml" || f.startsWith("rbac-"))) await admin.create(obj);
        // The API reads Team objects as a user that may only get them.
        await admin.create({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: "berth-api-status" }, rules: [{ apiGroups: ["berth.dev"], resources: ["teams"], verbs: ["get"] }] } as never);
        await admin.create({
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "ClusterRoleBinding",
          metadata: { name: "berth-api-status" },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "berth-api-status" },
          subjects: [{ kind: "User", name: "berth-api", apiGroup: "rbac.authorization.k8s.io" }],
        } as never);
        apiKubeconfigs[name] = await cluster.writeKubeconfigFile("berth-api");
        const sink = new Writable({
          write(chunk, _enc, done) {
            logs.push(`${name} ${String(chunk)}`);
            done();
          },
        });
        const controller = new Controller({
          kubeConfig: cluster.kubeConfigFor(CONTROLLER_USER, CONTROLLER_GROUPS),
          config: loadControllerConfig({ BERTH_CONFIG_FILE: configFile, BERTH_CLUSTER_NAME: name, BERTH_POD_NAME: `${name}-controller`, BERTH_METRICS_PORT: "0", BERTH_LEADER_ELECTION: "false" }),
          provider: new StaticValuesProvider(),
          logger: pino({ level: "warn" }, sink),
          timings: { leaseDurationSec: 6, renewDeadlineSec: 4, retryPeriodSec: 1, retryMs: 1_000 },
        });
        await controller.start();
        const sim = new ClusterSim({ kc: cluster.kubeConfig(), cluster: name, remoteDir: remote.dir, asoNamespace: ASO_NS, tenantId: TENANT });
        sim.start(300);
        clusters.set(name, { cluster, admin, sim, controller });
      }),
    );
    berth = await startApi();
    for (const [name, environments] of Object.entries(TEAMS)) {
      const res = await berth.server.inject({ method: "POST", url: "/v1/teams", headers: auth, payload: { name, owners: [OWNER], environments } });
      expect(res.statusCode, res.body).toBe(201);
    }
    // The whole chain works before any rollout: every team Ready on every cluster it lands on.
    for (const team of Object.keys(TEAMS)) await eventually(`${team} Ready on v1`, () => ready(team), 120_000);
    console.log(`[tests/e2e/rollouts] 2 clusters, 2 controllers, 4 teams Ready in ${Date.now() - t0} ms`);
  }, 300_000);

  afterAll(async () => {
    if (process.env.BERTH_TEST_DEBUG) {
      console.log(logs.slice(-30).join(""));
      for (const [n, c] of clusters) console.log(n, c.sim.errors.slice(-5));
    }
    await berth?.stop();
    await Promise.all(
      [...clusters.values()].map(async (c) => {
        await c.sim.stop();
        await Promise.race([c.controller.stop(), new Promise((r) => setTimeout(r, 5_000))]);
        await c.cluster.stop();
      }),
    );
  });

  // A failed step must not leave a rollout holding the teams (the next step would get a 409) or a cluster paused.
  afterEach(async () => {
    for (const c of clusters.values()) {
      c.sim.paused = false;
      c.sim.failing.clear();
    }
    const items = ((await berth.server.inject({ url: "/v1/rollouts", headers: auth })).json() as { items: Array<{ metadata: { name: string }; status: { phase: string } }> }).items;
    for (const r of items.filter((x) => ["Running", "Paused", "Halted"].includes(x.status.phase))) await post(`/v1/rollouts/${r.metadata.name}/abort`);
  });

  const get = async (url: string, api = berth) => {
    const res = await api.server.inject({ url, headers: auth });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as any;
  };
  const post = (url: string, payload?: object, api = berth) => api.server.inject({ method: "POST", url, headers: auth, ...(payload ? { payload } : {}) });
  const ready = async (team: string) => (await get(`/v1/teams/${team}/status`)).ready as boolean;
  const rollout = async (id: string, api = berth) => (await get(`/v1/rollouts/${id}`, api)).rollout;
  const until = (id: string, what: string, pred: (r: any) => boolean, api = berth, ms = 180_000) =>
    eventually(`rollout ${id}: ${what}`, async () => {
      const r = await rollout(id, api);
      return pred(r) ? r : undefined;
    }, ms);
  /** The version label Flux applied on the team's Namespace on a cluster (v1 objects carry none). */
  const appliedVersion = async (cluster: ClusterName, team: string) =>
    ((await clusters.get(cluster)!.admin.get("v1", "Namespace", undefined, team))?.metadata as { labels?: Record<string, string> })?.labels?.["berth.dev/template-version"] ?? "v1";
  const repoVersion = async (team: string) => (await get(`/v1/teams/${team}`)).team.templateVersion as string;
  const start = async (body: object, api = berth) => {
    const res = await post("/v1/rollouts", body, api);
    expect(res.statusCode, res.body).toBe(201);
    return res.json().rollout.metadata.name as string;
  };

  it("1. v1 → v2 in two waves completes; wave 2 is committed only after wave 1 is Ready on its cluster", async () => {
    const id = await start(waves("v2"));
    const done = await until(id, "Completed", (r) => r.status.phase === "Completed");
    expect(done.spec.waves).toEqual([{ name: "dev", teams: ["alpha", "delta"] }, { name: "rest", teams: ["bravo", "charlie"] }]);
    const events = done.status.history.map((h: { event: string }) => h.event);
    expect(events).toEqual(["Created", "WaveCommitted", "WaveReady", "WaveCommitted", "WaveReady", "Completed"]);
    expect(Date.parse(done.status.waves[1].committedAt)).toBeGreaterThanOrEqual(Date.parse(done.status.waves[0].readyAt));
    for (const team of Object.keys(TEAMS)) expect(await repoVersion(team)).toBe("v2");
    // What Flux applied: v2 objects on every cluster each team lands on; the controller reports them Ready.
    for (const [team, envs] of Object.entries(TEAMS)) {
      for (const c of CLUSTERS.filter((x) => envs.includes(ENV_OF[x]))) expect(await appliedVersion(c, team), `${team} on ${c}`).toBe("v2");
      expect(await ready(team)).toBe(true);
    }
  }, 300_000);

  it("2. a wave-1 team turning Failed halts the rollout before wave 2; resume after the fix completes it", async () => {
    clusters.get("aks-dev-weu")!.sim.failing.add("delta");
    const id = await start(waves("v1"));
    const halted = await until(id, "Halted", (r) => r.status.phase === "Halted");
    expect(halted.status.halt).toMatchObject({ wave: "dev", reason: "Failed" });
    expect(halted.status.halt.teams).toEqual([
      expect.objectContaining({ team: "delta", cluster: "aks-dev-weu", result: "failed", condition: "IdentityReady", reason: "AuthorizationFailed", severity: "Error" }),
    ]);
    expect(halted.status.halt.teams[0].message).toContain("userAssignedIdentities/write");
    // The status page shows the same halt: which team, cluster, condition and ASO's reason.
    const signIn = await berth.server.inject({ method: "POST", url: "/ui/sign-in", headers: { "content-type": "application/x-www-form-urlencoded" }, payload: new URLSearchParams({ token: DEV_TOKEN, next: "/ui" }).toString() });
    const page = await berth.server.inject({ url: `/ui/rollouts/${id}`, headers: { cookie: String(signIn.headers["set-cookie"]).split(";")[0]! } });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('data-rollout-phase="Halted"');
    expect(page.body).toContain('data-halt-reason="Failed"');
    expect(page.body).toMatch(/<tr data-team="delta" data-result="failed">[\s\S]*?<td>aks-dev-weu<\/td>[\s\S]*?<td>IdentityReady<\/td>\s*<td>AuthorizationFailed \(severity Error\)<\/td>/);
    expect(page.body).toContain('<tr data-wave="rest" data-wave-phase="Pending">');
    // Wave 2 was not touched: in the repo and on the clusters, bravo and charlie are still on v2.
    for (const team of ["bravo", "charlie"]) expect(await repoVersion(team)).toBe("v2");
    expect(await appliedVersion("aks-prod-weu", "bravo")).toBe("v2");
    expect(await appliedVersion("aks-dev-weu", "alpha")).toBe("v1");
    expect((await rollout(id)).status.waves[1].phase).toBe("Pending");

    // The fix (the identity's role assignment, in real life): ASO reports Ready again. Then resume.
    clusters.get("aks-dev-weu")!.sim.failing.delete("delta");
    await eventually("delta Ready again", () => ready("delta"), 120_000);
    const resumed = await post(`/v1/rollouts/${id}/resume`);
    expect(resumed.statusCode, resumed.body).toBe(200);
    await until(id, "Completed", (r) => r.status.phase === "Completed");
    for (const team of Object.keys(TEAMS)) expect(await repoVersion(team)).toBe("v1");
    expect(await appliedVersion("aks-prod-weu", "bravo")).toBe("v1");
  }, 300_000);

  it("3. an abort while wave 1 is gated: no wave 2, each team on exactly one version, and the answer says which", async () => {
    // Flux on the dev cluster stops applying: wave 1 cannot become Ready.
    clusters.get("aks-dev-weu")!.sim.paused = true;
    const id = await start(waves("v2"));
    await until(id, "wave 1 committed", (r) => r.status.waves[0].phase === "Committed");
    const aborted = await post(`/v1/rollouts/${id}/abort`);
    expect(aborted.statusCode, aborted.body).toBe(200);
    expect(aborted.json().versions).toEqual({ v1: ["bravo", "charlie"], v2: ["alpha", "delta"] });
    clusters.get("aks-dev-weu")!.sim.paused = false;
    for (const team of ["alpha", "delta"]) await eventually(`${team} Ready on v2`, async () => (await appliedVersion("aks-dev-weu", team)) === "v2" && ready(team), 120_000);
    const r = await rollout(id);
    expect(r.status.phase).toBe("Aborted");
    expect(r.status.waves.map((w: { phase: string }) => w.phase)).toEqual(["Committed", "Pending"]);
    for (const team of ["bravo", "charlie"]) expect(await repoVersion(team)).toBe("v1");
  }, 300_000);

  it("4. the API restarted while wave 1 is gated carries on from the repo and completes the rollout", async () => {
    // bravo and charlie are still on v1: roll them to v2, bravo first.
    clusters.get("aks-prod-weu")!.sim.paused = true;
    const id = await start({ target: { templateVersion: "v2" }, waves: [{ name: "canary", selector: { names: ["bravo"] } }, { name: "rest" }] });
    await until(id, "wave 1 committed", (r) => r.status.waves[0].phase === "Committed");
    await berth.stop();
    berth = await startApi(); // a new process: new clone, nothing in memory
    clusters.get("aks-prod-weu")!.sim.paused = false;
    const done = await until(id, "Completed", (r) => r.status.phase === "Completed");
    expect(done.spec.waves).toEqual([{ name: "canary", teams: ["bravo"] }, { name: "rest", teams: ["charlie"] }]);
    expect(done.status.history.filter((h: { event: string }) => h.event === "WaveCommitted")).toHaveLength(2);
    for (const team of Object.keys(TEAMS)) expect(await repoVersion(team)).toBe("v2");
    expect((await get("/v1/templates")).items.map((i: { version: string; teams: number }) => [i.version, i.teams])).toEqual([["v1", 0], ["v2", 4]]);
  }, 300_000);
});
