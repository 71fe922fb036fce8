/** Reading teams at scale: each team folder is parsed once per content id, and an unchanged teams folder costs nothing. */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { Onboarding, type TreeEntry } from "@berth/core";
import { loadTemplates, MemoryRepoTree, PLATFORM, teamInput, treeWithTeams } from "./fixtures.js";

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
