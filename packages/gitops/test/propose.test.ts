/** FluxRepo.propose (pull-request mode, ADR 0030) over file://: commits land on the proposal branch, never on main. */
import { chmod, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { GitOpsError } from "../src/index.js";
import { createBareRepo, inspectRemote } from "../../../tests/support/git-remotes.js";
import { pushForeignCommit } from "../../../tests/support/foreign-pusher.js";
import { openRepo, origin, write } from "./helpers.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

async function setup() {
  const remote = await createBareRepo();
  cleanups.push(remote.remove);
  const r = await openRepo(remote.url);
  cleanups.push(r.cleanup);
  await r.repo.transact(write("seed", { "README.md": "fleet\n" }), origin);
  return { remote, repo: r.repo };
}

describe("FluxRepo.propose", () => {
  it("creates the branch from main, extends it on the next proposal, and leaves main alone", async () => {
    const { remote, repo } = await setup();
    const main = (await inspectRemote(remote.url)).head;
    const first = await repo.propose(
      "berth/team/a",
      write("berth: onboard team a", { "teams/a/team.yaml": "a: 1\n" }),
      origin,
    );
    expect(first).toMatchObject({ committed: true, created: true, onBranch: true, files: ["teams/a/team.yaml"] });
    // The second sees the branch's tree: the file it changes is there.
    const second = await repo.propose(
      "berth/team/a",
      async (tree) => {
        expect(await tree.read("teams/a/team.yaml")).toBe("a: 1\n");
        return { files: new Map([["teams/a/team.yaml", "a: 2\n"]]), subject: "berth: update team a" };
      },
      origin,
    );
    expect(second).toMatchObject({ committed: true, created: false });
    const branch = await inspectRemote(remote.url, "berth/team/a");
    expect(branch.commits.map((c) => c.subject)).toEqual(["berth: update team a", "berth: onboard team a", "seed"]);
    expect(branch.files.get("teams/a/team.yaml")).toBe("a: 2\n");
    expect((await inspectRemote(remote.url)).head).toBe(main);
  });

  it("fromMain restarts the branch from main's head; nothing to commit on no branch proposes nothing", async () => {
    const { remote, repo } = await setup();
    await repo.propose("berth/team/a", write("berth: onboard team a", { "teams/a/team.yaml": "a: 1\n" }), origin);
    await pushForeignCommit({ url: remote.url, path: "other.txt", content: "x\n", subject: "a hand edit on main" });
    const again = await repo.propose(
      "berth/team/a",
      async (tree) => {
        expect(await tree.read("teams/a/team.yaml")).toBeUndefined();
        expect(await tree.read("other.txt")).toBe("x\n");
        return { files: new Map([["teams/a/team.yaml", "a: 3\n"]]), subject: "berth: onboard team a again" };
      },
      origin,
      { fromMain: true },
    );
    expect(again.committed).toBe(true);
    const branch = await inspectRemote(remote.url, "berth/team/a");
    expect(branch.commits.map((c) => c.subject)).toEqual([
      "berth: onboard team a again",
      "a hand edit on main",
      "seed",
    ]);
    const nothing = await repo.propose("berth/team/b", async () => null, origin);
    expect(nothing).toMatchObject({ committed: false, onBranch: false });
    expect((await inspectRemote(remote.url, "berth/team/b")).head).toBeUndefined();
  });

  it("refuses a branch outside berth/ and returns mutate's own error, pushing nothing", async () => {
    const { remote, repo } = await setup();
    for (const branch of ["main", "feature/x", "berth/../main", "berth/Team", "berth/"])
      await expect(repo.propose(branch, write("x", { "x.txt": "x\n" }), origin)).rejects.toBeInstanceOf(GitOpsError);
    const refused = new Error("invalid team");
    await expect(repo.propose("berth/team/c", async () => Promise.reject(refused), origin)).rejects.toBe(refused);
    expect((await inspectRemote(remote.url, "berth/team/c")).head).toBeUndefined();
  });

  it("lists the proposal branches, and deletes one only while it is at the commit the caller expects", async () => {
    const { remote, repo } = await setup();
    const a = await repo.propose("berth/team/a", write("berth: onboard team a", { "teams/a/t.yaml": "a\n" }), origin);
    const b = await repo.propose("berth/team/b", write("berth: onboard team b", { "teams/b/t.yaml": "b\n" }), origin);
    expect(await repo.proposals()).toEqual(
      new Map([
        ["berth/team/a", a.revision],
        ["berth/team/b", b.revision],
      ]),
    );
    // Someone pushed to a since it was read at a.revision: the leased delete keeps it.
    const moved = await repo.propose(
      "berth/team/a",
      write("berth: update team a", { "teams/a/t.yaml": "a2\n" }),
      origin,
    );
    expect(await repo.deleteProposal("berth/team/a", a.revision)).toBe(false);
    expect((await inspectRemote(remote.url, "berth/team/a")).head).toBe(moved.revision);
    // At the commit expected: deleted; and a branch already gone counts as deleted.
    expect(await repo.deleteProposal("berth/team/a", moved.revision)).toBe(true);
    expect(await repo.deleteProposal("berth/team/a", moved.revision)).toBe(true);
    expect([...(await repo.proposals()).keys()]).toEqual(["berth/team/b"]);
    await expect(repo.deleteProposal("main")).rejects.toThrow(/not a proposal branch/);
  });
  it("proposals for different branches waiting together share one push; two for one branch go in turn", async () => {
    const { remote, repo } = await setup();
    const before = repo.stats().pushAttempts;
    const [a1, b, c, a2, d] = await Promise.all(
      ["a:a1", "b:b", "c:c", "a:a2", "d:d"].map((spec) => {
        const [team, content] = spec.split(":") as [string, string];
        return repo.propose(
          `berth/team/${team}`,
          write(`berth: ${team} ${content}`, { [`teams/${team}/t.yaml`]: `${content}\n` }),
          origin,
        );
      }),
    );
    for (const r of [a1, b, c, a2, d]) expect(r).toMatchObject({ committed: true });
    // Five proposals, at most three pushes: the first may find the writer idle and go alone, the others wait together,
    // and the second for a goes after the first (it builds on its commit).
    expect(repo.stats().pushAttempts - before).toBeLessThanOrEqual(3);
    const a = await inspectRemote(remote.url, "berth/team/a");
    expect(a.commits.slice(0, 2).map((commit) => commit.subject)).toEqual(["berth: a a2", "berth: a a1"]);
    for (const team of ["b", "c", "d"])
      expect((await inspectRemote(remote.url, `berth/team/${team}`)).files.get(`teams/${team}/t.yaml`)).toBe(
        `${team}\n`,
      );
  });

  it("a branch the remote declines in a shared push fails alone, in the remote's words; the others are pushed", async () => {
    const { remote, repo } = await setup();
    // As Gitea's branch protection does: a pre-receive hook that declines the whole push for one branch it refuses.
    const hook = join(remote.dir, "hooks", "pre-receive");
    await writeFile(
      hook,
      '#!/bin/sh\nwhile read old new ref; do\n  if [ "$ref" = refs/heads/berth/team/frozen ]; then echo "berth/team/frozen is frozen by policy" >&2; exit 1; fi\ndone\n',
    );
    await chmod(hook, 0o755);
    const results = await Promise.allSettled(
      ["a", "frozen", "b", "c"].map((team) =>
        repo.propose(`berth/team/${team}`, write(`berth: ${team}`, { [`teams/${team}/t.yaml`]: `${team}\n` }), origin),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled", "fulfilled"]);
    const reason = (results[1] as PromiseRejectedResult).reason as GitOpsError;
    expect(reason).toMatchObject({ kind: "refused" });
    expect(reason.message).toMatch(
      /^the remote declined the push to berth\/team\/frozen: berth\/team\/frozen is frozen by policy/,
    );
    expect([...(await repo.proposals()).keys()].sort()).toEqual(["berth/team/a", "berth/team/b", "berth/team/c"]);
  });
});
