// needs: gitea
/**
 * Berth in direct mode against a real forge (issue 38): Gitea built from its Go module, a private repository
 * created from nothing, Berth pushing to it over HTTP with a user's access token. What Berth answered is what
 * Gitea's REST API shows on `main`, and the token never reaches Berth's logs. A protected `main` declines the push:
 * Berth says so (502 repo-refused, in Gitea's words) and writes nothing.
 */
import { writeResponse } from "@berth/api-contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, startBerth, type RunningBerth } from "../support/berth.js";
import { readAnswer } from "../support/contract.js";
import { startGitea, type GiteaRepo, type RunningGitea } from "../support/gitea.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const auth = { authorization: `Bearer ${DEV_TOKEN}` };

describe("direct mode: Berth pushes to a Gitea repository over HTTP with a token", () => {
  let gitea: RunningGitea;
  let repo: GiteaRepo;
  let berth: RunningBerth;

  beforeAll(async () => {
    gitea = await startGitea();
    repo = await gitea.createRepo("flux");
    berth = await startBerth({
      remoteUrl: repo.cloneUrl,
      env: { BERTH_GIT_USERNAME: gitea.username, BERTH_GIT_TOKEN: gitea.token },
    });
  }, 120_000);
  afterAll(async () => {
    await berth?.stop();
    await gitea?.stop();
  });

  it("starts from an empty private repository, which Gitea does not serve without credentials", async () => {
    expect(repo.cloneUrl).toBe(`${gitea.url}/${gitea.username}/flux.git`);
    expect((await fetch(`${gitea.url}/api/v1/repos/${repo.owner}/flux`)).status).toBe(404);
    expect((await berth.server.inject({ url: "/readyz" })).statusCode).toBe(200);
  });

  it("onboards a team: main's head on Gitea is the revision Berth answered, with the team's files", async () => {
    const created = await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: auth,
      payload: { name: "payments", owners: [OWNER], environments: ["dev"] },
    });
    expect(created.statusCode).toBe(201);
    const answer = readAnswer(created, writeResponse);
    expect(answer.committed).toBe(true);

    // Gitea's view of main (it takes a push in through a queue: waited for), then the same through other endpoints.
    const head = (await gitea.waitForBranch(repo, "main", answer.revision)).commit;
    expect(head.id).toBe(answer.revision);
    const commits = (await (
      await gitea.api(`/repos/${repo.owner}/${repo.name}/commits?sha=main&limit=5`)
    ).json()) as Array<{
      sha: string;
    }>;
    expect(commits.map((c) => c.sha)).toEqual([answer.revision]);
    expect(head.message).toMatch(/^berth: onboard team payments/);

    const teamFile = answer.files.map((f) => f.path).find((p) => p.endsWith("/payments/base/team.yaml"));
    expect(teamFile).toBe("teams/payments/base/team.yaml");
    const contents = await gitea.api(`/repos/${repo.owner}/${repo.name}/contents/${teamFile}?ref=main`);
    expect(contents.status).toBe(200);
    const file = (await contents.json()) as { content: string; encoding: string; last_commit_sha: string };
    expect(file.encoding).toBe("base64");
    expect(Buffer.from(file.content, "base64").toString("utf8")).toContain("name: payments");
    expect(file.last_commit_sha).toBe(answer.revision);
    // Every file Berth said it wrote is there.
    for (const { path } of answer.files.filter((f) => f.status !== "deleted")) {
      expect((await gitea.api(`/repos/${repo.owner}/${repo.name}/contents/${path}?ref=main`)).status, path).toBe(200);
    }
  });

  it("a protected main refuses Berth's push: a clear error that says so, and nothing is written", async () => {
    await gitea.protectBranch(repo, "main");
    const before = (await gitea.waitForBranch(repo, "main")).commit.id;
    const refused = await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: auth,
      payload: { name: "ledger", owners: [OWNER], environments: ["dev"] },
    });
    expect(refused.statusCode, refused.body).toBe(502);
    expect(refused.headers["content-type"]).toContain("application/problem+json");
    // Declined for good: not "try again" (no Retry-After), and it says why, in Gitea's words, and what to do.
    expect(refused.headers["retry-after"]).toBeUndefined();
    const problem = refused.json() as { type: string; detail: string };
    expect(problem.type).toBe("https://berth.dev/problems/repo-refused");
    expect(problem.detail).toContain("Not allowed to push to protected branch main");
    expect(problem.detail).toContain("nothing was committed");
    expect(problem.detail).toContain("fluxRepo.review.mode pull-request");
    expect(problem.detail).not.toContain(gitea.token);
    expect((await gitea.waitForBranch(repo, "main")).commit.id).toBe(before);
  });

  it("never logs the token", () => {
    const logs = berth.logs.join("");
    expect(logs).not.toContain(gitea.token);
    expect(logs).not.toContain(Buffer.from(`${gitea.username}:${gitea.token}`).toString("base64"));
  });

  it("a wrong token fails Berth's start-up with an auth error, not leaking it", async () => {
    const wrong = "0123456789abcdef0123456789abcdef01234567";
    const error = await startBerth({
      remoteUrl: repo.cloneUrl,
      env: { BERTH_GIT_USERNAME: gitea.username, BERTH_GIT_TOKEN: wrong },
    }).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(error?.message).toMatch(/auth|credential|401|403|denied/i);
    expect(error?.message).not.toContain(wrong);
  });
});
