// needs: gitea
/**
 * The Gitea forge adapter (packages/gitops/src/forge.ts) against a real Gitea: it opens a pull request for a
 * branch (a retry finds the same one), reads where review stands as a second user requests changes and then
 * approves, sees the merge and its commit, closes another without merging and deletes its branch, and names an
 * auth failure without the token. It lists the open pull requests of Berth's branches, not others'.
 */
import { ForgeError, GiteaForge } from "@berth/gitops";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGitea, type GiteaRepo, type RunningGitea } from "../support/gitea.js";

const BASE = "main";

describe("pull requests on a real Gitea through the forge adapter", () => {
  let gitea: RunningGitea;
  let repo: GiteaRepo;
  let forge: GiteaForge;
  let reviewerToken: string;

  /** A branch with one commit of its own on top of main, as Berth would push it. */
  const branchWithCommit = async (branch: string, path: string) => {
    const res = await gitea.api(`/repos/${repo.owner}/${repo.name}/contents/${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        branch: BASE,
        new_branch: branch,
        message: `berth: ${path}`,
        content: Buffer.from("kind: Team\n").toString("base64"),
      }),
    });
    expect(res.status, await res.clone().text()).toBe(201);
  };
  const review = async (number: number, event: "APPROVED" | "REQUEST_CHANGES") => {
    const res = await fetch(`${gitea.url}/api/v1/repos/${repo.owner}/${repo.name}/pulls/${number}/reviews`, {
      method: "POST",
      headers: { authorization: `token ${reviewerToken}`, "content-type": "application/json" },
      body: JSON.stringify({ event, body: event === "APPROVED" ? "looks right" : "not this owner group" }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
  };
  const mainHead = async () => (await gitea.waitForBranch(repo, BASE)).commit.id;

  beforeAll(async () => {
    gitea = await startGitea();
    repo = await gitea.createRepo("fleet", { autoInit: true });
    forge = new GiteaForge({ url: gitea.url, owner: repo.owner, repo: repo.name, token: async () => gitea.token });
    // A reviewer other than the author, with write access to the repository, as branch protection wants.
    reviewerToken = (await gitea.createReviewer(repo, "reviewer")).token;
  }, 120_000);

  afterAll(async () => {
    await gitea?.stop();
  });

  it("opens one pull request per branch, follows its review, and sees it merged", async () => {
    await branchWithCommit("berth/team/payments", "teams/payments/base/team.yaml");
    const request = { head: "berth/team/payments", base: BASE, title: "berth: onboard payments", body: "One team." };
    const opened = await forge.openPullRequest(request);
    expect(opened).toMatchObject({ head: "berth/team/payments", base: BASE, state: "open" });
    expect(opened.url).toBe(`${gitea.url}/${repo.owner}/${repo.name}/pulls/${opened.number}`);
    // A retried request finds the pull request it opened.
    expect((await forge.openPullRequest(request)).number).toBe(opened.number);

    await review(opened.number, "REQUEST_CHANGES");
    expect((await forge.pullRequest(opened.number)).state).toBe("changes-requested");
    // The reviewer's latest review counts.
    await review(opened.number, "APPROVED");
    expect((await forge.pullRequest(opened.number)).state).toBe("approved");

    const merged = await gitea.api(`/repos/${repo.owner}/${repo.name}/pulls/${opened.number}/merge`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ Do: "merge" }),
    });
    expect(merged.status, await merged.clone().text()).toBe(200);
    const after = await forge.pullRequest(opened.number);
    expect(after.state).toBe("merged");
    expect(after.mergeCommit).toBe(await mainHead());
  });

  it("closes a pull request without merging, and deletes its branch", async () => {
    const before = await mainHead();
    await branchWithCommit("berth/team/ledger", "teams/ledger/base/team.yaml");
    const opened = await forge.openPullRequest({ head: "berth/team/ledger", base: BASE, title: "ledger", body: "" });
    expect((await forge.closePullRequest(opened.number)).state).toBe("closed");
    expect((await forge.pullRequest(opened.number)).state).toBe("closed");
    expect(await mainHead()).toBe(before);

    await forge.deleteBranch("berth/team/ledger");
    expect((await gitea.api(`/repos/${repo.owner}/${repo.name}/branches/berth%2Fteam%2Fledger`)).status).toBe(404);
    // Deleting a branch that is gone is not an error: a retried clean-up finishes.
    await forge.deleteBranch("berth/team/ledger");
  });

  it("lists the open pull requests of Berth's branches into the base, each with where its review stands", async () => {
    await branchWithCommit("berth/team/alpha", "teams/alpha/base/team.yaml");
    await branchWithCommit("berth/team/beta", "teams/beta/base/team.yaml");
    await branchWithCommit("feature/docs", "docs/readme.yaml");
    const alpha = await forge.openPullRequest({ head: "berth/team/alpha", base: BASE, title: "alpha", body: "" });
    const beta = await forge.openPullRequest({ head: "berth/team/beta", base: BASE, title: "beta", body: "" });
    // Someone else's pull request on the same repository is not Berth's.
    await forge.openPullRequest({ head: "feature/docs", base: BASE, title: "docs", body: "" });
    await review(alpha.number, "APPROVED");

    const listed = await forge.openPullRequests(BASE, "berth/team/");
    expect(listed.map((p) => [p.head, p.number, p.state]).sort()).toEqual([
      ["berth/team/alpha", alpha.number, "approved"],
      ["berth/team/beta", beta.number, "open"],
    ]);
    // Closed ones are no longer listed (payments was merged and ledger closed above).
    await forge.closePullRequest(beta.number);
    expect((await forge.openPullRequests(BASE, "berth/team/")).map((p) => p.head)).toEqual(["berth/team/alpha"]);
    expect(await forge.openPullRequests("other", "berth/team/")).toEqual([]);
  });

  it("names a refused token as an auth failure, without the token", async () => {
    const wrong = "0123456789abcdef0123456789abcdef01234567";
    const refused = new GiteaForge({ url: gitea.url, owner: repo.owner, repo: repo.name, token: async () => wrong });
    const err = await refused.pullRequest(1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ForgeError);
    expect(err).toMatchObject({ kind: "auth", status: 401 });
    expect((err as Error).message).not.toContain(wrong);
  });
});
