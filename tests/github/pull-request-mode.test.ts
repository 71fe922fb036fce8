/**
 * Berth's API in pull-request mode with `forge: github` (ADR 0030): the branch goes to the fleet repository with git,
 * the pull request and its review come from GitHub's REST API (tests/support/fake-github.ts: no recording of GitHub's
 * pull-request endpoints is available here; tests/github/forge.test.ts says what is checked against recordings).
 * tests/gitea/pull-request-mode.test.ts runs the same mode against a real Gitea, merges included.
 */
import { proposalResponse, statusResponse } from "@berth/api-contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, inPullRequestMode, startBerth, type RunningBerth } from "../support/berth.js";
import { readAnswer } from "../support/contract.js";
import { createBareRepo, git, type BareRepo } from "../support/git-remotes.js";
import { startFakeGitHub, type FakeGitHub } from "../support/fake-github.js";
import { eventually } from "../support/wait.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const TOKEN = "ghp_forgeTokenOfTheGitHubApp000000000000";
const auth = { authorization: `Bearer ${DEV_TOKEN}` };

describe("pull-request mode on GitHub: each team write is a pull request opened through GitHub's API", () => {
  let remote: BareRepo;
  let github: FakeGitHub;
  let berth: RunningBerth;

  const onboard = (name: string, headers: Record<string, string> = {}) =>
    berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: { ...auth, ...headers },
      payload: { name, owners: [OWNER], environments: ["dev"] },
    });
  const branchHead = async (branch: string) =>
    (await git(["rev-parse", "--verify", "--quiet", `refs/heads/${branch}`], { cwd: remote.dir }).catch(() => ""))
      .toString()
      .trim();

  beforeAll(async () => {
    remote = await createBareRepo();
    github = await startFakeGitHub(TOKEN);
    berth = await startBerth({
      remoteUrl: remote.url,
      startEngine: false,
      env: { BERTH_FORGE_TOKEN: TOKEN },
      config: inPullRequestMode({ forge: "github", url: github.url, owner: github.owner, repository: github.repo }),
    });
  });
  afterAll(async () => {
    await berth?.stop();
    await github?.stop();
    await remote?.remove();
  });

  it("onboarding answers 202 with GitHub's pull request of the pushed branch; a retry finds the same one", async () => {
    const mainBefore = await branchHead("main");
    const res = await onboard("payments", { "idempotency-key": "onboard-payments-1" });
    expect(res.statusCode, res.body).toBe(202);
    const answer = readAnswer(res, proposalResponse);
    expect(answer.pullRequest).toMatchObject({ state: "open", url: expect.stringMatching(/\/pull\/\d+$/) });
    expect(res.headers.location).toBe(answer.pullRequest.url);
    expect(await branchHead("berth/team/payments")).toBe(answer.revision);
    expect(await branchHead("main")).toBe(mainBefore);
    const opened = github.requests.filter((r) => r.method === "POST");
    expect(opened).toEqual([{ method: "POST", path: "/repos/platform/fleet/pulls", auth: "token" }]);

    const again = await onboard("payments", { "idempotency-key": "onboard-payments-1" });
    expect(again.statusCode, again.body).toBe(202);
    expect(readAnswer(again, proposalResponse).pullRequest.number).toBe(answer.pullRequest.number);
    expect(github.requests.filter((r) => r.method === "POST")).toHaveLength(1);
  });

  it("the team's status starts with its pull request: changes requested on GitHub, then closed without merge", async () => {
    const res = await onboard("orders");
    expect(res.statusCode, res.body).toBe(202);
    const { pullRequest } = readAnswer(res, proposalResponse);
    const status = async () =>
      readAnswer(await berth.server.inject({ url: "/v1/teams/orders/status", headers: auth }), statusResponse);
    expect(await status()).toMatchObject({ team: "orders", ready: false, review: { ...pullRequest, state: "open" } });

    github.review(pullRequest.number, 42, "CHANGES_REQUESTED");
    await eventually(
      "the status says changes were requested",
      async () => (await status()).review?.state === "changes-requested",
      15_000,
    );
    github.close(pullRequest.number);
    await eventually("the status says it was closed", async () => (await status()).review?.state === "closed", 15_000);
    expect(await status()).toMatchObject({ clusters: [], review: { number: pullRequest.number } });
  });

  it("GitHub refusing to open the pull request after the push: a clear problem, and the pushed branch is gone", async () => {
    github.failNext(401, "Bad credentials", "POST");
    const res = await onboard("ledger");
    expect(res.headers["content-type"]).toContain("application/problem+json");
    expect(res.json()).toMatchObject({ status: res.statusCode, detail: expect.stringContaining("Bad credentials") });
    expect(res.statusCode).toBe(502);
    expect(res.body).not.toContain(TOKEN);
    expect(github.requests.at(-1)).toMatchObject({ method: "POST", path: "/repos/platform/fleet/pulls" });
    expect(await branchHead("berth/team/ledger")).toBe("");
  });
});
