import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { blobId, mergeSorted, TreeIndex } from "../src/tree-index.js";

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

const index = (repo: string, rev: string) =>
  TreeIndex.parse(git(repo, "ls-tree", "-r", "-z", "--full-tree", rev), "sha1");

describe("TreeIndex", () => {
  it("answers listing, files, folders and content equality as git does", async () => {
    const repo = await newRepo();
    const rev = await commit(repo, {
      "teams/a/base/team.yaml": "a: 1\n",
      "teams/a/base/ns.yaml": "ns\n",
      "teams/ab.yaml": "x",
      "clusters/c1/teams/kustomization.yaml": "résumé ✓\n",
    });
    const ix = index(repo, rev);
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
    const expected = index(repo, second);
    const derived = index(repo, first).withChanges(Object.entries(change));
    const diffed = index(repo, first).withDiff(git(repo, "diff-tree", "-r", "-z", "--no-renames", first, second));
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
    const base = index(repo, first);
    base.list("a"); // a listing the base remembers must not leak into the derived index
    const derived = base.withChanges(Object.entries(change));
    const expected = index(repo, second);
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
});
