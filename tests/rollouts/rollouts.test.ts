/**
 * Rollouts through the real API wiring and a real git remote, with the cluster side scripted: a
 * ScriptedStatusReader answers what each cluster's controller reports, a ManualClock stands in for time,
 * and the test steps the engine (engine.tick()) so every assertion is about a known state. The same
 * flows against a kube-apiserver with the controller running are in tests/e2e/rollouts.test.ts.
 */
import { execFile } from "node:child_process";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import {
  rolloutCreatedResponse,
  rolloutPreviewResponse,
  rolloutResponse,
  type RolloutResponse,
  templateListResponse,
} from "@berth/api-contract";
import { afterEach, describe, expect, it } from "vitest";
import { DEV_TOKEN, startBerth, type RunningBerth } from "../support/berth.js";
import { ManualClock } from "../support/clock.js";
import { pushForeignCommit } from "../support/foreign-pusher.js";
import { createBareRepo, git, inspectRemote, makeTempDir, type BareRepo } from "../support/git-remotes.js";
import { ScriptedStatusReader } from "../support/scripted-status.js";
import { eventually } from "../support/wait.js";

const run = promisify(execFile);
const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const auth = { authorization: `Bearer ${DEV_TOKEN}` };
const ALL_CLUSTERS = ["aks-dev-weu", "aks-prod-weu", "aks-prod-neu"];
/** dev-only teams go first; p3 lands on dev and prod, so a dev-only wave must not take it. */
const TEAMS: Record<string, string[]> = { d1: ["dev"], d2: ["dev"], p1: ["prod"], p2: ["prod"], p3: ["dev", "prod"] };
const CLUSTERS_OF: Record<string, string[]> = { dev: ["aks-dev-weu"], prod: ["aks-prod-weu", "aks-prod-neu"] };
const TWO_WAVES = {
  description: "Version labels and cost tags",
  target: { templateVersion: "v3" },
  waves: [{ name: "dev", selector: { onlyEnvironments: ["dev"] } }, { name: "prod" }],
  gate: { timeoutSeconds: 600 },
};

interface Setup {
  remote: BareRepo;
  berth: RunningBerth;
  clock: ManualClock;
  status: ScriptedStatusReader;
}

const started: RunningBerth[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((b) => b.stop()));
});

async function berthOn(
  remote: BareRepo,
  clock: ManualClock,
  status: ScriptedStatusReader,
  clusters = ALL_CLUSTERS,
): Promise<RunningBerth> {
  const berth = await startBerth({
    remoteUrl: remote.url,
    env: { BERTH_LOG_LEVEL: "warn" },
    clock,
    statusReader: status,
    startEngine: false,
    config: (raw) => {
      raw.api.clusters = Object.fromEntries(clusters.map((c) => [c, { kubeconfig: "/dev/null" }]));
      raw.api.rollouts = { pollIntervalMs: 1_000, gateTimeoutSeconds: 600 };
    },
  });
  started.push(berth);
  return berth;
}

async function setup(clusters = ALL_CLUSTERS): Promise<Setup> {
  const remote = await createBareRepo();
  const clock = new ManualClock();
  const status = new ScriptedStatusReader();
  const berth = await berthOn(remote, clock, status, clusters);
  for (const [name, environments] of Object.entries(TEAMS)) {
    const res = await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: auth,
      payload: { name, owners: [OWNER], environments },
    });
    expect(res.statusCode, res.body).toBe(201);
  }
  return { remote, berth, clock, status };
}

const api = (berth: RunningBerth, method: "GET" | "POST" | "PUT" | "DELETE", url: string, payload?: object) =>
  berth.server.inject({ method, url, headers: auth, ...(payload ? { payload } : {}) });

async function head(remote: BareRepo): Promise<string> {
  return (await run("git", ["--git-dir", remote.dir, "rev-parse", "refs/heads/main"])).stdout.trim();
}

async function show(remote: BareRepo, path: string): Promise<string | undefined> {
  return run("git", ["--git-dir", remote.dir, "show", `main:${path}`]).then(
    (r) => r.stdout,
    () => undefined,
  );
}

async function versionOf(remote: BareRepo, team: string): Promise<string | undefined> {
  return /templateVersion: (v\d+)/.exec((await show(remote, `teams/${team}/base/team.yaml`)) ?? "")?.[1];
}

async function versions(remote: BareRepo): Promise<Record<string, string | undefined>> {
  const out: Record<string, string | undefined> = {};
  for (const t of Object.keys(TEAMS)) out[t] = await versionOf(remote, t);
  return out;
}

/** Every listed team reports Ready on every cluster it lands on, at the current head. */
async function reportReady(s: Setup, teams: string[]): Promise<void> {
  const sha = await head(s.remote);
  for (const t of teams) for (const env of TEAMS[t]!) for (const c of CLUSTERS_OF[env]!) s.status.ready(t, c, sha);
}

async function rollout(berth: RunningBerth, id: string): Promise<RolloutResponse> {
  const res = await api(berth, "GET", `/v1/rollouts/${id}`);
  expect(res.statusCode, res.body).toBe(200);
  return rolloutResponse.parse(res.json());
}

async function create(berth: RunningBerth, body: object = TWO_WAVES): Promise<string> {
  const res = await api(berth, "POST", "/v1/rollouts", body);
  expect(res.statusCode, res.body).toBe(201);
  return (res.json() as { rollout: { metadata: { name: string } } }).rollout.metadata.name;
}

describe("unstaged rollout: one commit for the whole selection", () => {
  it("commits exactly the files the preview showed, with the rollout file and its trailer, in one commit", async () => {
    const s = await setup();
    const before = await head(s.remote);
    const request = { description: "all teams to v3", target: { templateVersion: "v3" } };
    const previewRes = await api(s.berth, "POST", "/v1/rollouts/preview", request);
    expect(previewRes.statusCode, previewRes.body).toBe(200);
    const preview = rolloutPreviewResponse.parse(previewRes.json());
    expect(preview.problems).toEqual([]);
    expect(preview.summary).toMatchObject({ selected: 5, changed: 5, unchanged: 0, failed: 0 });
    expect(preview.teams.map((t) => [t.team, t.from, t.to])).toEqual(Object.keys(TEAMS).map((t) => [t, "v1", "v3"]));
    const d1 = preview.teams.find((t) => t.team === "d1")!;
    expect(d1.diff).toContain("+    berth.dev/template-version: v3");
    expect(d1.diff).toContain("--- a/teams/d1/base/namespace.yaml");
    expect(await head(s.remote)).toBe(before); // a preview commits nothing

    const created = await api(s.berth, "POST", "/v1/rollouts", request);
    expect(created.statusCode, created.body).toBe(201);
    const body = rolloutCreatedResponse.parse(created.json());
    expect(body.rollout.status.phase).toBe("Completed");
    expect(created.headers.location).toBe(`/v1/rollouts/${body.rollout.metadata.name}`);

    // One commit, on top of where the preview looked, holding the previewed files plus the rollout file.
    const { stdout } = await run("git", [
      "--git-dir",
      s.remote.dir,
      "diff-tree",
      "-r",
      "--name-status",
      "--no-renames",
      before,
      body.revision,
    ]);
    const committed = stdout
      .trim()
      .split("\n")
      .map((l) => l.split("\t")[1]!)
      .sort();
    const previewed = preview.teams.flatMap((t) => t.files.map((f) => f.path));
    expect(committed).toEqual([...previewed, `rollouts/${body.rollout.metadata.name}.yaml`].sort());
    expect((await run("git", ["--git-dir", s.remote.dir, "rev-parse", `${body.revision}^`])).stdout.trim()).toBe(
      before,
    );
    // File for file, content too: the preview's diffs applied to the tree it looked at give exactly the
    // committed tree (the rollout file aside).
    const scratch = await makeTempDir("berth-preview-apply-");
    const work = join(scratch, "repo");
    try {
      await git(["clone", "--quiet", s.remote.dir, work]);
      await git(["checkout", "--quiet", "--detach", before], { cwd: work });
      await writeFile(join(scratch, "preview.patch"), preview.teams.map((t) => t.diff).join(""));
      await git(["apply", "--index", join(scratch, "preview.patch")], { cwd: work });
      expect(
        await git(["diff", "--cached", "--name-status", body.revision, "--", ".", ":(exclude)rollouts"], { cwd: work }),
      ).toBe("");
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
    expect(body.summary).toEqual({ teams: 5, files: previewed.length });
    const state = await inspectRemote(s.remote.url);
    expect(state.commits[0]!.trailers["Berth-Rollout-Id"]).toBe(body.rollout.metadata.name);
    expect(Object.values(await versions(s.remote))).toEqual(["v3", "v3", "v3", "v3", "v3"]);

    // Nothing left to do: the same rollout again is refused, and says why.
    const again = await api(s.berth, "POST", "/v1/rollouts", request);
    expect(again.statusCode).toBe(422);
    expect(again.json().errors[0]).toMatchObject({
      field: "selector",
      rule: expect.stringContaining("no selected team's files would change"),
    });
    const templates = templateListResponse.parse((await api(s.berth, "GET", "/v1/templates")).json());
    expect(templates.items.map((i) => [i.version, i.teams])).toEqual([
      ["v1", 0],
      ["v3", 5],
      ["v4", 0],
      ["v5", 0],
      ["v6", 0],
    ]);
  });

  it("commits nothing when one team cannot be rendered, and names it", async () => {
    const s = await setup();
    // A hand edit makes p2 use a role the platform's catalog does not offer.
    const spec = (await show(s.remote, "teams/p2/base/team.yaml"))!;
    await pushForeignCommit({
      url: s.remote.url,
      path: "teams/p2/base/team.yaml",
      content: spec.replace("roleAssignments: []", "roleAssignments:\n    - role: retired-role"),
    });
    const before = await head(s.remote);
    const res = await api(s.berth, "POST", "/v1/rollouts", { target: { templateVersion: "v3" } });
    expect(res.statusCode).toBe(422);
    const problem = res.json() as { type: string; detail: string; errors: Array<{ field: string; rule: string }> };
    expect(problem.type).toBe("https://berth.dev/problems/rollout-render-failed");
    expect(problem.errors).toEqual([{ field: "teams.p2", rule: expect.stringContaining("roleAssignments.0.role") }]);
    expect(problem.detail).toContain("nothing was committed");
    expect(await head(s.remote)).toBe(before);
    // The preview shows it too, with the others' changes.
    const preview = rolloutPreviewResponse.parse(
      (await api(s.berth, "POST", "/v1/rollouts/preview?diffs=false", { target: { templateVersion: "v3" } })).json(),
    );
    expect(preview.failed.map((f) => f.team)).toEqual(["p2"]);
    expect(preview.summary.changed).toBe(4);
    expect(preview.teams.every((t) => t.diff === "")).toBe(true);
  });

  it("re-renders teams on their own version after a template edit (no target), selected by name", async () => {
    const s = await setup();
    const res = await api(s.berth, "POST", "/v1/rollouts/preview", { selector: { names: ["d1", "p1"] } });
    expect(res.json().problems).toEqual([
      { field: "selector", rule: "no selected team's files would change (2 selected)" },
    ]);
    // Someone hand-edits a generated file: a same-version rollout puts it back.
    const ns = (await show(s.remote, "teams/d1/base/namespace.yaml"))!;
    await pushForeignCommit({
      url: s.remote.url,
      path: "teams/d1/base/namespace.yaml",
      content: ns.replace("baseline", "privileged"),
    });
    const id = await create(s.berth, { selector: { names: ["d1", "p1"] } });
    expect((await rollout(s.berth, id)).rollout.spec.waves).toEqual([{ name: "all", teams: ["d1"] }]);
    expect(await show(s.remote, "teams/d1/base/namespace.yaml")).toBe(ns);
    expect(await versionOf(s.remote, "d1")).toBe("v1");
  });
});

describe("rollout in waves, gated on the teams' status", () => {
  it("completes: wave 1 is committed and gated, then wave 2; every commit carries the rollout id", async () => {
    const s = await setup();
    const preview = rolloutPreviewResponse.parse(
      (await api(s.berth, "POST", "/v1/rollouts/preview?diffs=false", TWO_WAVES)).json(),
    );
    expect(preview.waves).toEqual([
      { name: "dev", teams: ["d1", "d2"] },
      { name: "prod", teams: ["p1", "p2", "p3"] },
    ]);
    const id = await create(s.berth);
    expect((await rollout(s.berth, id)).rollout.status).toMatchObject({
      phase: "Running",
      wave: 0,
      waves: [{ phase: "Pending" }, { phase: "Pending" }],
    });

    await s.berth.services.engine.tick();
    expect(await versions(s.remote)).toEqual({ d1: "v3", d2: "v3", p1: "v1", p2: "v1", p3: "v1" });
    let r = await rollout(s.berth, id);
    expect(r.rollout.status.waves[0]!.phase).toBe("Committed");
    expect(r.progress).toMatchObject({ wave: "dev", verdict: "wait", ready: 0, waiting: 2 });
    expect(r.progress!.teams[0]).toMatchObject({
      team: "d1",
      cluster: "aks-dev-weu",
      result: "waiting",
      state: "absent",
    });

    // A status from before the wave (an older revision) does not count.
    const waveCommit = await head(s.remote);
    const before = (await run("git", ["--git-dir", s.remote.dir, "rev-parse", `${waveCommit}^`])).stdout.trim();
    for (const t of ["d1", "d2"]) s.status.ready(t, "aks-dev-weu", before);
    await s.berth.services.engine.tick();
    r = await rollout(s.berth, id);
    expect(r.rollout.status.waves[0]!.phase).toBe("Committed");
    expect(r.progress!.teams[0]!.message).toContain("Flux has not applied the wave's commit");

    await reportReady(s, ["d1", "d2"]);
    await s.berth.services.engine.tick();
    expect(await versions(s.remote)).toEqual({ d1: "v3", d2: "v3", p1: "v3", p2: "v3", p3: "v3" });
    r = await rollout(s.berth, id);
    expect(r.rollout.status).toMatchObject({
      phase: "Running",
      wave: 1,
      waves: [{ phase: "Ready" }, { phase: "Committed" }],
    });

    await reportReady(s, ["p1", "p2", "p3"]);
    await s.berth.services.engine.tick();
    r = await rollout(s.berth, id);
    expect(r.rollout.status.phase).toBe("Completed");
    // No Berth-On-Behalf-Of sent: no claim in the rollout (nor in its commits, below).
    expect(r.rollout.spec).not.toHaveProperty("onBehalfOf");
    expect(r.rollout.status.history.map((h) => h.event)).toEqual([
      "Created",
      "WaveCommitted",
      "WaveReady",
      "WaveCommitted",
      "WaveReady",
      "Completed",
    ]);
    // The gate looked at every cluster each team lands on (p3: dev and both prod clusters).
    expect(s.status.reads.filter((x) => x.team === "p3").map((x) => x.cluster)).toEqual(
      expect.arrayContaining(["aks-dev-weu", "aks-prod-weu", "aks-prod-neu"]),
    );

    const commits = (await inspectRemote(s.remote.url)).commits.filter((c) => c.trailers["Berth-Rollout-Id"] === id);
    expect(commits.map((c) => c.subject)).toEqual([
      `berth: rollout ${id} wave prod Ready: rollout completed`,
      `berth: rollout ${id} wave prod: 3 team(s) to templates v3`,
      `berth: rollout ${id} wave dev Ready`,
      `berth: rollout ${id} wave dev: 2 team(s) to templates v3`,
      `berth: rollout ${id} created: 2 wave(s), 5 team(s) to templates v3`,
    ]);
    expect(commits.filter((c) => "Berth-On-Behalf-Of" in c.trailers)).toEqual([]);
    // Further ticks change nothing.
    const done = await head(s.remote);
    await s.berth.services.engine.tick();
    expect(await head(s.remote)).toBe(done);
  });

  it("started on behalf of someone: the rollout says so, and so does every commit the engine makes for it", async () => {
    const s = await setup();
    const res = await s.berth.server.inject({
      method: "POST",
      url: "/v1/rollouts",
      headers: { ...auth, "berth-on-behalf-of": "user:default/jane.doe" },
      payload: TWO_WAVES,
    });
    expect(res.statusCode, res.body).toBe(201);
    const id = (res.json() as { rollout: { metadata: { name: string } } }).rollout.metadata.name;
    await s.berth.services.engine.tick();
    await reportReady(s, ["d1", "d2"]);
    await s.berth.services.engine.tick();
    expect((await rollout(s.berth, id)).rollout.spec).toMatchObject({
      requestedBy: "developer",
      onBehalfOf: "user:default/jane.doe",
    });
    const commits = (await inspectRemote(s.remote.url)).commits.filter((c) => c.trailers["Berth-Rollout-Id"] === id);
    // Created (by the caller), wave dev committed, wave dev Ready, wave prod committed (by the engine).
    expect(commits.map((c) => [c.trailers["Berth-Requested-By"], c.trailers["Berth-On-Behalf-Of"]])).toEqual([
      ["berth-rollout-engine", "user:default/jane.doe"],
      ["berth-rollout-engine", "user:default/jane.doe"],
      ["berth-rollout-engine", "user:default/jane.doe"],
      ["developer", "user:default/jane.doe"],
    ]);
  });

  it("halts when a wave-1 team turns Failed, leaves wave 2 alone, and carries on after the fix and a resume", async () => {
    const s = await setup();
    const id = await create(s.berth);
    await s.berth.services.engine.tick();
    const sha = await head(s.remote);
    s.status.ready("d1", "aks-dev-weu", sha);
    s.status.failed(
      "d2",
      "aks-dev-weu",
      sha,
      "IdentityReady",
      "AuthorizationFailed",
      "The client does not have authorization to perform action Microsoft.ManagedIdentity/userAssignedIdentities/write",
    );
    await s.berth.services.engine.tick();

    const r = await rollout(s.berth, id);
    expect(r.rollout.status.phase).toBe("Halted");
    expect(r.rollout.status.halt).toMatchObject({
      wave: "dev",
      reason: "Failed",
      teams: [
        {
          team: "d2",
          cluster: "aks-dev-weu",
          result: "failed",
          condition: "IdentityReady",
          reason: "AuthorizationFailed",
          severity: "Error",
          message: expect.stringContaining("authorization"),
        },
      ],
    });
    expect(await versions(s.remote)).toEqual({ d1: "v3", d2: "v3", p1: "v1", p2: "v1", p3: "v1" });
    const halted = await head(s.remote);
    await s.berth.services.engine.tick();
    expect(await head(s.remote)).toBe(halted); // a halted rollout is not driven

    // The platform team fixes the role; ASO reports Ready; resume.
    s.status.ready("d2", "aks-dev-weu", sha);
    const resumed = await api(s.berth, "POST", `/v1/rollouts/${id}/resume`);
    expect(resumed.statusCode, resumed.body).toBe(200);
    expect(resumed.json().rollout.status.halt).toBeUndefined();
    await s.berth.services.engine.tick();
    expect(await versions(s.remote)).toEqual({ d1: "v3", d2: "v3", p1: "v3", p2: "v3", p3: "v3" });
    await reportReady(s, ["p1", "p2", "p3"]);
    await s.berth.services.engine.tick();
    expect((await rollout(s.berth, id)).rollout.status.phase).toBe("Completed");
  });

  it("halts a wave that is not Ready within its timeout, counting from the commit (or the resume)", async () => {
    const s = await setup();
    const id = await create(s.berth);
    await s.berth.services.engine.tick();
    s.status.waiting("d1", "aks-dev-weu", await head(s.remote));
    s.clock.advance(599_000);
    await s.berth.services.engine.tick();
    expect((await rollout(s.berth, id)).rollout.status.phase).toBe("Running");
    s.clock.advance(2_000);
    await s.berth.services.engine.tick();
    const r = (await rollout(s.berth, id)).rollout;
    expect(r.status).toMatchObject({ phase: "Halted", halt: { reason: "Timeout", wave: "dev" } });
    expect(r.status.halt!.teams).toEqual([
      expect.objectContaining({ team: "d1", result: "waiting", condition: "IdentityReady", reason: "Reconciling" }),
      expect.objectContaining({ team: "d2", result: "waiting", state: "absent" }),
    ]);
    // Resume restarts the clock: a tick right after does not halt it again.
    expect((await api(s.berth, "POST", `/v1/rollouts/${id}/resume`)).statusCode).toBe(200);
    await s.berth.services.engine.tick();
    expect((await rollout(s.berth, id)).rollout.status.phase).toBe("Running");
  });

  it("counts a status at an older commit that holds what the wave holds for the team on that cluster (ADR 0019)", async () => {
    // A cluster joins prod: a same-version rollout of p3 adds its folder and Flux file there and leaves its three other
    // clusters alone. With team artifacts, Flux on those three never reconciles p3 for the wave: their status stays at
    // the commit before it, which holds exactly what the wave's commit holds for p3 there.
    const s = await setup();
    const before = await head(s.remote);
    await reportReady(s, Object.keys(TEAMS));
    const clusters = [...ALL_CLUSTERS, "aks-prod-sec"];
    const berth = await startBerth({
      remoteUrl: s.remote.url,
      env: { BERTH_LOG_LEVEL: "warn" },
      clock: s.clock,
      statusReader: s.status,
      startEngine: false,
      config: (raw) => {
        const prod = (
          raw.platform.environments as Array<{ name: string; clusters: Array<Record<string, unknown>> }>
        ).find((e) => e.name === "prod")!;
        prod.clusters.push({ ...prod.clusters[0], name: "aks-prod-sec" });
        raw.api.clusters = Object.fromEntries(clusters.map((c) => [c, { kubeconfig: "/dev/null" }]));
      },
    });
    started.push(berth);
    const id = await create(berth, {
      description: "p3 onto aks-prod-sec",
      selector: { names: ["p3"] },
      waves: [{ name: "all" }],
      gate: { timeoutSeconds: 600 },
    });
    await berth.services.engine.tick();
    const wave = await head(s.remote);
    const { stdout } = await run("git", ["--git-dir", s.remote.dir, "diff", "--name-only", before, wave]);
    expect(
      stdout
        .split("\n")
        .filter((p) => p.includes("p3"))
        .every((p) => p.includes("aks-prod-sec")),
    ).toBe(true);

    s.status.ready("p3", "aks-prod-sec", wave);
    await berth.services.engine.tick();
    expect((await rollout(berth, id)).rollout.status.phase).toBe("Completed");

    // A team whose inputs the wave did change still needs a status at the wave's commit (or later).
    const v3 = await create(berth, {
      target: { templateVersion: "v3" },
      selector: { names: ["p3"] },
      waves: [{ name: "all" }],
      gate: { timeoutSeconds: 600 },
    });
    await berth.services.engine.tick();
    for (const c of ["aks-dev-weu", "aks-prod-weu", "aks-prod-neu"]) s.status.ready("p3", c, before);
    await berth.services.engine.tick();
    const r = await rollout(berth, v3);
    expect(r.rollout.status.phase).toBe("Running");
    expect(r.progress!.teams.find((t) => t.cluster === "aks-dev-weu")!.message).toContain(
      "Flux has not applied the wave's commit",
    );
  });

  it("pause stops at the gate, resume carries on; abort stops for good and says which team is on which version", async () => {
    const s = await setup();
    const id = await create(s.berth);
    await s.berth.services.engine.tick();
    expect((await api(s.berth, "POST", `/v1/rollouts/${id}/pause`)).statusCode).toBe(200);
    await reportReady(s, ["d1", "d2"]);
    await s.berth.services.engine.tick();
    let r = (await rollout(s.berth, id)).rollout;
    expect(r.status).toMatchObject({ phase: "Paused", waves: [{ phase: "Committed" }, { phase: "Pending" }] });
    expect((await api(s.berth, "POST", `/v1/rollouts/${id}/pause`)).statusCode).toBe(409);

    expect((await api(s.berth, "POST", `/v1/rollouts/${id}/resume`)).statusCode).toBe(200);
    await s.berth.services.engine.tick();
    r = (await rollout(s.berth, id)).rollout;
    expect(r.status).toMatchObject({ phase: "Running", wave: 1, waves: [{ phase: "Ready" }, { phase: "Committed" }] });

    const abort = await api(s.berth, "POST", `/v1/rollouts/${id}/abort`);
    expect(abort.statusCode, abort.body).toBe(200);
    expect(abort.json().versions).toEqual({ v3: ["d1", "d2", "p1", "p2", "p3"] });
    expect(abort.json().rollout.status.phase).toBe("Aborted");
    expect((await api(s.berth, "POST", `/v1/rollouts/${id}/resume`)).statusCode).toBe(409);
    const after = await head(s.remote);
    await reportReady(s, ["p1", "p2", "p3"]);
    await s.berth.services.engine.tick();
    expect(await head(s.remote)).toBe(after);
    expect((await rollout(s.berth, id)).rollout.status.phase).toBe("Aborted");
    // Every write through the API has its audit line, naming the rollout: committed with its revision, or refused;
    // so does every commit the engine makes on its own (by its name, no request), in the order they happened.
    const audits = s.berth
      .logEntries<{
        audit?: { action: string; rollout: string | null; outcome: string; revision: string | null; principal: string };
      }>()
      .flatMap((l) =>
        l.audit && l.audit.rollout === id
          ? [[l.audit.action, l.audit.outcome, !!l.audit.revision, l.audit.principal === "berth-rollout-engine"]]
          : [],
      );
    expect(audits).toEqual([
      ["rollout-start", "committed", true, false],
      ["rollout-wave", "committed", true, true],
      ["rollout-pause", "committed", true, false],
      ["rollout-pause", "refused", false, false],
      ["rollout-resume", "committed", true, false],
      ["rollout-wave-ready", "committed", true, true],
      ["rollout-wave", "committed", true, true],
      ["rollout-abort", "committed", true, false],
      ["rollout-resume", "refused", false, false],
    ]);
  });

  it("an abort after wave 1 leaves wave 2 on the old version, each team on exactly one version", async () => {
    const s = await setup();
    const id = await create(s.berth);
    await s.berth.services.engine.tick();
    const abort = await api(s.berth, "POST", `/v1/rollouts/${id}/abort`);
    expect(abort.json().versions).toEqual({ v1: ["p1", "p2", "p3"], v3: ["d1", "d2"] });
    expect(await versions(s.remote)).toEqual({ d1: "v3", d2: "v3", p1: "v1", p2: "v1", p3: "v1" });
    // Every file of a team is on the team's version: none of p1's files mention v3, all of d1's do.
    const state = await inspectRemote(s.remote.url);
    for (const [path, text] of state.files) {
      if (path.startsWith("teams/p1/") && !path.endsWith("kustomization.yaml")) expect(text, path).not.toContain("v3");
      if (path.startsWith("teams/d1/") && !path.endsWith("kustomization.yaml")) expect(text, path).toMatch(/v3/);
    }
  });

  it("an API restarted mid-rollout carries on from the repo; a second replica never commits a step twice", async () => {
    const s = await setup();
    const id = await create(s.berth);
    await s.berth.services.engine.tick();
    await s.berth.stop();
    started.splice(started.indexOf(s.berth), 1);

    // A new process: a new clone, nothing in memory; two replicas of it, both driving.
    const a = await berthOn(s.remote, s.clock, s.status);
    const b = await berthOn(s.remote, s.clock, s.status);
    await reportReady(s, ["d1", "d2"]);
    await Promise.all([a.services.engine.tick(), b.services.engine.tick()]);
    await reportReady(s, ["p1", "p2", "p3"]);
    await Promise.all([a.services.engine.tick(), b.services.engine.tick()]);
    await Promise.all([a.services.engine.tick(), b.services.engine.tick()]);
    expect((await rollout(a, id)).rollout.status.phase).toBe("Completed");
    const subjects = (await inspectRemote(s.remote.url)).commits
      .filter((c) => c.trailers["Berth-Rollout-Id"] === id)
      .map((c) => c.subject);
    expect(subjects.filter((x) => x.includes("wave prod: 3 team(s)"))).toHaveLength(1);
    expect(subjects.filter((x) => x.includes("wave dev Ready"))).toHaveLength(1);
    expect(subjects).toHaveLength(5);
  });

  it("team writes interleave: an update before its wave is rolled out with the new spec, an offboarded team is skipped", async () => {
    const s = await setup();
    const id = await create(s.berth);
    await s.berth.services.engine.tick();
    const put = await api(s.berth, "PUT", "/v1/teams/p1", {
      description: "Updated during the rollout",
      owners: [OWNER],
      environments: ["prod"],
    });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json().team.templateVersion).toBe("v1");
    expect((await api(s.berth, "DELETE", "/v1/teams/p2")).statusCode).toBe(200);
    // A team in a committed wave may be updated too: it stays on the rollout's version.
    const d1 = await api(s.berth, "PUT", "/v1/teams/d1", {
      description: "d1 updated",
      owners: [OWNER],
      environments: ["dev"],
    });
    expect(d1.json().team.templateVersion).toBe("v3");

    await reportReady(s, ["d1", "d2"]);
    await s.berth.services.engine.tick();
    expect(await show(s.remote, "teams/p1/base/namespace.yaml")).toContain("Updated during the rollout");
    expect(await versionOf(s.remote, "p1")).toBe("v3");
    expect(await show(s.remote, "teams/p2/base/team.yaml")).toBeUndefined();
    const r = (await rollout(s.berth, id)).rollout;
    expect(r.status.waves[1]).toMatchObject({ phase: "Committed", skipped: ["p2"] });
    await reportReady(s, ["p1", "p3"]);
    await s.berth.services.engine.tick();
    expect((await rollout(s.berth, id)).rollout.status.phase).toBe("Completed");
  });

  it("refuses a second rollout of the same teams while the first is active, an unknown version, an unknown id", async () => {
    const s = await setup();
    const id = await create(s.berth);
    const second = await api(s.berth, "POST", "/v1/rollouts", {
      target: { templateVersion: "v3" },
      selector: { names: ["p1"] },
    });
    expect(second.statusCode).toBe(409);
    expect(second.json()).toMatchObject({
      type: "https://berth.dev/problems/rollout-conflict",
      detail: expect.stringContaining(id),
    });

    expect((await api(s.berth, "POST", "/v1/rollouts", TWO_WAVES)).statusCode).toBe(409);
    const unknown = await api(s.berth, "POST", "/v1/rollouts", { target: { templateVersion: "v7" } });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.json().errors).toEqual([
      { field: "target.templateVersion", rule: "must be one of the template versions: v1, v3, v4, v5, v6" },
    ]);
    expect((await api(s.berth, "GET", "/v1/rollouts/ro-20260101-000000-abcdef")).statusCode).toBe(404);
    expect((await api(s.berth, "GET", "/v1/rollouts/not-an-id")).statusCode).toBe(422);
    const list = (await api(s.berth, "GET", "/v1/rollouts")).json() as { items: Array<{ metadata: { name: string } }> };
    expect(list.items.map((i) => i.metadata.name)).toEqual([id]);
  });
});

describe("the engine running on its work queue", () => {
  it("drives a created rollout at once, and polls its gate only when the injected clock says so", async () => {
    const s = await setup();
    s.berth.services.engine.start();
    const id = await create(s.berth);
    // The create kicks the rollout: wave 1 is committed and gated without a tick and without the clock moving.
    await eventually("wave dev gated", async () => (await rollout(s.berth, id)).progress?.wave === "dev");
    expect(await versions(s.remote)).toEqual({ d1: "v3", d2: "v3", p1: "v1", p2: "v1", p3: "v1" });

    await reportReady(s, ["d1", "d2"]);
    // More than a poll interval of real time passes, the clock does not: no poll, the gate has not seen it yet.
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await rollout(s.berth, id)).rollout.status.waves[0]!.phase).toBe("Committed");

    // One poll interval later the resync queues it, the gate passes and wave 2 is committed.
    s.clock.advance(1_000);
    await eventually(
      "wave prod committed",
      async () => (await rollout(s.berth, id)).rollout.status.waves[1]!.phase === "Committed",
    );
    expect(await versions(s.remote)).toEqual({ d1: "v3", d2: "v3", p1: "v3", p2: "v3", p3: "v3" });
  });
});

describe("rollout in waves, refused up front", () => {
  it("when a team is in no wave, or a wave lands on a cluster the API cannot read", async () => {
    const s = await setup(["aks-dev-weu"]);
    const res = await api(s.berth, "POST", "/v1/rollouts", {
      target: { templateVersion: "v3" },
      waves: [{ name: "dev", selector: { onlyEnvironments: ["dev"] } }],
    });
    expect(res.statusCode).toBe(422);
    const rules = (res.json() as { errors: Array<{ field: string; rule: string }> }).errors.map((e) => e.rule);
    expect(rules[0]).toMatch(/^3 team\(s\) are in no wave \(p1, p2, p3\): add a last wave without a selector$/);
    expect(rules[1]).toMatch(/the gate cannot read Team status on aks-prod-neu, aks-prod-weu/);
    const preview = (await api(s.berth, "POST", "/v1/rollouts/preview?diffs=false", TWO_WAVES)).json() as {
      problems: Array<{ rule: string }>;
    };
    expect(preview.problems.map((p) => p.rule)).toEqual([
      expect.stringMatching(/cannot read Team status on aks-prod-neu, aks-prod-weu/),
    ]);
    // Unstaged needs no gate.
    expect((await api(s.berth, "POST", "/v1/rollouts", { target: { templateVersion: "v3" } })).statusCode).toBe(201);
  });
});

describe("starting a rollout safely twice", () => {
  const withKey = (berth: RunningBerth, key: string, payload: object) =>
    berth.server.inject({ method: "POST", url: "/v1/rollouts", headers: { ...auth, "idempotency-key": key }, payload });

  it("answers a retry with the same Idempotency-Key from the original commit, and refuses the key for another request", async () => {
    const s = await setup();
    const body = { description: "lost answer", target: { templateVersion: "v3" }, selector: { names: ["d1", "d2"] } };
    const first = await withKey(s.berth, "rollout-key-1", body);
    expect(first.statusCode, first.body).toBe(201);
    expect(first.headers["idempotent-replayed"]).toBeUndefined();
    const after = await head(s.remote);

    // The answer was lost; the CLI sends the same request with the same key.
    const retry = await withKey(s.berth, "rollout-key-1", body);
    expect(retry.statusCode, retry.body).toBe(201);
    expect(retry.headers["idempotent-replayed"]).toBe("true");
    expect(retry.json()).toEqual(first.json());
    expect(retry.headers.location).toBe(first.headers.location);
    expect(await head(s.remote)).toBe(after);

    // A restarted API answers the same, from the commit's trailers.
    await s.berth.stop();
    const again = await berthOn(s.remote, s.clock, s.status);
    const replayed = await withKey(again, "rollout-key-1", body);
    expect(replayed.headers["idempotent-replayed"]).toBe("true");
    expect(replayed.json()).toEqual(first.json());

    const reused = await withKey(again, "rollout-key-1", { ...body, selector: { names: ["p1"] } });
    expect(reused.statusCode, reused.body).toBe(422);
    expect(reused.json().type).toBe("https://berth.dev/problems/idempotency-key-reused");
    expect(await head(s.remote)).toBe(after);
    expect(await versions(s.remote)).toEqual({ d1: "v3", d2: "v3", p1: "v1", p2: "v1", p3: "v1" });

    // A staged rollout's retry is the rollout file's commit, with no team files.
    const staged = { ...TWO_WAVES, selector: { names: ["p1", "p2"] }, waves: [{ name: "all" }] };
    const created = await withKey(again, "rollout-key-2", staged);
    expect(created.statusCode, created.body).toBe(201);
    const retried = await withKey(again, "rollout-key-2", staged);
    expect(retried.headers["idempotent-replayed"]).toBe("true");
    expect(retried.json()).toEqual(created.json());
    expect(retried.json().summary).toEqual({ teams: 2, files: 0 });
  });

  it("two unstaged rollouts over overlapping teams at once: each file lists only the teams its commit moved", async () => {
    const s = await setup();
    const [a, b] = await Promise.all([
      api(s.berth, "POST", "/v1/rollouts", {
        description: "a",
        target: { templateVersion: "v3" },
        selector: { names: ["d1", "d2", "p1"] },
      }),
      api(s.berth, "POST", "/v1/rollouts", {
        description: "b",
        target: { templateVersion: "v3" },
        selector: { names: ["d2", "p1", "p2"] },
      }),
    ]);
    expect([a.statusCode, b.statusCode], `${a.body}\n${b.body}`).toEqual([201, 201]);
    for (const res of [a, b]) {
      const { rollout, revision } = res.json() as {
        rollout: { metadata: { name: string }; spec: { waves: Array<{ teams: string[] }> } };
        revision: string;
      };
      // The teams whose team file this rollout's commit changed: exactly the ones its file lists.
      const { stdout } = await run("git", [
        "--git-dir",
        s.remote.dir,
        "diff-tree",
        "--no-commit-id",
        "--name-only",
        "-r",
        revision,
      ]);
      const moved = stdout
        .split("\n")
        .flatMap((path) => /^teams\/([^/]+)\/base\/team\.yaml$/.exec(path)?.[1] ?? [])
        .sort();
      expect(rollout.spec.waves[0]!.teams.slice().sort(), rollout.metadata.name).toEqual(moved);
      expect(yamlTeams(await show(s.remote, `rollouts/${rollout.metadata.name}.yaml`))).toEqual(moved);
    }
    expect(await versions(s.remote)).toEqual({ d1: "v3", d2: "v3", p1: "v3", p2: "v3", p3: "v1" });
  });
});

/** The teams a rollout file's single wave lists. */
function yamlTeams(text: string | undefined): string[] {
  const wave = /waves:\n\s+- name: all\n\s+teams:\n((?:\s+- .+\n)+)/.exec(text ?? "");
  return (wave?.[1] ?? "")
    .split("\n")
    .flatMap((l) => /^\s+- (.+)$/.exec(l)?.[1] ?? [])
    .sort();
}
