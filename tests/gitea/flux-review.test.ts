// needs: cluster dist gitea
/**
 * Pull-request mode end to end (issue 38): the fleet repository is on a real Gitea, real Flux applies its main
 * branch to a real apiserver, Berth's controller reports. An onboarding merged by a reviewer reaches Ready on the
 * cluster, well inside the 10-minute poll: Gitea's push webhook reaches Flux's Receiver berth-teams-forge
 * (infra/flux/pull-requests/forge-receiver.yaml). One closed without merge leaves nothing on it, and its status says
 * so.
 */
import { statusResponse } from "@berth/api-contract";
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
});
