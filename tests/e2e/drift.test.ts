/**
 * GET /v1/fleet/drift against a real remote that someone edited by hand: every generated file that differs
 * from Berth's render of its team file, with the diff; a same-version rollout of the drifted teams fixes it.
 */
import { teamShard } from "@berth/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { driftResponse } from "../../apps/api/src/http/routes/fleet.js";
import { DEV_TOKEN, startBerth, type RunningBerth } from "../support/berth.js";
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
    return driftResponse.parse(res.json()); // the route's declared shape (not in @berth/api-contract)
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
      { path: BRAVO_SHARD_INDEX, drift: "modified", diff: expect.stringContaining("+  - bravo.yaml") },
      {
        path: TOP_INDEX,
        drift: "modified",
        diff: expect.stringMatching(new RegExp(`\\+  - "?${teamShard("alpha")}"?\\n`)),
      },
    ]);
    expect(report.failed).toEqual([
      { team: "charlie", error: expect.stringContaining("environments.0 must be one of the platform's environments") },
    ]);
    expect(report.fix).toEqual({ selector: { names: ["alpha", "bravo"] } });
    expect((await drift("?diffs=false")).teams[0]?.files[1]?.diff).toBe("");
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

  it("renders the fleet once per revision: concurrent and later callers share one report", async () => {
    const { fleet } = berth.services.deps;
    const concurrent = await Promise.all([
      fleet.drift({ diffs: true }),
      fleet.drift({ diffs: true }),
      fleet.drift({ diffs: true }),
    ]);
    expect(concurrent[1]).toBe(concurrent[0]);
    expect(concurrent[2]).toBe(concurrent[0]);
    expect(await fleet.drift({ diffs: true })).toBe(concurrent[0]);
    const withoutDiffs = await fleet.drift({ diffs: false });
    expect(withoutDiffs).not.toBe(concurrent[0]);
    expect(await fleet.drift({ diffs: false })).toBe(withoutDiffs);

    // A new revision gets a new report.
    const res = await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: auth,
      payload: { name: "delta", owners: [OWNER], environments: ["dev"] },
    });
    expect(res.statusCode, res.body).toBe(201);
    const next = await fleet.drift({ diffs: true });
    expect(next).not.toBe(concurrent[0]);
    expect(next.revision).toBe(res.json().revision);
    expect(next.checked).toBe(4);
  });
});
