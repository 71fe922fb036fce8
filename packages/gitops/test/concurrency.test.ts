import type { RepoTree } from "@berth/core";
import { TeamExistsError } from "@berth/core";
import { afterEach, describe, expect, it } from "vitest";
import { pushForeignCommit, startForeignPusher } from "../../../tests/support/foreign-pusher.js";
import { createBareRepo, inspectRemote } from "../../../tests/support/git-remotes.js";
import { change, openRepo, origin } from "./helpers.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

const INDEX = "clusters/c1/teams/kustomization.yaml";

/** Like the domain's onboarding: a team folder plus a read-modify-write of a shared per-cluster index. */
const onboard =
  (name: string, renderMs = 0) =>
  async (tree: RepoTree) => {
    if (renderMs) await new Promise((r) => setTimeout(r, renderMs)); // rendering templates takes a while
    if ((await tree.read(`teams/${name}/team.yaml`)) !== undefined) throw new TeamExistsError(name);
    const members = (await tree.list("clusters/c1/teams"))
      .filter((p) => p !== INDEX)
      .map((p) => p.slice("clusters/c1/teams/".length, -".yaml".length));
    members.push(name);
    return change(`berth: onboard team ${name}`, {
      [`teams/${name}/team.yaml`]: `name: ${name}\n`,
      [`clusters/c1/teams/${name}.yaml`]: `team: ${name}\n`,
      [INDEX]: `resources:\n${members
        .sort()
        .map((m) => `  - ${m}.yaml\n`)
        .join("")}`,
    });
  };

describe("FluxRepo under concurrency", () => {
  it("commits 50 concurrent transactions, one commit each, while another bot keeps pushing", async () => {
    const remote = await createBareRepo();
    cleanups.push(remote.remove);
    const { repo, cleanup } = await openRepo(remote.url);
    cleanups.push(cleanup);
    await repo.transact(async () => change("seed", { "README.md": "flux\n" }), { actor: "seed", requestId: "0" });
    // A busy bot: a commit every ~400 ms plus its own git time (real image automation is far slower). Faster
    // than our fetch→push window (~100-250 ms for a 32-commit batch on this 2-core box) it would make batches
    // exhaust maxPushAttempts or pushBudgetMs, the documented limits, not what this test is about.
    const pusher = await startForeignPusher({ url: remote.url, intervalMs: 400, pauseFactor: 2 });
    cleanups.push(async () => {
      await pusher.stop().catch(() => {});
    });
    // Let the bot get going so pushes really race.
    while (pusher.commits < 3) await new Promise((r) => setTimeout(r, 20));

    const names = Array.from({ length: 50 }, (_, i) => `team-${String(i).padStart(2, "0")}`);
    const started = performance.now();
    let raced = false;
    const results = await Promise.all(
      names.map((n, i) =>
        repo.transact(
          async (tree) => {
            if (i === 20 && !raced) {
              // Whatever the bot's timing, at least one batch push loses a race.
              raced = true;
              await pushForeignCommit({
                url: remote.url,
                path: "image-automation/extra.txt",
                content: "x",
                subject: "image-automation: extra",
              });
            }
            return onboard(n, 10)(tree);
          },
          { actor: `user-${i}`, requestId: `req-${i}` },
        ),
      ),
    );
    const wallMs = performance.now() - started;
    // A duplicate onboarding in the same burst fails with the domain error.
    const dup = await repo.transact(onboard("team-07"), { actor: "x", requestId: "dup" }).catch((e: unknown) => e);
    const foreign = await pusher.stop();
    const stats = repo.stats();
    console.log(
      `50 concurrent transactions: ${wallMs.toFixed(0)} ms wall; foreign commits ${foreign.commits} (its rejections ${foreign.rejections}); stats ${JSON.stringify(stats)}`,
    );

    expect(dup).toBeInstanceOf(TeamExistsError);
    expect(results.every((r) => r.committed)).toBe(true);
    expect(new Set(results.map((r) => r.revision)).size).toBe(50);

    const state = await inspectRemote(remote.url);
    for (const n of names) {
      expect(state.files.get(`teams/${n}/team.yaml`)).toBe(`name: ${n}\n`);
      expect(state.files.get(`clusters/c1/teams/${n}.yaml`)).toBe(`team: ${n}\n`);
    }
    // The shared index was read-modify-written 50 times without losing an update.
    expect(state.files.get(INDEX)).toBe(`resources:\n${names.map((n) => `  - ${n}.yaml\n`).join("")}`);
    // Every foreign commit survived, none of ours is duplicated, each transaction got its own commit.
    for (const f of foreign.files) expect(state.files.has(f), f).toBe(true);
    const subjects = state.commits.map((c) => c.subject);
    for (const s of foreign.subjects)
      expect(
        subjects.filter((x) => x === s),
        s,
      ).toHaveLength(1);
    expect(subjects.filter((s) => s.startsWith("image-automation:"))).toHaveLength(foreign.commits + 1);
    expect(state.files.get("image-automation/extra.txt")).toBe("x");
    expect(stats.pushRejections).toBeGreaterThan(0);
    for (const [i, n] of names.entries()) {
      const mine = state.commits.filter((c) => c.subject === `berth: onboard team ${n}`);
      expect(mine, n).toHaveLength(1);
      expect(mine[0]?.sha).toBe(results[i]?.revision);
      expect(mine[0]?.trailers["Berth-Request-Id"]).toBe(`req-${i}`);
    }
    expect(state.commits).toHaveLength(1 + 50 + foreign.commits + 1);
    expect(foreign.commits).toBeGreaterThanOrEqual(3);
    // Group commit: far fewer pushes than transactions.
    expect(stats.batches).toBeLessThan(50);
  });

  it("transactions that arrive while a batch is planned join it, each after the ones before it", async () => {
    const remote = await createBareRepo();
    cleanups.push(remote.remove);
    const { repo, cleanup } = await openRepo(remote.url);
    cleanups.push(cleanup);
    await repo.transact(async () => change("seed", { "d/b.txt": "b", "d/d.txt": "d" }), origin);
    const before = repo.stats();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const planning = new Promise<void>((r) => (entered = r));
    const first = repo.transact(async () => {
      entered();
      await gate; // the batch is being planned while the next two arrive
      return change("first", { "d/a.txt": "a", "d/c.txt": "c", "d/d.txt": null });
    }, origin);
    await planning;
    const seen: (readonly string[])[] = [];
    const later = ["second", "third"].map((name) =>
      repo.transact(async (tree) => {
        seen.push(await tree.list("d"));
        return change(name, { [`d/${name}.txt`]: name, "d/b.txt": `b by ${name}` });
      }, origin),
    );
    await new Promise((r) => setTimeout(r, 20));
    release();
    const results = await Promise.all([first, ...later]);
    const after = repo.stats();

    // One batch, one push: without joining, the two late ones would have waited for a batch of their own.
    expect(after.batches - before.batches).toBe(1);
    expect(after.pushAttempts - before.pushAttempts).toBe(1);
    expect(results.every((r) => r.committed)).toBe(true);
    // Each saw the changes of the transactions before it (the folder listed as git would, sorted).
    expect(seen).toEqual([
      ["d/a.txt", "d/b.txt", "d/c.txt"],
      ["d/a.txt", "d/b.txt", "d/c.txt", "d/second.txt"],
    ]);
    const state = await inspectRemote(remote.url);
    expect(state.commits.map((c) => c.subject)).toEqual(["third", "second", "first", "seed"]);
    expect(state.commits.slice(0, 3).map((c) => c.sha)).toEqual(results.map((r) => r.revision).reverse());
    expect([...state.files.keys()].sort()).toEqual(["d/a.txt", "d/b.txt", "d/c.txt", "d/second.txt", "d/third.txt"]);
    // The pushed head's tree (derived from the batch's changes, not listed by git) holds each path's last content.
    const head = await repo.snapshot();
    expect(head.revision).toBe(state.head);
    expect(await head.list("")).toEqual([...state.files.keys()].sort());
    for (const [path, content] of state.files) expect(await head.hasContent(path, content), path).toBe(true);
    expect(state.files.get("d/b.txt")).toBe("b by third");
    expect(await head.hasContent("d/b.txt", "b by second")).toBe(false);
  });

  it("a throwing transaction in a batch is skipped; the others commit", async () => {
    const remote = await createBareRepo();
    cleanups.push(remote.remove);
    const { repo, cleanup } = await openRepo(remote.url);
    cleanups.push(cleanup);
    await repo.init();
    const outcomes = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        repo.transact(
          async (tree) => {
            if (i % 5 === 3) throw new Error(`mutate ${i} failed`);
            if (i % 5 === 4) return null;
            return change(`write ${i}`, {
              [`f/${i}.txt`]: `${i}`,
              "f/count.txt": `${Number((await tree.read("f/count.txt")) ?? 0) + 1}`,
            });
          },
          { actor: "a", requestId: String(i) },
        ),
      ),
    );
    const state = await inspectRemote(remote.url);
    outcomes.forEach((o, i) => {
      if (i % 5 === 3) expect(o.status === "rejected" && String(o.reason)).toContain(`mutate ${i} failed`);
      else if (i % 5 === 4) expect(o.status === "fulfilled" && o.value.committed).toBe(false);
      else {
        expect(o.status === "fulfilled" && o.value.committed).toBe(true);
        expect(state.files.get(`f/${i}.txt`)).toBe(`${i}`);
      }
    });
    expect(state.files.get("f/count.txt")).toBe("12");
    expect(state.commits).toHaveLength(12);
    expect(repo.stats().batches).toBeLessThan(20);
  });
});
