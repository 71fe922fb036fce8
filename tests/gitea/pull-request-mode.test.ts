// needs: gitea dist
/**
 * Berth's API in pull-request mode (fluxRepo.review, ADR 0030) against a real Gitea: onboarding answers 202 with the
 * pull request, main does not move and the team is not served until a reviewer merges; bad input is refused before
 * any branch is pushed; main is protected (no push, one approval), as most fleet repositories' is. Adopting a
 * hand-written team is proposed the same way.
 */
import {
  adoptionProposalResponse,
  deleteProposalResponse,
  proposalResponse,
  reviewListResponse,
  reviewResponse,
  rolloutResponse,
  statusResponse,
} from "@berth/api-contract";
import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, REPO_ROOT, startBerth, uiSessionCookie, type RunningBerth } from "../support/berth.js";
import { ensureBuilt } from "../support/build.js";
import { CliHarness } from "../support/cli.js";
import { readAnswer } from "../support/contract.js";
import { basicAuthEnv, pushTree } from "../support/git-remotes.js";
import { startGitea, type GiteaRepo, type RunningGitea } from "../support/gitea.js";
import { eventually } from "../support/wait.js";
import { ScriptedStatusReader } from "../support/scripted-status.js";
import type { TeamStatusReader } from "../../apps/api/src/adapters/team-status.js";
import type { WaveProposals } from "../../apps/api/src/services/rollouts/ports.js";

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

  /** The CLI, and the flags that point it at this Berth as the dev token's caller. */
  const cliOnBerth = async () => {
    const cli = await CliHarness.create();
    const tokenFile = join(cli.home, "token");
    await writeFile(tokenFile, `${DEV_TOKEN}\n`, { mode: 0o600 });
    return { cli, connection: ["--server", berth.url, "--token-file", tokenFile] };
  };
  /** POST /v1/teams of a team in dev. */
  const onboard = (api: RunningBerth, name: string) =>
    api.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: auth,
      payload: { name, owners: [OWNER], environments: ["dev"] },
    });
  /** Waits until `api` serves `team` from main (its pull request merged). */
  const servedFromMain = (api: RunningBerth, team: string) =>
    eventually(
      `${team} served from main`,
      async () => (await api.server.inject({ url: `/v1/teams/${team}`, headers: auth })).statusCode === 200,
      30_000,
    );
  /** `team` onboarded through a pull request on `fleet`, merged there, and served from main. */
  const onboardMerged = async (api: RunningBerth, fleet: GiteaRepo, team: string) => {
    const created = await onboard(api, team);
    expect(created.statusCode, created.body).toBe(202);
    await gitea.merge(fleet, readAnswer(created, proposalResponse).pullRequest.number);
    await servedFromMain(api, team);
  };
  /** A rollout of `team` to v3 in one wave: its id. */
  const startRollout = async (api: RunningBerth, team: string) => {
    const started = await api.server.inject({
      method: "POST",
      url: "/v1/rollouts",
      headers: auth,
      payload: {
        description: `${team} to v3`,
        target: { templateVersion: "v3" },
        selector: { names: [team] },
        waves: [{ name: "only" }],
      },
    });
    expect(started.statusCode, started.body).toBe(201);
    return started.json().rollout.metadata.name as string;
  };
  /** Berth's API in pull-request mode on this repository, with this forge token. */
  const startReviewedBerth = (
    forgeToken: string,
    {
      clusters,
      on = repo,
      ...opts
    }: {
      listen?: boolean;
      startEngine?: boolean;
      statusReader?: TeamStatusReader;
      clusters?: string[];
      /** The fleet repository: the suite's unless said. */
      on?: GiteaRepo;
    } = {},
  ) =>
    startBerth({
      remoteUrl: on.cloneUrl,
      ...opts,
      env: { BERTH_GIT_USERNAME: gitea.username, BERTH_GIT_TOKEN: gitea.token, BERTH_FORGE_TOKEN: forgeToken },
      config: (raw) => {
        raw.fluxRepo = {
          ...(raw.fluxRepo as object),
          review: { mode: "pull-request", forge: "gitea", url: gitea.url, owner: on.owner, repository: on.name },
        };
        const platform = raw.platform as Record<string, unknown>;
        platform.fluxSource = { kind: "ExternalArtifact", artifactPrefix: "team-files-" };
        platform.layout = { appliedBy: "slices" };
        if (clusters) raw.api.clusters = Object.fromEntries(clusters.map((c) => [c, { kubeconfig: "/dev/null" }]));
      },
    });

  beforeAll(async () => {
    gitea = await startGitea();
    repo = await gitea.createRepo("fleet", { autoInit: true });
    // As most fleet repositories' main: no push, one approving review before a merge.
    await gitea.protectBranch(repo, "main");
    await ensureBuilt();
    berth = await startReviewedBerth(gitea.token, { listen: true });
  }, 600_000);
  afterAll(async () => {
    await berth?.stop();
    await gitea?.stop();
  });

  it("onboarding answers 202 with the pull request; the team is served once a reviewer merges it", async () => {
    const before = (await gitea.waitForBranch(repo, "main")).commit.id;
    const res = await onboard(berth, "payments");
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

    await gitea.merge(repo, answer.pullRequest.number);
    await servedFromMain(berth, "payments");
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

  it("main is protected: nobody pushes to it, and a pull request merges only once approved", async () => {
    const res = await onboard(berth, "inventory");
    expect(res.statusCode, res.body).toBe(202);
    const { pullRequest, revision } = readAnswer(res, proposalResponse);
    // Berth's own credentials cannot put its commit on main...
    const dir = await mkdtemp(join(tmpdir(), "berth-protected-"));
    const authed = repo.cloneUrl.replace("://", `://${gitea.username}:${gitea.token}@`);
    const git = (...args: string[]) => spawnSync("git", args, { cwd: dir, encoding: "utf8" });
    expect(git("clone", "--quiet", authed, ".").status).toBe(0);
    expect(git("fetch", "--quiet", "origin", "berth/team/inventory").status).toBe(0);
    const pushed = git("push", "origin", `${revision}:refs/heads/main`);
    expect(pushed.status).not.toBe(0);
    expect(pushed.stderr).toContain("Not allowed to push to protected branch main");
    // ...and a merge waits for an approving review (gitea.merge approves first).
    const unapproved = await gitea.api(`/repos/${repo.owner}/${repo.name}/pulls/${pullRequest.number}/merge`, {
      method: "POST",
      body: JSON.stringify({ Do: "merge" }),
    });
    expect(unapproved.status, await unapproved.clone().text()).toBe(405);
    await rm(dir, { recursive: true, force: true });
    const withdrawn = await berth.server.inject({ method: "DELETE", url: "/v1/teams/inventory", headers: auth });
    expect(withdrawn.statusCode, withdrawn.body).toBe(200);
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

  it("refuses a rollout without waves (one commit of every team) with a problem, and pushes nothing", async () => {
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
    expect(res.json().detail).toContain("give it waves: each is proposed as one pull request");
    expect(await branches()).toEqual(before);
    expect((await gitea.waitForBranch(repo, "main")).commit.id).toBe(mainBefore);
  });

  it("berth apply says the change was proposed, naming its pull request", async () => {
    const { cli, connection } = await cliOnBerth();
    const file = join(cli.home, "ledger.yaml");
    await writeFile(file, `name: ledger\nowners: [${OWNER}]\nenvironments: [dev]\n`);
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

  it("lists every change in review (GET /v1/reviews), and berth get teams shows them below the teams on main", async () => {
    const open = (await (
      await gitea.api(`/repos/${repo.owner}/${repo.name}/pulls?state=open&limit=50`)
    ).json()) as Array<{ number: number; html_url: string; head: { ref: string } }>;
    const numberOf = (team: string) => open.find((p) => p.head.ref === `berth/team/${team}`)?.number;
    const res = await berth.server.inject({ url: "/v1/reviews", headers: auth });
    // payments is on main with its offboarding in review; search and ledger are new teams in review.
    expect(readAnswer(res, reviewListResponse)).toEqual({
      review: "pull-request",
      items: ["ledger", "payments", "search"].map((team) => ({
        team,
        pullRequest: {
          number: numberOf(team),
          url: open.find((p) => p.number === numberOf(team))?.html_url,
          state: "open",
        },
      })),
    });

    const { cli, connection } = await cliOnBerth();
    const listed = await cli.run(["get", "teams", ...connection]);
    expect(listed.code, listed.stderr).toBe(0);
    const lines = listed.stdout.split("\n");
    expect(lines[0]).toMatch(/^NAME\s+ENVIRONMENTS\s+READY\s+STATUS/);
    expect(lines[1]).toMatch(/^payments\s/);
    expect(lines.slice(2, 5)).toEqual([
      "",
      "In review (3 pull requests; each applies once merged):",
      expect.stringMatching(/^NAME\s+PULL REQUEST\s+REVIEW\s+URL$/),
    ]);
    for (const team of ["ledger", "payments", "search"])
      expect(listed.stdout).toMatch(new RegExp(`\\n${team}\\s+#${numberOf(team)}\\s+open\\s+http`));
    // -o name and -o yaml stay what apply takes back: the teams on main only.
    expect((await cli.run(["get", "teams", "-o", "name", ...connection])).stdout).toBe("team/payments\n");
  });

  it("a team in review has a status that starts with its pull request; closed without merge, it says nothing was applied (CLI, status page)", async () => {
    const res = await onboard(berth, "orders");
    expect(res.statusCode, res.body).toBe(202);
    const { pullRequest } = readAnswer(res, proposalResponse);
    const status = async () =>
      readAnswer(await berth.server.inject({ url: "/v1/teams/orders/status", headers: auth }), statusResponse);
    expect(await status()).toMatchObject({
      team: "orders",
      ready: false,
      clusters: [],
      review: { ...pullRequest, state: "open" },
    });

    // A reviewer asks for changes: the status says so.
    const reviewer = await gitea.createReviewer(repo, "reviewer");
    const reviewed = await gitea.api(`/repos/${repo.owner}/${repo.name}/pulls/${pullRequest.number}/reviews`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `token ${reviewer.token}` },
      body: JSON.stringify({ event: "REQUEST_CHANGES", body: "not this name" }),
    });
    expect(reviewed.status, await reviewed.text()).toBe(200);
    await eventually(
      "the status says changes were requested",
      async () => (await status()).review?.state === "changes-requested",
      15_000,
    );

    // Closed without merge: nothing of it reached main, and its status says so.
    const closed = await gitea.api(`/repos/${repo.owner}/${repo.name}/pulls/${pullRequest.number}`, {
      method: "PATCH",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ state: "closed" }),
    });
    expect(closed.status).toBe(201);
    await eventually("the status says it was closed", async () => (await status()).review?.state === "closed", 15_000);
    expect(await status()).toMatchObject({ clusters: [], review: { number: pullRequest.number } });

    // `berth status --watch` ends there, saying why; the status page says the same.
    const { cli, connection } = await cliOnBerth();
    const watched = await cli.run(["status", "orders", "--watch", "--timeout", "30s", ...connection]);
    expect(watched.code, watched.stdout + watched.stderr).toBe(1);
    expect(watched.stderr).toContain(
      `error: team orders: pull request #${pullRequest.number} was closed without merge: nothing of it was applied (${pullRequest.url})`,
    );
    const page = await berth.server.inject({
      url: "/ui/teams/orders",
      headers: { cookie: await uiSessionCookie(berth) },
    });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('data-review-state="closed"');
    expect(page.body).toContain(`<a href="${pullRequest.url}">Pull request #${pullRequest.number}</a>`);
    expect(page.body).toContain("was closed without merge: nothing of it was applied");
  });

  it("offboarding a team that is only in review closes its pull request, commits nothing, and says so", async () => {
    const res = await onboard(berth, "refunds");
    expect(res.statusCode, res.body).toBe(202);
    const { pullRequest } = readAnswer(res, proposalResponse);
    const mainBefore = (await gitea.waitForBranch(repo, "main")).commit.id;
    const logsFrom = berth.logs.length;

    const { cli, connection } = await cliOnBerth();
    const deleted = await cli.run(["delete", "team", "refunds", "--yes", ...connection]);
    expect(deleted.stderr).toBe("");
    expect(deleted.code).toBe(0);
    expect(deleted.stdout).toBe(
      `team/refunds was only in review: closed pull request #${pullRequest.number} (${pullRequest.url}) without merge; nothing of it was applied\n`,
    );
    const pull = (await (await gitea.api(`/repos/${repo.owner}/${repo.name}/pulls/${pullRequest.number}`)).json()) as {
      state: string;
      merged: boolean;
    };
    expect(pull).toMatchObject({ state: "closed", merged: false });
    expect((await gitea.waitForBranch(repo, "main")).commit.id).toBe(mainBefore);
    const audit = berth
      .logEntries<{ audit?: { action: string; outcome: string; pullRequest: number | null } }>(logsFrom)
      .flatMap((l) => (l.audit ? [l.audit] : []));
    expect(audit).toEqual([
      expect.objectContaining({ action: "delete", outcome: "withdrawn", pullRequest: pullRequest.number }),
    ]);
  });

  it("berth delete of a team on main proposes its offboarding, naming the pull request, and main keeps the team", async () => {
    await onboardMerged(berth, repo, "invoices");
    const mainBefore = (await gitea.waitForBranch(repo, "main")).commit.id;

    const { cli, connection } = await cliOnBerth();
    const deleted = await cli.run(["delete", "team", "invoices", "--yes", ...connection]);
    expect(deleted.stderr).toBe("");
    expect(deleted.code).toBe(0);
    const match = /^team\/invoices deletion proposed in pull request #(\d+) \((\S+)\): applied once merged\n$/.exec(
      deleted.stdout,
    );
    expect(match, deleted.stdout).not.toBeNull();
    const pulls = (await (
      await gitea.api(`/repos/${repo.owner}/${repo.name}/pulls?state=open&limit=50`)
    ).json()) as Array<{ number: number; html_url: string; head: { ref: string } }>;
    const pull = pulls.find((p) => p.head.ref === "berth/team/invoices");
    expect([String(pull?.number), pull?.html_url]).toEqual([match![1], match![2]]);
    // Nothing is gone until a reviewer merges it.
    expect((await gitea.waitForBranch(repo, "main")).commit.id).toBe(mainBefore);
    expect((await berth.server.inject({ url: "/v1/teams/invoices", headers: auth })).statusCode).toBe(200);
  });

  it("adoption is proposed too: one pull request with the team's files and the hand-written Kustomizations suspended", async () => {
    // A fleet repository whose teams were written by hand (tests/fixtures/adoption/repo), then protected.
    const tenants = await gitea.createRepo("tenants");
    const handWritten = await pushTree({
      url: tenants.cloneUrl,
      dir: join(REPO_ROOT, "tests/fixtures/adoption/repo"),
      subject: "tenants: payments and search (by hand)",
      env: basicAuthEnv(gitea.username, gitea.token),
    });
    // Gitea takes the first push into an empty repository through a queue: until it has, its API still answers for
    // the empty one (fresh-ci saw GET /pulls answer 404 there, under load). A fleet repository is not that new.
    await gitea.waitForBranch(tenants, "main", handWritten);
    await eventually(
      "Gitea lists the new repository's pull requests",
      async () => (await gitea.api(`/repos/${tenants.owner}/${tenants.name}/pulls?state=open`)).status === 200,
      30_000,
    );
    await gitea.protectBranch(tenants, "main");
    const adopter = await startReviewedBerth(gitea.token, { on: tenants });
    try {
      const res = await adopter.server.inject({
        method: "POST",
        url: "/v1/teams/payments/adopt",
        headers: auth,
        payload: { keepAzureNames: true },
      });
      expect(res.statusCode, res.body).toBe(202);
      const answer = readAnswer(res, adoptionProposalResponse);
      expect(res.headers.location).toBe(answer.pullRequest.url);
      expect(answer.files.map((f) => f.path)).toContain("clusters/aks-dev-weu/tenants/payments.yaml");
      // Nothing is adopted on main; the branch holds the adoption's one commit, hand-written files edited in it.
      expect((await gitea.waitForBranch(tenants, "main")).commit.id).toBe(handWritten);
      const branch = await gitea.waitForBranch(tenants, "berth/team/payments", answer.revision);
      expect(branch.commit.id).toBe(answer.revision);
      const suspended = await gitea.api(
        `/repos/${tenants.owner}/${tenants.name}/raw/clusters/aks-dev-weu/tenants/payments.yaml?ref=berth/team/payments`,
      );
      expect(await suspended.text()).toContain("suspend: true");
      expect((await adopter.server.inject({ url: "/v1/teams/payments", headers: auth })).statusCode).toBe(404);

      await gitea.merge(tenants, answer.pullRequest.number);
      await servedFromMain(adopter, "payments");
    } finally {
      await adopter.stop();
    }
  });

  it("a forge that refuses Berth's token gets a clear 502 naming the forge's answer, never the token, and no branch", async () => {
    const before = await branches();
    const wrongToken = "0123456789abcdef0123456789abcdef01234567";
    const refused = await startReviewedBerth(wrongToken);
    try {
      const res = await onboard(refused, "billing");
      expect(res.statusCode, res.body).toBe(502);
      expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({
        type: "https://berth.dev/problems/forge-unavailable",
        detail: expect.stringMatching(/^Gitea refused GET \/pulls\S*: 401 .*; nothing was proposed$/),
      });
      expect(res.body).not.toContain(wrongToken);
      expect(await branches()).toEqual(before);
      // Reads: a team in the Flux repo keeps its status, without the review line; one only in review cannot be shown.
      const onMain = await refused.server.inject({ url: "/v1/teams/payments/status", headers: auth });
      expect(onMain.statusCode, onMain.body).toBe(200);
      expect(readAnswer(onMain, statusResponse).review).toBeUndefined();
      const inReviewOnly = await refused.server.inject({ url: "/v1/teams/orders/status", headers: auth });
      expect(inReviewOnly.statusCode, inReviewOnly.body).toBe(502);
      expect(inReviewOnly.json().detail).toMatch(/^Gitea refused GET \/pulls\S*: 401 [^;]*$/);
      expect(refused.logs.join("")).not.toContain(wrongToken);
    } finally {
      await refused.stop();
    }
  });

  describe("aborting a rollout whose wave waits in a pull request, with two replicas of Berth", () => {
    // Their own repository: the suite's Berth runs an engine that would follow these rollouts too.
    let fleet: GiteaRepo;
    /** Two replicas on `fleet` (a gate needs every cluster of the wave readable); the tests step their engines. */
    const replicas = () =>
      Promise.all(
        [0, 1].map(() =>
          startReviewedBerth(gitea.token, {
            on: fleet,
            startEngine: false,
            statusReader: new ScriptedStatusReader(),
            clusters: ["aks-dev-weu"],
          }),
        ),
      );
    /** `team` onboarded and merged, and a one-wave rollout of it to v3 whose wave is proposed: its id and PR. */
    const proposedRollout = async (api: RunningBerth, team: string) => {
      await onboardMerged(api, fleet, team);
      const id = await startRollout(api, team);
      await api.services.engine.tick();
      const wave = (await rolloutOf(api, id)).status.waves[0];
      expect(wave?.phase).toBe("Proposed");
      return { id, pullRequest: wave!.pullRequest!.number };
    };
    const rolloutOf = async (api: RunningBerth, id: string) =>
      readAnswer(await api.server.inject({ url: `/v1/rollouts/${id}`, headers: auth }), rolloutResponse).rollout;
    /** The WaveProposals one replica's engine and rollout service share. */
    const wavesOf = (api: RunningBerth) =>
      (api.services.engine as unknown as { opts: { proposals: WaveProposals } }).opts.proposals;
    const pullRequestState = async (number: number) =>
      ((await (await gitea.api(`/repos/${fleet.owner}/${fleet.name}/pulls/${number}`)).json()) as { state: string })
        .state;
    const auditedActions = (api: RunningBerth, id: string, from: number) =>
      api
        .logEntries<{ audit?: { action: string; rollout: string | null } }>(from)
        .flatMap((l) => (l.audit?.rollout === id ? [l.audit.action] : []));

    /** Two replicas, and a rollout of `team` whose wave waits in a pull request (proposed by `aborting`). */
    const onReplicas = async (
      team: string,
      body: (at: { aborting: RunningBerth; other: RunningBerth; id: string; pullRequest: number }) => Promise<void>,
    ) => {
      const [aborting, other] = await replicas();
      try {
        await body({ aborting: aborting!, other: other!, ...(await proposedRollout(aborting!, team)) });
      } finally {
        await Promise.all([aborting?.stop(), other?.stop()]);
      }
    };
    const abort = (api: RunningBerth, id: string) =>
      api.server.inject({ method: "POST", url: `/v1/rollouts/${id}/abort`, headers: auth });

    beforeAll(async () => {
      fleet = await gitea.createRepo("fleet-aborts", { autoInit: true });
    });

    it("the pull request is closed after the abort's commit, so no replica's engine takes that close for a reviewer's (no halt)", async () => {
      await onReplicas("treasury", async ({ aborting, other, id, pullRequest }) => {
        // The race made certain: the moment the pull request is closed, a pass of each replica's engine runs. The
        // aborting replica's waits for the abort to end; the other's does not. Had the close come before the
        // abort's commit, the other would see a closed pull request of a Running rollout, and halt it.
        const waves = wavesOf(aborting);
        const close = waves.close.bind(waves);
        let ownPass: Promise<void> | undefined;
        waves.close = async (number) => {
          await close(number);
          ownPass = aborting.services.engine.tick();
          await other.services.engine.tick();
        };
        const [fromAborting, fromOther] = [aborting.logEntries().length, other.logEntries().length];
        const aborted = await abort(aborting, id);
        expect(aborted.statusCode, aborted.body).toBe(200);
        expect(ownPass).toBeDefined();
        await ownPass;
        const after = await rolloutOf(aborting, id);
        expect(after.status.phase).toBe("Aborted");
        expect(after.status.halt).toBeUndefined();
        expect(await pullRequestState(pullRequest)).toBe("closed");
        expect(auditedActions(aborting, id, fromAborting)).toEqual(["rollout-abort"]);
        expect(auditedActions(other, id, fromOther)).toEqual([]);
      });
    });

    it("a pull request the abort could not close is closed by the next poll of any replica's engine", async () => {
      await onReplicas("ledger", async ({ aborting, other, id, pullRequest }) => {
        wavesOf(aborting).close = () => Promise.reject(new Error("the forge answered 503"));
        const from = aborting.logEntries().length;
        const aborted = await abort(aborting, id);
        // The abort is committed: it is answered as done, and the close is left to the engines.
        expect(aborted.statusCode, aborted.body).toBe(200);
        expect((await rolloutOf(aborting, id)).status.phase).toBe("Aborted");
        expect(await pullRequestState(pullRequest)).toBe("open");
        expect(
          aborting.logEntries<{ msg: string; pullRequest?: number }>(from).filter((l) => l.pullRequest === pullRequest),
        ).toContainEqual(
          expect.objectContaining({
            msg: "closing the pull request of an aborted rollout failed; retrying at the next poll",
          }),
        );
        await aborting.services.engine.tick();
        expect(await pullRequestState(pullRequest)).toBe("open");
        // Another replica (or this one, once the forge answers) closes it.
        await other.services.engine.tick();
        expect(await pullRequestState(pullRequest)).toBe("closed");
        expect((await rolloutOf(other, id)).status.halt).toBeUndefined();
      });
    });
  });

  describe("the forge's webhook: Gitea's signed pull request events reach Berth", () => {
    const SECRET = "gitea-webhook-secret-3c9e1f7a20";
    let fleet: GiteaRepo;
    let api: RunningBerth;

    beforeAll(async () => {
      fleet = await gitea.createRepo("fleet-webhooks", { autoInit: true });
      // The engine's own poll of a wave's pull request is 10 minutes: only the webhook can start a gate sooner.
      api = await startBerth({
        remoteUrl: fleet.cloneUrl,
        listen: true,
        statusReader: new ScriptedStatusReader(),
        env: {
          BERTH_GIT_USERNAME: gitea.username,
          BERTH_GIT_TOKEN: gitea.token,
          BERTH_FORGE_TOKEN: gitea.token,
          BERTH_FORGE_WEBHOOK_SECRET: SECRET,
        },
        config: (raw) => {
          raw.fluxRepo = {
            ...raw.fluxRepo,
            review: {
              mode: "pull-request",
              forge: "gitea",
              url: gitea.url,
              owner: fleet.owner,
              repository: fleet.name,
            },
          };
          raw.platform.fluxSource = { kind: "ExternalArtifact", artifactPrefix: "team-files-" };
          raw.platform.layout = { appliedBy: "slices" };
          raw.api.clusters = { "aks-dev-weu": { kubeconfig: "/dev/null" } };
          raw.api.rollouts = { pollIntervalMs: 600_000, gateTimeoutSeconds: 300 };
        },
      });
      const hook = await gitea.api(`/repos/${fleet.owner}/${fleet.name}/hooks`, {
        method: "POST",
        body: JSON.stringify({
          type: "gitea",
          active: true,
          events: ["push", "pull_request", "pull_request_review"],
          config: { url: `${api.url}/v1/forge/events`, content_type: "json", secret: SECRET },
        }),
      });
      expect(hook.status, await hook.text()).toBe(201);
    }, 120_000);
    afterAll(async () => {
      await api?.stop();
    });

    it("a merged wave's gate starts at the merge's event, not at the engine's next poll (10 minutes)", async () => {
      await onboardMerged(api, fleet, "forex");
      const id = await startRollout(api, "forex");
      const waveOf = async () =>
        readAnswer(await api.server.inject({ url: `/v1/rollouts/${id}`, headers: auth }), rolloutResponse).rollout
          .status.waves[0];
      // Created: the engine is kicked at once and proposes the wave.
      await eventually("the wave proposed", async () => (await waveOf())?.phase === "Proposed", 30_000);
      const from = api.logs.length;
      await gitea.merge(fleet, (await waveOf())!.pullRequest!.number);
      await eventually("the wave committed", async () => (await waveOf())?.phase !== "Proposed", 20_000);
      expect((await waveOf())?.phase).toMatch(/^(Committed|Ready)$/);
      expect(api.logEntries<{ msg: string; rollout?: string }>(from)).toContainEqual(
        expect.objectContaining({ msg: "pull request changed", rollout: id }),
      );
    });
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
