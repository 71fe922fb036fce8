import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RepoTree } from "@berth/core";
import { GitRunner } from "../src/git-runner.js";
import { TrailerIndex } from "../src/history.js";
import { buildGitEnvironment } from "../src/remote-auth.js";
import { type BareRepo, createBareRepo, git, makeTempDir } from "../../../tests/support/git-remotes.js";
import { pushForeignCommit } from "../../../tests/support/foreign-pusher.js";
import { change, openRepo, origin } from "./helpers.js";

const KEY = { key: "Berth-Idempotency-Key", value: "k-1" };

describe("findCommit: Berth's own commits found by their trailers in the branch's history", () => {
  let remote: BareRepo;
  const cleanups: Array<() => Promise<void>> = [];
  beforeAll(async () => {
    remote = await createBareRepo();
  });
  afterAll(async () => {
    for (const c of cleanups) await c();
    await remote.remove();
  });
  const open = async () => {
    const opened = await openRepo(remote.url);
    cleanups.push(opened.cleanup);
    return opened.repo;
  };
  const commitWith = async (
    repo: Awaited<ReturnType<typeof open>>,
    path: string,
    trailers: Array<{ key: string; value: string }>,
  ) =>
    (await repo.transact(async () => change(`write ${path}`, { [path]: `${path}\n` }), { ...origin, trailers }))
      .revision;

  it("finds a commit by all of the given trailers, through foreign commits on top, and after a restart", async () => {
    const repo = await open();
    const first = await commitWith(repo, "a.txt", [KEY, { key: "Berth-Team", value: "a" }]);
    await commitWith(repo, "b.txt", [{ key: "Berth-Idempotency-Key", value: "k-2" }]);
    await pushForeignCommit({ url: remote.url, path: "image-automation/1.txt", content: "x" });
    const tree = await repo.snapshot(0);
    const found = await tree.findCommit([KEY]);
    expect(found?.revision).toBe(first);
    expect(found?.trailers).toEqual(
      expect.arrayContaining([
        { key: "Berth-Requested-By", value: origin.actor },
        { key: "Berth-Team", value: "a" },
      ]),
    );
    expect(await found!.changes()).toEqual([{ path: "a.txt", status: "added" }]);
    expect(await found!.tree.read("a.txt")).toBe("a.txt\n");
    expect(await found!.tree.read("b.txt")).toBeUndefined();
    // Every wanted trailer must match; keys compare case-insensitively.
    expect(await tree.findCommit([KEY, { key: "berth-team", value: "a" }])).toMatchObject({ revision: first });
    expect(await tree.findCommit([KEY, { key: "Berth-Team", value: "b" }])).toBeUndefined();
    expect(await tree.findCommit([{ key: "Berth-Idempotency-Key", value: "k-3" }])).toBeUndefined();

    // Another process (a restart, a replica) answers the same from the same history.
    const other = await open();
    expect((await (await other.snapshot(0)).findCommit([KEY]))?.revision).toBe(first);
  });

  it("ignores trailers in anyone else's commits, and sees only the tree's own history", async () => {
    const repo = await open();
    await pushForeignCommit({
      url: remote.url,
      path: "forged.txt",
      content: "x",
      subject: "forged\n\nBerth-Requested-By: alice@example.com\nBerth-Idempotency-Key: forged",
    });
    const tree = await repo.snapshot(0);
    expect(await tree.findCommit([{ key: "Berth-Idempotency-Key", value: "forged" }])).toBeUndefined();
    const later = await commitWith(repo, "c.txt", [{ key: "Berth-Idempotency-Key", value: "k-later" }]);
    expect(await tree.findCommit([{ key: "Berth-Idempotency-Key", value: "k-later" }])).toBeUndefined(); // the older tree
    expect(
      (await (await repo.snapshot(0)).findCommit([{ key: "Berth-Idempotency-Key", value: "k-later" }]))?.revision,
    ).toBe(later);
  });

  it("a transaction that asks the history is re-run when the remote moves under its batch", async () => {
    const repo = await open();
    const seen: Array<string | undefined> = [];
    let foreign: Promise<string> | undefined;
    const result = await repo.transact(async (tree: RepoTree) => {
      seen.push((await tree.findCommit([KEY]))?.revision);
      // The first run: someone else pushes before our push (nothing this transaction touched).
      foreign ??= pushForeignCommit({ url: remote.url, path: `image-automation/${Date.now()}.txt`, content: "y" });
      await foreign;
      return change("unrelated", { [`u-${seen.length}.txt`]: "u" });
    }, origin);
    expect(result.committed).toBe(true);
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(repo.stats().replays).toBeGreaterThanOrEqual(1);
  });
});

describe("TrailerIndex window", () => {
  it("answers only commits younger than the window, and keeps at most maxCommits", async () => {
    const remote = await createBareRepo();
    const tmp = await makeTempDir("berth-hist-");
    try {
      const opened = await openRepo(remote.url);
      const shas: string[] = [];
      for (let i = 0; i < 4; i++)
        shas.push(
          (
            await opened.repo.transact(async () => change(`c${i}`, { [`f${i}`]: "x" }), {
              ...origin,
              trailers: [{ key: "Berth-N", value: String(i) }],
            })
          ).revision,
        );
      await opened.cleanup();
      await git(["clone", "--quiet", "--bare", remote.dir, `${tmp}/clone.git`]);
      const runner = new GitRunner(
        buildGitEnvironment({ gitDir: `${tmp}/clone.git`, auth: { kind: "none" }, connectTimeoutSec: 5 }),
        { cwd: `${tmp}/clone.git`, timeoutMs: 10_000, pingTimeoutMs: 5_000 },
      );
      const head = shas[3]!;
      const committedAt =
        Number((await git(["log", "-1", "--format=%ct", head], { cwd: `${tmp}/clone.git` })).trim()) * 1000;
      let now = committedAt + 1000;
      const index = new TrailerIndex(
        runner,
        { windowMs: 60_000, maxCommits: 3, committerEmail: "berth@example.test" },
        () => now,
      );
      expect((await index.find(head, [{ key: "Berth-N", value: "3" }]))?.revision).toBe(shas[3]);
      expect((await index.find(head, [{ key: "Berth-N", value: "1" }]))?.revision).toBe(shas[1]);
      expect(await index.find(head, [{ key: "Berth-N", value: "0" }])).toBeUndefined(); // beyond maxCommits
      now = committedAt + 61_000;
      expect(await index.find(head, [{ key: "Berth-N", value: "3" }])).toBeUndefined(); // the key expired
    } finally {
      await remote.remove();
    }
  });
});
