/**
 * GET /v1/fleet/drift against a real remote that someone edited by hand: every generated file that differs
 * from Berth's render of its team file, with the diff; a same-version rollout of the drifted teams fixes it.
 * Paged by team name, diffs bounded, computed in a worker thread commit by commit (ADR 0026).
 */
import { driftResponse, writeResponse } from "@berth/api-contract";
import { DRIFT_DIFF_BUDGET, teamShard } from "@berth/core";
import { threadId } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, startBerth, type RunningBerth } from "../support/berth.js";
import { readAnswer } from "../support/contract.js";
import { createBareRepo, handEdit, inspectRemote } from "../support/git-remotes.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const auth = { authorization: `Bearer ${DEV_TOKEN}` };
const TOP_INDEX = "clusters/aks-dev-weu/teams/kustomization.yaml";
const BRAVO_SHARD_INDEX = `clusters/aks-dev-weu/teams/${teamShard("bravo")}/kustomization.yaml`;

describe("repo drift", () => {
  let berth: RunningBerth;
  let url: string;

  beforeAll(async () => {
    url = (await createBareRepo()).url;
    berth = await startBerth({ remoteUrl: url, env: { BERTH_LOG_LEVEL: "warn" } });
    for (const name of ["alpha", "bravo", "charlie"]) {
      const res = await berth.server.inject({
        method: "POST",
        url: "/v1/teams",
        headers: auth,
        payload: { name, owners: [OWNER], environments: ["dev"] },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
  });
  afterAll(async () => {
    await berth?.stop();
  });

  const drift = async (query = "") => {
    const res = await berth.server.inject({ url: `/v1/fleet/drift${query}`, headers: auth });
    expect(res.statusCode, res.body).toBe(200);
    return readAnswer(res, driftResponse);
  };

  it("reports nothing for a repo only Berth wrote", async () => {
    expect(await drift()).toMatchObject({
      summary: { checked: 3, drifted: 0, files: 0, failed: 0 },
      teams: [],
      layout: [],
      failed: [],
      fix: null,
    });
  });

  it("lists each hand-edited, removed and added file per team, with a diff to Berth's render, and teams it cannot render", async () => {
    await handEdit(url, {
      "teams/alpha/base/namespace.yaml": (t) =>
        t.replace("pod-security.kubernetes.io/enforce: baseline", "pod-security.kubernetes.io/enforce: privileged"),
      "teams/alpha/base/debug-pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: debug\n  namespace: alpha\n",
      "teams/bravo/clusters/aks-dev-weu/identity.yaml": null,
      "teams/charlie/base/team.yaml": (t) => t.replace("environments:\n    - dev", "environments:\n    - qa"),
      [BRAVO_SHARD_INDEX]: (t) => t.replace("  - bravo.yaml\n", "  []\n").replace("resources:\n  []", "resources: []"),
      // alpha's shard taken off the top index: the whole shard would go from the cluster.
      [TOP_INDEX]: (t) => t.replace(new RegExp(`  - "?${teamShard("alpha")}"?\n`), ""),
    });
    await berth.repo.snapshot(0); // reads may be up to 2 s behind the remote: look now
    const report = await drift();
    expect(report.summary).toEqual({ checked: 3, drifted: 2, files: 5, failed: 1 });
    expect(report.teams.map((t) => [t.team, t.templateVersion, t.files.map((f) => [f.path, f.drift])])).toEqual([
      [
        "alpha",
        "v1",
        [
          ["teams/alpha/base/debug-pod.yaml", "unexpected"],
          ["teams/alpha/base/namespace.yaml", "modified"],
        ],
      ],
      ["bravo", "v1", [["teams/bravo/clusters/aks-dev-weu/identity.yaml", "missing"]]],
    ]);
    const ns = report.teams[0]!.files[1]!.diff;
    expect(ns).toContain("-    pod-security.kubernetes.io/enforce: privileged");
    expect(ns).toContain("+    pod-security.kubernetes.io/enforce: baseline");
    expect(report.layout).toEqual([
      {
        path: BRAVO_SHARD_INDEX,
        drift: "modified",
        diff: expect.stringContaining("+  - bravo.yaml"),
        truncated: false,
      },
      {
        path: TOP_INDEX,
        drift: "modified",
        diff: expect.stringMatching(new RegExp(`\\+  - "?${teamShard("alpha")}"?\\n`)),
        truncated: false,
      },
    ]);
    expect(report.failed).toEqual([
      { team: "charlie", error: expect.stringContaining("environments.0 must be one of the platform's environments") },
    ]);
    expect(report.fix).toEqual({ selector: { names: ["alpha", "bravo"] } });
    expect((await drift("?diffs=false")).teams[0]?.files[1]?.diff).toBe("");
  });

  it("pages through the drifted and failed teams in name order with limit and continue; the summary counts the fleet", async () => {
    const first = await drift("?limit=1");
    expect(first.teams.map((t) => t.team)).toEqual(["alpha"]);
    expect(first.failed).toEqual([]);
    expect(first.layout).toHaveLength(2); // on the first page only
    expect(first.fix).toEqual({ selector: { names: ["alpha"] } });
    expect(first.continue).toEqual(expect.any(String));
    const second = await drift(`?limit=1&continue=${first.continue}`);
    expect(second.teams.map((t) => t.team)).toEqual(["bravo"]);
    expect(second.layout).toEqual([]);
    const third = await drift(`?limit=1&continue=${second.continue}`);
    expect(third.teams).toEqual([]);
    expect(third.failed.map((f) => f.team)).toEqual(["charlie"]);
    expect(third.fix).toBeNull();
    expect(third.continue).toBeUndefined();
    for (const page of [first, second, third]) {
      expect(page.summary).toEqual({ checked: 3, drifted: 2, files: 5, failed: 1 });
      expect(page.revision).toBe(first.revision);
    }
    for (const bad of ["?limit=0", "?limit=101", "?continue=not-a-token"]) {
      const res = await berth.server.inject({ url: `/v1/fleet/drift${bad}`, headers: auth });
      expect(res.statusCode, bad).toBe(422);
    }
  });

  it("cuts a team's diffs at the budget, ending the cut one with a marker line, and keeps every file listed", async () => {
    const big = Array.from({ length: 4000 }, (_, i) => `# line ${i} of a hand-written file\n`).join("");
    await handEdit(url, { "teams/alpha/base/zz-big.yaml": big, "teams/alpha/base/zzz-after.yaml": "kind: Pod\n" });
    await berth.repo.snapshot(0);
    const alpha = (await drift()).teams.find((t) => t.team === "alpha");
    expect(alpha?.files.map((f) => [f.path, f.drift, f.truncated])).toEqual([
      ["teams/alpha/base/debug-pod.yaml", "unexpected", false],
      ["teams/alpha/base/namespace.yaml", "modified", false],
      ["teams/alpha/base/zz-big.yaml", "unexpected", true],
      ["teams/alpha/base/zzz-after.yaml", "unexpected", true],
    ]);
    const cut = alpha?.files[2]?.diff ?? "";
    expect(cut.length).toBeLessThan(big.length);
    expect(cut.split("\n").at(-2)).toMatch(/^\\ Berth: diff truncated: \d+ more characters/);
    expect(alpha?.files.reduce((n, f) => n + f.diff.length, 0)).toBeLessThan(DRIFT_DIFF_BUDGET + 1000);
    await handEdit(url, { "teams/alpha/base/zz-big.yaml": null, "teams/alpha/base/zzz-after.yaml": null });
    await berth.repo.snapshot(0);
  });

  it("a same-version rollout of the drifted teams puts every file back", async () => {
    const { fix } = await drift();
    const res = await berth.server.inject({
      method: "POST",
      url: "/v1/rollouts",
      headers: auth,
      payload: { description: "undo hand edits", ...fix },
    });
    expect(res.statusCode, res.body).toBe(201);
    const after = await drift();
    expect(after.summary).toEqual({ checked: 3, drifted: 0, files: 0, failed: 1 });
    expect(after.layout).toEqual([]);
    const remote = await inspectRemote(url);
    expect(remote.files.has("teams/alpha/base/debug-pod.yaml")).toBe(false);
    expect(remote.files.get("teams/alpha/base/namespace.yaml")).toContain("enforce: baseline");
    expect(remote.files.get(BRAVO_SHARD_INDEX)).toContain("- bravo.yaml");
    expect(remote.files.get(TOP_INDEX)).toMatch(new RegExp(`  - "?${teamShard("alpha")}"?\n`));
  });

  it("renders in a worker thread, the whole fleet once, then only the teams a commit touched; readers of one revision share it", async () => {
    const { drift: thread } = berth.services;
    await drift();
    const before = thread.stats();
    expect(before.threadId).toEqual(expect.any(Number));
    expect(before.threadId).not.toBe(threadId); // not the API's event loop

    const res = await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: auth,
      payload: { name: "delta", owners: [OWNER], environments: ["dev"] },
    });
    expect(res.statusCode, res.body).toBe(201);
    const { revision } = readAnswer(res, writeResponse);
    const pages = await Promise.all([drift(), drift("?diffs=false"), drift("?limit=1")]);
    for (const page of pages) expect(page.revision).toBe(revision);
    expect(pages[0]?.summary.checked).toBe(4);
    const after = thread.stats();
    expect(after.updates).toBe(before.updates + 1);
    expect(after.lastUpdate).toMatchObject({ revision, rendered: 1 });
  });

  it("answers each page as the worker serialized it, checked against the contract: the event loop only sends it", async () => {
    await handEdit(url, { "teams/alpha/base/debug-pod.yaml": "kind: Pod\n" });
    await berth.repo.snapshot(0);
    const res = await berth.server.inject({ method: "GET", url: "/v1/fleet/drift?limit=1", headers: auth });
    expect(res.statusCode, res.body).toBe(200);
    const page = readAnswer(res, driftResponse);
    expect(page.teams).toHaveLength(1);
    const fromWorker = await berth.services.drift.body(page.revision!, { limit: 1, diffs: true });
    expect(Buffer.from(fromWorker).equals(res.rawPayload)).toBe(true);
  });
});
