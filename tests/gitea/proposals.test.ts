// needs: gitea
/**
 * Pull-request mode's writer (apps/api/src/adapters/proposals.ts, ADR 0030) against a real Gitea: each team's change
 * is a commit on its own branch and one pull request; a second change to the team updates that pull request; twenty
 * teams proposed at once merge in any order without a conflict, because with the slices layout (ADR 0032) a team's
 * change writes only that team's paths; and a layout that writes shared indexes is refused before any branch is
 * pushed.
 */
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { loadTemplateCatalog } from "@berth/config";
import { Onboarding, platformSchema, repoLayout, type Platform, type RepoTree } from "@berth/core";
import { FluxRepo, ForgeError, GiteaForge } from "@berth/gitops";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProposalSweeper, ProposingWriter } from "../../apps/api/src/adapters/proposals.js";
import { REPO_ROOT } from "../support/berth.js";
import { makeTempDir } from "../support/git-remotes.js";
import { startGitea, type GiteaRepo, type RunningGitea } from "../support/gitea.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const origin = { actor: "tester", requestId: "proposals-test" };

/** The embedded default's platform (infra/local/berth.yaml) on a layout: what Berth would render with. */
async function localPlatform(layout: "slices" | "cluster-index"): Promise<Platform> {
  const raw = parse(await readFile(join(REPO_ROOT, "infra", "local", "berth.yaml"), "utf8")) as {
    platform: Record<string, unknown>;
  };
  return platformSchema.parse({
    ...raw.platform,
    fluxSource: { kind: "ExternalArtifact", artifactPrefix: "team-files-" },
    layout: { appliedBy: layout },
  });
}

describe("pull-request mode's writer on a real Gitea", () => {
  let gitea: RunningGitea;
  let repo: GiteaRepo;
  let flux: FluxRepo;
  let workDir: string;
  let onboarding: Onboarding;
  let writer: ProposingWriter;
  let indexed: ProposingWriter;
  let indexedOnboarding: Onboarding;
  let forge: GiteaForge;

  const pulls = async (state: "open" | "closed" | "all") =>
    (await (await gitea.api(`/repos/${repo.owner}/${repo.name}/pulls?state=${state}&limit=50`)).json()) as Array<{
      number: number;
      head: { ref: string };
      merged: boolean;
    }>;
  const branchExists = async (branch: string) =>
    (await gitea.api(`/repos/${repo.owner}/${repo.name}/branches/${encodeURIComponent(branch)}`)).status === 200;
  const mainHead = async () => (await gitea.waitForBranch(repo, "main")).commit.id;
  const onboardWith = (o: () => Onboarding) => (name: string) => (tree: RepoTree) =>
    o()
      .planCreate(tree, { name, owners: [OWNER], environments: ["dev"] })
      .then((p) => p.change);
  const onboard = onboardWith(() => onboarding);
  /** Merges as a reviewer would; a conflict fails (after Gitea's own test of the pull request against main). */
  const merge = (number: number) => gitea.merge(repo, number);

  beforeAll(async () => {
    gitea = await startGitea();
    repo = await gitea.createRepo("fleet", { autoInit: true });
    // main takes approved pull requests only (gitea.merge approves first).
    await gitea.protectBranch(repo, "main");
    workDir = await makeTempDir("berth-proposals-");
    flux = FluxRepo.fromConfig({
      url: repo.cloneUrl,
      branch: "main",
      workDir: join(workDir, "clone"),
      author: { name: "Berth", email: "berth@example.test" },
      auth: { kind: "token", username: gitea.username, token: gitea.token },
    });
    forge = new GiteaForge({
      url: gitea.url,
      owner: repo.owner,
      repo: repo.name,
      token: async () => gitea.token,
    });
    const slices = await localPlatform("slices");
    onboarding = new Onboarding(
      slices,
      await loadTemplateCatalog(join(REPO_ROOT, "templates"), slices.templateVersion),
    );
    writer = new ProposingWriter(flux, forge, repoLayout(slices));
    const clusterIndex = await localPlatform("cluster-index");
    indexedOnboarding = new Onboarding(
      clusterIndex,
      await loadTemplateCatalog(join(REPO_ROOT, "templates"), clusterIndex.templateVersion),
    );
    indexed = new ProposingWriter(flux, forge, repoLayout(clusterIndex));
  }, 120_000);
  afterAll(async () => {
    await flux?.close();
    await gitea?.stop();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  it("proposes a team on its own branch and pull request; main does not move; a second change updates the same pull request", async () => {
    const before = await mainHead();
    const first = await writer.propose({ team: "alpha" }, onboard("alpha"), origin);
    expect(first).toMatchObject({ committed: true, created: true, branch: "berth/team/alpha" });
    expect(first.pullRequest).toMatchObject({ head: "berth/team/alpha", base: "main", state: "open" });
    expect(await mainHead()).toBe(before);
    expect(
      first.files.every(
        (p) => p.startsWith("teams/alpha/") || /^clusters\/[^/]+\/teams\/[0-9a-f]{2}\/alpha\.yaml$/.test(p),
      ),
    ).toBe(true);

    // An update planned on the branch (the team is not on main yet), committed on top of it: the same pull request.
    const second = await writer.propose(
      { team: "alpha" },
      (tree) =>
        onboarding
          .planUpdate(tree, "alpha", { owners: [OWNER], environments: ["dev"], labels: { "cost-center": "cc-7" } })
          .then((p) => p.change),
      origin,
    );
    expect(second).toMatchObject({ committed: true, created: false });
    expect(second.pullRequest?.number).toBe(first.pullRequest?.number);
    const commits = (await (
      await gitea.api(`/repos/${repo.owner}/${repo.name}/pulls/${first.pullRequest!.number}/commits`)
    ).json()) as Array<{ sha: string }>;
    expect(commits.map((c) => c.sha)).toEqual([second.revision, first.revision]);
    expect((await pulls("open")).map((p) => p.head.ref)).toEqual(["berth/team/alpha"]);
  });

  it("twenty teams proposed at once merge in any order without a conflict; each team lands on main once", async () => {
    const names = Array.from({ length: 20 }, (_, i) => `${String.fromCharCode(97 + i)}team${i}`);
    const pushesBefore = flux.stats().pushAttempts;
    const proposals = await Promise.all(names.map((name) => writer.propose({ team: name }, onboard(name), origin)));
    const numbers = proposals.map((p) => p.pullRequest!.number);
    expect(new Set(numbers).size).toBe(20);
    // Their branches went to Gitea together, not one push after another: 2 here on an idle machine; the bound leaves
    // room for proposals that reach the writer at different times (each first asks Gitea for an open pull request).
    expect(flux.stats().pushAttempts - pushesBefore).toBeLessThanOrEqual(10);
    // A shuffled order, the same on every run: the order reviewers happen to merge in.
    const order = [...numbers].sort((a, b) => ((a * 7919) % 23) - ((b * 7919) % 23));
    for (const number of order) await merge(number);
    const merged = (await pulls("closed")).filter((p) => numbers.includes(p.number));
    expect(merged.filter((p) => p.merged)).toHaveLength(20);

    const tree = await flux.snapshot(0);
    const onMain = (await tree.list("teams")).filter((p) => p.endsWith("/base/team.yaml"));
    for (const name of names) expect(onMain.filter((p) => p === `teams/${name}/base/team.yaml`)).toHaveLength(1);
    expect(await tree.read("clusters/aks-dev-weu/teams/kustomization.yaml")).toBeUndefined();
  }, 600_000);

  it("refuses a change that writes a shared index (layout cluster-index) before any branch is pushed", async () => {
    await expect(
      indexed.propose({ team: "bravo" }, onboardWith(() => indexedOnboarding)("bravo"), origin),
    ).rejects.toMatchObject({
      code: "path-ownership",
      message: expect.stringMatching(
        /^a change for team "bravo" may not write clusters\/aks-dev-weu\/teams\/.*teams index/,
      ),
    });
    expect(await branchExists("berth/team/bravo")).toBe(false);
  });

  it("lets an adoption edit hand-written files, but no other team's, and a team write neither", async () => {
    const writing = (files: Record<string, string>) => async () => ({
      subject: "berth: adopt team echo",
      files: new Map(Object.entries(files)),
    });
    const own = { "teams/echo/base/team.yaml": "name: echo\n" };
    const handWritten = { ...own, "tenants/echo/kustomization.yaml": "resources: []\n" };
    await expect(writer.propose({ team: "echo" }, writing(handWritten), origin)).rejects.toMatchObject({
      code: "path-ownership",
      message:
        'a change for team "echo" may not write tenants/echo/kustomization.yaml: it is a file outside the teams layout',
    });
    await expect(
      writer.propose({ team: "echo", adopts: true }, writing({ ...own, "teams/alpha/base/team.yaml": "x\n" }), origin),
    ).rejects.toMatchObject({ code: "path-ownership", path: "teams/alpha/base/team.yaml" });
    expect(await branchExists("berth/team/echo")).toBe(false);
    const adopted = await writer.propose({ team: "echo", adopts: true }, writing(handWritten), origin);
    expect(adopted.pullRequest?.state).toBe("open");
    expect((await gitea.waitForBranch(repo, "berth/team/echo", adopted.revision)).commit.id).toBe(adopted.revision);
  });

  it("deletes the branch of a pull request closed without merge, and says so; a branch pushed to since, or closed too recently, is kept", async () => {
    const dropped = await writer.propose({ team: "dropped" }, onboard("dropped"), origin);
    const kept = await writer.propose({ team: "kept" }, onboard("kept"), origin);
    for (const p of [dropped, kept])
      expect(
        (
          await gitea.api(`/repos/${repo.owner}/${repo.name}/pulls/${p.pullRequest!.number}`, {
            method: "PATCH",
            body: JSON.stringify({ state: "closed" }),
          })
        ).status,
      ).toBe(201);
    // "kept" gets a new change after its pull request was closed: its branch starts again from main, a new pull request.
    const again = await writer.propose({ team: "kept" }, onboard("kept"), origin);
    expect(again.pullRequest!.number).not.toBe(kept.pullRequest!.number);
    expect(await writer.latest({ team: "dropped" })).toMatchObject({ state: "closed" });

    const lines: string[] = [];
    const logger = { info: (_: object, message: string) => void lines.push(message), warn: () => undefined };
    // Closed a moment ago: kept for now (the default keeps a day).
    expect(await new ProposalSweeper(writer, { intervalMs: 1_000, keepMs: 3_600_000, logger }).sweepNow()).toEqual([]);
    expect(await branchExists("berth/team/dropped")).toBe(true);

    const swept = await new ProposalSweeper(writer, { intervalMs: 1_000, keepMs: 0, logger }).sweepNow();
    expect(swept.map((s) => s.branch)).toContain("berth/team/dropped");
    expect(swept.map((s) => s.branch)).not.toContain("berth/team/kept");
    expect(await branchExists("berth/team/dropped")).toBe(false);
    expect(await branchExists("berth/team/kept")).toBe(true);
    expect((await forge.pullRequest(again.pullRequest!.number)).state).toBe("open");
    expect(lines).toContain(
      `pull request #${dropped.pullRequest!.number} closed without merge: deleted its branch berth/team/dropped; nothing of it was applied`,
    );
  });

  it("a forge that refuses the pull request gets a clear error, and the branch the write pushed is deleted", async () => {
    const refusing = new GiteaForge({
      url: gitea.url,
      owner: repo.owner,
      repo: repo.name,
      token: async () => "not-a-token",
    });
    // Reads go to the real forge; opening the pull request is refused by it (401).
    const forgeThatRefuses = Object.assign(Object.create(forge) as GiteaForge, {
      openPullRequest: refusing.openPullRequest.bind(refusing),
    });
    const refused = new ProposingWriter(flux, forgeThatRefuses, repoLayout(await localPlatform("slices")));
    const failure = await refused.propose({ team: "refused" }, onboard("refused"), origin).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ForgeError);
    expect(failure).toMatchObject({ kind: "auth", status: 401 });
    expect((failure as Error).message).not.toContain("not-a-token");
    expect(await branchExists("berth/team/refused")).toBe(false);
  });
});
