/**
 * Rollouts end to end with real Flux: Berth's API (real wiring, its rollout engine running on real time) commits
 * over smart HTTP to a fleet repository that two clusters (aks-dev-weu and aks-prod-weu, each a real kube-apiserver
 * with real Flux and Berth's controller, tests/support/flux-platform.ts) pull from. The gate reads the Team status
 * each controller writes from what Flux applied, as its own least-privileged user, exactly as
 * GET /v1/teams/{name}/status does. ASO is scripted (AsoStandIn): scenario 2 needs an identity that turns Failed
 * (severity Error) on a later revision, which real ASO reports only on a subscription mismatch or a request ARM
 * refuses as malformed; tests/flux/aso.test.ts runs real ASO, and a gate on what it reports. In order:
 *
 *   1. v1 → v3 in two waves (dev-only teams, then the rest) completes;
 *   2. v3 → v1 halts because a wave-1 team's identity turns Failed (Ready=False, severity Error) and does
 *      not touch wave 2; after the fix, resume completes it;
 *   3. an abort while wave 1 is gated (Flux on dev suspended) leaves each team on exactly one version and says which;
 *   4. the API is restarted while wave 1 is gated; the new process carries on from the repo.
 */
// needs: cluster dist
import {
  rolloutAbortResponse,
  rolloutCreatedResponse,
  rolloutListResponse,
  rolloutResponse,
  statusResponse,
  teamResponse,
  templateListResponse,
} from "@berth/api-contract";
import type { Rollout } from "@berth/core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../support/wait.js";
import { DEV_TOKEN, uiSessionCookie, type RunningBerth } from "../support/berth.js";
import { readAnswer, type AnswerSchema } from "../support/contract.js";
import { startFluxPlatform, type FluxPlatform, type PlatformCluster } from "../support/flux-platform.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const auth = { authorization: `Bearer ${DEV_TOKEN}` };
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

describe("rollouts end to end: two clusters with real Flux and the controller, ASO played", () => {
  let platform: FluxPlatform;
  let berth: RunningBerth;
  const cluster = (name: ClusterName): PlatformCluster => platform.clusters.get(name)!;

  beforeAll(async () => {
    const t0 = Date.now();
    platform = await startFluxPlatform({
      clusters: CLUSTERS.map((name) => ({ name, environment: ENV_OF[name] })),
      berthConfig: (raw) => (raw.api.rollouts = { pollIntervalMs: 300, gateTimeoutSeconds: 300 }),
    });
    berth = platform.berth;
    for (const [name, environments] of Object.entries(TEAMS)) {
      const res = await berth.server.inject({
        method: "POST",
        url: "/v1/teams",
        headers: auth,
        payload: { name, owners: [OWNER], environments },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
    // The whole chain works before any rollout: every team Ready on every cluster it lands on.
    for (const team of Object.keys(TEAMS)) await eventually(`${team} Ready on v1`, () => ready(team), 180_000);
    console.log(
      `[tests/e2e/rollouts] 2 clusters with Flux and a controller each, 4 teams Ready in ${Date.now() - t0} ms`,
    );
  }, 600_000);

  afterAll(async () => {
    await platform?.stop();
  });

  // A failed step must not leave a rollout holding the teams (the next step would get a 409) or a cluster paused.
  afterEach(async () => {
    for (const c of platform.clusters.values()) {
      await c.suspendSource(false);
      c.aso!.failures.clear();
    }
    const { items } = readAnswer(
      await berth.server.inject({ url: "/v1/rollouts", headers: auth }),
      rolloutListResponse,
    );
    for (const r of items.filter((x) => ["Running", "Paused", "Halted"].includes(x.status.phase)))
      await post(`/v1/rollouts/${r.metadata.name}/abort`);
  });

  /** A 200 answer, parsed with the schema the route declares (so the contract is checked too). */
  const get = async <T>(url: string, schema: AnswerSchema<T>, api = berth): Promise<T> => {
    const res = await api.server.inject({ url, headers: auth });
    expect(res.statusCode, res.body).toBe(200);
    return readAnswer(res, schema);
  };
  const post = (url: string, payload?: object, api = berth) =>
    api.server.inject({ method: "POST", url, headers: auth, ...(payload ? { payload } : {}) });
  const ready = async (team: string) => (await get(`/v1/teams/${team}/status`, statusResponse)).ready;
  const rollout = async (id: string, api = berth) => (await get(`/v1/rollouts/${id}`, rolloutResponse, api)).rollout;
  const until = (id: string, what: string, pred: (r: Rollout) => boolean, api = berth, ms = 180_000) =>
    eventually(
      `rollout ${id}: ${what}`,
      async () => {
        const r = await rollout(id, api);
        return pred(r) ? r : undefined;
      },
      ms,
    );
  /** The version label Flux applied on the team's Namespace on a cluster (v1 objects carry none). */
  const appliedVersion = async (c: ClusterName, team: string) =>
    ((await cluster(c).admin.get("v1", "Namespace", undefined, team))?.metadata as { labels?: Record<string, string> })
      ?.labels?.["berth.dev/template-version"] ?? "v1";
  const repoVersion = async (team: string) => (await get(`/v1/teams/${team}`, teamResponse)).team.templateVersion;
  const start = async (body: object, api = berth) => {
    const res = await post("/v1/rollouts", body, api);
    expect(res.statusCode, res.body).toBe(201);
    return readAnswer(res, rolloutCreatedResponse).rollout.metadata.name;
  };

  it("1. v1 → v3 in two waves completes; wave 2 is committed only after wave 1 is Ready on its cluster", async () => {
    const id = await start(waves("v3"));
    const done = await until(id, "Completed", (r) => r.status.phase === "Completed");
    expect(done.spec.waves).toEqual([
      { name: "dev", teams: ["alpha", "delta"] },
      { name: "rest", teams: ["bravo", "charlie"] },
    ]);
    const events = done.status.history.map((h: { event: string }) => h.event);
    expect(events).toEqual(["Created", "WaveCommitted", "WaveReady", "WaveCommitted", "WaveReady", "Completed"]);
    expect(Date.parse(done.status.waves[1]?.committedAt ?? "")).toBeGreaterThanOrEqual(
      Date.parse(done.status.waves[0]?.readyAt ?? ""),
    );
    for (const team of Object.keys(TEAMS)) expect(await repoVersion(team)).toBe("v3");
    // What Flux applied: v3 objects on every cluster each team lands on; the controller reports them Ready.
    for (const [team, envs] of Object.entries(TEAMS)) {
      for (const c of CLUSTERS.filter((x) => envs.includes(ENV_OF[x])))
        expect(await appliedVersion(c, team), `${team} on ${c}`).toBe("v3");
      expect(await ready(team)).toBe(true);
    }
  }, 300_000);

  it("2. a wave-1 team turning Failed halts the rollout before wave 2; resume after the fix completes it", async () => {
    // ASO's words when a namespace's credential moved to another subscription than the resource's (checkSubscription).
    cluster("aks-dev-weu").aso!.fail("delta", "UserAssignedIdentity", {
      reason: "SubscriptionMismatch",
      severity: "Error",
      message:
        'SubscriptionID "22222222-2222-4222-8222-222222222220" for "/subscriptions/22222222-2222-4222-8222-222222222220/resourceGroups/rg-delta--aks-dev-weu/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-delta--aks-dev-weu" resource does not match with Client Credential: "22222222-2222-4222-8222-222222222229"',
    });
    const id = await start(waves("v1"));
    const halted = await until(id, "Halted", (r) => r.status.phase === "Halted");
    expect(halted.status.halt).toMatchObject({ wave: "dev", reason: "Failed" });
    expect(halted.status.halt?.teams).toEqual([
      expect.objectContaining({
        team: "delta",
        cluster: "aks-dev-weu",
        result: "failed",
        condition: "IdentityReady",
        reason: "SubscriptionMismatch",
        severity: "Error",
      }),
    ]);
    expect(halted.status.halt?.teams[0]?.message).toContain("does not match with Client Credential");
    // The status page shows the same halt: which team, cluster, condition and ASO's reason.
    const page = await berth.server.inject({
      url: `/ui/rollouts/${id}`,
      headers: { cookie: await uiSessionCookie(berth) },
    });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('data-rollout-phase="Halted"');
    expect(page.body).toContain('data-halt-reason="Failed"');
    expect(page.body).toMatch(
      /<tr data-team="delta" data-result="failed">[\s\S]*?<td>aks-dev-weu<\/td>[\s\S]*?<td>IdentityReady<\/td>\s*<td>SubscriptionMismatch \(severity Error\)<\/td>/,
    );
    expect(page.body).toContain('<tr data-wave="rest" data-wave-phase="Pending">');
    // Wave 2 was not touched: in the repo and on the clusters, bravo and charlie are still on v3.
    for (const team of ["bravo", "charlie"]) expect(await repoVersion(team)).toBe("v3");
    expect(await appliedVersion("aks-prod-weu", "bravo")).toBe("v3");
    expect(await appliedVersion("aks-dev-weu", "alpha")).toBe("v1");
    expect((await rollout(id)).status.waves[1]?.phase).toBe("Pending");

    // The fix (the cluster's credential back on the identity's subscription, in real life): ASO reports Ready again. Then resume.
    cluster("aks-dev-weu").aso!.failures.clear();
    await eventually("delta Ready again", () => ready("delta"), 120_000);
    const resumed = await post(`/v1/rollouts/${id}/resume`);
    expect(resumed.statusCode, resumed.body).toBe(200);
    await until(id, "Completed", (r) => r.status.phase === "Completed");
    for (const team of Object.keys(TEAMS)) expect(await repoVersion(team)).toBe("v1");
    expect(await appliedVersion("aks-prod-weu", "bravo")).toBe("v1");
  }, 300_000);

  it("3. an abort while wave 1 is gated: no wave 2, each team on exactly one version, and the answer says which", async () => {
    // Flux on the dev cluster stops fetching (`flux suspend source git`): wave 1 cannot become Ready.
    await cluster("aks-dev-weu").suspendSource(true);
    const id = await start(waves("v3"));
    await until(id, "wave 1 committed", (r) => r.status.waves[0]?.phase === "Committed");
    const aborted = await post(`/v1/rollouts/${id}/abort`);
    expect(aborted.statusCode, aborted.body).toBe(200);
    expect(readAnswer(aborted, rolloutAbortResponse).versions).toEqual({
      v1: ["bravo", "charlie"],
      v3: ["alpha", "delta"],
    });
    await cluster("aks-dev-weu").suspendSource(false);
    for (const team of ["alpha", "delta"])
      await eventually(
        `${team} Ready on v3`,
        async () => (await appliedVersion("aks-dev-weu", team)) === "v3" && ready(team),
        120_000,
      );
    const r = await rollout(id);
    expect(r.status.phase).toBe("Aborted");
    expect(r.status.waves.map((w: { phase: string }) => w.phase)).toEqual(["Committed", "Pending"]);
    for (const team of ["bravo", "charlie"]) expect(await repoVersion(team)).toBe("v1");
  }, 300_000);

  it("4. the API restarted while wave 1 is gated carries on from the repo and completes the rollout", async () => {
    // bravo and charlie are still on v1: roll them to v3, bravo first.
    await cluster("aks-prod-weu").suspendSource(true);
    const id = await start({
      target: { templateVersion: "v3" },
      waves: [{ name: "canary", selector: { names: ["bravo"] } }, { name: "rest" }],
    });
    await until(id, "wave 1 committed", (r) => r.status.waves[0]?.phase === "Committed");
    await berth.stop();
    berth = await platform.startApi(); // a new process: new clone, nothing in memory
    await cluster("aks-prod-weu").suspendSource(false);
    const done = await until(id, "Completed", (r) => r.status.phase === "Completed");
    expect(done.spec.waves).toEqual([
      { name: "canary", teams: ["bravo"] },
      { name: "rest", teams: ["charlie"] },
    ]);
    expect(done.status.history.filter((h: { event: string }) => h.event === "WaveCommitted")).toHaveLength(2);
    for (const team of Object.keys(TEAMS)) expect(await repoVersion(team)).toBe("v3");
    expect((await get("/v1/templates", templateListResponse)).items.map((i) => [i.version, i.teams])).toEqual([
      ["v1", 0],
      ["v3", 4],
      ["v4", 0],
      ["v5", 0],
      ["v6", 0],
    ]);
  }, 300_000);
});
