/**
 * Per-slice fetch (ADR 0036): each slice's GitRepository follows a branch of its own, `berth-slices/<cluster>/<slice>`,
 * which the API moves to the main branch's head only when a commit changes the slice's folders. What is checked, on a
 * real git remote: the first push creates every slice's branch on every cluster of the config; an onboarding moves
 * only its team's slice on its team's clusters, before that cluster's Receiver is told; a commit Berth did not push
 * (by hand) is followed at the next pass, a commit outside every slice moves nothing, and a branch someone moved
 * ahead is never moved back. A branch's commit holds only its slice's folders, as the main-branch commit it stands for
 * (its parent, and its `Berth-Fleet-Commit` trailer) holds them, and a status Flux reports at it is told as that commit.
 */
import { createServer } from "node:http";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { statusResponse, writeResponse } from "@berth/api-contract";
import { sliceBranch, sliceHolding, teamShard, type Cluster } from "@berth/core";
import { FleetRevisionStatusReader } from "../../apps/api/src/services/slice-branches.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, startBerth, type RunningBerth } from "../support/berth.js";
import { readAnswer } from "../support/contract.js";
import { pushForeignCommit } from "../support/foreign-pusher.js";
import { createBareRepo, forceCommit, git, makeTempDir, type BareRepo } from "../support/git-remotes.js";
import { LoopbackServers } from "../support/loopback-servers.js";
import { ScriptedStatusReader } from "../support/scripted-status.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const CLUSTERS = ["aks-dev-weu", "aks-prod-weu", "aks-prod-neu"];
const CUT = { by: "hash", count: 16 } as const;

describe("slice branches follow the main branch, slice by slice", () => {
  let remote: BareRepo;
  let keyDir: string | undefined;
  let berth: RunningBerth;
  const servers = new LoopbackServers();
  const status = new ScriptedStatusReader();
  /** What the dev cluster's Receiver saw: each delivery's revision, and the team's slice branch at that moment. */
  const told: Array<{ revision: string; branches: Map<string, string> }> = [];

  /** Every slice branch on the remote, with its head. */
  async function branches(): Promise<Map<string, string>> {
    const out = await git(["ls-remote", "--heads", remote.url, "refs/heads/berth-slices/*"]);
    return new Map(
      out
        .split("\n")
        .filter(Boolean)
        .map((line) => {
          const [sha, ref] = line.split("\t") as [string, string];
          return [ref.replace("refs/heads/", ""), sha];
        }),
    );
  }

  /** The main-branch commit a branch's commit stands for: its `Berth-Fleet-Commit` trailer, checked against its parent. */
  async function fleetCommitOf(sha: string): Promise<string | undefined> {
    const body = await git(["--git-dir", remote.dir, "cat-file", "commit", sha]);
    const trailer = /^Berth-Fleet-Commit: ([0-9a-f]{40})$/m.exec(body)?.[1];
    const parent = /^parent ([0-9a-f]{40})$/m.exec(body)?.[1];
    return trailer === parent ? trailer : undefined;
  }

  /** Every slice branch with the main-branch commit it stands for. */
  async function fleetHeads(): Promise<Map<string, string | undefined>> {
    const heads = await branches();
    return new Map(await Promise.all([...heads].map(async ([b, sha]) => [b, await fleetCommitOf(sha)] as const)));
  }

  const branchOf = (cluster: string, team: string) => sliceBranch(cluster, sliceHolding(CUT, team).id);

  async function onboard(name: string, environments: string[]): Promise<string> {
    const res = await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: { authorization: `Bearer ${DEV_TOKEN}` },
      payload: { name, description: `Team ${name}`, owners: [OWNER], environments },
    });
    expect(res.statusCode, res.body).toBe(201);
    return readAnswer(res, writeResponse).revision;
  }

  /** Two team names in different slices. */
  function namesInTwoSlices(): [string, string] {
    const first = "payments";
    for (let i = 0; ; i++) {
      const other = `search${i}`;
      if (sliceHolding(CUT, other).id !== sliceHolding(CUT, first).id) return [first, other];
    }
  }
  const [teamA, teamB] = namesInTwoSlices();

  beforeAll(async () => {
    remote = await createBareRepo();
    keyDir = await makeTempDir("berth-receiver-keys-");
    const tokenFile = join(keyDir, "aks-dev-weu");
    await writeFile(tokenFile, `hmac-key-of-aks-dev-weu-${"x".repeat(20)}\n`);
    const url = await servers.listen(
      createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on("data", (c: Buffer) => chunks.push(c));
        req.on("end", () => {
          const { revision } = JSON.parse(Buffer.concat(chunks).toString()) as { revision: string };
          // The branches as the Receiver's GitRepositories would find them when they fetch now.
          void branches().then((now) => {
            told.push({ revision, branches: now });
            res.writeHead(200).end();
          });
        });
      }),
    );
    berth = await startBerth({
      remoteUrl: remote.url,
      statusReader: status,
      config: (raw) => {
        raw.platform.fluxSource = { kind: "ExternalArtifact", artifactPrefix: "team-files-" };
        raw.platform.layout = { appliedBy: "slices", slices: { ...CUT, fetch: "per-slice" } };
        raw.api.fluxReceivers = { "aks-dev-weu": { url: `${url}/hook/0123456789abcdef`, tokenFile } };
      },
    });
  }, 120_000);

  afterAll(async () => {
    await berth?.stop();
    await servers.close();
    await remote?.remove();
    if (keyDir) await rm(keyDir, { recursive: true, force: true });
  });

  it("the first push creates every slice's branch on every cluster, at that commit", async () => {
    const first = await onboard(teamA, ["dev", "prod"]);
    await berth.services.notifier.idle();
    const heads = await fleetHeads();
    expect(heads.size).toBe(CLUSTERS.length * CUT.count);
    expect(new Set(heads.values())).toEqual(new Set([first]));
  });

  it("a branch's commit holds only its slice's folders, as the commit it stands for holds them", async () => {
    const branch = branchOf("aks-prod-neu", teamA);
    const head = (await branches()).get(branch)!;
    const fleet = (await fleetCommitOf(head))!;
    const folders = sliceHolding(CUT, teamA).shards.flatMap((s) => [`teams/${s}`, `clusters/aks-prod-neu/teams/${s}`]);
    const tree = (at: string, paths: string[]) =>
      git(["--git-dir", remote.dir, "ls-tree", "-r", "--full-tree", at, "--", ...paths]);
    // Every file of the slice's folders, with the same ids, and nothing else: not another slice's, not another cluster's.
    expect(await tree(head, [])).toBe(await tree(fleet, folders));
    expect(await tree(head, [])).toContain(`teams/${teamShard(teamA)}/${teamA}/`);
    expect(await tree(head, [])).not.toMatch(/\tclusters\/aks-dev-weu\//);
  });

  it("an onboarding moves only its team's slice on its team's clusters, before the Receiver is told", async () => {
    const before = await branches();
    told.length = 0;
    const revision = await onboard(teamB, ["dev"]);
    await berth.services.notifier.idle();
    const after = await branches();
    const moved = [...after].filter(([branch, sha]) => before.get(branch) !== sha).map(([branch]) => branch);
    expect(moved).toEqual([branchOf("aks-dev-weu", teamB)]);
    const head = after.get(branchOf("aks-dev-weu", teamB))!;
    expect(await fleetCommitOf(head)).toBe(revision);
    // The Receiver was told of this commit, and by then the slice's branch was at it.
    const delivery = told.find((t) => t.revision === revision);
    expect(delivery?.branches.get(branchOf("aks-dev-weu", teamB))).toBe(head);
  });

  it("a status Flux reports at a slice branch's commit is told as the main-branch commit it stands for", async () => {
    const branch = branchOf("aks-dev-weu", teamB);
    const head = (await branches()).get(branch)!;
    const fleet = await fleetCommitOf(head);
    status.ready(teamB, "aks-dev-weu", head, branch);
    const res = await berth.server.inject({
      method: "GET",
      url: `/v1/teams/${teamB}/status`,
      headers: { authorization: `Bearer ${DEV_TOKEN}` },
    });
    expect(res.statusCode, res.body).toBe(200);
    const dev = readAnswer(res, statusResponse).clusters.find((c) => c.cluster === "aks-dev-weu");
    expect(dev?.revision).toBe(`main@sha1:${fleet}`);
  });

  it("follows a commit Berth did not push; one outside every slice moves nothing", async () => {
    const before = await branches();
    // A hand edit of team A's Flux file on the prod cluster: its slice there, and nothing else, moves.
    const path = `clusters/aks-prod-neu/teams/${teamShard(teamA)}/${teamA}.yaml`;
    const current = await git(["--git-dir", remote.dir, "show", `main:${path}`]);
    const head = await pushForeignCommit({
      url: remote.url,
      path,
      content: `${current}# by hand\n`,
      subject: "by hand",
    });
    const followed = await berth.services.sliceBranches.follow();
    expect(followed.revision).toBe(head);
    expect([...followed.shards]).toEqual([["aks-prod-neu", sliceHolding(CUT, teamA).shards]]);
    const after = await branches();
    const moved = [...after].filter(([branch, sha]) => before.get(branch) !== sha).map(([branch]) => branch);
    expect(moved).toEqual([branchOf("aks-prod-neu", teamA)]);
    expect(await fleetCommitOf(after.get(branchOf("aks-prod-neu", teamA))!)).toBe(head);

    await pushForeignCommit({ url: remote.url, path: "docs/notes.md", content: "notes\n", subject: "docs" });
    expect((await berth.services.sliceBranches.follow()).shards.size).toBe(0);
    expect(await branches()).toEqual(after);
  });

  it("never moves a branch back behind where someone else moved it", async () => {
    const branch = branchOf("aks-dev-weu", teamA);
    const older = (await branches()).get(branch)!;
    const olderFleet = (await fleetCommitOf(older))!;
    // Team A changes on dev (a new commit), and another replica moves the branch there before this one's pass (to the
    // main-branch commit itself, as branches were first written: such a commit stands for itself).
    const path = `clusters/aks-dev-weu/teams/${teamShard(teamA)}/${teamA}.yaml`;
    const current = await git(["--git-dir", remote.dir, "show", `main:${path}`]);
    const newer = await pushForeignCommit({ url: remote.url, path, content: `${current}# again\n`, subject: "again" });
    await git(["--git-dir", remote.dir, "update-ref", `refs/heads/${branch}`, newer, older]);
    // A pass for the commit before it: the branch is ahead of it, and stays.
    await berth.services.sliceBranches.follow(olderFleet);
    expect((await branches()).get(branch)).toBe(newer);
  });

  it("after the main branch is force-pushed to another history, moves the slices it changed there", async () => {
    const branch = branchOf("aks-prod-neu", teamA);
    const path = `clusters/aks-prod-neu/teams/${teamShard(teamA)}/${teamA}.yaml`;
    const current = await git(["--git-dir", remote.dir, "show", `main:${path}`]);
    const changed = await pushForeignCommit({
      url: remote.url,
      path,
      content: `${current}# rewritten\n`,
      subject: "x",
    });
    // The same files as a new root commit: no commit any slice branch stands for is in the main branch's history.
    const tree = (await git(["--git-dir", remote.dir, "rev-parse", `${changed}^{tree}`])).trim();
    const rewritten = await forceCommit(remote, "main", tree, "history rewritten");
    const followed = await berth.services.sliceBranches.follow();
    expect(followed.revision).toBe(rewritten);
    expect([...followed.shards]).toEqual([["aks-prod-neu", sliceHolding(CUT, teamA).shards]]);
    expect(await fleetCommitOf((await branches()).get(branch)!)).toBe(rewritten);
  });
});

describe("a slice commit's fleet commit, as the status tells it", () => {
  it("is looked up again after a look-up that failed, and kept once found", async () => {
    const branch = "berth-slices/aks-dev-weu/a0";
    const slice = "1".repeat(40);
    const fleet = "2".repeat(40);
    let calls = 0;
    const repo = {
      fleetCommit: async () => {
        calls += 1;
        if (calls === 1) throw new Error("the remote did not answer");
        return fleet;
      },
    };
    const scripted = new ScriptedStatusReader();
    scripted.ready("payments", "aks-dev-weu", slice, branch);
    const reader = new FleetRevisionStatusReader(scripted, repo, "main");
    const cluster = { name: "aks-dev-weu", environment: "dev" } as Cluster;
    const revisionNow = async () => (await reader.read("payments", [cluster]))[0]?.revision;
    expect(await revisionNow()).toBe(`${branch}@sha1:${slice}`);
    expect(await revisionNow()).toBe(`main@sha1:${fleet}`);
    expect(await revisionNow()).toBe(`main@sha1:${fleet}`);
    expect(calls).toBe(2);
  });
});
