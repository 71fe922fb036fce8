/** Onboarding plans over an in-memory repo: create, update, re-render, delete, preview, reading team files. */
import { describe, expect, it } from "vitest";
import {
  Fleet,
  Onboarding,
  parseTeamFile,
  platformSchema,
  renderShardIndex,
  RepoContentError,
  repoLayout,
  serializeTeamFile,
  TeamExistsError,
  TeamNotFoundError,
  TeamValidationError,
  teamShard,
  validateTeam,
  type RepoChange,
} from "@berth/core";
import {
  CLUSTERS,
  EXAMPLES,
  loadTemplates,
  makePlatform,
  MemoryRepoTree,
  PLATFORM,
  platformWithSubjectMode,
  rerender,
  treeWithTeams,
} from "./fixtures.js";
import { parseManifests, parseObjects } from "./yaml-helpers.js";

const onboarding = new Onboarding(PLATFORM, loadTemplates());
const PAYMENTS = EXAMPLES.find((e) => e.name === "payments")!.team; // dev + prod, labels, one role
const SEARCH = EXAMPLES.find((e) => e.name === "minimal")!.team; // dev only
const layout = repoLayout(PLATFORM);
const indexPath = (cluster: string) => layout.clusterTeamsIndex(cluster);
const shardIndexOf = (cluster: string, team: string) => layout.shardIndex(cluster, teamShard(team));
const flux = (cluster: string, team: string) => layout.fluxKustomization(cluster, team);
const resourcesOf = (tree: MemoryRepoTree, path: string) =>
  (parseObjects(tree.get(path)!, "1.1")[0] as { resources: string[] }).resources;

/** The Flux files a cluster's indexes reach, from the top index through each shard's, as `<team>.yaml`. */
function indexOf(tree: MemoryRepoTree, cluster: string): string[] {
  const dir = layout.clusterTeamsDir(cluster);
  return resourcesOf(tree, indexPath(cluster))
    .flatMap((r) => (r.endsWith(".yaml") ? [r] : resourcesOf(tree, `${dir}/${r}/kustomization.yaml`)))
    .sort();
}
const ownedBy = (team: string) => (path: string) => {
  const owner = layout.ownerOf(path);
  return owner.kind === "team" && owner.team === team;
};
const paths = (change: RepoChange) => [...change.files.keys()].sort();
const deleted = (change: RepoChange) =>
  [...change.files]
    .filter(([, c]) => c === null)
    .map(([p]) => p)
    .sort();
const written = (change: RepoChange) =>
  [...change.files]
    .filter(([, c]) => c !== null)
    .map(([p]) => p)
    .sort();

describe("MemoryRepoTree", () => {
  const tree = new MemoryRepoTree(
    {
      "teams/b/team.yaml": "b",
      "teams/a/team.yaml": "a",
      "teams/a/base/x.yaml": "x",
      "teams/ab/team.yaml": "ab",
      "README.md": "r",
    },
    "rev1",
  );

  it("reads files and lists a folder recursively, sorted", async () => {
    expect(await tree.read("teams/a/team.yaml")).toBe("a");
    expect(await tree.read("teams/a")).toBeUndefined();
    expect(await tree.list("teams")).toEqual([
      "teams/a/base/x.yaml",
      "teams/a/team.yaml",
      "teams/ab/team.yaml",
      "teams/b/team.yaml",
    ]);
    expect(await tree.list("teams/a")).toEqual(["teams/a/base/x.yaml", "teams/a/team.yaml"]); // not teams/ab
    expect(await tree.list("teams/a/")).toEqual(["teams/a/base/x.yaml", "teams/a/team.yaml"]);
    expect(await tree.list("nothing")).toEqual([]);
    expect(await tree.list("")).toHaveLength(5);
    expect(tree.revision).toBe("rev1");
  });

  it("applies a change to a copy", () => {
    const next = tree.apply(
      new Map([
        ["teams/a/team.yaml", null],
        ["teams/c/team.yaml", "c"],
      ]),
      "rev2",
    );
    expect(next.paths()).toEqual([
      "README.md",
      "teams/a/base/x.yaml",
      "teams/ab/team.yaml",
      "teams/b/team.yaml",
      "teams/c/team.yaml",
    ]);
    expect(next.revision).toBe("rev2");
    expect(tree.get("teams/a/team.yaml")).toBe("a");
    expect(() => tree.apply(new Map([["nope", null]]))).toThrow(/does not exist/);
    expect(() => tree.apply(new Map([["../x", "x"]]))).toThrow(/not a repo-relative/);
  });
});

describe("planCreate", () => {
  it("writes every rendered file and every cluster's teams index on an empty repo", async () => {
    const { team, change } = await onboarding.planCreate(new MemoryRepoTree(), PAYMENTS);
    const rendered = onboarding.render(team);
    const teamClusters = ["aks-dev-weu", "aks-prod-neu", "aks-prod-weu"];
    expect(written(change)).toEqual(
      [...rendered.keys(), ...CLUSTERS.map(indexPath), ...teamClusters.map((c) => shardIndexOf(c, "payments"))].sort(),
    );
    expect(deleted(change)).toEqual([]);
    for (const [path, content] of rendered) expect(change.files.get(path)).toBe(content);
    expect(change.subject).toBe("berth: onboard team payments");
    expect(change.body).toEqual(["environments: prod, dev", "roles: rg-contributor", "templates: v1"]);

    const tree = new MemoryRepoTree().apply(change);
    expect(indexOf(tree, "aks-dev-weu")).toEqual(["payments.yaml"]);
    expect(indexOf(tree, "aks-prod-weu")).toEqual(["payments.yaml"]);
    expect(indexOf(tree, "aks-prod-neu")).toEqual(["payments.yaml"]);
    expect(indexOf(tree, "aks-stg-weu")).toEqual([]);
    expect(resourcesOf(tree, indexPath("aks-dev-weu"))).toEqual([teamShard("payments")]);
    // Exactly the clusters of the team's environments get a Flux Kustomization (in the team's shard) and a cluster folder.
    expect(tree.paths().filter((p) => p.startsWith("clusters/") && ownedBy("payments")(p))).toEqual(
      teamClusters.map((c) => flux(c, "payments")),
    );
    expect(
      new Set(
        tree
          .paths()
          .filter((p) => p.startsWith("teams/payments/clusters/"))
          .map((p) => p.split("/")[3]),
      ),
    ).toEqual(new Set(["aks-dev-weu", "aks-prod-weu", "aks-prod-neu"]));
  });

  it("adds a second team to the shared indexes without touching the first team's files", async () => {
    const one = await treeWithTeams(onboarding, [PAYMENTS]);
    const { change } = await onboarding.planCreate(one, SEARCH);
    expect(paths(change).filter((p) => p.startsWith("teams/payments/") || p.includes("/payments.yaml"))).toEqual([]);
    // Only the dev cluster's indexes change: search's shard, and the top one when that shard was empty.
    expect(teamShard("search")).not.toBe(teamShard("payments"));
    expect(paths(change).filter((p) => p.startsWith("clusters/") && p.endsWith("/kustomization.yaml"))).toEqual(
      [indexPath("aks-dev-weu"), shardIndexOf("aks-dev-weu", "search")].sort(),
    );
    const two = one.apply(change);
    expect(indexOf(two, "aks-dev-weu")).toEqual(["payments.yaml", "search.yaml"]);
    expect(indexOf(two, "aks-prod-weu")).toEqual(["payments.yaml"]);
  });

  it("refuses a team that exists, whatever the new spec", async () => {
    const tree = await treeWithTeams(onboarding, [PAYMENTS]);
    await expect(onboarding.planCreate(tree, PAYMENTS)).rejects.toBeInstanceOf(TeamExistsError);
    await expect(onboarding.planCreate(tree, { ...PAYMENTS, environments: ["staging"] })).rejects.toThrow(
      /team "payments" already exists/,
    );
  });

  it("refuses an invalid team before reading the repo", async () => {
    await expect(onboarding.planCreate(new MemoryRepoTree(), { ...PAYMENTS, name: "Payments" })).rejects.toBeInstanceOf(
      TeamValidationError,
    );
  });
});

describe("planUpdate", () => {
  const { name: _n, ...paymentsSpec } = PAYMENTS;

  it("changes nothing when nothing changed, whatever the label order", async () => {
    const tree = await treeWithTeams(onboarding, [PAYMENTS, SEARCH]);
    expect((await onboarding.planUpdate(tree, "payments", paymentsSpec)).change.files.size).toBe(0);
    const reordered = { ...paymentsSpec, labels: Object.fromEntries(Object.entries(paymentsSpec.labels!).reverse()) };
    expect((await onboarding.planUpdate(tree, "payments", reordered)).change.files.size).toBe(0);
  });

  it("changes only the files a spec change affects", async () => {
    const tree = await treeWithTeams(onboarding, [PAYMENTS, SEARCH]);
    const { change } = await onboarding.planUpdate(tree, "payments", {
      ...paymentsSpec,
      quota: { cpu: "20", memory: "32Gi", pods: 200 },
    });
    expect(paths(change)).toEqual(["teams/payments/base/resource-quota.yaml", "teams/payments/base/team.yaml"]);
    expect(change.subject).toBe("berth: update team payments");
  });

  it("dropping an environment deletes that cluster's files and takes the team off its index", async () => {
    const tree = await treeWithTeams(onboarding, [PAYMENTS, SEARCH]);
    const { change } = await onboarding.planUpdate(tree, "payments", { ...paymentsSpec, environments: ["prod"] });
    const devFiles = tree.paths().filter((p) => p.startsWith("teams/payments/clusters/aks-dev-weu/"));
    expect(devFiles.length).toBeGreaterThanOrEqual(5);
    // payments was alone in its shard on dev: the shard's index goes with its file, and the top index changes.
    expect(deleted(change)).toEqual(
      [...devFiles, flux("aks-dev-weu", "payments"), shardIndexOf("aks-dev-weu", "payments")].sort(),
    );
    expect(written(change)).toEqual([indexPath("aks-dev-weu"), "teams/payments/base/team.yaml"]);
    const next = tree.apply(change);
    expect(indexOf(next, "aks-dev-weu")).toEqual(["search.yaml"]);
    expect(indexOf(next, "aks-prod-weu")).toEqual(["payments.yaml"]);
    expect(next.paths().some((p) => p.includes("aks-dev-weu") && p.includes("payments"))).toBe(false);
  });

  it("adding an environment adds that cluster's files and index entry", async () => {
    const tree = await treeWithTeams(onboarding, [PAYMENTS]);
    const { change } = await onboarding.planUpdate(tree, "payments", {
      ...paymentsSpec,
      environments: ["prod", "dev", "staging"],
    });
    expect(deleted(change)).toEqual([]);
    expect(written(change)).toContain(flux("aks-stg-weu", "payments"));
    expect(written(change)).toContain("teams/payments/clusters/aks-stg-weu/identity.yaml");
    expect(indexOf(tree.apply(change), "aks-stg-weu")).toEqual(["payments.yaml"]);
  });

  it("dropping every role deletes the role-assignment files and their kustomization entries", async () => {
    const tree = await treeWithTeams(onboarding, [PAYMENTS]);
    const { change } = await onboarding.planUpdate(tree, "payments", { ...paymentsSpec, roleAssignments: [] });
    expect(deleted(change)).toEqual(
      ["aks-dev-weu", "aks-prod-neu", "aks-prod-weu"].map((c) => `teams/payments/clusters/${c}/role-assignment.yaml`),
    );
    const next = tree.apply(change);
    expect(
      parseManifests(next.get("teams/payments/clusters/aks-dev-weu/kustomization.yaml")!, "1.1")[0]?.resources,
    ).not.toContain("role-assignment.yaml");
  });

  it("deletes files in the team's folder that Berth does not render", async () => {
    const tree = (await treeWithTeams(onboarding, [PAYMENTS])).apply(
      new Map([["teams/payments/base/hand-added.yaml", "kind: Secret\n"]]),
    );
    const { change } = await onboarding.planUpdate(tree, "payments", paymentsSpec);
    expect([...change.files]).toEqual([["teams/payments/base/hand-added.yaml", null]]);
  });

  it("refuses an unknown team and an invalid spec", async () => {
    const tree = await treeWithTeams(onboarding, [PAYMENTS]);
    await expect(onboarding.planUpdate(tree, "search", paymentsSpec)).rejects.toBeInstanceOf(TeamNotFoundError);
    await expect(
      onboarding.planUpdate(tree, "payments", { ...paymentsSpec, environments: ["qa"] }),
    ).rejects.toBeInstanceOf(TeamValidationError);
    await expect(onboarding.planUpdate(tree, "payments", { ...paymentsSpec, name: "payments" })).rejects.toBeInstanceOf(
      TeamValidationError,
    );
  });
});

describe("re-render (a rollout's plan, Fleet.plan)", () => {
  it("re-renders a team from its spec in the repo for a changed platform", async () => {
    const tree = await treeWithTeams(onboarding, [PAYMENTS]);
    expect((await rerender(onboarding, tree, "payments")).files.size).toBe(0);
    const both = new Onboarding(platformWithSubjectMode("both"), loadTemplates());
    const { files } = await rerender(both, tree, "payments");
    expect(written({ files, subject: "" })).toEqual([
      "teams/payments/base/aso-workload-service-account.yaml",
      "teams/payments/base/kustomization.yaml",
      "teams/payments/clusters/aks-dev-weu/federated-credential.yaml",
      "teams/payments/clusters/aks-prod-neu/federated-credential.yaml",
      "teams/payments/clusters/aks-prod-weu/federated-credential.yaml",
    ]);
    expect((await new Fleet(onboarding).plan(tree, ["search"])).gone).toEqual(["search"]);
  });
});

describe("a repo written before shards (each Flux file at its cluster folder's top)", () => {
  /** `teams` as an earlier Berth wrote them: Flux files at `clusters/<c>/teams/<team>.yaml`, one flat index. */
  async function flatTree(teams: (typeof PAYMENTS)[]): Promise<MemoryRepoTree> {
    const sharded = await treeWithTeams(onboarding, teams);
    const files = new Map<string, string | null>();
    const flat = new Map<string, string[]>();
    for (const path of sharded.paths().filter((p) => p.startsWith("clusters/"))) {
      const owner = layout.ownerOf(path);
      files.set(path, null);
      if (owner.kind !== "team") continue;
      const cluster = path.split("/")[1]!;
      files.set(layout.flatFluxKustomization(cluster, owner.team), sharded.get(path)!);
      flat.set(cluster, [...(flat.get(cluster) ?? []), owner.team]);
    }
    for (const cluster of CLUSTERS) files.set(indexPath(cluster), renderShardIndex(flat.get(cluster) ?? []));
    return sharded.apply(files);
  }

  it("adds a new team to its shard; the top index keeps listing the others' files", async () => {
    const tree = await flatTree([PAYMENTS, SEARCH]);
    expect(resourcesOf(tree, indexPath("aks-dev-weu"))).toEqual(["payments.yaml", "search.yaml"]);
    const { change } = await onboarding.planCreate(tree, { ...SEARCH, name: "orders" });
    expect(deleted(change)).toEqual([]);
    const next = tree.apply(change);
    expect(resourcesOf(next, indexPath("aks-dev-weu"))).toEqual(
      ["payments.yaml", "search.yaml", teamShard("orders")].sort(),
    );
    expect(indexOf(next, "aks-dev-weu")).toEqual(["orders.yaml", "payments.yaml", "search.yaml"]);
    expect(next.get(layout.flatFluxKustomization("aks-dev-weu", "payments"))).toBe(
      tree.get(layout.flatFluxKustomization("aks-dev-weu", "payments")),
    );
  });

  it("moves a team's Flux files into its shard on the team's next write, in the same commit", async () => {
    const tree = await flatTree([PAYMENTS, SEARCH]);
    const { name: _n, ...spec } = PAYMENTS;
    const { change } = await onboarding.planUpdate(tree, "payments", {
      ...spec,
      quota: { cpu: "20", memory: "32Gi", pods: 200 },
    });
    const teamClusters = ["aks-dev-weu", "aks-prod-neu", "aks-prod-weu"];
    expect(deleted(change)).toEqual(teamClusters.map((c) => layout.flatFluxKustomization(c, "payments")));
    for (const c of teamClusters)
      expect(change.files.get(flux(c, "payments"))).toBe(tree.get(layout.flatFluxKustomization(c, "payments")));
    const next = tree.apply(change);
    expect(resourcesOf(next, indexPath("aks-dev-weu"))).toEqual([teamShard("payments"), "search.yaml"].sort());
    expect(resourcesOf(next, indexPath("aks-prod-weu"))).toEqual([teamShard("payments")]);
    expect(indexOf(next, "aks-dev-weu")).toEqual(["payments.yaml", "search.yaml"]);
  });

  it("offboards a team from its flat files", async () => {
    const tree = await flatTree([PAYMENTS, SEARCH]);
    const next = tree.apply((await onboarding.planDelete(tree, "payments")).change);
    expect(next.paths().filter((p) => p.includes("payments"))).toEqual([]);
    expect(resourcesOf(next, indexPath("aks-dev-weu"))).toEqual(["search.yaml"]);
    expect(resourcesOf(next, indexPath("aks-prod-weu"))).toEqual([]);
  });

  it("is moved whole by a same-version re-render of every team: exactly the repo Berth writes today", async () => {
    const tree = await flatTree([PAYMENTS, SEARCH]);
    const fleet = new Fleet(onboarding);
    const plan = await fleet.plan(tree, ["payments", "search"]);
    expect(plan.changed.map((t) => t.team)).toEqual(["payments", "search"]);
    const moved = tree.apply(plan.files);
    expect(moved.toRecord()).toEqual((await treeWithTeams(onboarding, [PAYMENTS, SEARCH])).toRecord());
    // Drift reports the flat layout as files to move, and nothing once moved.
    const drift = await fleet.drift(tree, { diffs: false });
    expect(drift.teams.map((t) => t.team)).toEqual(["payments", "search"]);
    expect((await fleet.drift(moved, { diffs: false })).teams).toEqual([]);
    expect((await fleet.drift(moved, { diffs: false })).layout).toEqual([]);
  });
});

describe("a layout that reads no index (layout.appliedBy slices, ADR 0032)", () => {
  const SLICES = makePlatform({
    fluxSource: { kind: "ExternalArtifact", artifactPrefix: "team-files-" },
    layout: { appliedBy: "slices" },
  });
  const sliced = new Onboarding(SLICES, loadTemplates());
  const isIndex = (path: string) => layout.ownerOf(path).kind === "cluster-teams-index";

  it("onboards, updates and offboards touching only the team's own paths", async () => {
    const one = await treeWithTeams(sliced, [SEARCH]);
    const created = await sliced.planCreate(one, PAYMENTS);
    expect(paths(created.change).filter((p) => !ownedBy("payments")(p))).toEqual([]);
    expect(written(created.change)).toEqual([...sliced.render(created.team).keys()].sort());
    const two = one.apply(created.change);
    expect(two.paths().filter(isIndex)).toEqual([]);

    const { name: _name, ...spec } = PAYMENTS;
    const updated = await sliced.planUpdate(two, "payments", { ...spec, environments: ["prod"] });
    expect(deleted(updated.change).length).toBeGreaterThan(0);
    expect(paths(updated.change).filter((p) => !ownedBy("payments")(p))).toEqual([]);

    const gone = await sliced.planDelete(two, "payments");
    expect(deleted(gone.change)).toEqual(two.paths().filter(ownedBy("payments")));
    expect(written(gone.change)).toEqual([]);
  });

  it("a same-version re-render of every team deletes exactly the indexes an earlier layout left", async () => {
    // The same team source with indexes: only the layout changes.
    const indexing = new Onboarding(makePlatform({ fluxSource: SLICES.fluxSource }), loadTemplates());
    const indexed = await treeWithTeams(indexing, [PAYMENTS, SEARCH]);
    const indexes = indexed.paths().filter(isIndex);
    expect(indexes.length).toBeGreaterThan(0);
    const fleet = new Fleet(sliced);
    // Drift names them (the teams' own files match), and the plan deletes them and nothing else.
    const drift = await fleet.drift(indexed, { diffs: false });
    expect(drift.teams).toEqual([]);
    expect(drift.layout.map((f) => [f.path, f.drift])).toEqual(indexes.map((p) => [p, "unexpected"]));
    const plan = await fleet.plan(indexed, ["payments", "search"]);
    expect([...plan.files].sort()).toEqual(indexes.map((p) => [p, null]));
    const moved = indexed.apply(plan.files);
    expect(moved.toRecord()).toEqual((await treeWithTeams(sliced, [PAYMENTS, SEARCH])).toRecord());
    expect((await fleet.drift(moved, { diffs: false })).layout).toEqual([]);
  });

  it("is refused with a team source the slices do not cut", () => {
    const result = platformSchema.safeParse({ ...SLICES, fluxSource: { kind: "GitRepository" } });
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((i) => [i.path.join("."), i.message])).toEqual([
      [
        "layout.appliedBy",
        "slices need fluxSource.kind ExternalArtifact (each team reads the artifact its slice cuts)",
      ],
    ]);
  });
});

describe("planDelete", () => {
  it("removes every file of the team and updates the indexes, leaving other teams intact", async () => {
    const tree = (await treeWithTeams(onboarding, [PAYMENTS, SEARCH])).apply(
      new Map([["teams/payments/NOTES.md", "x"]]),
    );
    const { team, change } = await onboarding.planDelete(tree, "payments");
    expect(team.name).toBe("payments");
    expect(change.subject).toBe("berth: offboard team payments");
    const teamFiles = tree.paths().filter(ownedBy("payments"));
    const shardIndexes = ["aks-dev-weu", "aks-prod-neu", "aks-prod-weu"].map((c) => shardIndexOf(c, "payments"));
    expect(deleted(change)).toEqual([...teamFiles, ...shardIndexes].sort());
    expect(written(change)).toEqual(["aks-dev-weu", "aks-prod-neu", "aks-prod-weu"].map(indexPath));
    const next = tree.apply(change);
    expect(next.paths().filter((p) => p.includes("payments"))).toEqual([]);
    expect(indexOf(next, "aks-dev-weu")).toEqual(["search.yaml"]);
    expect(indexOf(next, "aks-prod-weu")).toEqual([]);
    for (const p of tree.paths().filter((p) => p.startsWith("teams/search/"))) expect(next.get(p)).toBe(tree.get(p));
  });

  it("undoes a create exactly", async () => {
    const before = await treeWithTeams(onboarding, [SEARCH]);
    const after = before.apply((await onboarding.planCreate(before, PAYMENTS)).change);
    const back = after.apply((await onboarding.planDelete(after, "payments")).change);
    expect(back.toRecord()).toEqual(before.toRecord());
  });

  it("refuses an unknown team", async () => {
    await expect(onboarding.planDelete(new MemoryRepoTree(), "payments")).rejects.toBeInstanceOf(TeamNotFoundError);
  });
});

describe("preview", () => {
  it("of a new team lists every file as added, with a unified diff", async () => {
    const tree = await treeWithTeams(onboarding, [SEARCH]);
    const preview = await onboarding.preview(tree, PAYMENTS);
    const { change } = await onboarding.planCreate(tree, PAYMENTS);
    expect(preview.files.map((f) => f.path).sort()).toEqual(paths(change));
    for (const f of preview.files) {
      const status = tree.get(f.path) === undefined ? "added" : "modified";
      expect(f.status, f.path).toBe(status);
      expect(f.content).toBe(change.files.get(f.path));
    }
    expect(preview.files.find((f) => f.path === indexPath("aks-dev-weu"))?.status).toBe("modified");
    expect(preview.diff).toContain("--- /dev/null\n+++ b/teams/payments/base/team.yaml\n");
    expect(preview.diff).toContain(`--- a/${indexPath("aks-dev-weu")}\n+++ b/${indexPath("aks-dev-weu")}\n`);
    expect(preview.diff).toMatch(/^@@ -0,0 \+1,\d+ @@$/m);
    expect(preview.diff).toContain("+  - payments.yaml\n");
    expect(tree.paths().some((p) => p.includes("payments"))).toBe(false); // the tree is not touched
  });

  it("of an update shows added, modified and deleted files, matching planUpdate", async () => {
    const tree = await treeWithTeams(onboarding, [PAYMENTS]);
    const { name: _n, ...spec } = PAYMENTS;
    const next = { ...spec, environments: ["prod", "staging"] };
    const preview = await onboarding.preview(tree, next, "payments");
    const { change } = await onboarding.planUpdate(tree, "payments", next);
    expect(preview.files.map((f) => f.path).sort()).toEqual(paths(change));
    const status = (p: string) => preview.files.find((f) => f.path === p);
    expect(status("teams/payments/clusters/aks-dev-weu/identity.yaml")).toEqual({
      path: "teams/payments/clusters/aks-dev-weu/identity.yaml",
      status: "deleted",
      content: null,
    });
    expect(status("teams/payments/clusters/aks-stg-weu/identity.yaml")?.status).toBe("added");
    expect(status("teams/payments/base/team.yaml")?.status).toBe("modified");
    expect(preview.diff).toContain("--- a/teams/payments/clusters/aks-dev-weu/identity.yaml\n+++ /dev/null\n");
    expect(preview.diff).toContain("-    - dev\n+    - staging\n");
    expect(preview.team.environments).toEqual(["prod", "staging"]);
  });

  it("of an unchanged team is empty, and refuses unknown or invalid teams", async () => {
    const tree = await treeWithTeams(onboarding, [PAYMENTS]);
    const { name: _n, ...spec } = PAYMENTS;
    expect(await onboarding.preview(tree, spec, "payments")).toMatchObject({ files: [], diff: "" });
    await expect(onboarding.preview(tree, spec, "search")).rejects.toBeInstanceOf(TeamNotFoundError);
    await expect(onboarding.preview(tree, { ...spec, owners: [] }, "payments")).rejects.toBeInstanceOf(
      TeamValidationError,
    );
  });
});

describe("reading teams from the repo", () => {
  it("reads back every example's team file as the team that was written", () => {
    for (const ex of EXAMPLES) {
      const team = { ...validateTeam(ex.team, ex.platform), templateVersion: "v3" };
      expect(parseTeamFile(serializeTeamFile(team), "team.yaml")).toEqual(team);
      // A file written before versions were recorded is a v1 team.
      const { templateVersion: _v, ...legacy } = team;
      expect(parseTeamFile(serializeTeamFile(legacy), "team.yaml")).toEqual({ ...team, templateVersion: "v1" });
    }
  });

  it("lists teams by their base/team.yaml, sorted, ignoring other files", async () => {
    const tree = (await treeWithTeams(onboarding, [SEARCH, PAYMENTS])).apply(
      new Map([
        ["teams/README.md", "x"],
        ["teams/team.yaml", "x"],
        ["teams/a/b/team.yaml", "x"],
        ["teams/b/clusters/team.yaml", "x"],
        ["teams/c/notes.yaml", "x"],
        ["teams/d/base/x/team.yaml", "x"],
        ["teams/e/base/team.yml", "x"],
      ]),
    );
    expect(await onboarding.listTeamNames(tree)).toEqual(["payments", "search"]);
    expect((await onboarding.listTeams(tree)).teams.map((t) => t.name)).toEqual(["payments", "search"]);
  });

  it("keeps the spec in the base, listed first, so Flux applies it as the Team object", async () => {
    const { change } = await onboarding.planCreate(new MemoryRepoTree(), PAYMENTS);
    const spec = change.files.get("teams/payments/base/team.yaml")!;
    expect(parseObjects(spec, "1.1")[0]).toMatchObject({
      apiVersion: "berth.dev/v1alpha1",
      kind: "Team",
      metadata: { name: "payments" },
    });
    expect(spec.startsWith("# Berth team spec: the source of truth for this team")).toBe(true);
    expect(change.files.has("teams/payments/team.yaml")).toBe(false);
    const base = parseObjects(change.files.get("teams/payments/base/kustomization.yaml")!, "1.1")[0] as {
      resources: string[];
    };
    expect(base.resources[0]).toBe("team.yaml");
    expect(base.resources.filter((r) => r === "team.yaml")).toHaveLength(1);
  });

  const PATH = "teams/payments/base/team.yaml";
  const good = serializeTeamFile(validateTeam(PAYMENTS, PLATFORM));
  const spec = (extra: string) => good.replace("spec:\n", `spec:\n${extra}`);

  it.each([
    [
      "an unknown spec field",
      spec("  serviceAccountName: cluster-admin\n"),
      /spec Unrecognized key.*serviceAccountName/s,
    ],
    ["an unknown top-level field", `${good}status: {}\n`, /Unrecognized key.*status/s],
    [
      "metadata annotations",
      good.replace("  name: payments\n", "  name: payments\n  annotations:\n    x: y\n"),
      /metadata.*annotations/s,
    ],
    [
      "a managed label",
      good.replace("  labels:\n", "  labels:\n    berth.dev/team: other\n"),
      /spec\.labels\.berth\.dev\/team/,
    ],
    [
      "a quota field Kubernetes has but Berth does not",
      good.replace("    pods: 200\n", '    pods: 200\n    services.loadbalancers: "10"\n'),
      /spec\.quota/,
    ],
    [
      "a newline-injected description",
      good.replace(/description: .*\n/, 'description: "x\\nkind: Secret"\n'),
      /spec\.description/,
    ],
    ["a Flux substitution", good.replace(/description: .*\n/, 'description: "${TENANT_ID}"\n'), /spec\.description/],
    ["a second document", `${good}---\napiVersion: v1\nkind: Secret\n`, /not valid YAML/],
    ["an alias bomb", good.replace("  owners:\n", "  x: &a [1]\n  owners:\n"), /spec/],
    [
      "a YAML tag",
      good.replace(/description: .*\n/, "description: !!binary aGVsbG8=\n"),
      /spec\.description|not valid YAML/,
    ],
    ["another kind", good.replace("kind: Team", "kind: Secret"), /kind/],
    ["another apiVersion", good.replace("apiVersion: berth.dev/v1alpha1", "apiVersion: berth.dev/v1"), /apiVersion/],
    ["a reserved name", good.replace("  name: payments\n", "  name: kube-system\n"), /metadata\.name/],
    ["broken YAML", `${good}  - [\n`, /not valid YAML/],
    ["an empty file", "", /expected object|Invalid input/],
  ])("refuses a hand-edited team.yaml with %s, naming the path", (_name, text, message) => {
    let err: unknown;
    try {
      parseTeamFile(text, PATH);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(RepoContentError);
    expect((err as RepoContentError).path).toBe(PATH);
    expect((err as RepoContentError).message.startsWith(`${PATH}: `)).toBe(true);
    expect((err as RepoContentError).message).toMatch(message);
  });

  it("refuses a team file whose name is not its folder's, and a tampered file on every plan", async () => {
    const tree = await treeWithTeams(onboarding, [PAYMENTS]);
    const renamed = tree.apply(new Map([[PATH, good.replace("  name: payments\n", "  name: search\n")]]));
    await expect(onboarding.readTeam(renamed, "payments")).rejects.toThrow(
      /teams\/payments\/base\/team.yaml: metadata.name is "search", expected "payments"/,
    );
    const tampered = tree.apply(new Map([[PATH, spec("  serviceAccountName: cluster-admin\n")]]));
    const { name: _n, ...payments } = PAYMENTS;
    for (const plan of [
      () => onboarding.planUpdate(tampered, "payments", payments),
      () => onboarding.planDelete(tampered, "payments"),
      () => onboarding.planCreate(tampered, PAYMENTS),
    ]) {
      await expect(plan()).rejects.toSatisfy(
        (e: unknown) => e instanceof RepoContentError || e instanceof TeamExistsError,
      );
    }
    // A rollout's plan reports the team as failed and writes nothing for it.
    const rollout = await new Fleet(onboarding).plan(tampered, ["payments"]);
    expect(rollout.failed).toEqual([{ team: "payments", error: expect.stringContaining(PATH) }]);
    expect(rollout.files.size).toBe(0);
    await expect(onboarding.planUpdate(tampered, "payments", payments)).rejects.toMatchObject({
      name: "RepoContentError",
      path: PATH,
    });
  });

  it("re-validates a stored team against the platform on re-render", async () => {
    const tree = await treeWithTeams(onboarding, [PAYMENTS]);
    const shrunk = new Onboarding({ ...PLATFORM, roleCatalog: [] }, loadTemplates());
    const plan = await new Fleet(shrunk).plan(tree, ["payments"]);
    expect(plan.failed).toEqual([{ team: "payments", error: expect.stringMatching(/rg-contributor|role/) }]);
    expect(plan.files.size).toBe(0);
  });
});
