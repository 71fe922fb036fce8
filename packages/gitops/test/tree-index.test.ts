import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { blobId, mergeSorted, spliceSorted, TreeIndex } from "../src/tree-index.js";

/** The tree index against a real git repository: what git says is what the index answers. */
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

const env = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_AUTHOR_NAME: "t",
  GIT_AUTHOR_EMAIL: "t@t",
  GIT_COMMITTER_NAME: "t",
  GIT_COMMITTER_EMAIL: "t@t",
};
const git = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, env, encoding: "utf8" });

async function commit(repo: string, files: Record<string, string | null>): Promise<string> {
  for (const [path, content] of Object.entries(files)) {
    if (content === null) git(repo, "rm", "-q", path);
    else {
      await mkdir(dirname(join(repo, path)), { recursive: true });
      await writeFile(join(repo, path), content);
      git(repo, "add", path);
    }
  }
  git(repo, "commit", "-q", "-m", "c");
  return git(repo, "rev-parse", "HEAD").trim();
}

async function newRepo(): Promise<string> {
  const repo = await mkdtemp(join(tmpdir(), "berth-tree-index-"));
  dirs.push(repo);
  git(repo, "init", "-q");
  return repo;
}

const index = async (repo: string, rev: string) =>
  await TreeIndex.parse(git(repo, "ls-tree", "-r", "-z", "--full-tree", rev), "sha1");

describe("TreeIndex", () => {
  it("answers listing, files, folders and content equality as git does", async () => {
    const repo = await newRepo();
    const rev = await commit(repo, {
      "teams/a/base/team.yaml": "a: 1\n",
      "teams/a/base/ns.yaml": "ns\n",
      "teams/ab.yaml": "x",
      "clusters/c1/teams/kustomization.yaml": "résumé ✓\n",
    });
    const ix = await index(repo, rev);
    expect(ix.list("")).toEqual(git(repo, "ls-tree", "-r", "--name-only", rev).trim().split("\n"));
    expect(ix.list("teams/a")).toEqual(["teams/a/base/ns.yaml", "teams/a/base/team.yaml"]); // not teams/ab.yaml
    expect([
      ix.isDir("teams/a"),
      ix.isDir("teams/a/base/team.yaml"),
      ix.isDir("team"),
      ix.isFile("teams/ab.yaml"),
      ix.isFile("teams/a"),
    ]).toEqual([true, false, false, true, false]);
    expect(ix.hasContent("clusters/c1/teams/kustomization.yaml", "résumé ✓\n")).toBe(true);
    expect(ix.hasContent("clusters/c1/teams/kustomization.yaml", "resume\n")).toBe(false);
    expect(ix.hasContent("missing", "")).toBe(false);
    expect(blobId("résumé ✓\n")).toBe(git(repo, "rev-parse", `${rev}:clusters/c1/teams/kustomization.yaml`).trim());
  });

  it("derived from a change, or from diff-tree against an older commit, equals the index git lists", async () => {
    const repo = await newRepo();
    const first = await commit(repo, { "a/x.yaml": "1\n", "a/y.yaml": "2\n", "b/z.yaml": "3\n" });
    const change = { "a/x.yaml": "1 changed\n", "a/y.yaml": null, "c/new.yaml": "4\n" };
    const second = await commit(repo, change);
    const expected = await index(repo, second);
    const derived = (await index(repo, first)).withChanges(Object.entries(change));
    const diffed = (await index(repo, first)).withDiff(
      git(repo, "diff-tree", "-r", "-z", "--no-renames", first, second),
    );
    for (const ix of [derived, diffed]) {
      expect(ix.list("")).toEqual(expected.list(""));
      for (const p of expected.list("")) expect(ix.oid(p), p).toBe(expected.oid(p));
    }
  });

  it("keeps every folder listing in git's order when a derived index adds paths between existing ones", async () => {
    const repo = await newRepo();
    const first = await commit(repo, { "a/b.yaml": "1\n", "a/d.yaml": "2\n", "a-z/x.yaml": "3\n", "b/z.yaml": "4\n" });
    // Added before, between and after existing paths, in a folder of its own, and one removed.
    const change = {
      "a/a.yaml": "5\n",
      "a/c.yaml": "6\n",
      "a/e.yaml": "7\n",
      "a.yaml": "8\n",
      "a0/y.yaml": "9\n",
      "b/z.yaml": null,
      "c/n.yaml": "10\n",
    };
    const second = await commit(repo, change);
    const base = await index(repo, first);
    base.list("a"); // a listing the base remembers must not leak into the derived index
    const derived = base.withChanges(Object.entries(change));
    const expected = await index(repo, second);
    const gitList = (dir: string) =>
      git(repo, "ls-tree", "-r", "--name-only", second, "--", `${dir}/`).trim().split("\n").filter(Boolean);
    expect(derived.list("")).toEqual(expected.list(""));
    for (const dir of ["a", "a-z", "a0", "b", "c"]) {
      expect(derived.list(dir), dir).toEqual(gitList(dir));
      expect(derived.list(dir), `${dir}, listed again`).toEqual(gitList(dir));
    }
    expect(base.list("a")).toEqual(["a/b.yaml", "a/d.yaml"]);
  });

  it("merges added paths into a sorted listing: removed ones dropped, a rewritten one listed once", () => {
    const base = ["d/a-b.yaml", "d/b.yaml", "d/d.yaml", "d/f.yaml"];
    const merged = mergeSorted(base, ["d/z.yaml", "d/a.yaml", "d/d.yaml", "d/c.yaml"], (p) => p === "d/f.yaml");
    expect(merged).toEqual(["d/a-b.yaml", "d/a.yaml", "d/b.yaml", "d/c.yaml", "d/d.yaml", "d/z.yaml"]);
    expect(merged).toEqual(
      [...new Set([...base.filter((p) => p !== "d/f.yaml"), "d/z.yaml", "d/a.yaml", "d/c.yaml"])].sort(),
    );
    expect(base).toEqual(["d/a-b.yaml", "d/b.yaml", "d/d.yaml", "d/f.yaml"]);
  });

  it("parses a fleet-sized listing in slices, letting the event loop run in between", async () => {
    const oid = "0".repeat(40);
    const records = Array.from(
      { length: 50_000 },
      (_, i) => `100644 blob ${oid}\tteams/t${String(i).padStart(5, "0")}.yaml`,
    );
    let ticks = 0;
    const ticker = setInterval(() => (ticks += 1), 0);
    const parsing = TreeIndex.parse(`${records.join("\0")}\0`, "sha1");
    const ticksWhenStarted = ticks;
    const ix = await parsing;
    clearInterval(ticker);
    expect(ticksWhenStarted).toBe(0);
    expect(ticks).toBeGreaterThan(0); // a timer ran before the parse ended
    expect(ix.size).toBe(50_000);
    expect(ix.list("teams").at(-1)).toBe("teams/t49999.yaml");
  });

  it("sorts paths git lists in another order than code points (a name outside the BMP)", async () => {
    const repo = await newRepo();
    // git orders by UTF-8 bytes: U+FF5E (EF BD 9E) before U+1F600 (F0 9F 98 80); JavaScript's strings the other way.
    const rev = await commit(repo, { "d/\u{ff5e}.yaml": "1\n", "d/\u{1f600}.yaml": "2\n", "e.yaml": "3\n" });
    const ix = await index(repo, rev);
    expect(ix.list("d")).toEqual(["d/\u{1f600}.yaml", "d/\u{ff5e}.yaml"]);
    expect(ix.isDir("d")).toBe(true);
    expect(ix.isFile("e.yaml")).toBe(true);
  });

  it("splices added and removed paths into a sorted listing as a full sort would place them", () => {
    // A seeded generator: the same cases every run, many shapes (neighbours, ends, runs of edits at one place).
    let seed = 7;
    const next = (n: number) => (seed = (seed * 48271) % 2147483647) % n;
    const name = () => `d${next(4)}/${"abz-/".charAt(next(5))}${next(40)}.yaml`;
    for (let round = 0; round < 300; round++) {
      const sorted = [...new Set(Array.from({ length: next(30) }, name))].sort();
      const removed = sorted.filter(() => next(4) === 0);
      const added = [...new Set(Array.from({ length: next(6) }, name))].filter((p) => !sorted.includes(p));
      const expected = [...sorted.filter((p) => !removed.includes(p)), ...added].sort();
      expect(spliceSorted(sorted, added, removed), JSON.stringify({ sorted, added, removed })).toEqual(expected);
    }
    const unchanged = ["a", "b"];
    expect(spliceSorted(unchanged, [], [])).toBe(unchanged);
  });
});
