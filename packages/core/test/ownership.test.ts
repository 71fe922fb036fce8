/**
 * Path ownership: no team name may reach a file the layout owns (a cluster's teams index), and no team's
 * change may write or delete anything but its own files and the indexes it rebuilds. Issue 10, defect 1:
 * a team named `kustomization` used to overwrite every cluster's teams index with a list of itself.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  Fleet,
  Onboarding,
  PathOwnershipError,
  platformSchema,
  repoLayout,
  serializeTeamFile,
  teamNameSchema,
  TeamValidationError,
  teamShard,
  validateTeam,
  type Platform,
} from "@berth/core";
import {
  CLUSTERS,
  HASH_SLICES_PLATFORM,
  loadTemplates,
  makePlatform,
  MemoryRepoTree,
  PLATFORM,
  platformInput,
  teamInput,
} from "./fixtures.js";
import { parseObjects } from "./yaml-helpers.js";

const CUSTOM_LAYOUT = makePlatform({ layout: { teamsDir: "tenants", clustersDir: "fleet/clusters" } });
const PLATFORMS: ReadonlyArray<[string, Platform]> = [
  ["default layout", PLATFORM],
  ["custom layout", CUSTOM_LAYOUT],
  ["hash slices", HASH_SLICES_PLATFORM],
];
const ALL_ENVIRONMENTS = ["dev", "staging", "prod"];

function nameIssues(name: string, platform: Platform): string[] {
  try {
    validateTeam(teamInput({ name, environments: ALL_ENVIRONMENTS }), platform);
    return [];
  } catch (err) {
    if (!(err instanceof TeamValidationError)) throw err;
    return err.issues.filter((i) => i.field === "name").map((i) => i.rule);
  }
}

/**
 * Names a hostile client would try: every file stem the layout itself writes (derived from the layout, not
 * listed by hand), the template output stems, and arbitrary DNS labels.
 */
function candidateNames(platform: Platform): fc.Arbitrary<string> {
  const layout = repoLayout(platform);
  const layoutStems = CLUSTERS.map((c) =>
    layout
      .clusterTeamsIndex(c)
      .split("/")
      .pop()!
      .replace(/\.yaml$/, ""),
  );
  const templateStems = [...loadTemplates().templates.keys()].map((t) => t.replace(/\.yaml$/, ""));
  const label = fc.stringMatching(/^[a-z][a-z0-9-]{0,38}[a-z0-9]$/);
  // A team folder's own parts, and the shard folders they hash to: with hash slices, `teams/<hh>/base/` is the
  // folder of a team `base` in shard hh and of a team named `<hh>` from before (ADR 0034).
  const folderParts = ["base", "clusters"];
  return fc.oneof(
    fc.constantFrom(
      ...new Set([...layoutStems, ...templateStems, "teams", "team", ...folderParts, ...folderParts.map(teamShard)]),
    ),
    label,
  );
}

describe.each(PLATFORMS)("team names against the layout (%s)", (_, platform) => {
  const layout = repoLayout(platform);
  const onboarding = new Onboarding(platform, loadTemplates());

  it("refuses a team named kustomization: its Flux file would be a shard's teams index on every cluster", () => {
    const issues = nameIssues("kustomization", platform);
    expect(issues).toHaveLength(1);
    expect(issues[0]).toContain(
      `${layout.clustersDir}/aks-dev-weu/teams/${teamShard("kustomization")}/kustomization.yaml`,
    );
    expect(issues[0]).toContain(`teams index of shard ${teamShard("kustomization")}`);
    // Its Flux file from before shards would have been the top index: that path is refused too.
    expect(layout.teamPathCollisions("kustomization", ["aks-dev-weu"]).map((c) => c.path)).toContain(
      layout.clusterTeamsIndex("aks-dev-weu"),
    );
  });

  it("for any name: either refused, or every file its create writes is its own or an index listing teams only", async () => {
    // A neighbour team, so a create that touched another team's files would show.
    const neighbour = (
      await onboarding.planCreate(
        new MemoryRepoTree(),
        teamInput({ name: "neighbour", environments: ALL_ENVIRONMENTS }),
      )
    ).change;
    const start = new MemoryRepoTree().apply(neighbour);
    await fc.assert(
      fc.asyncProperty(candidateNames(platform), async (name) => {
        if (!teamNameSchema.safeParse(name).success || name === "neighbour") return;
        const collisions = layout.teamPathCollisions(name, CLUSTERS);
        const issues = nameIssues(name, platform);
        // The validation rule is exactly the derived collision check, for every name.
        expect(
          issues.some((r) => r.includes("would be")),
          name,
        ).toBe(collisions.length > 0);
        if (issues.length > 0) return;
        const { change } = await onboarding.planCreate(start, teamInput({ name, environments: ALL_ENVIRONMENTS }));
        for (const [path, content] of change.files) {
          const owner = layout.ownerOf(path);
          if (owner.kind === "cluster-teams-index") {
            expect(content, path).not.toBeNull();
            const resources = (parseObjects(content!, "1.1")[0] as { resources: string[] }).resources;
            // A shard's index lists the Flux files of its teams; the top index, the shards holding one.
            const expected = owner.shard
              ? ["neighbour", name].filter((t) => teamShard(t) === owner.shard).map((t) => `${t}.yaml`)
              : [...new Set([teamShard("neighbour"), teamShard(name)])];
            expect(resources.sort(), path).toEqual(expected.sort());
          } else {
            expect(owner, path).toEqual({ kind: "team", team: name });
          }
        }
        const after = start.apply(change);
        for (const path of start.paths()) {
          if (layout.ownerOf(path).kind === "team") expect(after.get(path), path).toBe(start.get(path));
        }
      }),
      { seed: 20261124, numRuns: 400 },
    );
  });

  it("two different accepted names never own a common path", () => {
    fc.assert(
      fc.property(candidateNames(platform), candidateNames(platform), (a, b) => {
        if (a === b || nameIssues(a, platform).length || nameIssues(b, platform).length) return;
        const pathsOf = (t: string) => [
          ...layout.teamSpecs(t),
          ...CLUSTERS.flatMap((c) => layout.fluxKustomizationPaths(c, t)),
        ];
        const mine = new Set(pathsOf(a));
        for (const p of pathsOf(b)) expect(mine.has(p), p).toBe(false);
        for (const p of pathsOf(a)) expect(layout.ownerOf(p)).toEqual({ kind: "team", team: a });
      }),
      { seed: 7, numRuns: 300 },
    );
  });
});

describe("the write guard", () => {
  const onboarding = new Onboarding(PLATFORM, loadTemplates());
  const layout = repoLayout(PLATFORM);

  /**
   * What an earlier Berth (before names were checked, and before shards) wrote for a team named
   * kustomization next to team orders on dev: its Flux file replaced the index, which then listed only itself.
   */
  async function corruptedTree(): Promise<MemoryRepoTree> {
    const orders = await onboarding.planCreate(new MemoryRepoTree(), teamInput({ name: "orders" }));
    const spec = serializeTeamFile({ ...validateTeam(teamInput({ name: "orders" }), PLATFORM), name: "kustomization" });
    return new MemoryRepoTree().apply(orders.change).apply(
      new Map([
        [layout.teamSpec("kustomization"), spec],
        [
          layout.clusterTeamsIndex("aks-dev-weu"),
          "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - kustomization.yaml\n",
        ],
      ]),
    );
  }

  it("refuses any path a team does not own, whatever produced the change", () => {
    const refuse = (paths: string[]) => () => layout.assertOwnedBy("kustomization", paths);
    expect(refuse([layout.clusterTeamsIndex("aks-dev-weu")])).toThrow(PathOwnershipError);
    expect(refuse([layout.clusterTeamsIndex("aks-dev-weu")])).toThrow(
      /may not write clusters\/aks-dev-weu\/teams\/kustomization\.yaml: it is cluster aks-dev-weu's teams index/,
    );
    expect(refuse(["teams/kustomization/base/namespace.yaml", "teams/orders/base/namespace.yaml"])).toThrow(
      /it is a file of team orders/,
    );
    expect(refuse(["clusters/aks-dev-weu/flux-system/gotk-sync.yaml"])).toThrow(/outside the teams layout/);
    expect(
      refuse(["teams/kustomization/base/namespace.yaml", "clusters/aks-prod-weu/teams/kustomization.yaml"]),
    ).toThrow(/aks-prod-weu/);
    expect(refuse(["teams/kustomization/base/namespace.yaml"])).not.toThrow();
  });

  it("refuses, inside a real create, a rendered path that escapes the team's folder (whatever produced it)", async () => {
    // Template sets from git are checked on load; this one is built by hand, so only the guard stands between
    // its output and the dev cluster's teams index.
    const templates = loadTemplates();
    const escaping = {
      ...templates,
      team: templates.team.map((entry) => ({
        ...entry,
        output: "../../../clusters/aks-dev-weu/teams/kustomization.yaml",
      })),
    };
    const planned = new Onboarding(PLATFORM, escaping).planCreate(new MemoryRepoTree(), teamInput({ name: "orders" }));
    await expect(planned).rejects.toThrow(PathOwnershipError);
    await expect(planned).rejects.toThrow(
      /may not write teams\/orders\/base\/\.\.\/\.\.\/\.\.\/clusters\/aks-dev-weu\/teams\/kustomization\.yaml: it is a file outside the teams layout/,
    );
  });

  it("refuses an update of a colliding team that is already in the repo, before it is rendered", async () => {
    const tree = await corruptedTree();
    const spec = { description: "x", owners: teamInput().owners, environments: ["dev"] };
    await expect(onboarding.planUpdate(tree, "kustomization", spec)).rejects.toBeInstanceOf(TeamValidationError);
    // A rollout's plan reports it as a team that cannot be rendered and renders nothing for it; the one file
    // it writes is the dev index it overwrote, rebuilt from the teams that are valid.
    const plan = await new Fleet(onboarding).plan(tree, ["kustomization"]);
    expect(plan.failed).toEqual([{ team: "kustomization", error: expect.stringMatching(/kustomization/) }]);
    const index = layout.clusterTeamsIndex("aks-dev-weu");
    expect([...plan.files.keys()]).toEqual([index]);
    expect((parseObjects(plan.files.get(index)!, "1.1")[0] as { resources: string[] }).resources).toEqual([
      teamShard("orders"),
    ]);
  });

  it("offboarding a colliding team never deletes the index: it deletes the team's folder and rebuilds the index", async () => {
    const tree = await corruptedTree();
    const { change } = await onboarding.planDelete(tree, "kustomization");
    const index = layout.clusterTeamsIndex("aks-dev-weu");
    expect(change.files.get(index)).not.toBeNull();
    expect((parseObjects(change.files.get(index)!, "1.1")[0] as { resources: string[] }).resources).toEqual([
      teamShard("orders"),
    ]);
    for (const [path, content] of change.files) {
      if (path !== index)
        expect({ path, content }).toEqual({ path: expect.stringMatching(/^teams\/kustomization\//), content: null });
    }
  });

  it("names the owner of the path it refused", () => {
    const err = new PathOwnershipError(
      "a",
      "clusters/x/teams/kustomization.yaml",
      "cluster x's teams index, which Berth's layout owns",
    );
    expect(err.message).toBe(
      "a change for team \"a\" may not write clusters/x/teams/kustomization.yaml: it is cluster x's teams index, which Berth's layout owns",
    );
  });

  it("resolves owners from the layout's own paths", () => {
    expect(layout.ownerOf("clusters/c1/teams/kustomization.yaml")).toEqual({
      kind: "cluster-teams-index",
      cluster: "c1",
    });
    expect(layout.ownerOf("clusters/c1/teams/payments.yaml")).toEqual({ kind: "team", team: "payments" });
    expect(layout.ownerOf("teams/payments/base/namespace.yaml")).toEqual({ kind: "team", team: "payments" });
    expect(layout.ownerOf("clusters/c1/flux-system/gotk-sync.yaml")).toEqual({ kind: "unowned" });
    expect(layout.ownerOf("clusters/c1/teams/sub/x.yaml")).toEqual({ kind: "unowned" });
    expect(layout.ownerOf("teams")).toEqual({ kind: "unowned" });
    expect(layout.ownerOf("README.md")).toEqual({ kind: "unowned" });
    for (const path of [
      "teams/orders/base/../../../clusters/c1/teams/kustomization.yaml",
      "teams/orders//x.yaml",
      "teams/orders/./x.yaml",
      "clusters/c1/teams/../teams/kustomization.yaml",
    ]) {
      expect(layout.ownerOf(path), path).toEqual({ kind: "unowned" });
    }
  });

  it("finds a cluster listing's teams exactly where ownerOf finds them", () => {
    const dir = layout.clusterTeamsDir("aks-dev-weu");
    const name = fc.stringMatching(/^[a-z.][a-z0-9.-]{0,12}$/);
    // Entries of the folder as a hand edit might leave them: Flux files in their shard, in another shard and
    // at the top (before shards), indexes, nested and odd names.
    const entry = fc.oneof(
      fc.constantFrom(
        "kustomization.yaml",
        ".yaml",
        "..yaml",
        "a.yml",
        "sub/x.yaml",
        "sub/kustomization.yaml",
        "README.md",
        "x.yaml.bak",
        "0a/kustomization.yaml",
        "0a/sub/x.yaml",
        "ff/.yaml",
      ),
      name.map((n) => `${n}.yaml`),
      name.map((n) => `${teamShard(n)}/${n}.yaml`),
      name.map((n) => `${teamShard(`${n}x`)}/${n}.yaml`),
      fc.stringMatching(/^[0-9a-f]{2}\/[a-z.][a-z0-9.-]{0,6}(\/[a-z]{1,4})?\.yaml$/),
    );
    fc.assert(
      fc.property(fc.uniqueArray(entry, { maxLength: 30 }), (entries) => {
        const paths = entries.map((e) => `${dir}/${e}`).sort();
        const flat: string[] = [];
        const sharded = new Map<string, string[]>();
        for (const p of paths) {
          const owner = layout.ownerOf(p);
          if (owner.kind !== "team") continue;
          const rest = p.slice(dir.length + 1);
          if (!rest.includes("/")) flat.push(owner.team);
          else sharded.set(rest.split("/")[0]!, [...(sharded.get(rest.split("/")[0]!) ?? []), owner.team]);
        }
        const listing = layout.clusterTeamsListing("aks-dev-weu", paths);
        expect(listing.flat).toEqual(flat);
        expect(listing.shards).toEqual(sharded);
        for (const [shard, teams] of listing.shards) for (const team of teams) expect(teamShard(team)).toBe(shard);
      }),
    );
  });

  it("puts each team's Flux file in its shard, and owns the file from before shards as the team's", () => {
    expect(teamShard("payments")).toMatch(/^[0-9a-f]{2}$/);
    expect(layout.fluxKustomization("c1", "payments")).toBe(`clusters/c1/teams/${teamShard("payments")}/payments.yaml`);
    expect(layout.ownerOf(layout.fluxKustomization("c1", "payments"))).toEqual({ kind: "team", team: "payments" });
    expect(layout.ownerOf("clusters/c1/teams/payments.yaml")).toEqual({ kind: "team", team: "payments" });
    expect(layout.ownerOf(layout.shardIndex("c1", "3f"))).toEqual({
      kind: "cluster-teams-index",
      cluster: "c1",
      shard: "3f",
    });
    // In another team's shard, a file named after the team is nobody's: no write may touch it.
    const other = teamShard("payments") === "00" ? "01" : "00";
    expect(layout.ownerOf(`clusters/c1/teams/${other}/payments.yaml`)).toEqual({ kind: "unowned" });
  });
});

describe("a team folder's own parts with hash slices", () => {
  it("refuses teams named base and clusters: teams/<their shard>/base/ is a team folder from before", () => {
    for (const part of ["base", "clusters"]) {
      const issues = nameIssues(part, HASH_SLICES_PLATFORM);
      expect(issues, part).toHaveLength(1);
      expect(issues[0]).toContain(`would be a file of team ${teamShard(part)}`);
      expect(nameIssues(part, PLATFORM), part).toEqual([]);
    }
  });
});

describe("layout config", () => {
  it.each([
    [{ teamsDir: "clusters", clustersDir: "clusters" }],
    [{ teamsDir: "fleet", clustersDir: "fleet/clusters" }],
    [{ teamsDir: "fleet/clusters/teams", clustersDir: "fleet/clusters" }],
    [{ teamsDir: "teams/", clustersDir: "clusters" }],
    [{ teamsDir: "a//b", clustersDir: "clusters" }],
  ])("refuses folders that overlap or are not clean relative paths: %j", (layoutDirs) => {
    expect(platformSchema.safeParse(platformInput({ layout: layoutDirs })).success).toBe(false);
  });

  it("accepts disjoint folders that share a prefix of characters", () => {
    expect(
      platformSchema.safeParse(
        platformInput({ layout: { teamsDir: "fleet/teams", clustersDir: "fleet/teams-clusters" } }),
      ).success,
    ).toBe(true);
  });
});
