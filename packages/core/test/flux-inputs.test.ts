/**
 * What each cluster's Flux reads of the repo (ADR 0019, 0020): the team Kustomization's source per
 * platform.fluxSource, the clusters a push concerns, and whether two commits hold the same for a team on a cluster.
 */
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import {
  clustersReading,
  fluxReadsOf,
  Onboarding,
  repoLayout,
  sameShardsOnCluster,
  sameTeamOnCluster,
  teamInputsOnCluster,
  teamShard,
  validateTeam,
  type Platform,
} from "@berth/core";
import {
  loadCatalog,
  makePlatform,
  MemoryRepoTree,
  OWNERS,
  PLATFORM,
  teamInput,
  TEMPLATE_VERSIONS,
} from "./fixtures.js";

const ARTIFACTS: Platform = makePlatform({ fluxSource: { kind: "ExternalArtifact" } });
const layout = repoLayout(PLATFORM);

function render(
  platform: Platform,
  version: string,
  input = teamInput({ environments: ["dev", "prod"] }),
): Map<string, string> {
  const onboarding = new Onboarding(platform, loadCatalog(version));
  return onboarding.render({ ...validateTeam(input, platform), templateVersion: version });
}

const fluxKustomization = (files: Map<string, string>, cluster: string, team = "orders") =>
  parseAllDocuments(files.get(layout.fluxKustomization(cluster, team))!)
    .map((d) => d.toJS() as { kind: string; spec: { path: string; sourceRef: Record<string, string> } })
    .find((o) => o.kind === "Kustomization")!;

describe("the team Kustomization's source (platform.fluxSource)", () => {
  for (const version of TEMPLATE_VERSIONS) {
    it(`${version}: the team's own ExternalArtifact beside it, same path as from the GitRepository`, () => {
      const fromRepo = fluxKustomization(render(PLATFORM, version), "aks-prod-neu");
      const fromArtifact = fluxKustomization(render(ARTIFACTS, version), "aks-prod-neu");
      expect(fromRepo.spec.sourceRef).toEqual({ kind: "GitRepository", name: "flux-system", namespace: "flux-system" });
      // No namespace: a reference in the Kustomization's own namespace, as Flux's multi-tenancy lockdown requires.
      expect(fromArtifact.spec.sourceRef).toEqual({ kind: "ExternalArtifact", name: "team-orders" });
      expect(fromArtifact.spec.path).toBe(fromRepo.spec.path);
      expect(fromArtifact.spec.path).toBe("./teams/orders/clusters/aks-prod-neu");
    });
  }

  it("names the team's artifact as the cluster's generators do (fluxSource.artifactPrefix: ADR 0022's slices)", () => {
    const slices = makePlatform({ fluxSource: { kind: "ExternalArtifact", artifactPrefix: "team-files-" } });
    for (const version of TEMPLATE_VERSIONS)
      expect(fluxKustomization(render(slices, version), "aks-prod-neu").spec.sourceRef).toEqual({
        kind: "ExternalArtifact",
        name: "team-files-orders",
      });
    expect(() => makePlatform({ fluxSource: { kind: "ExternalArtifact", artifactPrefix: "Team_" } })).toThrow(
      /lowercase name prefix/,
    );
  });

  it("changes only the Flux files: the team's folders are the same either way", () => {
    const fromRepo = render(PLATFORM, "v1");
    const fromArtifact = render(ARTIFACTS, "v1");
    const differ = [...fromRepo.keys()].filter((p) => fromRepo.get(p) !== fromArtifact.get(p));
    expect(differ.sort()).toEqual(
      ["aks-dev-weu", "aks-prod-neu", "aks-prod-weu"].map((c) => layout.fluxKustomization(c, "orders")).sort(),
    );
  });
});

describe("clustersReading: whose Flux a push concerns", () => {
  const tree = new MemoryRepoTree([
    ...render(PLATFORM, "v1"),
    ...render(PLATFORM, "v1", teamInput({ name: "billing", owners: [OWNERS.payments], environments: ["dev"] })),
  ]);

  it("a team's folder for a cluster, and a cluster's own folder, concern that cluster", async () => {
    expect(await clustersReading(tree, layout, ["teams/orders/clusters/aks-prod-weu/identity.yaml"])).toEqual([
      "aks-prod-weu",
    ]);
    expect(
      await clustersReading(tree, layout, [
        layout.fluxKustomization("aks-dev-weu", "orders"),
        layout.clusterTeamsIndex("aks-stg-weu"),
      ]),
    ).toEqual(["aks-dev-weu", "aks-stg-weu"]);
  });

  it("a team's base concerns every cluster the team has a folder for", async () => {
    expect(await clustersReading(tree, layout, ["teams/orders/base/team.yaml"])).toEqual([
      "aks-dev-weu",
      "aks-prod-neu",
      "aks-prod-weu",
    ]);
    expect(await clustersReading(tree, layout, ["teams/billing/base/namespace.yaml"])).toEqual(["aks-dev-weu"]);
  });

  it("an offboarded team's paths name its clusters themselves; a rollout's state file concerns none", async () => {
    const offboarding = [...render(PLATFORM, "v1").keys()];
    expect(await clustersReading(new MemoryRepoTree(), layout, offboarding)).toEqual([
      "aks-dev-weu",
      "aks-prod-neu",
      "aks-prod-weu",
    ]);
    expect(await clustersReading(tree, layout, ["rollouts/ro-1.yaml"])).toEqual([]);
  });
});

describe("fluxReadsOf: which shards of each cluster a push touched (ADR 0036)", () => {
  const tree = new MemoryRepoTree([
    ...render(PLATFORM, "v1"),
    ...render(PLATFORM, "v1", teamInput({ name: "billing", owners: [OWNERS.payments], environments: ["dev"] })),
  ]);

  it("names the shards of the teams touched on each cluster, through their base, folder or Flux file", async () => {
    const reads = await fluxReadsOf(tree, layout, [
      "teams/billing/base/team.yaml",
      "teams/orders/clusters/aks-prod-weu/identity.yaml",
      layout.fluxKustomization("aks-dev-weu", "orders"),
    ]);
    expect([...reads.keys()]).toEqual(["aks-dev-weu", "aks-prod-weu"]);
    expect(reads.get("aks-dev-weu")).toEqual([teamShard("billing"), teamShard("orders")].sort());
    expect(reads.get("aks-prod-weu")).toEqual([teamShard("orders")]);
  });

  it("names no shard (every slice) for a cluster file that is no team's, whatever else the push touched", async () => {
    const reads = await fluxReadsOf(tree, layout, [
      layout.fluxKustomization("aks-dev-weu", "orders"),
      layout.clusterTeamsIndex("aks-dev-weu"),
      "clusters/aks-prod-weu/berth.yaml",
      "teams/orders/clusters/aks-prod-neu/identity.yaml",
    ]);
    expect(reads).toEqual(
      new Map([
        ["aks-dev-weu", undefined],
        ["aks-prod-neu", [teamShard("orders")]],
        ["aks-prod-weu", undefined],
      ]),
    );
  });
});

describe("sameTeamOnCluster: an older commit still holds what Flux reads for the team", () => {
  const before = new MemoryRepoTree([
    ...render(PLATFORM, "v1"),
    ...render(PLATFORM, "v1", teamInput({ name: "billing", owners: [OWNERS.payments], environments: ["dev"] })),
  ]);
  const change = (files: Record<string, string | null>) => before.apply(new Map(Object.entries(files)));

  it("is true when only another cluster's folder, another team or a rollout changed", async () => {
    const after = change({
      "teams/orders/clusters/aks-prod-weu/identity.yaml": "changed\n",
      "teams/billing/base/team.yaml": "changed\n",
      "rollouts/ro-1.yaml": "x\n",
    });
    expect(await sameTeamOnCluster(before, after, layout, "orders", "aks-dev-weu")).toBe(true);
    expect(await sameTeamOnCluster(before, after, layout, "orders", "aks-prod-neu")).toBe(true);
    expect(await sameTeamOnCluster(before, after, layout, "orders", "aks-prod-weu")).toBe(false);
  });

  it("is false when the team's base or its Flux file on that cluster changed", async () => {
    const base = change({ "teams/orders/base/namespace.yaml": "changed\n" });
    for (const cluster of ["aks-dev-weu", "aks-prod-weu", "aks-prod-neu"])
      expect(await sameTeamOnCluster(before, base, layout, "orders", cluster)).toBe(false);
    const flux = change({ [layout.fluxKustomization("aks-dev-weu", "orders")]: "changed\n" });
    expect(await sameTeamOnCluster(before, flux, layout, "orders", "aks-dev-weu")).toBe(false);
    expect(await sameTeamOnCluster(before, flux, layout, "orders", "aks-prod-weu")).toBe(true);
  });

  it("reads the team's base, its cluster folder and its Flux file, in its shard and where it was before shards", () => {
    expect(teamInputsOnCluster(layout, "orders", "aks-dev-weu")).toEqual([
      "teams/orders/base",
      "teams/orders/clusters/aks-dev-weu",
      layout.fluxKustomization("aks-dev-weu", "orders"),
      "clusters/aks-dev-weu/teams/orders.yaml",
    ]);
  });
});

describe("sameShardsOnCluster: a slice's branch need not move (per-slice fetch, ADR 0036)", () => {
  const hashed = makePlatform({
    fluxSource: { kind: "ExternalArtifact", artifactPrefix: "team-files-" },
    layout: { appliedBy: "slices", slices: { by: "hash", count: 32, fetch: "per-slice" } },
  });
  const hashLayout = repoLayout(hashed);
  const before = new MemoryRepoTree([
    ...render(hashed, "v1"),
    ...render(hashed, "v1", teamInput({ name: "billing", owners: [OWNERS.payments], environments: ["dev"] })),
  ]);
  const change = (files: Record<string, string | null>) => before.apply(new Map(Object.entries(files)));
  const same = (after: MemoryRepoTree, team: string, cluster: string) =>
    sameShardsOnCluster(before, after, hashLayout, cluster, [teamShard(team)]);

  it("is true when a team of the shard changed only on other clusters, or another shard changed", async () => {
    const billing = change({ [`${hashLayout.baseDir("billing")}/team.yaml`]: "changed\n" });
    // billing is on the dev cluster only: its base is not what prod reads of its shard.
    expect(await same(billing, "billing", "aks-prod-weu")).toBe(true);
    expect(await same(billing, "billing", "aks-dev-weu")).toBe(false);
    const prod = change({ [`${hashLayout.clusterDir("orders", "aks-prod-weu")}/identity.yaml`]: "changed\n" });
    expect(await same(prod, "orders", "aks-dev-weu")).toBe(true);
    expect(await same(prod, "orders", "aks-prod-weu")).toBe(false);
  });

  it("is false when the cluster's Flux file in the shard changed, or a team joined the cluster", async () => {
    const flux = change({ [hashLayout.fluxKustomization("aks-dev-weu", "orders")]: "changed\n" });
    expect(await same(flux, "orders", "aks-dev-weu")).toBe(false);
    expect(await same(flux, "orders", "aks-prod-neu")).toBe(true);
    const joined = change({ [`${hashLayout.clusterDir("billing", "aks-prod-neu")}/identity.yaml`]: "new\n" });
    expect(await same(joined, "billing", "aks-prod-neu")).toBe(false);
  });
});
