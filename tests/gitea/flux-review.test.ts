// needs: cluster dist gitea
/**
 * Pull-request mode end to end (issue 38): the fleet repository is on a real Gitea, real Flux applies its main
 * branch to a real apiserver, Berth's controller reports. An onboarding merged by a reviewer reaches Ready on the
 * cluster, well inside the 10-minute poll: Gitea's push webhook reaches Flux's Receiver berth-teams-forge
 * (infra/flux/pull-requests/forge-receiver.yaml). One closed without merge leaves nothing on it, and its status says
 * so. A staged rollout proposes one pull request per wave, starts each wave's gate at its merge, and its abort closes
 * the pull request still open. Twenty onboardings at once merge in any order, each team on the cluster once. main is
 * protected throughout (no push, one approving review).
 */
import { rolloutAbortResponse, rolloutResponse, statusResponse, teamListResponse } from "@berth/api-contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN } from "../support/berth.js";
import { readAnswer } from "../support/contract.js";
import { ASO_NAMESPACE, type FluxPlatform } from "../support/flux-platform.js";
import type { GiteaRepo, RunningGitea } from "../support/gitea.js";
import { startReviewPlatform } from "../support/review-platform.js";
import { eventually } from "../support/wait.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";

describe("pull-request mode with real Flux: merged reaches Ready, closed leaves nothing", () => {
  let gitea: RunningGitea;
  let repo: GiteaRepo;
  let platform: FluxPlatform;
  let stop: (() => Promise<void>) | undefined;

  const status = async (team: string) => {
    const res = await platform.berth.server.inject({
      url: `/v1/teams/${team}/status`,
      headers: { authorization: `Bearer ${DEV_TOKEN}` },
    });
    return readAnswer(res, statusResponse);
  };
  /** When source-controller last handled a reconcile request of berth-teams (a Receiver's). */
  const lastHandledReconcile = async () =>
    (
      (await platform.admin.get("source.toolkit.fluxcd.io/v1", "GitRepository", "flux-system", "berth-teams"))
        ?.status as { lastHandledReconcileAt?: string } | undefined
    )?.lastHandledReconcileAt;
  const pulls = (path: string, init?: RequestInit) => gitea.api(`/repos/${repo.owner}/${repo.name}/pulls${path}`, init);

  beforeAll(async () => {
    ({ gitea, repo, platform, stop } = await startReviewPlatform());
  }, 600_000);

  afterAll(async () => {
    await stop?.();
  });

  it("an onboarding merged by a reviewer reaches Ready on the cluster, fetched at the forge's webhook", async () => {
    const fetchedBefore = await lastHandledReconcile();
    const mainBefore = await platform.head();
    const res = await platform.request("POST", "/v1/teams", {
      name: "payments",
      owners: [OWNER],
      environments: ["dev"],
    });
    expect(res.statusCode, res.body).toBe(202);
    const number = res.json.pullRequest.number as number;
    expect(await platform.head()).toBe(mainBefore);
    expect(await status("payments")).toMatchObject({ clusters: [], review: { number, state: "open" } });

    await gitea.merge(repo, number);
    const mergeCommit = await platform.head();
    expect(mergeCommit).not.toBe(mainBefore);

    // Inside the 10-minute poll: only the webhook's reconcile request gets it there.
    await platform.waitKustomizationReady(ASO_NAMESPACE, "team-payments", mergeCommit, 240_000);
    expect(await lastHandledReconcile()).not.toBe(fetchedBefore);
    const ready = await eventually(
      "payments Ready on the cluster, as its status says",
      async () => {
        const s = await status("payments");
        return s.ready ? s : undefined;
      },
      240_000,
    );
    expect(ready.review).toMatchObject({ number, state: "merged" });
    expect(ready.clusters.map((c) => [c.cluster, c.ready])).toEqual([[platform.name, true]]);
    expect(await platform.admin.get("v1", "Namespace", undefined, "payments")).toBeDefined();
  }, 600_000);

  it("an onboarding closed without merge leaves nothing on the cluster, and its status says why", async () => {
    const res = await platform.request("POST", "/v1/teams", { name: "orders", owners: [OWNER], environments: ["dev"] });
    expect(res.statusCode, res.body).toBe(202);
    const number = res.json.pullRequest.number as number;
    const closed = await pulls(`/${number}`, { method: "PATCH", body: JSON.stringify({ state: "closed" }) });
    expect(closed.status).toBe(201);

    // Flux has fetched main as it is now: the closed change was never on it, so nothing of it is applied.
    const main = await platform.head();
    expect(await platform.reconcileSource()).toBe(`main@sha1:${main}`);
    expect(await platform.admin.get("v1", "Namespace", undefined, "orders")).toBeUndefined();
    expect(await platform.kustomization(ASO_NAMESPACE, "team-orders")).toBeUndefined();
    const dropped = await eventually(
      "the status says it was closed",
      async () => {
        const s = await status("orders");
        return s.review?.state === "closed" ? s : undefined;
      },
      30_000,
    );
    expect(dropped).toMatchObject({ ready: false, clusters: [], review: { number } });
  }, 600_000);

  it("a staged rollout proposes one pull request per wave and gates each after its merge; a closed one halts it, an abort closes the open one", async () => {
    // A second team on main (payments is there since the first test).
    const onboarded = await platform.request("POST", "/v1/teams", {
      name: "search",
      owners: [OWNER],
      environments: ["dev"],
    });
    expect(onboarded.statusCode, onboarded.body).toBe(202);
    await gitea.merge(repo, onboarded.json.pullRequest.number as number);
    await eventually("search Ready", async () => (await status("search")).ready, 240_000);

    const rolloutOf = async (id: string) => {
      const res = await platform.berth.server.inject({
        url: `/v1/rollouts/${id}`,
        headers: { authorization: `Bearer ${DEV_TOKEN}` },
      });
      return readAnswer(res, rolloutResponse).rollout;
    };
    const pullRequestOf = async (number: number) =>
      (await (await pulls(`/${number}`)).json()) as { state: string; merged: boolean; head: { ref: string } };
    const mainBefore = await platform.head();
    const created = await platform.request("POST", "/v1/rollouts", {
      description: "payments first, then the rest",
      target: { templateVersion: "v3" },
      waves: [{ name: "first", selector: { names: ["payments"] } }, { name: "rest" }],
      gate: { timeoutSeconds: 300 },
    });
    expect(created.statusCode, created.body).toBe(201);
    const id = created.json.rollout.metadata.name as string;

    // Wave 1 waits in its pull request: main has not moved, and its gate has not started.
    const proposed = await eventually(
      "wave first proposed",
      async () => {
        const r = await rolloutOf(id);
        return r.status.waves[0]?.phase === "Proposed" ? r : undefined;
      },
      60_000,
    );
    const first = proposed.status.waves[0]!.pullRequest!;
    expect(await pullRequestOf(first.number)).toMatchObject({
      state: "open",
      head: { ref: `berth/rollout/${id}-first` },
    });
    expect(await platform.head()).toBe(mainBefore);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const waiting = await rolloutOf(id);
    expect(waiting.status.waves[0]).toMatchObject({ phase: "Proposed" });
    expect(waiting.status.waves[0]?.gateSince).toBeUndefined();
    // The rollout's file is on its own branch, not on main.
    expect((await gitea.waitForBranch(repo, "berth/rollouts")).commit.id).toBeDefined();

    // Merged: its gate starts, passes with real Flux, and wave 2 is proposed in its own pull request.
    const mergedAt = Date.now();
    await gitea.merge(repo, first.number);
    const second = await eventually(
      "wave first Ready and wave rest proposed",
      async () => {
        const r = await rolloutOf(id);
        return r.status.waves[0]?.phase === "Ready" && r.status.waves[1]?.phase === "Proposed" ? r : undefined;
      },
      300_000,
    );
    const wave = second.status.waves[0]!;
    // The gate counted from the merge, not from the proposal.
    expect(Date.parse(wave.gateSince!)).toBeGreaterThanOrEqual(mergedAt);
    expect(wave.committedAt).toBe(wave.gateSince);
    const rest = second.status.waves[1]!.pullRequest!;
    expect(rest.number).not.toBe(first.number);
    expect((await status("payments")).ready).toBe(true);

    // Wave 2's pull request closed without merge: the rollout halts and says why; a resume proposes it again.
    const mainAfterFirst = await platform.head();
    const closed = await pulls(`/${rest.number}`, { method: "PATCH", body: JSON.stringify({ state: "closed" }) });
    expect(closed.status).toBe(201);
    const halted = await eventually(
      "the rollout halted",
      async () => {
        const r = await rolloutOf(id);
        return r.status.phase === "Halted" ? r : undefined;
      },
      60_000,
    );
    expect(halted.status.halt).toMatchObject({ wave: "rest", reason: "ProposalClosed" });
    expect(halted.status.halt?.message).toContain(`pull request #${rest.number} of wave rest was closed without merge`);
    const resumed = await platform.berth.server.inject({
      method: "POST",
      url: `/v1/rollouts/${id}/resume`,
      headers: { authorization: `Bearer ${DEV_TOKEN}` },
    });
    expect(resumed.statusCode, resumed.body).toBe(200);
    const again = await eventually(
      "wave rest proposed again",
      async () => {
        const pr = (await rolloutOf(id)).status.waves[1]?.pullRequest;
        return pr && pr.number !== rest.number ? pr : undefined;
      },
      60_000,
    );

    // Aborted: the open pull request is closed, nothing of wave 2 reaches main, each team says its version.
    const aborted = await platform.berth.server.inject({
      method: "POST",
      url: `/v1/rollouts/${id}/abort`,
      headers: { authorization: `Bearer ${DEV_TOKEN}` },
    });
    expect(aborted.statusCode, aborted.body).toBe(200);
    expect(readAnswer(aborted, rolloutAbortResponse).versions).toEqual({ v3: ["payments"], v1: ["search"] });
    expect(await pullRequestOf(again.number)).toMatchObject({ state: "closed", merged: false });
    expect(await platform.head()).toBe(mainAfterFirst);

    // The audit trail: each wave proposed with its pull request, the merged one committed, the closed one a halt.
    const engineLines = platform.berth
      .logEntries<{ audit?: { action: string; rollout: string | null; outcome: string; pullRequest: number | null } }>()
      .flatMap((l) =>
        l.audit?.rollout === id && l.audit.action.startsWith("rollout-") && l.audit.action !== "rollout-start"
          ? [[l.audit.action, l.audit.outcome, l.audit.pullRequest]]
          : [],
      );
    expect(engineLines).toEqual([
      ["rollout-wave", "proposed", first.number],
      ["rollout-wave", "committed", first.number],
      ["rollout-wave-ready", "committed", null],
      ["rollout-wave", "proposed", rest.number],
      ["rollout-halt", "committed", rest.number],
      ["rollout-resume", "committed", null],
      ["rollout-wave", "proposed", again.number],
      ["rollout-abort", "committed", null],
    ]);
  }, 900_000);

  it("twenty onboardings at once: twenty pull requests, merged in a shuffled order without a conflict, every team Ready on the cluster once", async () => {
    const names = Array.from({ length: 20 }, (_, i) => `crowd-${String(i).padStart(2, "0")}`);
    const answers = await Promise.all(
      names.map((name) => platform.request("POST", "/v1/teams", { name, owners: [OWNER], environments: ["dev"] })),
    );
    for (const res of answers) expect(res.statusCode, res.body).toBe(202);
    const numbers = answers.map((res) => res.json.pullRequest.number as number);
    expect(new Set(numbers).size).toBe(names.length);
    // Merged one after another in a random order, each against main as the merges before left it: none conflicts.
    const order = names
      .map((name, i) => ({ name, number: numbers[i]!, key: Math.random() }))
      .sort((a, b) => a.key - b.key);
    console.log(`[tests/gitea/flux-review] merge order: ${order.map((o) => o.name).join(" ")}`);
    for (const { number } of order) await gitea.merge(repo, number);

    await eventually(
      "every team Ready on the cluster",
      async () => (await Promise.all(names.map(async (name) => (await status(name)).ready))).every(Boolean),
      300_000,
    );
    // Once each: one Kustomization and one namespace per team, and each team once in the fleet on main.
    const kustomizations = (await platform.admin.list("kustomize.toolkit.fluxcd.io/v1", "Kustomization", ASO_NAMESPACE))
      .map((k) => k.metadata?.name ?? "")
      .filter((name) => name.startsWith("team-crowd-"));
    expect(kustomizations.sort()).toEqual(names.map((name) => `team-${name}`));
    for (const name of names) expect(await platform.admin.get("v1", "Namespace", undefined, name)).toBeDefined();
    const listed = await platform.berth.server.inject({
      url: "/v1/teams?limit=100",
      headers: { authorization: `Bearer ${DEV_TOKEN}` },
    });
    const onMain = readAnswer(listed, teamListResponse)
      .items.map((t) => t.name)
      .filter((n) => n.startsWith("crowd-"));
    expect(onMain.sort()).toEqual(names);
  }, 900_000);
});
