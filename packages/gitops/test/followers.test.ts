/**
 * Following branches (ADR 0036, slice branches): each commit holds only the branch's folders of the main-branch commit
 * it stands for (same tree ids, nothing copied), with that commit as its parent and in its `Berth-Fleet-Commit`
 * trailer, and the branch's head before as its second parent (a fast-forward); moves go only forward along the main
 * branch, leased on the head seen, and a replica that never wrote the branch reads it back the same way.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createBareRepo, forceCommit, git } from "../../../tests/support/git-remotes.js";
import { openRepo, origin, write } from "./helpers.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

const BRANCH = "berth-slices/aks-dev-weu/a0-a7";
const FOLDERS = ["teams/a0", "clusters/aks-dev-weu/teams/a0"];

async function setup() {
  const remote = await createBareRepo();
  cleanups.push(remote.remove);
  const open = async () => {
    const r = await openRepo(remote.url);
    cleanups.push(r.cleanup);
    return r.repo;
  };
  const repo = await open();
  const files = {
    "teams/a0/alpha/team.yaml": "name: alpha\n",
    "teams/b3/bravo/team.yaml": "name: bravo\n",
    "clusters/aks-dev-weu/teams/a0/alpha.yaml": "kind: Kustomization\n",
    "clusters/aks-dev-weu/teams/b3/bravo.yaml": "kind: Kustomization\n",
    "clusters/aks-prod-weu/teams/a0/alpha.yaml": "kind: Kustomization\n",
  };
  const first = (await repo.transact(write("berth: two teams", files), origin)).revision;
  const head = (ref: string) => git(["--git-dir", remote.dir, "rev-parse", `refs/heads/${ref}`]).then((s) => s.trim());
  const files_ = (ref: string) => git(["--git-dir", remote.dir, "ls-tree", "-r", "--full-tree", ref]);
  /** A commit's parents, in order. */
  const parents = async (sha: string) =>
    [...(await git(["--git-dir", remote.dir, "cat-file", "commit", sha])).matchAll(/^parent ([0-9a-f]{40})$/gm)].map(
      (m) => m[1],
    );
  return { remote, repo, open, first, head, files: files_, parents };
}

describe("following branches", () => {
  it("a branch's commit holds only its folders of the main-branch commit, which is its parent and its trailer", async () => {
    const { remote, repo, first, head, files } = await setup();
    expect(await repo.advanceFollowers([{ branch: BRANCH, to: first, folders: FOLDERS }])).toEqual([BRANCH]);
    const slice = await head(BRANCH);
    expect(slice).not.toBe(first);
    expect(await files(slice)).toBe(
      await git(["--git-dir", remote.dir, "ls-tree", "-r", "--full-tree", first, "--", ...FOLDERS]),
    );
    expect(await files(slice)).not.toContain("bravo");
    const body = await git(["--git-dir", remote.dir, "cat-file", "commit", slice]);
    expect(body).toMatch(new RegExp(`^parent ${first}$`, "m"));
    expect(body).toMatch(new RegExp(`^Berth-Fleet-Commit: ${first}$`, "m"));
    expect(await repo.fleetCommit(slice, BRANCH)).toBe(first);
    // A main-branch commit stands for itself.
    expect(await repo.fleetCommit(first)).toBe(first);
  });

  it("moves only forward, leased; another replica reads and moves the branch the same way", async () => {
    const { repo, open, first, head, parents } = await setup();
    await repo.advanceFollowers([{ branch: BRANCH, to: first, folders: FOLDERS }]);
    const atFirst = await head(BRANCH);
    const second = (
      await repo.transact(write("berth: alpha grows", { "teams/a0/alpha/team.yaml": "size: 2\n" }), origin)
    ).revision;

    // Another replica, whose clone never held the branch's commit: it fetches it to read what it stands for.
    const other = await open();
    await other.init();
    expect(await other.fleetCommit(atFirst, BRANCH)).toBe(first);
    // A third lists the branches: the heads it lacked come with the listing, so no branch is needed to read them.
    const third = await open();
    expect(await third.branchesUnder("berth-slices/")).toEqual(new Map([[BRANCH, atFirst]]));
    expect(await third.fleetCommit(atFirst)).toBe(first);
    // A lease on a head the branch is not at moves nothing.
    expect(await other.advanceFollowers([{ branch: BRANCH, from: first, to: second, folders: FOLDERS }])).toEqual([]);
    expect(await head(BRANCH)).toBe(atFirst);
    expect(await other.advanceFollowers([{ branch: BRANCH, from: atFirst, to: second, folders: FOLDERS }])).toEqual([
      BRANCH,
    ]);
    const atSecond = await head(BRANCH);
    expect(await repo.fleetCommit(atSecond, BRANCH)).toBe(second);
    // A fast-forward of the branch: its head before is the second parent (no force-push for a forge to refuse).
    expect(await parents(atSecond)).toEqual([second, atFirst]);

    // Back to the older commit: never, whoever asks.
    await repo.snapshot(0);
    expect(await repo.advanceFollowers([{ branch: BRANCH, from: atSecond, to: first, folders: FOLDERS }])).toEqual([]);
    // Nor to where it already stands for.
    expect(await repo.advanceFollowers([{ branch: BRANCH, from: atSecond, to: second, folders: FOLDERS }])).toEqual([]);
    expect(await head(BRANCH)).toBe(atSecond);
  });

  it("after the main branch's history is rewritten (a force-push), moves to its new head, and only there", async () => {
    const { remote, repo, open, first, head, parents } = await setup();
    await repo.advanceFollowers([{ branch: BRANCH, to: first, folders: FOLDERS }]);
    const atFirst = await head(BRANCH);
    // A replica that fetched the main branch before the rewrite.
    const stale = await open();
    await stale.snapshot(0);
    // The main branch force-pushed to a history without `first` (same files, another root commit), then one more.
    const tree = (await git(["--git-dir", remote.dir, "rev-parse", `${first}^{tree}`])).trim();
    const rewritten = await forceCommit(remote, "main", tree, "rewritten");
    const newest = await forceCommit(remote, "main", tree, "newest", [rewritten]);
    await repo.snapshot(0);

    // Not to a commit of the new history that is not the remote's head.
    expect(await repo.advanceFollowers([{ branch: BRANCH, from: atFirst, to: rewritten, folders: FOLDERS }])).toEqual(
      [],
    );
    expect(await repo.advanceFollowers([{ branch: BRANCH, from: atFirst, to: newest, folders: FOLDERS }])).toEqual([
      BRANCH,
    ]);
    const atNewest = await head(BRANCH);
    expect(await repo.fleetCommit(atNewest, BRANCH)).toBe(newest);
    expect(await parents(atNewest)).toEqual([newest, atFirst]);
    // The replica that has not fetched the rewrite does not move it back to the old history.
    expect(await stale.advanceFollowers([{ branch: BRANCH, from: atNewest, to: first, folders: FOLDERS }])).toEqual([]);
    expect(await head(BRANCH)).toBe(atNewest);
  });
});
