import { writeResponse } from "@berth/api-contract";
import { teamShard } from "@berth/core";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DEV_TOKEN, startBerth, type RunningBerth } from "../support/berth.js";
import { readAnswer, readProblem } from "../support/contract.js";
import { pushForeignCommit, startForeignPusher } from "../support/foreign-pusher.js";
import { createBareRepo, inspectRemote } from "../support/git-remotes.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const TEAMS = 50;

describe(`${TEAMS} concurrent onboardings while another writer keeps pushing to the branch`, () => {
  let berth: RunningBerth;
  let url: string;

  beforeAll(async () => {
    url = (await createBareRepo()).url;
    await pushForeignCommit({ url, path: "README.md", content: "flux repo\n" });
    berth = await startBerth({ remoteUrl: url, listen: true, env: { BERTH_LOG_LEVEL: "warn" } });
  });
  afterAll(async () => {
    await berth?.stop();
  });

  it("lands every team and every foreign commit, nothing duplicated, no 5xx", async () => {
    // A push every 400 ms (or twice the bot's own git time, if longer: see pauseFactor) plus that git time:
    // far busier than Flux image automation (about one a minute). A bot that always pushes more often than
    // Berth can fetch, rebase and push makes batches run out of pushBudgetMs: the documented limit, not what
    // this test is about (ADR 0002).
    const pusher = await startForeignPusher({ url, intervalMs: 400, pauseFactor: 2 });
    // Let the bot get going, so the burst (a few seconds now that a batch takes every waiting request)
    // really races it instead of finishing before its first push.
    await vi.waitFor(() => expect(pusher.commits).toBeGreaterThan(0), { timeout: 60_000, interval: 50 });
    const names = Array.from({ length: TEAMS }, (_, i) => `team-${String(i).padStart(2, "0")}`);
    const responses = await Promise.all(
      names.map((name) =>
        fetch(`${berth.url}/v1/teams`, {
          method: "POST",
          headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify({ name, owners: [OWNER], environments: ["dev", "prod"] }),
        }).then(async (res) => {
          const body: { revision?: string; [field: string]: unknown } = res.ok
            ? await readAnswer(res, writeResponse)
            : await readProblem(res);
          return { status: res.status, body };
        }),
      ),
    );
    const foreign = await pusher.stop();

    expect(responses.map((r) => r.status)).toEqual(names.map(() => 201));
    expect(foreign.commits).toBeGreaterThan(0);

    const state = await inspectRemote(url);
    for (const name of names) expect(state.files.has(`teams/${name}/base/team.yaml`), name).toBe(true);
    for (const name of names)
      expect(state.files.get(`clusters/aks-prod-neu/teams/${teamShard(name)}/kustomization.yaml`), name).toContain(
        `- ${name}.yaml`,
      );
    const shards = [...new Set(names.map(teamShard))].sort();
    expect(parse(state.files.get("clusters/aks-prod-neu/teams/kustomization.yaml")!).resources).toEqual(shards);
    for (const file of foreign.files) expect(state.files.has(file), file).toBe(true);

    const onboardings = state.commits.filter((c) => c.subject.startsWith("berth: onboard team "));
    expect(onboardings).toHaveLength(TEAMS);
    expect(new Set(onboardings.map((c) => c.subject)).size).toBe(TEAMS);
    expect(state.commits.filter((c) => foreign.subjects.includes(c.subject))).toHaveLength(foreign.commits);
    // Every answer names a commit that the branch really holds.
    const shas = new Set(state.commits.map((c) => c.sha));
    for (const r of responses) expect(shas.has(r.body.revision!)).toBe(true);
  });
});
