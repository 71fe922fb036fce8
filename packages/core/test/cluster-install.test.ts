/**
 * newClusterFiles (what `berth cluster add` writes) on small source files: what it sets, what it keeps byte for
 * byte, and what it refuses. tests/install/cluster-add.test.ts runs the built CLI on flux/ itself.
 */
import { describe, expect, it } from "vitest";
import { matchesGlob } from "node:path";
import { parseAllDocuments } from "yaml";
import {
  ClusterInstallError,
  newClusterFiles,
  repoLayout,
  sliceBranches,
  sliceFiles,
  sliceHolding,
  sliceOptions,
  slicesOf,
  teamShard,
  teamsRepositoryIgnore,
  type NewCluster,
} from "../src/index.js";
import { makePlatform } from "./fixtures.js";

const platform = makePlatform({ fluxSource: { kind: "ExternalArtifact", artifactPrefix: "team-files-" } });
const CLIENT_ID = "21111111-2222-4333-8444-555555555555";

const CONTROLLER = `# Berth on this cluster.
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: berth-crds
spec:
  path: ./berth/crds # unchanged
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: berth-controller
spec:
  path: ./berth/overlays/aks-dev-weu
`;
const TEAMS = `apiVersion: v1
kind: Namespace
metadata: { name: flux-config }
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: berth-teams
  namespace: flux-system
spec:
  ignore: |
    /clusters/aks-dev-weu/
`;
const OVERLAY = `resources: [../../controller]
patches:
  - patch: |-
      apiVersion: apps/v1
      kind: Deployment
      metadata: { name: berth-controller, namespace: berth-system }
      spec:
        template:
          spec:
            containers:
              - name: controller
                env:
                  - name: BERTH_CLUSTER_NAME
                    value: aks-dev-weu
  - patch: |-
      apiVersion: v1
      kind: ServiceAccount
      metadata:
        name: berth-controller
        annotations:
          azure.workload.identity/client-id: 11111111-2222-4333-8444-555555555555
`;
const SOURCES: Record<string, string> = {
  "clusters/aks-dev-weu/kustomization.yaml": "resources: [flux-system, berth.yaml, berth-team-slices.yaml]\n",
  "clusters/aks-dev-weu/berth.yaml": CONTROLLER,
  "clusters/aks-dev-weu/berth-teams.yaml": TEAMS,
  "clusters/aks-dev-weu/berth-tenancy.yaml": "kind: List # for every cluster\n",
  "berth/overlays/aks-dev-weu/kustomization.yaml": OVERLAY,
};

const add = (over: Partial<NewCluster> = {}, sources: Record<string, string | undefined> = SOURCES) =>
  newClusterFiles({
    platform,
    cluster: "aks-prod-weu",
    like: "aks-dev-weu",
    read: (path) => sources[path],
    controllerClientId: CLIENT_ID,
    ...over,
  });

describe("newClusterFiles", () => {
  it("sets the cluster's fields and keeps every other document as it was, comments included", () => {
    const files = add();
    expect(files.get("clusters/aks-prod-weu/kustomization.yaml")).toBe(
      SOURCES["clusters/aks-dev-weu/kustomization.yaml"],
    );
    expect(files.get("clusters/aks-prod-weu/berth-tenancy.yaml")).toBe("kind: List # for every cluster\n");
    const controller = files.get("clusters/aks-prod-weu/berth.yaml")!;
    expect(controller.startsWith(CONTROLLER.slice(0, CONTROLLER.indexOf("---")))).toBe(true);
    expect(controller).toContain("path: ./berth/overlays/aks-prod-weu");
    const teams = files.get("clusters/aks-prod-weu/berth-teams.yaml")!;
    expect(teams.startsWith("apiVersion: v1\nkind: Namespace\nmetadata: { name: flux-config }\n---\n")).toBe(true);
    expect(teams).toContain("!/clusters/aks-prod-weu/teams/");
    const overlay = files.get("berth/overlays/aks-prod-weu/kustomization.yaml")!;
    expect(overlay).toContain("value: aks-prod-weu");
    expect(overlay).toContain(`azure.workload.identity/client-id: ${CLIENT_ID}`);
    expect(files.has("clusters/aks-prod-weu/berth-team-slices.yaml")).toBe(true);
    expect(files.has("clusters/aks-prod-weu/teams/slices/a--slice")).toBe(true);
    // The teams' markers are every cluster's: there already.
    expect(files.has("teams/a--slice")).toBe(false);
  });

  it("refuses a field naming the cluster it copies from that it does not know how to set", () => {
    const sources = { ...SOURCES, "clusters/aks-dev-weu/berth-tenancy.yaml": "kind: List\nnote: aks-dev-weu only\n" };
    expect(() => add({}, sources)).toThrow(/berth-tenancy.yaml would still name aks-dev-weu \(line 2/);
    // A name that only contains it is another cluster's.
    const other = { ...SOURCES, "clusters/aks-dev-weu/berth-tenancy.yaml": "note: aks-dev-weu2\n" };
    expect(() => add({}, other)).not.toThrow();
  });

  it("refuses what it cannot do right", () => {
    expect(() => add({ cluster: "aks-nowhere" })).toThrow(/not in the platform config/);
    expect(() => add({ controllerClientId: "me" })).toThrow(/must be a UUID/);
    expect(() => add({ cluster: "aks-dev-weu" })).toThrow(ClusterInstallError);
    expect(() => add({}, { ...SOURCES, "clusters/aks-dev-weu/berth-tenancy.yaml": undefined })).toThrow(/is missing/);
    expect(() => add({}, { ...SOURCES, "clusters/aks-dev-weu/berth-teams.yaml": "kind: Namespace\n" })).toThrow(
      /does not hold the object Berth installs/,
    );
    expect(() =>
      add({}, { ...SOURCES, "berth/overlays/aks-dev-weu/kustomization.yaml": "resources: [../../controller]\n" }),
    ).toThrow(/BERTH_CLUSTER_NAME/);
    expect(() => add({ platform: makePlatform({ fluxSource: { kind: "GitRepository" } }) })).toThrow(
      /ExternalArtifact/,
    );
    // A cluster still on ADR 0019's layout would get slices nothing applies.
    expect(() =>
      add({}, { ...SOURCES, "clusters/aks-dev-weu/kustomization.yaml": "resources: [flux-system, berth.yaml]\n" }),
    ).toThrow(/does not list berth-team-slices.yaml: aks-dev-weu is on a layout before the platform config.s slices/);
    // A cluster moving from other slices (berth cluster slices' install step) lists both: their files are not copied.
    expect(() =>
      add(
        {},
        {
          ...SOURCES,
          "clusters/aks-dev-weu/kustomization.yaml":
            "resources: [flux-system, berth.yaml, berth-team-hash-slices-16.yaml, berth-team-slices.yaml]\n",
        },
      ),
    ).toThrow(/also lists berth-team-hash-slices-16.yaml: aks-dev-weu is moving to berth-team-slices.yaml/);
  });
});

describe("hash slices (ADR 0034)", () => {
  const shards = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

  it.each([16, 32, 64, 128, 256])("cut %i slices that hold every shard exactly once, in order", (count) => {
    const slices = slicesOf({ by: "hash", count });
    expect(slices).toHaveLength(count);
    const holders = shards.map((shard) => slices.filter((s) => matchesGlob(shard, s.glob)).map((s) => s.id));
    expect(holders.every((h) => h.length === 1)).toBe(true);
    // Consecutive shards: slice i holds shards i*w .. i*w+w-1, and its name says which.
    const width = 256 / count;
    slices.forEach((slice, i) => {
      const held = shards.filter((shard) => matchesGlob(shard, slice.glob));
      expect(held).toEqual(shards.slice(i * width, (i + 1) * width));
      expect(slice.id).toBe(width === 1 ? held[0] : `${held[0]}-${held.at(-1)}`);
      // Its marker is matched by its own glob only, so a slice without teams still copies something.
      expect(slices.filter((s) => matchesGlob(slice.marker, s.glob)).map((s) => s.id)).toEqual([slice.id]);
    });
  });

  it("cut the team folders in their shard's folder, and the team artifacts at the same paths", () => {
    const platform = makePlatform({
      fluxSource: { kind: "ExternalArtifact", artifactPrefix: "team-files-" },
      layout: { appliedBy: "slices", slices: { by: "hash", count: 16 } },
    });
    const files = sliceFiles(sliceOptions(platform, "aks-dev-weu"));
    expect([...files.keys()].filter((p) => p.endsWith("--slice"))).toHaveLength(32);
    expect(files.has("teams/a0--slice")).toBe(true);
    expect(files.has("clusters/aks-dev-weu/teams/a0--slice")).toBe(true);
    const objects = parseAllDocuments(files.get("clusters/aks-dev-weu/berth-team-hash-slices-16.yaml")!).map(
      (d) => d.toJS() as { kind: string; metadata: { name: string }; spec: Record<string, unknown> },
    );
    expect(objects).toHaveLength(1 + 2 * 16);
    const cutter = objects[0]!.spec as { artifacts: Array<{ name: string; copy: Array<{ from: string }> }> };
    expect(objects[0]!.metadata.name).toBe("berth-team-hash-slices-16");
    expect(cutter.artifacts[10]).toMatchObject({
      name: "berth-team-slice-a0-af",
      copy: [{ from: "@fleet/teams/a*" }, { from: "@fleet/clusters/aks-dev-weu/teams/a*" }],
    });
    const generator = objects.find((o) => o.metadata.name === "berth-team-artifacts-a0-af")!;
    expect(generator.spec.pathPattern).toBe("@slice/teams/{shard}/{team}/clusters/aks-dev-weu");
    expect(generator.spec.artifacts).toEqual([
      {
        name: "team-files-{team}",
        originRevision: "@slice",
        copy: [
          { from: "@slice/teams/{shard}/{team}/base/", to: "@artifact/teams/{shard}/{team}/" },
          { from: "@slice/teams/{shard}/{team}/clusters/aks-dev-weu/", to: "@artifact/teams/{shard}/{team}/clusters/" },
        ],
      },
    ]);
    // What a team's Kustomization reads in its artifact is where its folder is in the repository.
    expect(repoLayout(platform).clusterDir("alpha", "aks-dev-weu")).toBe(
      `teams/${teamShard("alpha")}/alpha/clusters/aks-dev-weu`,
    );
    expect(teamsRepositoryIgnore(platform, "aks-dev-weu")).toContain("!/teams/*/*/clusters/aks-dev-weu/\n");
  });

  it("fetch per slice: a sparse GitRepository per slice copied from berth-teams, no cutter (ADR 0036)", () => {
    const platform = makePlatform({
      fluxSource: { kind: "ExternalArtifact", artifactPrefix: "team-files-" },
      layout: { appliedBy: "slices", slices: { by: "hash", count: 32, fetch: "per-slice" } },
    });
    const teams = {
      path: "clusters/aks-dev-weu/berth-teams.yaml",
      text: TEAMS.replace(
        "spec:\n",
        "spec:\n  url: https://git.example/fleet.git\n  ref: { branch: main }\n  secretRef: { name: flux-system }\n  interval: 1h\n",
      ),
    };
    expect(() => sliceOptions(platform, "aks-dev-weu")).toThrow(/copies GitRepository berth-teams/);
    const files = sliceFiles(sliceOptions(platform, "aks-dev-weu", teams));
    // A marker in every shard folder (a sparse checkout of a missing folder fails), none per slice.
    const markers = [...files.keys()].filter((p) => p !== "clusters/aks-dev-weu/berth-team-hash-slices-32.yaml");
    expect(markers).toHaveLength(2 * 256);
    expect(markers).toContain("teams/a7/--shard");
    expect(markers).toContain("clusters/aks-dev-weu/teams/00/--shard");
    const objects = parseAllDocuments(files.get("clusters/aks-dev-weu/berth-team-hash-slices-32.yaml")!).map(
      (d) => d.toJS() as { kind: string; metadata: { name: string; labels?: object }; spec: Record<string, unknown> },
    );
    expect(objects).toHaveLength(4 * 32);
    // No cutter of the whole repository: per slice, its team artifacts and its Flux files.
    expect(
      objects.filter(
        (o) =>
          o.kind === "ArtifactGenerator" &&
          !o.metadata.name.startsWith("berth-team-artifacts-") &&
          !o.metadata.name.startsWith("berth-team-flux-"),
      ),
    ).toEqual([]);
    const repository = objects.find((o) => o.kind === "GitRepository" && o.metadata.name === "berth-teams-a8-af")!;
    expect(repository.metadata.labels).toEqual({
      "berth.dev/team-slice": "true",
      "berth.dev/first-shard": "a8",
      "berth.dev/last-shard": "af",
    });
    expect(repository.spec).toEqual({
      url: "https://git.example/fleet.git",
      secretRef: { name: "flux-system" },
      interval: "1h",
      ignore: teamsRepositoryIgnore(platform, "aks-dev-weu"),
      // Not berth-teams's main: the slice's own branch, which the API moves only for the slice's commits.
      ref: { branch: "berth-slices/aks-dev-weu/a8-af" },
      sparseCheckout: [
        ...["a8", "a9", "aa", "ab", "ac", "ad", "ae", "af"].map((s) => `teams/${s}`),
        ...["a8", "a9", "aa", "ab", "ac", "ad", "ae", "af"].map((s) => `clusters/aks-dev-weu/teams/${s}`),
      ],
    });
    // Every slice's branch on every cluster of the config, which the API keeps (ADR 0036).
    const clusters = platform.environments.flatMap((e) => e.clusters.map((c) => c.name));
    const branches = sliceBranches(platform);
    expect(branches).toHaveLength(32 * clusters.length);
    expect(branches).toContainEqual({
      branch: "berth-slices/aks-dev-weu/a8-af",
      cluster: "aks-dev-weu",
      shards: ["a8", "a9", "aa", "ab", "ac", "ad", "ae", "af"],
      // What its commits hold: what its GitRepository checks out.
      folders: [
        ...["a8", "a9", "aa", "ab", "ac", "ad", "ae", "af"].map((s) => `teams/${s}`),
        ...["a8", "a9", "aa", "ab", "ac", "ad", "ae", "af"].map((s) => `clusters/aks-dev-weu/teams/${s}`),
      ],
    });
    // Fetched whole: no branches.
    const whole = makePlatform({
      fluxSource: { kind: "ExternalArtifact", artifactPrefix: "team-files-" },
      layout: { appliedBy: "slices", slices: { by: "hash", count: 32 } },
    });
    expect(sliceBranches(whole)).toEqual([]);
    const source = { kind: "GitRepository", name: "berth-teams-a8-af", namespace: "flux-system" };
    // The slice's Kustomization reads its Flux files' artifact, content-addressed: a commit elsewhere re-applies nothing.
    const fluxFiles = objects.find(
      (o) => o.kind === "ArtifactGenerator" && o.metadata.name === "berth-team-flux-a8-af",
    )!;
    expect(fluxFiles.spec).toEqual({
      sources: [{ alias: "slice", ...source }],
      artifacts: [
        {
          name: "berth-team-flux-a8-af",
          originRevision: "@slice",
          copy: [{ from: "@slice/clusters/aks-dev-weu/teams/", to: "@artifact/clusters/aks-dev-weu/" }],
        },
      ],
    });
    const slice = objects.find((o) => o.kind === "Kustomization" && o.metadata.name === "berth-teams-a8-af")!;
    expect(slice.spec.sourceRef).toEqual({ kind: "ExternalArtifact", name: "berth-team-flux-a8-af" });
    expect(slice.spec.path).toBe("./clusters/aks-dev-weu/teams");
    // Applied when its artifact moves; the interval is only the hourly drift check of its team Kustomizations.
    expect(slice.spec.interval).toBe("1h");
    const generator = objects.find((o) => o.metadata.name === "berth-team-artifacts-a8-af")!;
    expect(generator.spec.sources).toEqual([{ alias: "slice", ...source }]);
    expect(generator.spec.pathPattern).toBe("@slice/teams/{shard}/{team}/clusters/aks-dev-weu");
    // Every shard is fetched by exactly one slice.
    const fetched = objects.flatMap((o) => (o.kind === "GitRepository" ? (o.spec.sparseCheckout as string[]) : []));
    expect(new Set(fetched).size).toBe(2 * 256);
  });

  it("sliceHolding finds the slice whose glob selects the team's folder, for every cut", () => {
    const names = Array.from({ length: 300 }, (_, i) => `team-${i}`);
    for (const count of [16, 32, 64, 128, 256])
      for (const name of names)
        expect(matchesGlob(teamShard(name), sliceHolding({ by: "hash", count }, name).glob)).toBe(true);
    for (const name of ["alpha", "zulu", "m1"])
      expect(matchesGlob(name, sliceHolding({ by: "first-letter" }, name).glob)).toBe(true);
  });

  it("fetch per slice is refused for first-letter slices, which glob team folders", () => {
    expect(() =>
      makePlatform({
        fluxSource: { kind: "ExternalArtifact", artifactPrefix: "team-files-" },
        layout: { appliedBy: "slices", slices: { by: "first-letter", fetch: "per-slice" } },
      }),
    ).toThrow(/per-slice fetch needs layout.slices.by hash/);
  });

  it("are refused without the slices applying the team files", () => {
    expect(() => makePlatform({ layout: { slices: { by: "hash", count: 16 } } })).toThrow(
      /hash slices need layout.appliedBy slices/,
    );
  });
});
