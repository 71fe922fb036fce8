/** Reading teams at scale: each team folder is parsed once per content id, and an unchanged teams folder costs nothing. */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { Fleet, Onboarding, teamShard, type TreeEntry } from "@berth/core";
import {
  HASH_SLICES_PLATFORM,
  loadTemplates,
  makePlatform,
  MemoryRepoTree,
  PLATFORM,
  teamInput,
  treeWithTeams,
} from "./fixtures.js";

/** A MemoryRepoTree with content ids (a hash of everything below a path, as git's object ids behave) that counts file reads. */
class ContentIdTree extends MemoryRepoTree {
  reads = 0;
  override async read(path: string): Promise<string | undefined> {
    this.reads += 1;
    return super.read(path);
  }
  async contentId(path: string): Promise<string | undefined> {
    const files = this.paths().filter((p) => p === path || p.startsWith(`${path}/`));
    if (files.length === 0) return undefined;
    const hash = createHash("sha1");
    for (const p of files) hash.update(`${p.slice(path.length)}\0${this.get(p)}\0`);
    return hash.digest("hex");
  }
  async entries(dir: string): Promise<TreeEntry[]> {
    const names = new Set(
      this.paths()
        .filter((p) => p.startsWith(`${dir}/`))
        .map((p) => p.slice(dir.length + 1).split("/")[0]!),
    );
    const out: TreeEntry[] = [];
    for (const name of [...names].sort()) {
      const path = `${dir}/${name}`;
      out.push({ name, kind: this.get(path) === undefined ? "folder" : "file", id: (await this.contentId(path))! });
    }
    return out;
  }
  static of(tree: MemoryRepoTree): ContentIdTree {
    return new ContentIdTree(
      tree.paths().map((p) => [p, tree.get(p)!] as const),
      tree.revision,
    );
  }
}

describe("listing teams by content id", () => {
  it("parses each team folder once, and only the changed one after a change", async () => {
    const onboarding = new Onboarding(PLATFORM, loadTemplates());
    const names = ["alpha", "bravo", "charlie", "delta"];
    const base = await treeWithTeams(
      onboarding,
      names.map((name) => teamInput({ name })),
    );
    const tree = ContentIdTree.of(base);

    const { teams: first } = await onboarding.listTeams(tree);
    expect(first.map((t) => t.name)).toEqual(names);
    expect(tree.reads).toBe(names.length);

    // Same teams folder (another commit touched only clusters/ or nothing): no read, no parse.
    const again = ContentIdTree.of(base.apply(new Map([["README.md", "x"]]), "r2"));
    expect((await onboarding.listTeams(again)).teams.map((t) => t.name)).toEqual(names);
    expect(again.reads).toBe(0);

    // One team changed: only its folder is read again.
    const { name: _name, ...spec } = teamInput({ name: "bravo" });
    const { change } = await onboarding.planUpdate(base, "bravo", { ...spec, description: "Changed" });
    const changed = ContentIdTree.of(base.apply(change, "r3"));
    const { teams: listed } = await onboarding.listTeams(changed);
    expect(changed.reads).toBe(1);
    expect(listed.find((t) => t.name === "bravo")?.description).toBe("Changed");

    // A single read hits the same cache.
    expect((await onboarding.readTeam(changed, "charlie"))?.name).toBe("charlie");
    expect(changed.reads).toBe(1);
    expect(await onboarding.readTeam(changed, "nobody")).toBeUndefined();
  });

  it("gives every caller its own array (a caller's edits never reach the next one)", async () => {
    const onboarding = new Onboarding(PLATFORM, loadTemplates());
    const tree = ContentIdTree.of(await treeWithTeams(onboarding, [teamInput({ name: "alpha" })]));
    const { teams: a } = await onboarding.listTeams(tree);
    a.pop();
    expect((await onboarding.listTeams(tree)).teams.map((t) => t.name)).toEqual(["alpha"]);
  });

  it("reports a team whose file cannot be read beside the others, and parses that file once", async () => {
    const onboarding = new Onboarding(PLATFORM, loadTemplates());
    const base = await treeWithTeams(onboarding, [teamInput({ name: "alpha" }), teamInput({ name: "charlie" })]);
    const aliasBomb = [
      "a: &a [x, x, x, x, x, x, x, x, x]",
      "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]",
      "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]",
      "d: [*c, *c, *c, *c, *c, *c, *c, *c, *c]",
    ].join("\n");
    const broken = new Map([
      ["teams/bravo/base/team.yaml", aliasBomb],
      ["teams/delta/base/team.yaml", "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: { name: delta\n"],
      ["teams/echo/base/team.yaml", `a: ${"[".repeat(30_000)}`],
    ]);
    const tree = ContentIdTree.of(base.apply(broken, "r2"));
    const listing = await onboarding.listTeams(tree);
    expect(listing.teams.map((t) => t.name)).toEqual(["alpha", "charlie"]);
    expect(listing.broken.map((b) => b.team)).toEqual(["bravo", "delta", "echo"]);
    expect(listing.broken[0]!.error).toMatch(/^teams\/bravo\/base\/team\.yaml: not valid YAML: Excessive alias count/);
    expect(listing.broken[1]!.error).toMatch(/^teams\/delta\/base\/team\.yaml: not valid YAML/);
    const reads = tree.reads;

    // Another commit with the same broken folders: nothing is read or parsed again, and a single read still refuses.
    const again = ContentIdTree.of(base.apply(new Map([...broken, ["teams/charlie/README.md", "x"]]), "r3"));
    expect((await onboarding.listTeams(again)).broken.map((b) => b.team)).toEqual(["bravo", "delta", "echo"]);
    expect(again.reads).toBe(1);
    expect(reads).toBe(5);
    await expect(onboarding.readTeam(again, "bravo")).rejects.toThrow(/Excessive alias count/);
  });
});

describe("team folders in their shard's folder (hash slices, ADR 0034)", () => {
  it("writes each team under teams/<hh>/<team>/ and lists, plans and checks drift from there", async () => {
    const onboarding = new Onboarding(HASH_SLICES_PLATFORM, loadTemplates());
    const names = ["alpha", "bravo", "charlie", "delta"];
    const base = await treeWithTeams(
      onboarding,
      names.map((name) => teamInput({ name })),
    );
    const teamFiles = base.paths().filter((p) => p.startsWith("teams/"));
    expect(teamFiles.length).toBeGreaterThan(names.length);
    for (const path of teamFiles) {
      const [, shard, team] = path.split("/");
      expect(shard).toBe(teamShard(team!));
    }
    // The slices apply the team files: no cluster index is written.
    expect(base.paths().filter((p) => p.endsWith("kustomization.yaml") && p.startsWith("clusters/"))).toEqual([]);

    const tree = ContentIdTree.of(base);
    expect((await onboarding.listTeams(tree)).teams.map((t) => t.name)).toEqual(names);
    expect(await onboarding.listTeamNames(base)).toEqual(names);
    expect([...(await onboarding.teamFolderIds(tree)).keys()].sort()).toEqual(names);
    expect(tree.reads).toBe(names.length);
    // A folder in another shard than its team's is nobody's: not listed.
    const stray = ContentIdTree.of(
      base.apply(new Map([[`teams/${teamShard("echo") === "00" ? "01" : "00"}/echo/base/team.yaml`, "x"]]), "r2"),
    );
    expect((await onboarding.listTeams(stray)).teams.map((t) => t.name)).toEqual(names);

    const fleet = new Fleet(onboarding);
    const drift = await fleet.drift(tree, { diffs: false });
    expect(drift).toMatchObject({ teams: [], layout: [], failed: [], checked: names.length });
    const plan = await fleet.plan(tree, names);
    expect(plan.unchanged).toEqual(names);
    expect(plan.files.size).toBe(0);
    // Offboarding deletes the team's folder in its shard and its Flux files, nothing else.
    const { change } = await onboarding.planDelete(tree, "bravo");
    expect([...change.files.keys()].every((p) => p.includes(`/${teamShard("bravo")}/bravo`))).toBe(true);
    expect((await onboarding.listTeams(ContentIdTree.of(base.apply(change, "r3")))).teams.map((t) => t.name)).toEqual(
      names.filter((n) => n !== "bravo"),
    );
  });
});

describe("moving a fleet to hash slices: teams are read where the layout before kept them, and moved whole", () => {
  const LETTER_SLICES = makePlatform({
    fluxSource: { kind: "ExternalArtifact", artifactPrefix: "team-files-" },
    layout: { appliedBy: "slices" },
  });
  // Teams named like a shard ("cd" and "fe" are shards too) must not be mistaken for shard folders, nor the parts of
  // their folders for teams: `base` and `clusters` hash to the shards `ca` and `eb`.
  const names = ["alpha", "bravo", "cd", "fe", teamShard("base"), teamShard("clusters")].sort();

  it("lists, reads and re-renders them, each into its shard's folder, deleting the old one", async () => {
    const before = await treeWithTeams(
      new Onboarding(LETTER_SLICES, loadTemplates()),
      names.map((name) => teamInput({ name })),
    );
    expect(before.paths().filter((p) => p.startsWith("teams/cd/")).length).toBeGreaterThan(0);
    const onboarding = new Onboarding(HASH_SLICES_PLATFORM, loadTemplates());
    const tree = ContentIdTree.of(before);
    expect((await onboarding.listTeams(tree)).teams.map((t) => t.name)).toEqual(names);
    expect(await onboarding.listTeamNames(before)).toEqual(names);
    expect((await onboarding.readTeam(tree, "cd"))?.name).toBe("cd");

    const fleet = new Fleet(onboarding);
    // Each team drifts from its render (its folder is not where the platform config puts it) until it is moved.
    expect((await fleet.drift(tree, { diffs: false })).teams.map((t) => t.team)).toEqual(names);
    const plan = await fleet.plan(tree, names);
    expect(plan.changed.map((t) => t.team)).toEqual(names);
    const moved = before.apply(plan.files, "moved");
    for (const name of names) {
      expect(moved.paths().filter((p) => p.startsWith(`teams/${name}/`))).toEqual([]);
      const now = moved.paths().filter((p) => p.startsWith(`teams/${teamShard(name)}/${name}/`));
      expect(now.map((p) => p.replace(`teams/${teamShard(name)}/`, "teams/")).sort()).toEqual(
        before
          .paths()
          .filter((p) => p.startsWith(`teams/${name}/`))
          .sort(),
      );
    }
    const after = ContentIdTree.of(moved);
    expect((await onboarding.listTeams(after)).teams.map((t) => t.name)).toEqual(names);
    expect(await fleet.drift(after, { diffs: false })).toMatchObject({ teams: [], layout: [], failed: [] });
    // Nothing but team files changed: each team's Flux file (its path and source) and its folder.
    expect(
      [...plan.files.keys()].every((p) => p.startsWith("teams/") || /^clusters\/[^/]+\/teams\/[0-9a-f]{2}\//.test(p)),
    ).toBe(true);
  });
});
