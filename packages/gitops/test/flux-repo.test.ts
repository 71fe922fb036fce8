import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type RepoTree, TeamExistsError } from "@berth/core";
import { afterEach, describe, expect, it } from "vitest";
import { FluxRepo, GitOpsError } from "../src/index.js";
import { pushForeignCommit } from "../../../tests/support/foreign-pusher.js";
import { createBareRepo, inspectRemote, makeTempDir } from "../../../tests/support/git-remotes.js";
import { change, openRepo, origin, write } from "./helpers.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

async function setup(extra: Parameters<typeof openRepo>[1] = {}) {
  const remote = await createBareRepo();
  cleanups.push(remote.remove);
  const r = await openRepo(remote.url, extra);
  cleanups.push(r.cleanup);
  return { remote, ...r };
}

describe("FluxRepo over file://", () => {
  it("creates the branch on an empty remote, then creates, updates and deletes files, one commit each", async () => {
    const { remote, repo } = await setup();
    await repo.init();
    expect((await inspectRemote(remote.url)).head).toBeUndefined();

    const created = await repo.transact(
      write("berth: onboard team a", { "teams/a/team.yaml": "name: a\n", "teams/a/ns.yaml": "kind: Namespace\n" }),
      origin,
    );
    expect(created.committed).toBe(true);
    expect(created.files).toEqual(["teams/a/ns.yaml", "teams/a/team.yaml"]);
    let state = await inspectRemote(remote.url);
    expect(state.head).toBe(created.revision);
    expect(Object.fromEntries(state.files)).toEqual({
      "teams/a/team.yaml": "name: a\n",
      "teams/a/ns.yaml": "kind: Namespace\n",
    });
    expect(state.commits).toHaveLength(1);
    expect(state.commits[0]?.subject).toBe("berth: onboard team a");
    expect(state.commits[0]?.trailers).toEqual({
      "Berth-Requested-By": "alice@example.com",
      "Berth-Request-Id": "req-1",
    });

    const updated = await repo.transact(write("berth: update team a", { "teams/a/team.yaml": "name: a\nsize: 2\n" }), {
      actor: "bob",
      requestId: "req-2",
    });
    expect(updated.committed).toBe(true);
    expect(updated.files).toEqual(["teams/a/team.yaml"]);
    state = await inspectRemote(remote.url);
    expect(state.head).toBe(updated.revision);
    expect(state.files.get("teams/a/team.yaml")).toBe("name: a\nsize: 2\n");
    expect(state.commits.map((c) => c.subject)).toEqual(["berth: update team a", "berth: onboard team a"]);
    expect(state.commits[0]?.trailers["Berth-Requested-By"]).toBe("bob");

    const deleted = await repo.transact(
      write("berth: offboard team a", { "teams/a/team.yaml": null, "teams/a/ns.yaml": null }),
      origin,
    );
    expect(deleted.committed).toBe(true);
    state = await inspectRemote(remote.url);
    expect(state.files.size).toBe(0);
    expect(state.commits).toHaveLength(3);
  });

  it("mutate sees the tree it commits on; body lines land between subject and trailers", async () => {
    const { remote, repo } = await setup();
    await repo.transact(write("seed", { "teams/index.txt": "a\n", "teams/a/team.yaml": "a" }), origin);
    const seen: (readonly string[])[] = [];
    await repo.transact(async (tree) => {
      seen.push(
        await tree.list("teams"),
        await tree.list(""),
        await tree.list("nope"),
        await tree.list("teams/index.txt"),
      );
      const index = (await tree.read("teams/index.txt")) ?? "";
      expect(await tree.read("teams")).toBeUndefined(); // a folder is not a file
      expect(await tree.read("teams/missing.yaml")).toBeUndefined();
      return change("add b", { "teams/index.txt": `${index}b\n` }, ["line one", "line\ttwo\u0007", ""]);
    }, origin);
    expect(seen).toEqual([["teams/a/team.yaml", "teams/index.txt"], ["teams/a/team.yaml", "teams/index.txt"], [], []]);
    const state = await inspectRemote(remote.url);
    expect(state.files.get("teams/index.txt")).toBe("a\nb\n");
    expect(state.commits[0]?.message).toBe(
      "add b\n\nline one\nline two\n\nBerth-Requested-By: alice@example.com\nBerth-Request-Id: req-1\n",
    );
  });

  it("commits nothing when nothing changes", async () => {
    const { remote, repo } = await setup();
    const first = await repo.transact(write("seed", { "a.yaml": "x" }), origin);
    const same = await repo.transact(write("again", { "a.yaml": "x", "gone.yaml": null }), origin);
    expect(same).toEqual({ revision: first.revision, committed: false, files: [] });
    const nothing = await repo.transact(async () => null, origin);
    expect(nothing).toEqual({ revision: first.revision, committed: false, files: [] });
    const state = await inspectRemote(remote.url);
    expect(state.commits.map((c) => c.subject)).toEqual(["seed"]);
  });

  it("a mutate that throws gets its error back and leaves nothing on the remote", async () => {
    const { remote, repo } = await setup();
    const seed = await repo.transact(write("seed", { "teams/a/team.yaml": "a" }), origin);
    const create = (name: string) => async (tree: RepoTree) => {
      if ((await tree.read(`teams/${name}/team.yaml`)) !== undefined) throw new TeamExistsError(name);
      return change(`onboard ${name}`, { [`teams/${name}/team.yaml`]: name });
    };
    await expect(repo.transact(create("a"), origin)).rejects.toBeInstanceOf(TeamExistsError);
    await expect(repo.transact(async () => Promise.reject(new Error("boom")), origin)).rejects.toThrow("boom");
    const state = await inspectRemote(remote.url);
    expect(state.head).toBe(seed.revision);
    expect(state.commits).toHaveLength(1);
  });

  it("rejects unsafe paths and leaves nothing behind", async () => {
    const { remote, repo } = await setup();
    const seed = await repo.transact(write("seed", { "a/file.yaml": "x" }), origin);
    const bad = [
      "../escape.yaml",
      "/etc/passwd",
      "-rf",
      ".git/config",
      "x/.git/hooks/pre-commit",
      "x/.GIT/config",
      "a//b",
      "a/./b",
      "a/b/",
      "a\\b",
      "a/b\nc",
      "x/-y",
      "",
      "sp ace",
      "star*",
      ":(glob)x",
    ];
    for (const p of bad) {
      const err = await repo.transact(write("bad", { [p]: "x" }), origin).catch((e: unknown) => e);
      expect(err, p).toBeInstanceOf(GitOpsError);
      expect((err as GitOpsError).kind, p).toBe("invalid-change");
    }
    // File/folder clashes.
    await expect(repo.transact(write("clash", { "a/file.yaml/x": "x" }), origin)).rejects.toThrow(/is a file/);
    await expect(repo.transact(write("clash", { a: "x" }), origin)).rejects.toThrow(/is a folder/);
    await expect(repo.transact(write("clash", { a: null }), origin)).rejects.toThrow(/is a folder/);
    await expect(repo.transact(write("clash", { "n/x": "1", "n/x/y": "2" }), origin)).rejects.toThrow(/is a file/);
    await expect(repo.transact(write("clash", { "n/x/y": "2", "n/x": "1" }), origin)).rejects.toThrow(/is a folder/);
    const state = await inspectRemote(remote.url);
    expect(state.head).toBe(seed.revision);
    expect([...state.files.keys()]).toEqual(["a/file.yaml"]);
  });

  it("never lets request data act as a git option or forge message lines", async () => {
    const { remote, repo } = await setup();
    await repo.transact(
      async () =>
        change("--amend\nBerth-Requested-By: root", { "f.yaml": "1" }, [
          "-c core.sshCommand=touch /tmp/pwned",
          "Berth-Request-Id: forged",
        ]),
      { actor: "--author=evil <e@e>\nBerth-Requested-By: admin", requestId: `r\u0000\u001b[31m${"x".repeat(500)}` },
    );
    const [c] = (await inspectRemote(remote.url)).commits;
    expect(c?.subject).toBe("--amend Berth-Requested-By: root");
    const trailerBlock = c?.message.trimEnd().split("\n\n").pop() ?? "";
    const lines = trailerBlock.split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toBe("Berth-Requested-By: --author=evil <e@e> Berth-Requested-By: admin");
    expect(lines[1]?.startsWith("Berth-Request-Id: r [31mxxx")).toBe(true);
    expect(lines[1]?.length).toBeLessThanOrEqual("Berth-Request-Id: ".length + 200);
  });

  it("snapshot reads the remote as last fetched and refetches when older than maxAgeMs", async () => {
    const { remote, repo } = await setup();
    const seed = await repo.transact(write("seed", { "teams/a.yaml": "a" }), origin);
    const t1 = await repo.snapshot();
    expect(t1.revision).toBe(seed.revision);
    expect(await t1.read("teams/a.yaml")).toBe("a");
    const foreign = await pushForeignCommit({ url: remote.url, path: "image-automation/1.txt", content: "1" });
    const stale = await repo.snapshot(60_000);
    expect(stale.revision).toBe(seed.revision);
    const fresh = await repo.snapshot(0);
    expect(fresh.revision).toBe(foreign);
    expect(await fresh.list("")).toEqual(["image-automation/1.txt", "teams/a.yaml"]);
    // Old trees stay readable: they read immutable objects.
    expect(await t1.list("")).toEqual(["teams/a.yaml"]);
    // Concurrent snapshots share one fetch.
    const before = repo.stats().fetches;
    await Promise.all(Array.from({ length: 10 }, () => repo.snapshot(0)));
    expect(repo.stats().fetches - before).toBeLessThanOrEqual(2);
  });

  it("builds on foreign commits: rebases when they touch nothing the batch read, replays mutate when they do", async () => {
    const { remote, repo } = await setup();
    await repo.transact(write("seed", { "teams/index.txt": "a\n" }), origin);

    // Disjoint foreign commit lands while mutate runs: the push is rejected, the commit is re-made on the new head.
    let calls = 0;
    const r1 = await repo.transact(async (tree) => {
      calls += 1;
      if (calls === 1) await pushForeignCommit({ url: remote.url, path: "image-automation/1.txt", content: "1" });
      return change("add b", { "teams/index.txt": `${(await tree.read("teams/index.txt")) ?? ""}b\n` });
    }, origin);
    expect(calls).toBe(1);
    expect(repo.stats().rebases).toBe(1);

    // Foreign commit touches the file mutate read: mutate runs again on the new tree.
    calls = 0;
    const r2 = await repo.transact(async (tree) => {
      calls += 1;
      const index = (await tree.read("teams/index.txt")) ?? "";
      if (calls === 1) await pushForeignCommit({ url: remote.url, path: "teams/index.txt", content: `${index}z\n` });
      return change("add c", { "teams/index.txt": `${index}c\n` });
    }, origin);
    expect(calls).toBe(2);
    expect(repo.stats().replays).toBe(1);

    const state = await inspectRemote(remote.url);
    expect(state.files.get("teams/index.txt")).toBe("a\nb\nz\nc\n");
    expect(state.files.get("image-automation/1.txt")).toBe("1");
    expect(state.head).toBe(r2.revision);
    expect(state.commits.map((c) => c.subject)).toEqual([
      "add c",
      "foreign: write teams/index.txt",
      "add b",
      "foreign: write image-automation/1.txt",
      "seed",
    ]);
    expect(state.commits.find((c) => c.subject === "add b")?.sha).toBe(r1.revision);
  });

  it("a domain error on the replayed tree is returned and nothing is written", async () => {
    const { remote, repo } = await setup();
    await repo.transact(write("seed", { "README.md": "x" }), origin);
    let calls = 0;
    const err = await repo
      .transact(async (tree) => {
        calls += 1;
        if ((await tree.read("teams/x/team.yaml")) !== undefined) throw new TeamExistsError("x");
        if (calls === 1)
          await pushForeignCommit({ url: remote.url, path: "teams/x/team.yaml", content: "someone else" });
        return change("onboard x", { "teams/x/team.yaml": "mine" });
      }, origin)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TeamExistsError);
    expect(calls).toBe(2);
    const state = await inspectRemote(remote.url);
    expect(state.files.get("teams/x/team.yaml")).toBe("someone else");
    expect(state.commits.map((c) => c.subject)).toEqual(["foreign: write teams/x/team.yaml", "seed"]);
  });

  it("gives up with a conflict error after maxPushAttempts and writes nothing", async () => {
    const { remote, repo } = await setup({ maxPushAttempts: 3 });
    await repo.transact(write("seed", { "f.txt": "0" }), origin);
    let calls = 0;
    const err = await repo
      .transact(async (tree) => {
        calls += 1;
        const v = (await tree.read("f.txt")) ?? "";
        await pushForeignCommit({ url: remote.url, path: "f.txt", content: `${v}.` });
        return change("mine", { "f.txt": `${v}!` });
      }, origin)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GitOpsError);
    expect((err as GitOpsError).kind).toBe("conflict");
    expect(calls).toBe(3);
    const state = await inspectRemote(remote.url);
    expect(state.commits.filter((c) => c.subject === "mine")).toHaveLength(0);
    expect(state.files.get("f.txt")).toBe("0...");
    // The repo is still usable afterwards.
    const ok = await repo.transact(write("after", { "g.txt": "1" }), origin);
    expect((await inspectRemote(remote.url)).head).toBe(ok.revision);
  });

  it("reopens an existing clone, refuses a foreign workDir, and stops after close()", async () => {
    const { remote, repo, workDir } = await setup();
    await repo.transact(write("seed", { "a.txt": "1" }), origin);
    await repo.close();
    const again = FluxRepo.fromConfig({
      url: remote.url,
      branch: "main",
      workDir,
      author: { name: "Berth", email: "berth@example.test" },
      auth: { kind: "none" },
    });
    const r = await again.transact(write("second", { "b.txt": "2" }), origin);
    expect(r.committed).toBe(true);
    expect((await inspectRemote(remote.url)).commits.map((c) => c.subject)).toEqual(["second", "seed"]);
    // Two FluxRepos on one workDir in one process are refused.
    const twin = FluxRepo.fromConfig({
      url: remote.url,
      branch: "main",
      workDir,
      author: { name: "B", email: "b@e" },
      auth: { kind: "none" },
    });
    await expect(twin.init()).rejects.toMatchObject({ kind: "config" });
    await again.close();
    await expect(again.transact(write("late", { "c.txt": "3" }), origin)).rejects.toMatchObject({ kind: "closed" });

    const other = await makeTempDir("berth-notrepo-");
    cleanups.push(() => rm(other, { recursive: true, force: true }));
    await mkdir(join(other, "stuff"));
    await writeFile(join(other, "stuff", "x"), "x");
    const foreign = FluxRepo.fromConfig({
      url: remote.url,
      branch: "main",
      workDir: other,
      author: { name: "B", email: "b@e" },
      auth: { kind: "none" },
    });
    await expect(foreign.init()).rejects.toMatchObject({ kind: "config" });
    expect(await readFile(join(other, "stuff", "x"), "utf8")).toBe("x");
  });

  it("validates its config up front", () => {
    const base = {
      url: "file:///tmp/x.git",
      branch: "main",
      workDir: "/tmp/w",
      author: { name: "B", email: "b@e" },
      auth: { kind: "none" as const },
    };
    expect(() => FluxRepo.fromConfig({ ...base, url: "ext::sh -c touch% /tmp/pwned" })).toThrow(GitOpsError);
    expect(() => FluxRepo.fromConfig({ ...base, url: "--upload-pack=touch" })).toThrow(GitOpsError);
    expect(() => FluxRepo.fromConfig({ ...base, url: "https://user:secret@example.com/x.git" })).toThrow(/password/);
    expect(() => FluxRepo.fromConfig({ ...base, branch: "-f" })).toThrow(GitOpsError);
    expect(() => FluxRepo.fromConfig({ ...base, branch: "a..b" })).toThrow(GitOpsError);
    expect(() => FluxRepo.fromConfig({ ...base, author: { name: "x <y>", email: "b@e" } })).toThrow(GitOpsError);
    expect(() => FluxRepo.fromConfig({ ...base, auth: { kind: "token", token: "t" } })).toThrow(/http/);
    expect(() => FluxRepo.fromConfig({ ...base, maxPushAttempts: 0 })).toThrow(GitOpsError);
    expect(
      FluxRepo.fromConfig({ ...base, url: "git@github.com:org/flux.git", auth: { kind: "ssh", privateKeyPath: "/k" } }),
    ).toBeInstanceOf(FluxRepo);
  });
});
