import { mkdir, readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type { ChangeOrigin, RepoChange, RepoTree } from "@berth/core";
import PQueue from "p-queue";
import pRetry from "p-retry";
import {
  BatchPlanner,
  type CommitTxn,
  commitCount,
  FastImportEncoder,
  type Plan,
  planConflicts,
  type QueuedTxn,
} from "./batch.js";
import { type FluxRepoBatch, type FluxRepoConfig, type ResolvedConfig, resolveConfig } from "./config.js";
import { GitOpsError, PushRejectedError } from "./errors.js";
import { GitRunner, type StreamingGit } from "./git-runner.js";
import { GitTree, IndexCache, type TreeSource } from "./git-tree.js";
import { type CommitSummary, commitsTouching, TrailerIndex } from "./history.js";
import { ObjectReader } from "./object-reader.js";
import { buildGitEnvironment } from "./remote-auth.js";

export interface TransactResult {
  /**
   * The transaction's own commit when `committed`; otherwise the commit its mutate saw (the remote head, or
   * an earlier commit of the same batch). "" only when the branch does not exist yet and nothing was written.
   */
  revision: string;
  committed: boolean;
  /** Paths the commit added, changed or deleted, sorted; empty when nothing was committed. */
  files: string[];
}

/** A proposal's outcome (pull-request mode): the commit on its branch, and whether that branch was new. */
export interface ProposeResult extends TransactResult {
  branch: string;
  /** Whether the branch exists after the proposal: false only when nothing was committed on a branch that was not there. */
  onBranch: boolean;
  /** The branch did not exist: it was created from the main branch's head. */
  created: boolean;
}

/** Branches Berth proposes on: its own namespace, plain segments (ADR 0030: berth/team/<team>, berth/rollout/<id>). */
const PROPOSAL_BRANCH = /^berth(\/[a-z0-9][a-z0-9-]*)+$/;
/** Branches that follow the main branch (slice branches, ADR 0036): a folder of their own, plain segments. */
const FOLLOWER_BRANCH = /^[a-z0-9][a-z0-9-]*(\/[a-z0-9][a-z0-9.-]*)+$/;
const FOLLOWER_PREFIX = /^[a-z0-9][a-z0-9-]*(\/[a-z0-9][a-z0-9.-]*)*\/$/;
/** A proposal whose branch moved under it (another replica) is planned again, at most this often. */
const MAX_PROPOSE_ATTEMPTS = 3;

export interface FluxRepoStats {
  transactions: number;
  commits: number;
  batches: number;
  fetches: number;
  pushAttempts: number;
  pushRejections: number;
  /** Rejected batches whose mutates were run again because the remote changed something they touched. */
  replays: number;
  /** Rejected batches re-committed on the new head without re-running mutates (nothing they touched changed). */
  rebases: number;
}

interface Waiter {
  txn: QueuedTxn;
  resolve(r: TransactResult): void;
  reject(e: unknown): void;
}

interface ProposalWaiter {
  branch: string;
  mutate: (tree: RepoTree) => Promise<RepoChange | null>;
  origin: ChangeOrigin;
  fromMain: boolean;
  /** Pushes of it the remote rejected because its branch had moved. */
  attempts: number;
  resolve(r: ProposeResult): void;
  reject(e: unknown): void;
}

interface PushOutcome {
  ok: boolean;
  summary: string;
  line: string;
  /** The remote's own words in that push (its hooks' `remote:` lines): this ref's only when it was pushed alone. */
  remoteSaid: string[];
  /** Why a ref the report does not name was not updated. */
  failure?: GitOpsError;
}

/**
 * `git push --porcelain`'s report, by ref: one line `<flag>\t<from>:<to>\t<summary>` each, flag `!` for a ref not
 * updated (its summary says why: `[rejected] (stale info)`, `[remote rejected] (...)`).
 */
function pushOutcomes(output: string): Map<string, PushOutcome> {
  const outcomes = new Map<string, PushOutcome>();
  const lines = output.split("\n");
  const remoteSaid = lines.filter((line) => line.startsWith("remote:"));
  for (const line of lines) {
    const [flag, ref, summary] = /^([ +\-*!=])\t[^\t]*:(refs\/[^\t]+)\t(.*)$/.exec(line)?.slice(1) ?? [];
    if (flag && ref && summary !== undefined) outcomes.set(ref, { ok: flag !== "!", summary, line, remoteSaid });
  }
  return outcomes;
}

/** Push failures that mean "the remote moved": retried on a fresh head. */
const PUSH_REJECTED =
  /\(fetch first\)|\(non-fast-forward\)|\(stale info\)|cannot lock ref|failed to lock|failed to update ref|incorrect old value/i;
/** A push the remote declined by a rule of its own (a protected branch, a pre-receive hook): not retried. */
const PUSH_DECLINED = /\[remote rejected\]/i;
const MISSING_BRANCH = /couldn't find remote ref/i;
const SCRATCH_REF = "refs/berth/batch";
/** Where fast-import writes following branches' commits before they are pushed. */
const FOLLOWER_SCRATCH_REF = "refs/berth/followers";
const FULL_SHA = /^([0-9a-f]{40}|[0-9a-f]{64})$/;
/** The trailer of a following branch's commit naming the main-branch commit it stands for (ADR 0036). */
const FLEET_COMMIT = /^Berth-Fleet-Commit: ([0-9a-f]{40}|[0-9a-f]{64})$/m;
/** How old a known head may be for a batch to build on it without fetching (snapshot()'s default window). */
const FRESH_HEAD_MS = 2_000;
/**
 * After a push of ours was rejected (another writer is active on the branch), batches fetch first for this
 * long: with a busy writer a known head is usually stale, and a rejected push costs more than a fetch.
 */
const FOREIGN_WRITER_MS = 60_000;

/** Work dirs in use by a FluxRepo of this process: two writers on one clone would corrupt each other. */
const activeWorkDirs = new Set<string>();

/**
 * The Flux repo as Berth writes it: one long-lived bare clone per remote, all writes serialized through one
 * queue, concurrent transactions group-committed (one commit each, one push per batch), reads served from
 * immutable objects. See docs/decisions/0002-git-writer.md.
 */
export class FluxRepo {
  /** Checks the config and builds the repo; does no I/O. Call init() (or just use it: it initializes lazily). */
  static fromConfig(cfg: FluxRepoConfig): FluxRepo {
    return new FluxRepo(resolveConfig(cfg));
  }

  private readonly queue = new PQueue({ concurrency: 1 });
  private pending: Waiter[] = [];
  private batchScheduled = false;
  /** Proposals waiting for the writer (pull-request mode), in arrival order. */
  private waitingProposals: ProposalWaiter[] = [];
  private proposalsScheduled = false;
  private initPromise: Promise<void> | undefined;
  private runner: GitRunner | undefined;
  private src: TreeSource | undefined;
  private head: { sha: string | undefined; at: number } | undefined;
  /** When a push of ours was last rejected (0: never): another writer is active on the branch. */
  private lastRejectionAt = 0;
  private refreshing: Promise<void> | undefined;
  private closed = false;
  private ownsWorkDir = false;
  /** The commit time of the last fast-import (what the history index records for our own commits). */
  private lastImportAt = new Date(0);
  private readonly counters: FluxRepoStats = {
    transactions: 0,
    commits: 0,
    batches: 0,
    fetches: 0,
    pushAttempts: 0,
    pushRejections: 0,
    replays: 0,
    rebases: 0,
  };

  constructor(private readonly cfg: ResolvedConfig) {}

  get branch(): string {
    return this.cfg.branch;
  }

  stats(): FluxRepoStats {
    return { ...this.counters };
  }

  /** Creates (or reopens) the clone in workDir and fetches the branch. Safe to call more than once. */
  init(): Promise<void> {
    if (this.closed) return Promise.reject(new GitOpsError("closed", "FluxRepo is closed"));
    this.initPromise ??= this.doInit().catch((err: unknown) => {
      this.initPromise = undefined;
      throw err;
    });
    return this.initPromise;
  }

  /**
   * Applies one change as its own commit on the remote branch and resolves once it is pushed. `mutate` gets
   * the tree the commit will be based on; it may run more than once (after a rejected push) and may throw
   * (a domain error): the error is returned and nothing is written. Resolves with committed:false when the
   * change would not change anything.
   */
  async transact(
    mutate: (tree: RepoTree) => Promise<RepoChange | null>,
    origin: ChangeOrigin,
  ): Promise<TransactResult> {
    if (typeof mutate !== "function") throw new TypeError("mutate must be a function");
    if (this.closed) throw new GitOpsError("closed", "FluxRepo is closed");
    await this.init();
    this.counters.transactions += 1;
    return new Promise<TransactResult>((resolve, reject) => {
      this.pending.push({ txn: { mutate, origin }, resolve, reject });
      this.schedule();
    });
  }

  /**
   * Applies one change as a commit on `branch` and pushes it there, never to the main branch: pull-request mode
   * (ADR 0030). `mutate` sees the branch's tree when the branch exists (the pending change it extends), else, or with
   * `fromMain`, the main branch's head, from which the branch is then (re)started. Proposals for different branches
   * that wait in the writer's queue together share its fetches and one push (each still its own commit on its own
   * branch, each push leased on its branch's head); two for one branch go one after the other. A branch that moved
   * meanwhile (another replica) is planned again; `mutate`'s own error is returned and nothing is pushed.
   */
  async propose(
    branch: string,
    mutate: (tree: RepoTree) => Promise<RepoChange | null>,
    origin: ChangeOrigin,
    options: { fromMain?: boolean } = {},
  ): Promise<ProposeResult> {
    if (!PROPOSAL_BRANCH.test(branch) || branch === `berth/${this.cfg.branch}`)
      throw new GitOpsError("invalid-change", `${JSON.stringify(branch.slice(0, 100))} is not a proposal branch`);
    if (this.closed) throw new GitOpsError("closed", "FluxRepo is closed");
    await this.init();
    this.counters.transactions += 1;
    return new Promise<ProposeResult>((resolve, reject) => {
      this.waitingProposals.push({
        branch,
        mutate,
        origin,
        fromMain: options.fromMain ?? false,
        attempts: 0,
        resolve,
        reject,
      });
      this.scheduleProposals();
    });
  }

  private scheduleProposals(): void {
    if (this.proposalsScheduled || this.waitingProposals.length === 0) return;
    this.proposalsScheduled = true;
    void this.queue.add(async () => {
      this.proposalsScheduled = false;
      // One proposal per branch in a run: the next for the same branch builds on this one's commit.
      const run: ProposalWaiter[] = [];
      const taken = new Set<string>();
      this.waitingProposals = this.waitingProposals.filter((w) => {
        if (taken.has(w.branch) || run.length >= this.cfg.maxBatchSize) return true;
        taken.add(w.branch);
        run.push(w);
        return false;
      });
      try {
        await this.runProposals(run);
      } catch (err) {
        // Fetching or pushing failed for all of them (a promise already settled ignores this).
        for (const w of run) w.reject(err);
      }
      this.scheduleProposals();
    });
  }

  /** Plans, commits and pushes each of `run` (distinct branches) on its branch: one fetch of them, one push. */
  private async runProposals(run: ProposalWaiter[]): Promise<void> {
    const main = await this.fetchHead();
    const heads = await this.fetchProposalHeads(run.map((w) => w.branch));
    const planned: Array<{ waiter: ProposalWaiter; sha: string; existing: string | undefined; files: string[] }> = [];
    for (const waiter of run) {
      const existing = heads.get(waiter.branch);
      try {
        // fromMain: the branch's earlier change was merged or dropped; a new one starts again from main (the push
        // still compares against the branch's head, so nothing pushed to it meanwhile is lost unseen).
        const base = waiter.fromMain ? main : (existing ?? main);
        const planner = new BatchPlanner(new GitTree(this.source(), base), () => {});
        await planner.add([{ mutate: waiter.mutate, origin: waiter.origin }]);
        const plan = planner.plan();
        const txn = plan.txns[0];
        if (!txn || txn.kind === "error") throw txn?.error ?? new GitOpsError("unavailable", "internal: no plan");
        if (txn.kind === "noop") {
          waiter.resolve({
            revision: base ?? "",
            committed: false,
            files: [],
            branch: waiter.branch,
            // A restarted branch's old commits are no pending change: nothing to propose.
            onBranch: existing !== undefined && !waiter.fromMain,
            created: false,
          });
          continue;
        }
        const [sha] = await this.importCommits(plan);
        if (!sha) throw new GitOpsError("unavailable", "internal: git fast-import wrote no commit");
        planned.push({ waiter, sha, existing, files: [...txn.files.keys()].sort() });
      } catch (err) {
        waiter.reject(err);
      }
    }
    if (planned.length === 0) return;
    const outcomes = await this.pushProposals(planned);
    // A remote's hook may decline a push whole for one ref it refuses (a pre-receive hook, as Gitea's branch
    // protection: every ref of the push is then declined). The declined ones are pushed again, each on its own, so only
    // the one refused fails, in the remote's own words.
    const declined = planned.filter((p) => {
      const outcome = outcomes.get(`refs/heads/${p.waiter.branch}`);
      return outcome && !outcome.ok && PUSH_DECLINED.test(outcome.summary);
    });
    if (planned.length > 1)
      for (const p of declined) for (const [ref, outcome] of await this.pushProposals([p])) outcomes.set(ref, outcome);
    for (const { waiter, sha, existing, files } of planned) {
      const { branch } = waiter;
      const outcome = outcomes.get(`refs/heads/${branch}`);
      if (outcome?.ok) {
        this.counters.commits += 1;
        this.cfg.logger.info({ branch, revision: sha, created: existing === undefined }, "flux repo: proposed");
        waiter.resolve({ revision: sha, committed: true, files, branch, onBranch: true, created: !existing });
      } else if (outcome && PUSH_REJECTED.test(outcome.summary)) {
        // The branch moved since it was fetched: planned again on its new head, in a later run.
        this.counters.pushRejections += 1;
        waiter.attempts += 1;
        if (waiter.attempts >= MAX_PROPOSE_ATTEMPTS)
          waiter.reject(
            new GitOpsError(
              "conflict",
              `branch ${branch} kept moving (${waiter.attempts} attempts); nothing was written`,
            ),
          );
        else this.waitingProposals.unshift(waiter);
      } else if (outcome && PUSH_DECLINED.test(outcome.summary)) {
        waiter.reject(declinedPush(branch, [...outcome.remoteSaid, outcome.line].join("\n")));
      } else {
        waiter.reject(outcome?.failure ?? new GitOpsError("unavailable", `git push did not update ${branch}`));
      }
    }
  }

  /** One push of these commits to their branches, each leased on the head it was planned on; git's report by ref. */
  private async pushProposals(planned: Array<{ waiter: ProposalWaiter; sha: string; existing: string | undefined }>) {
    this.counters.pushAttempts += 1;
    const pushed = await this.git().tryRun([
      "push",
      "--porcelain",
      ...planned.map((p) => `--force-with-lease=refs/heads/${p.waiter.branch}:${p.existing ?? ""}`),
      "origin",
      ...planned.map((p) => `${p.sha}:refs/heads/${p.waiter.branch}`),
    ]);
    // The report is on stdout, which a failed push's error carries too (with stderr after it).
    const outcomes = pushOutcomes(pushed.ok ? pushed.stdout : pushed.output);
    // The remote's `remote:` lines are one ref's only when it was pushed alone.
    if (planned.length > 1) for (const outcome of outcomes.values()) outcome.remoteSaid = [];
    // A ref the report does not name: the push failed as a whole (the remote did not answer, or refused us).
    const failure = pushed.ok ? new GitOpsError("unavailable", "git push did not report the branch") : pushed.error;
    for (const { waiter } of planned)
      if (!outcomes.has(`refs/heads/${waiter.branch}`))
        outcomes.set(`refs/heads/${waiter.branch}`, { ok: false, summary: "", line: "", remoteSaid: [], failure });
    return outcomes;
  }

  /**
   * The heads of these proposal branches on the remote, fetched now; a branch that does not exist has none. One
   * listing and one fetch for all of them, however many.
   */
  private async fetchProposalHeads(branches: string[]): Promise<Map<string, string>> {
    const git = this.git();
    this.counters.fetches += 1;
    const heads = await this.remoteHeads(
      branches.map((b) => `refs/heads/${b}`),
      (branch) => branches.includes(branch),
    );
    if (heads.size > 0) {
      this.counters.fetches += 1;
      // `-v`, not `--quiet`: simple-git waits an extra 50 ms after any command that prints nothing.
      const fetched = await git.tryRun([
        "fetch",
        "-v",
        "--no-tags",
        "--no-write-fetch-head",
        "origin",
        ...[...heads.keys()].map((b) => `+refs/heads/${b}:refs/remotes/origin/${b}`),
      ]);
      if (!fetched.ok) {
        if (!MISSING_BRANCH.test(fetched.output)) throw fetched.error;
        // One was deleted between the listing and the fetch (a sweep): each again on its own.
        heads.clear();
        for (const branch of branches) {
          const head = await this.fetchRef(branch);
          if (head) heads.set(branch, head);
        }
      }
    }
    return heads;
  }

  /**
   * Deletes a proposal branch. With `expected`, only while the branch is still at that commit (a lease): a branch
   * someone pushed to since is kept, and the answer is false. A branch that is already gone counts as deleted.
   */
  async deleteProposal(branch: string, expected?: string): Promise<boolean> {
    if (!PROPOSAL_BRANCH.test(branch))
      throw new GitOpsError("invalid-change", `${JSON.stringify(branch.slice(0, 100))} is not a proposal branch`);
    await this.init();
    return this.queue.add(async () => {
      const lease = expected ? [`--force-with-lease=refs/heads/${branch}:${expected}`] : [];
      const r = await this.git().tryRun(["push", "--porcelain", ...lease, "origin", `:refs/heads/${branch}`]);
      if (r.ok || /remote ref does not exist|unable to delete/i.test(r.output)) return true;
      if (expected && /stale info|\[rejected\]/.test(r.output)) {
        // The lease failed: the branch moved, or it is gone already (git answers both "stale info").
        const heads = await this.git().run(["ls-remote", "--heads", "origin", `refs/heads/${branch}`], {
          what: "git ls-remote",
        });
        return heads.trim() === "";
      }
      throw r.error;
    });
  }

  /** Every proposal branch on the remote (berth/...), with its head commit. */
  async proposals(): Promise<Map<string, string>> {
    if (this.closed) throw new GitOpsError("closed", "FluxRepo is closed");
    await this.init();
    return this.remoteHeads(["refs/heads/berth/*"], (branch) => PROPOSAL_BRANCH.test(branch));
  }

  /**
   * The remote's branches under `prefix` (a folder of branch names, such as `berth-slices/`), with their heads, each
   * fetched into the clone when it does not hold it yet.
   */
  async branchesUnder(prefix: string): Promise<Map<string, string>> {
    if (!FOLLOWER_PREFIX.test(prefix))
      throw new GitOpsError("invalid-change", `${JSON.stringify(prefix.slice(0, 100))} is not a folder of branches`);
    if (this.closed) throw new GitOpsError("closed", "FluxRepo is closed");
    await this.init();
    const heads = await this.remoteHeads([`refs/heads/${prefix}*`], (branch) => branch.startsWith(prefix));
    // Heads this clone does not hold (another replica wrote them, or the clone is new): one fetch brings them all,
    // so that what each stands for (fleetCommit) is read without a fetch per branch.
    const held = await Promise.all([...heads.values()].map((sha) => this.source().reader.read(sha)));
    if (held.some((object) => object === undefined)) {
      const refspec = `+refs/heads/${prefix}*:refs/remotes/origin/${prefix}*`;
      this.counters.fetches += 1;
      await this.queue.add(() =>
        this.git().run(["fetch", "-v", "--no-tags", "--no-write-fetch-head", "origin", refspec], { what: "git fetch" }),
      );
    }
    return heads;
  }

  /**
   * Moves branches that follow the main branch (each slice's, ADR 0036) forward to commits of it: one push, each
   * leased on the head it was seen at (`from`; none: the branch is created). A following branch's commit stands for a
   * main-branch commit `to` but holds only `folders` of it (their trees as they are in `to`, so nothing is copied),
   * with `to` as its first parent and in a `Berth-Fleet-Commit` trailer (fleetCommit reads it back): a shallow clone
   * of the branch fetches those folders only. Its second parent is the branch's head before, so every move is a
   * fast-forward: a forge that refuses force-pushes takes it. Only forward along the main branch: a move to a commit that is not the main
   * branch's last fetched head or behind it, or from a head whose main-branch commit is not behind `to` (or that the
   * remote no longer holds), is left out. Once the main branch's history is rewritten (a force-push), a branch that
   * stands for a commit it no longer holds moves to its head, and only while the remote's main branch is there (so a
   * replica that has not fetched the rewrite cannot move it back). Never the main branch itself. Returns the branches
   * moved; a branch that another writer moved meanwhile is left where that writer put it.
   */
  async advanceFollowers(
    moves: ReadonlyArray<{ branch: string; from?: string | undefined; to: string; folders: readonly string[] }>,
  ): Promise<string[]> {
    if (this.closed) throw new GitOpsError("closed", "FluxRepo is closed");
    await this.init();
    for (const { branch } of moves)
      if (branch === this.cfg.branch || PROPOSAL_BRANCH.test(branch) || !FOLLOWER_BRANCH.test(branch))
        throw new GitOpsError("invalid-change", `${JSON.stringify(branch.slice(0, 100))} is not a following branch`);
    return this.queue.add(async () => {
      const git = this.git();
      const head = this.head?.sha;
      // Moves share their commits (every branch created at one head; slices moved from one older commit): one
      // `git merge-base` per pair, not per move.
      const known = new Map<string, Promise<boolean>>();
      const behind = (ancestor: string, descendant: string) => {
        const pair = `${ancestor}..${descendant}`;
        const answer =
          known.get(pair) ?? (ancestor === descendant ? Promise.resolve(true) : git.isAncestor(ancestor, descendant));
        known.set(pair, answer);
        return answer;
      };
      let remoteMain: Promise<string | undefined> | undefined;
      const mainNow = () =>
        (remoteMain ??= this.remoteHeads([`refs/heads/${this.cfg.branch}`], (b) => b === this.cfg.branch).then((h) =>
          h.get(this.cfg.branch),
        ));
      const forward: Array<(typeof moves)[number]> = [];
      for (const move of moves) {
        if (!head || !(await behind(move.to, head))) continue;
        if (move.from !== undefined) {
          const was = await this.fleetCommitOf(move.from, move.branch);
          if (was === undefined || was === move.to) continue;
          // Not behind `to`: ahead of it on the main branch (another writer moved it there), so it stays; or off the
          // main branch (its history rewritten), so it moves to the head the remote's main branch has now, only.
          if (!(await behind(was, move.to)) && ((await behind(was, head)) || (await mainNow()) !== move.to)) continue;
        }
        forward.push(move);
      }
      if (forward.length === 0) return [];
      const commits = await this.writeFollowerCommits(forward);
      this.counters.pushAttempts += 1;
      const pushed = await git.tryRun([
        "push",
        "--porcelain",
        ...forward.map((m) => `--force-with-lease=refs/heads/${m.branch}:${m.from ?? ""}`),
        "origin",
        ...forward.map((m, n) => `${commits[n] as string}:refs/heads/${m.branch}`),
      ]);
      const outcomes = pushOutcomes(pushed.ok ? pushed.stdout : pushed.output);
      const moved = forward.filter((m) => outcomes.get(`refs/heads/${m.branch}`)?.ok).map((m) => m.branch);
      // Nothing reported at all: the push failed as a whole (the remote did not answer, or refused us).
      if (!pushed.ok && outcomes.size === 0) throw pushed.error;
      return moved;
    });
  }

  /**
   * The main-branch commit that `sha` stands for: itself for a commit of the main branch (or of a following branch as
   * first written, ADR 0036), the `Berth-Fleet-Commit` of a following branch's commit (its first parent). A commit the clone lacks is
   * fetched with `branch` (a following branch that holds it). Undefined when neither holds it any more.
   */
  async fleetCommit(sha: string, branch?: string): Promise<string | undefined> {
    if (!FULL_SHA.test(sha)) throw new GitOpsError("invalid-change", "fleetCommit needs a full commit id");
    if (branch !== undefined && (!FOLLOWER_BRANCH.test(branch) || PROPOSAL_BRANCH.test(branch)))
      throw new GitOpsError("invalid-change", `${JSON.stringify(branch.slice(0, 100))} is not a following branch`);
    if (this.closed) throw new GitOpsError("closed", "FluxRepo is closed");
    await this.init();
    return this.fleetCommitOf(sha, branch);
  }

  private async fleetCommitOf(sha: string, branch: string | undefined): Promise<string | undefined> {
    const read = async () => {
      const object = await this.source().reader.read(sha);
      return object?.kind === "commit" ? object : undefined;
    };
    let commit = await read();
    if (!commit && branch !== undefined) {
      await this.fetchRef(branch);
      commit = await read();
    }
    if (!commit) return undefined;
    const split = commit.text.indexOf("\n\n");
    const firstParent = /^parent ([0-9a-f]+)$/m.exec(commit.text.slice(0, split))?.[1];
    const named = FLEET_COMMIT.exec(commit.text.slice(split + 2))?.[1];
    // The trailer counts only on the commit it describes: one whose first parent is the commit it names.
    return named !== undefined && named === firstParent ? named : sha;
  }

  /** One following-branch commit per move (fleetCommit's shape), written by one `git fast-import`; their ids in order. */
  private async writeFollowerCommits(
    moves: ReadonlyArray<{ branch: string; from?: string | undefined; to: string; folders: readonly string[] }>,
  ): Promise<string[]> {
    const importer = this.startImport(undefined, FOLLOWER_SCRATCH_REF);
    try {
      for (const { branch, from, to, folders } of moves) {
        const at = new GitTree(this.source(), to);
        const trees = new Map<string, string>();
        for (const folder of folders) {
          const id = await at.contentId(folder);
          if (id !== undefined) trees.set(folder, id);
        }
        const message = `berth: ${branch} at ${to.slice(0, 12)}\n\nBerth-Fleet-Commit: ${to}\n`;
        importer.addFolders(message, from === undefined ? [to] : [to, from], trees);
      }
    } catch (err) {
      importer.abort();
      throw err;
    }
    return importer.finish();
  }

  /** The remote's branches matching `patterns` (ls-remote's) that `keep` takes, with their heads. */
  private async remoteHeads(patterns: string[], keep: (branch: string) => boolean): Promise<Map<string, string>> {
    const out = await this.git().run(["ls-remote", "--heads", "origin", ...patterns], { what: "git ls-remote" });
    const heads = new Map<string, string>();
    for (const line of out.split("\n")) {
      const [sha, ref] = line.split("\t");
      const branch = ref?.replace(/^refs\/heads\//, "");
      if (sha && branch && keep(branch)) heads.set(branch, sha);
    }
    return heads;
  }

  /**
   * A tree at the remote branch as last fetched, fetched again first if that is older than maxAgeMs. The
   * fetch goes through the writer's queue (ahead of waiting batches); reads then run alongside writes.
   */
  async snapshot(maxAgeMs = 2000): Promise<RepoTree> {
    if (this.closed) throw new GitOpsError("closed", "FluxRepo is closed");
    await this.init();
    if (!this.fresh(maxAgeMs)) {
      this.refreshing ??= this.queue
        .add(
          async () => {
            if (!this.fresh(maxAgeMs)) await this.fetchHead();
          },
          { priority: 1 },
        )
        .finally(() => {
          this.refreshing = undefined;
        });
      await this.refreshing;
    }
    return new GitTree(this.source(), this.head?.sha);
  }

  /**
   * The newest commits (at most `limit`) touching any of `paths`, from `revision` (a tree's revision; the
   * last fetched head by default). Reads immutable objects only, so it runs alongside writes.
   */
  async history(
    paths: readonly string[],
    options: { revision?: string | undefined; limit?: number } = {},
  ): Promise<CommitSummary[]> {
    if (this.closed) throw new GitOpsError("closed", "FluxRepo is closed");
    await this.init();
    const revision = options.revision ?? this.head?.sha;
    if (!revision) return [];
    return commitsTouching(this.git(), revision, paths, options.limit ?? 10);
  }

  /**
   * A tree at a given commit (full sha), e.g. the revision a cluster's Flux reports it applied; fetches once
   * when the commit is not in the clone yet. Undefined when the remote branch does not hold it either.
   */
  async treeAt(revision: string): Promise<RepoTree | undefined> {
    if (typeof revision !== "string" || !FULL_SHA.test(revision))
      throw new GitOpsError("invalid-change", "treeAt needs a full commit id");
    if (this.closed) throw new GitOpsError("closed", "FluxRepo is closed");
    await this.init();
    const isCommit = async () => (await this.source().reader.read(revision))?.kind === "commit";
    if (!(await isCommit())) {
      await this.snapshot(0);
      if (!(await isCommit())) return undefined;
    }
    return new GitTree(this.source(), revision);
  }

  /** Readiness: the remote answers for the branch (ls-remote, short timeout). Throws GitOpsError. */
  async ping(): Promise<void> {
    if (this.closed) throw new GitOpsError("closed", "FluxRepo is closed");
    await this.init();
    await this.git().run(["ls-remote", "--heads", "origin", `refs/heads/${this.cfg.branch}`], {
      probe: true,
      what: "git ls-remote",
    });
  }

  /** Stops accepting work, lets queued transactions finish, and ends the object reader. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue.onIdle();
    this.src?.reader.close();
    if (this.ownsWorkDir) activeWorkDirs.delete(this.cfg.workDir);
    this.ownsWorkDir = false;
  }

  // ---------------------------------------------------------------------------------------------------

  private fresh(maxAgeMs: number): boolean {
    return this.freshHead(maxAgeMs) !== undefined;
  }

  /** The head as last fetched, if that was at most maxAgeMs ago. */
  private freshHead(maxAgeMs: number): { sha: string | undefined } | undefined {
    const head = this.head;
    return head !== undefined && Date.now() - head.at <= maxAgeMs ? head : undefined;
  }

  private git(): GitRunner {
    if (!this.runner) throw new GitOpsError("unavailable", "FluxRepo is not initialized");
    return this.runner;
  }

  private source(): TreeSource {
    if (!this.src) throw new GitOpsError("unavailable", "FluxRepo is not initialized");
    return this.src;
  }

  private async doInit(): Promise<void> {
    const { workDir, url, branch, logger } = this.cfg;
    if (!this.ownsWorkDir) {
      if (activeWorkDirs.has(workDir))
        throw new GitOpsError("config", `workDir ${workDir} is already used by another FluxRepo`);
      activeWorkDirs.add(workDir);
      this.ownsWorkDir = true;
    }
    try {
      await mkdir(workDir, { recursive: true });
      const gitEnv = buildGitEnvironment({
        gitDir: workDir,
        auth: this.cfg.auth,
        connectTimeoutSec: Math.max(1, Math.ceil(Math.min(this.cfg.timeoutMs, 10_000) / 1000)),
      });
      const runner = new GitRunner(gitEnv, {
        cwd: workDir,
        timeoutMs: this.cfg.timeoutMs,
        pingTimeoutMs: this.cfg.pingTimeoutMs,
      });
      const entries = await readdir(workDir);
      const isRepo = ["HEAD", "objects", "config"].every((e) => entries.includes(e));
      if (!isRepo) {
        if (entries.length > 0)
          throw new GitOpsError("config", `workDir ${workDir} is not empty and not a git repository`);
        await runner.run(["init", "--bare", "--quiet"], { what: "git init" });
        await runner.run(["config", "berth.managed", "true"]);
        logger.info({ workDir }, "flux repo: created clone");
      } else {
        const managed = await runner.tryRun(["config", "--get", "berth.managed"]);
        if (!managed.ok || managed.stdout.trim() !== "true") {
          throw new GitOpsError("config", `workDir ${workDir} holds a git repository Berth did not create`);
        }
        await this.removeStaleLocks();
      }
      // Idempotent: a reopened clone follows the current config (objects of an old remote just linger).
      await runner.run(["config", "remote.origin.url", url]);
      await runner.run([
        "config",
        "--replace-all",
        "remote.origin.fetch",
        `+refs/heads/${branch}:refs/remotes/origin/${branch}`,
      ]);
      await runner.run(["config", "core.logAllRefUpdates", "false"]);
      await runner.run(["config", "gc.autoDetach", "false"]);
      this.runner = runner;
      const history = new TrailerIndex(runner, { ...this.cfg.history, committerEmail: this.cfg.author.email });
      this.src = {
        reader: new ObjectReader(runner, this.cfg.timeoutMs),
        runner,
        indexes: new IndexCache(runner),
        history,
      };
      await this.queue.add(() => this.fetchHead());
      logger.info({ branch, revision: this.head?.sha ?? null }, "flux repo: ready");
    } catch (err) {
      activeWorkDirs.delete(workDir);
      this.ownsWorkDir = false;
      this.src?.reader.close();
      this.src = undefined;
      this.runner = undefined;
      throw err;
    }
  }

  /** Lock files a killed git may have left; this process owns the clone, so no live git holds them. */
  private async removeStaleLocks(): Promise<void> {
    const { workDir, branch } = this.cfg;
    const candidates = [
      "config.lock",
      "packed-refs.lock",
      "shallow.lock",
      "index.lock",
      `refs/remotes/origin/${branch}.lock`,
      `${SCRATCH_REF}.lock`,
      `${FOLLOWER_SCRATCH_REF}.lock`,
      "gc.pid",
    ];
    for (const rel of candidates) {
      const p = join(workDir, rel);
      try {
        await rm(p);
        this.cfg.logger.warn({ file: rel }, "flux repo: removed stale lock file");
      } catch {
        // absent: nothing to do
      }
    }
  }

  /** The head of a branch of the remote, fetched now (the writer's branch or a proposal's); undefined when it does not exist. */
  private async fetchRef(branch: string): Promise<string | undefined> {
    const git = this.git();
    this.counters.fetches += 1;
    const tracking = `refs/remotes/origin/${branch}`;
    // `-v`, not `--quiet`: simple-git waits an extra 50 ms after any command that prints nothing.
    const r = await git.tryRun([
      "fetch",
      "-v",
      "--no-tags",
      "--no-write-fetch-head",
      "origin",
      `+refs/heads/${branch}:${tracking}`,
    ]);
    if (!r.ok) {
      if (!MISSING_BRANCH.test(r.output)) throw r.error;
      await git.tryRun(["update-ref", "-d", tracking]);
      return undefined;
    }
    const rev = await git.tryRun(["rev-parse", "--verify", "--quiet", `${tracking}^{commit}`]);
    return rev.ok ? rev.stdout.trim() : undefined;
  }

  /** Fetches the writer's branch; records and returns its head (undefined while the branch does not exist). */
  private async fetchHead(): Promise<string | undefined> {
    const { branch } = this.cfg;
    const sha = await this.fetchRef(branch);
    // A moved head is read by diffing it against the head before (when that one's index is loaded).
    if (sha !== undefined) this.source().indexes.hintDiffBase(sha, this.head?.sha);
    this.head = { sha, at: Date.now() };
    this.cfg.logger.debug({ branch, revision: sha ?? null }, "flux repo: fetched");
    return sha;
  }

  private schedule(): void {
    if (this.batchScheduled || this.pending.length === 0) return;
    this.batchScheduled = true;
    void this.queue.add(async () => {
      this.batchScheduled = false;
      const batch = this.pending.splice(0, this.cfg.maxBatchSize);
      if (this.pending.length > 0) this.schedule();
      // Empty when the transactions queued for this run joined the batch before it while it was planned.
      if (batch.length > 0) await this.runBatch(batch);
    });
  }

  /**
   * Plans `waiters`, then every transaction that arrived meanwhile (up to maxBatchSize): requests that come
   * in while a batch is planned share its fast-import and push instead of waiting for a batch of their own.
   * `waiters` grows with them.
   */
  private async planJoining(
    waiters: Waiter[],
    head: string | undefined,
    onCommit: (txn: CommitTxn) => void,
  ): Promise<Plan> {
    const planner = new BatchPlanner(new GitTree(this.source(), head), onCommit);
    await planner.add(waiters.map((w) => w.txn));
    while (waiters.length < this.cfg.maxBatchSize) {
      // Before the batch closes, let the event loop take in I/O that has already arrived (one turn, no
      // timer): a request whose bytes are here reaches transact() now rather than after this batch's push.
      if (this.pending.length === 0) await new Promise<void>((resolve) => setImmediate(resolve));
      if (this.pending.length === 0) break;
      const late = this.pending.splice(0, this.cfg.maxBatchSize - waiters.length);
      waiters.push(...late);
      await planner.add(late.map((w) => w.txn));
    }
    return planner.plan();
  }

  /** One group commit: plan, commit, push; replay or rebase on a rejected push. Settles every waiter. */
  private async runBatch(waiters: Waiter[]): Promise<void> {
    const { logger, branch, maxPushAttempts, pushBudgetMs } = this.cfg;
    const started = Date.now();
    this.counters.batches += 1;
    let plan: Plan | undefined;
    let attempts = 0;
    let rejectedPushes = 0;
    // Where the batch's time went (the last attempt's), for the "pushed" log line.
    const phases = { planMs: 0, importMs: 0, pushMs: 0 };
    const report = (result: "pushed" | "unchanged" | "failed", commits: number, pushed?: FluxRepoBatch["pushed"]) => {
      try {
        this.cfg.onBatch({
          result,
          transactions: waiters.length,
          commits,
          rejectedPushes,
          ms: Date.now() - started,
          ...phases,
          ...(pushed ? { pushed } : {}),
        });
      } catch {
        // an observer's failure is not the batch's
      }
    };
    try {
      const shas = await pRetry(
        async (attemptNumber) => {
          attempts = attemptNumber;
          // A head learned within the snapshot window (our own push, or a fetch) needs no fetch first: the
          // push is a compare-and-swap, so a remote that moved meanwhile is still caught (and rebased on).
          const quiet = Date.now() - this.lastRejectionAt > FOREIGN_WRITER_MS;
          const known = attemptNumber === 1 && quiet ? this.freshHead(FRESH_HEAD_MS) : undefined;
          const head = known ? known.sha : await this.fetchHead();
          if (plan && plan.base !== head) {
            const changed = await this.changedPaths(plan.base, head);
            if (planConflicts(plan, changed)) {
              this.counters.replays += 1;
              logger.debug(
                { branch, changed: changed.length },
                "flux repo: remote changed what the batch read; replaying",
              );
              plan = undefined;
            } else {
              this.counters.rebases += 1;
              plan = { ...plan, base: head };
            }
          }
          let mark = performance.now();
          const lap = () => {
            const now = performance.now();
            const ms = Math.round(now - mark);
            mark = now;
            return ms;
          };
          let commits: string[];
          if (plan) {
            phases.planMs = lap(); // rebased: the plan holds as it is
            if (commitCount(plan) === 0) return [];
            commits = await this.importCommits(plan);
          } else {
            // Each commit goes to fast-import as soon as it is planned: git writes the batch's objects on the
            // other core while later requests are still arriving and being planned.
            const importer = this.startImport(head);
            try {
              plan = await this.planJoining(waiters, head, (txn) => importer.add(txn));
            } catch (err) {
              importer.abort();
              throw err;
            }
            phases.planMs = lap();
            commits = await importer.finish();
            if (commits.length === 0) return [];
          }
          phases.importMs = lap();
          await this.push(commits[commits.length - 1] as string, plan.base);
          phases.pushMs = lap();
          return commits;
        },
        {
          retries: maxPushAttempts - 1,
          maxRetryTime: pushBudgetMs,
          // A rejection means someone else pushed: the fix is a rebase onto the new head, so retry almost at once.
          // Waiting longer only lets a busy writer (image automation) push again. The jitter, capped low, is for
          // two Berth replicas racing each other; the budget, not the delay, bounds how long a request waits.
          factor: 2,
          minTimeout: 2,
          maxTimeout: 50,
          randomize: true,
          shouldRetry: ({ error }) => error instanceof PushRejectedError,
          onFailedAttempt: ({ error, attemptNumber }) => {
            if (!(error instanceof PushRejectedError)) return;
            this.counters.pushRejections += 1;
            rejectedPushes += 1;
            this.lastRejectionAt = Date.now();
            logger.warn(
              { branch, attempt: attemptNumber, reason: error.message },
              "flux repo: push rejected, remote moved",
            );
          },
        },
      );
      const final = plan as Plan | undefined;
      if (!final) throw new GitOpsError("unavailable", "internal: batch finished without a plan");
      this.source().history.recordPushed(
        final.base,
        final.txns
          .flatMap((t) => (t.kind === "commit" ? [t.message] : []))
          .map((message, n) => ({ revision: shas[n] as string, message })),
        this.lastImportAt,
      );
      if (shas.length > 0) {
        // The pushed head's index is the base's plus what the batch wrote: no ls-tree for the next reader.
        // Each path's last content only: every commit of a batch rewrites the cluster indexes, and hashing
        // all 100 versions of each was 45 MB of SHA-1 per batch at 5,000 teams.
        const written = new Map(final.txns.flatMap((t) => (t.kind === "commit" ? [...t.files] : [])));
        this.source().indexes.derive(final.base, shas[shas.length - 1] as string, written);
      }
      let prev = final.base;
      let i = 0;
      final.txns.forEach((t, idx) => {
        const w = waiters[idx] as Waiter;
        if (t.kind === "commit") {
          const sha = shas[i++] as string;
          prev = sha;
          w.resolve({ revision: sha, committed: true, files: [...t.files.keys()].sort() });
        } else if (t.kind === "noop") {
          w.resolve({ revision: prev ?? "", committed: false, files: [] });
        } else {
          w.reject(t.error);
        }
      });
      this.counters.commits += shas.length;
      if (shas.length > 0) {
        const paths = [...new Set(final.txns.flatMap((t) => (t.kind === "commit" ? [...t.files.keys()] : [])))].sort();
        report("pushed", shas.length, { revision: shas[shas.length - 1] as string, paths });
      } else report("unchanged", 0);
      if (shas.length > 0) {
        logger.info(
          {
            branch,
            transactions: waiters.length,
            commits: shas.length,
            attempts,
            revision: shas[shas.length - 1],
            ms: Date.now() - started,
            ...phases,
          },
          "flux repo: pushed",
        );
        if (this.counters.batches % 50 === 0) await this.git().tryRun(["gc", "--auto", "--quiet"]);
      }
    } catch (err) {
      const error =
        err instanceof PushRejectedError
          ? new GitOpsError(
              "conflict",
              `push to ${branch} rejected ${attempts} times (the branch kept moving); nothing was written`,
            )
          : err instanceof GitOpsError
            ? err
            : new GitOpsError(
                "unavailable",
                `flux repo batch failed: ${this.git().redact(String((err as Error)?.message ?? err))}`,
              );
      logger.warn(
        { branch, transactions: waiters.length, attempts, kind: error.kind, error: error.message },
        "flux repo: batch failed",
      );
      report("failed", 0);
      const final = plan as Plan | undefined;
      waiters.forEach((w, idx) => {
        const t = final?.txns[idx];
        // A transaction whose own mutate failed gets its own error: that outcome did not depend on the push.
        w.reject(t?.kind === "error" ? t.error : error);
      });
      await this.resetAfterFailure();
    }
  }

  /** Nothing uncommitted lives in the clone; drop the scratch ref and force the next read to fetch. */
  private async resetAfterFailure(): Promise<void> {
    this.head = undefined;
    try {
      await this.git().tryRun(["update-ref", "-d", SCRATCH_REF]);
    } catch {
      // best effort
    }
  }

  /** Paths that differ between two commits (either may be undefined: an absent branch). */
  private async changedPaths(from: string | undefined, to: string | undefined): Promise<string[]> {
    if (from === to) return [];
    const git = this.git();
    const args =
      from === undefined
        ? ["ls-tree", "-r", "--name-only", "-z", to as string]
        : to === undefined
          ? ["ls-tree", "-r", "--name-only", "-z", from]
          : ["diff-tree", "-r", "--name-only", "-z", "--no-renames", from, to];
    const out = await git.run(args, { what: `git ${args[0]}` });
    return out.split("\0").filter((p) => p !== "");
  }

  /** Writes the plan's commits with one `git fast-import`; returns their shas in order. */
  private importCommits(plan: Plan): Promise<string[]> {
    const importer = this.startImport(plan.base);
    for (const t of plan.txns) if (t.kind === "commit") importer.add(t);
    return importer.finish();
  }

  /**
   * One `git fast-import` writing commits on top of `base` as they are added, onto the scratch ref;
   * `finish()` answers their shas in order. git starts with the first commit (none: no process at all).
   */
  private startImport(
    base: string | undefined,
    ref = SCRATCH_REF,
  ): {
    add(txn: CommitTxn): void;
    addFolders(message: string, parents: readonly [string, ...string[]], folders: ReadonlyMap<string, string>): void;
    finish(): Promise<string[]>;
    abort(): void;
  } {
    const marksFile = join(this.cfg.workDir, "berth-import.marks");
    const when = new Date();
    if (ref === SCRATCH_REF) this.lastImportAt = when;
    const encoder = new FastImportEncoder(ref, this.cfg.author, when);
    const marks: number[] = [];
    let git: StreamingGit | undefined;
    const write = ({ chunks, mark }: { chunks: Buffer[]; mark: number }) => {
      if (!git) {
        git = this.git().startWithInput(
          ["fast-import", "--quiet", "--done", "--force", `--export-marks=${marksFile}`],
          "git fast-import",
        );
        git.write([encoder.start(base)]);
      }
      marks.push(mark);
      git.write(chunks);
    };
    return {
      add: (txn) => write(encoder.commit(txn.message, txn.files)),
      addFolders: (message, parents, folders) => write(encoder.folders(message, parents, folders)),
      abort: () => git?.abort(),
      finish: async () => {
        if (!git) return [];
        git.write([encoder.end()]);
        await git.end();
        const table = new Map<number, string>();
        for (const line of (await readFile(marksFile, "utf8")).split("\n")) {
          const m = /^:(\d+) ([0-9a-f]{40,64})$/.exec(line.trim());
          if (m) table.set(Number(m[1]), m[2] as string);
        }
        await rm(marksFile, { force: true });
        return marks.map((m) => {
          const sha = table.get(m);
          if (!sha) throw new GitOpsError("unavailable", `git fast-import did not report commit :${m}`);
          return sha;
        });
      },
    };
  }

  /**
   * Pushes `sha` to the branch only if the branch is still at `expected` (compare-and-swap through
   * --force-with-lease; never rewinds anyone's commits). A rejection throws PushRejectedError.
   */
  private async push(sha: string, expected: string | undefined): Promise<void> {
    const { branch } = this.cfg;
    const git = this.git();
    this.counters.pushAttempts += 1;
    const r = await git.tryRun([
      "push",
      "--porcelain",
      `--force-with-lease=refs/heads/${branch}:${expected ?? ""}`,
      "origin",
      `${sha}:refs/heads/${branch}`,
    ]);
    if (r.ok) {
      this.head = { sha, at: Date.now() };
      return;
    }
    if (PUSH_REJECTED.test(r.output)) {
      const line = r.output.split("\n").find((l) => PUSH_REJECTED.test(l)) ?? "rejected";
      throw new PushRejectedError(line.trim());
    }
    if (PUSH_DECLINED.test(r.output)) throw declinedPush(branch, r.output);
    // Unknown outcome (timeout, connection drop): the remote may have taken the push anyway.
    if (r.error.kind !== "auth") {
      try {
        const now = await this.fetchHead();
        if (now === sha || (now !== undefined && (await git.isAncestor(sha, now)))) return;
      } catch {
        // fall through to the push error
      }
    }
    throw r.error;
  }
}

/**
 * The remote declined a push by its own rule: what it said (its `remote:` lines and the rejection), from git's
 * redacted output. Gitea: "Not allowed to push to protected branch main"; GitHub: "GH006: Protected branch update
 * failed"; Azure DevOps: "TF402455: Pushes to this branch are not permitted".
 */
function declinedPush(branch: string, output: string): GitOpsError {
  const said = output
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.startsWith("remote:") || PUSH_DECLINED.test(line))
    .map((line) => line.replace(/^remote:\s*/, "").replace(/^!\s*/, ""))
    .filter((line) => line !== "")
    .slice(0, 6)
    .join(" / ");
  return new GitOpsError("refused", `the remote declined the push to ${branch}: ${said.slice(0, 600) || "rejected"}`);
}
