// needs: gitea dist
/**
 * Berth's API in pull-request mode (fluxRepo.review, ADR 0030) against a real Gitea: onboarding answers 202 with the
 * pull request, main does not move and the team is not served until a reviewer merges; bad input is refused before
 * any branch is pushed. (Team onboarding only so far: issue 38.)
 */
import { deleteProposalResponse, proposalResponse, reviewResponse } from "@berth/api-contract";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, startBerth, type RunningBerth } from "../support/berth.js";
import { ensureBuilt } from "../support/build.js";
import { CliHarness } from "../support/cli.js";
import { readAnswer } from "../support/contract.js";
import { startGitea, type GiteaRepo, type RunningGitea } from "../support/gitea.js";
import { eventually } from "../support/wait.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const auth = { authorization: `Bearer ${DEV_TOKEN}` };

describe("pull-request mode: Berth proposes each team write as a pull request on Gitea", () => {
  let gitea: RunningGitea;
  let repo: GiteaRepo;
  let berth: RunningBerth;

  const branches = async () =>
    ((await (await gitea.api(`/repos/${repo.owner}/${repo.name}/branches`)).json()) as Array<{ name: string }>)
      .map((b) => b.name)
      .sort();

  beforeAll(async () => {
    gitea = await startGitea();
    repo = await gitea.createRepo("fleet", { autoInit: true });
    await ensureBuilt();
    berth = await startBerth({
      remoteUrl: repo.cloneUrl,
      listen: true,
      env: { BERTH_GIT_USERNAME: gitea.username, BERTH_GIT_TOKEN: gitea.token, BERTH_FORGE_TOKEN: gitea.token },
      config: (raw) => {
        raw.fluxRepo = {
          ...(raw.fluxRepo as object),
          review: { mode: "pull-request", forge: "gitea", url: gitea.url, owner: repo.owner, repository: repo.name },
        };
        const platform = raw.platform as Record<string, unknown>;
        platform.fluxSource = { kind: "ExternalArtifact", artifactPrefix: "team-files-" };
        platform.layout = { appliedBy: "slices" };
      },
    });
  }, 600_000);
  afterAll(async () => {
    await berth?.stop();
    await gitea?.stop();
  });

  it("onboarding answers 202 with the pull request; the team is served once a reviewer merges it", async () => {
    const before = (await gitea.waitForBranch(repo, "main")).commit.id;
    const res = await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: auth,
      payload: { name: "payments", owners: [OWNER], environments: ["dev"] },
    });
    expect(res.statusCode, res.body).toBe(202);
    const answer = readAnswer(res, proposalResponse);
    expect(answer.pullRequest).toMatchObject({ state: "open" });
    expect(res.headers.location).toBe(answer.pullRequest.url);
    expect((await gitea.waitForBranch(repo, "berth/team/payments", answer.revision)).commit.id).toBe(answer.revision);
    expect((await gitea.waitForBranch(repo, "main")).commit.id).toBe(before);
    expect((await berth.server.inject({ url: "/v1/teams/payments", headers: auth })).statusCode).toBe(404);
    // Where its change stands: the open pull request.
    const inReview = await berth.server.inject({ url: "/v1/teams/payments/review", headers: auth });
    expect(readAnswer(inReview, reviewResponse)).toEqual({ team: "payments", pullRequest: answer.pullRequest });

    const merged = await eventually(
      "the pull request merged",
      async () => {
        const r = await gitea.api(`/repos/${repo.owner}/${repo.name}/pulls/${answer.pullRequest.number}/merge`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ Do: "merge" }),
        });
        return r.status === 200;
      },
      60_000,
    );
    expect(merged).toBe(true);
    await eventually(
      "the team served from main",
      async () => (await berth.server.inject({ url: "/v1/teams/payments", headers: auth })).statusCode === 200,
      30_000,
    );
    const reviewed = await berth.server.inject({ url: "/v1/teams/payments/review", headers: auth });
    expect(reviewed.statusCode).toBe(404);
    expect(reviewed.json()).toMatchObject({ type: "https://berth.dev/problems/no-pending-review" });

    // The next change starts a new pull request from main (the merged branch is no pending change); so does offboarding.
    const updated = await berth.server.inject({
      method: "PUT",
      url: "/v1/teams/payments",
      headers: auth,
      payload: { owners: [OWNER], environments: ["dev"], labels: { "cost-center": "cc-7" } },
    });
    expect(updated.statusCode, updated.body).toBe(202);
    const update = readAnswer(updated, proposalResponse);
    expect(update.pullRequest.number).not.toBe(answer.pullRequest.number);
    const commits = (await (
      await gitea.api(`/repos/${repo.owner}/${repo.name}/pulls/${update.pullRequest.number}/commits`)
    ).json()) as Array<{ sha: string }>;
    expect(commits.map((c) => c.sha)).toEqual([update.revision]);
    const offboarded = await berth.server.inject({ method: "DELETE", url: "/v1/teams/payments", headers: auth });
    expect(offboarded.statusCode, offboarded.body).toBe(202);
    expect(readAnswer(offboarded, deleteProposalResponse).pullRequest.number).toBe(update.pullRequest.number);
  });

  it("a retry with the same Idempotency-Key is answered from the branch's commit, with the same pull request", async () => {
    const send = () =>
      berth.server.inject({
        method: "POST",
        url: "/v1/teams",
        headers: { ...auth, "idempotency-key": "onboard-search-1" },
        payload: { name: "search", owners: [OWNER], environments: ["dev"] },
      });
    const first = await send();
    expect(first.statusCode, first.body).toBe(202);
    const again = await send();
    expect(again.statusCode, again.body).toBe(202);
    expect(again.headers["idempotent-replayed"]).toBe("true");
    const [a, b] = [readAnswer(first, proposalResponse), readAnswer(again, proposalResponse)];
    expect(b.revision).toBe(a.revision);
    expect(b.pullRequest.number).toBe(a.pullRequest.number);
  });

  it("refuses a rollout (not proposed yet) with a problem, and pushes nothing", async () => {
    const before = await branches();
    const mainBefore = (await gitea.waitForBranch(repo, "main")).commit.id;
    const res = await berth.server.inject({
      method: "POST",
      url: "/v1/rollouts",
      headers: auth,
      payload: { description: "every team to v3", target: { templateVersion: "v3" } },
    });
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json()).toMatchObject({ type: "https://berth.dev/problems/not-proposed" });
    expect(await branches()).toEqual(before);
    expect((await gitea.waitForBranch(repo, "main")).commit.id).toBe(mainBefore);
  });

  it("berth apply says the change was proposed, naming its pull request", async () => {
    const cli = await CliHarness.create();
    const tokenFile = join(cli.home, "token");
    await writeFile(tokenFile, `${DEV_TOKEN}\n`, { mode: 0o600 });
    const file = join(cli.home, "ledger.yaml");
    await writeFile(file, `name: ledger\nowners: [${OWNER}]\nenvironments: [dev]\n`);
    const connection = ["--server", berth.url, "--token-file", tokenFile];
    const applied = await cli.run(["apply", "-f", file, ...connection]);
    expect(applied.stderr).toBe("");
    expect(applied.code).toBe(0);
    const match = /^team\/ledger proposed in pull request #(\d+) \((\S+)\): applied once merged\n$/.exec(
      applied.stdout,
    );
    expect(match, applied.stdout).not.toBeNull();
    const pulls = (await (
      await gitea.api(`/repos/${repo.owner}/${repo.name}/pulls?state=open&limit=50`)
    ).json()) as Array<{ number: number; html_url: string; head: { ref: string } }>;
    const pull = pulls.find((p) => p.head.ref === "berth/team/ledger");
    expect([String(pull?.number), pull?.html_url]).toEqual([match![1], match![2]]);
  });

  it("refuses bad input before any branch is pushed", async () => {
    const before = await branches();
    const res = await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: auth,
      payload: { name: "Not A Name", owners: [OWNER], environments: ["dev"] },
    });
    expect(res.statusCode).toBe(422);
    expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(await branches()).toEqual(before);
  });
});
