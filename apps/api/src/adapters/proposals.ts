import { setTimeout as sleep } from "node:timers/promises";
import {
  describeOwner,
  PathOwnershipError,
  ROLLOUT_ID,
  type ChangeOrigin,
  type RepoChange,
  type RepoLayout,
  type RepoTree,
} from "@berth/core";
import type { ReviewRef } from "../services/idempotency.js";
import type { TeamStore } from "../services/team-service.js";
import { TRAILER_ACTION, TRAILER_TEAM } from "../services/team-service.js";
import { ADOPT_ACTION } from "../services/adoption-service.js";
import { NotProposedError } from "../services/errors.js";
import { GitOpsError, type FluxRepo, type Forge, type ProposeResult, type PullRequest } from "@berth/gitops";
import type { WaveProposals } from "../services/rollouts/ports.js";

/** A write in pull-request mode: the commit on its branch, and the pull request that proposes the branch. */
export interface Proposal extends ProposeResult {
  /** Null only when nothing was committed and the branch does not exist (nothing to review). */
  pullRequest: PullRequest | null;
}

/**
 * Whose pending change a write extends: a team's (onboard, update, offboard, adopt) or a rollout wave's. An adoption
 * (`adopts`) also edits the hand-written files that applied the team before (it suspends their Flux Kustomizations).
 */
export type ProposalOwner = { team: string; adopts?: boolean } | { rollout: string };

/** A branch whose pull request was merged or closed, deleted by `sweep`. */
export interface SweptProposal {
  branch: string;
  pullRequest: ReviewRef;
}

const reviewRef = (pr: PullRequest): ReviewRef => ({ number: pr.number, url: pr.url, state: pr.state });

const TEAM_BRANCH_PREFIX = "berth/team/";
const WAVE_BRANCH_PREFIX = "berth/rollout/";
export const proposalBranch = (owner: ProposalOwner) =>
  "team" in owner ? `${TEAM_BRANCH_PREFIX}${owner.team}` : `${WAVE_BRANCH_PREFIX}${owner.rollout}`;
/** The team whose changes `branch` proposes; undefined for another branch (a rollout wave's). */
export const teamOfBranch = (branch: string): string | undefined =>
  branch.startsWith(TEAM_BRANCH_PREFIX) ? branch.slice(TEAM_BRANCH_PREFIX.length) : undefined;
/** The rollout whose wave `branch` proposes (`berth/rollout/<id>-<wave>`, see `ProposedWaves`); else undefined. */
export function rolloutOfBranch(branch: string): string | undefined {
  if (!branch.startsWith(WAVE_BRANCH_PREFIX)) return undefined;
  const rest = branch.slice(WAVE_BRANCH_PREFIX.length);
  const id = /^([^-]+-[^-]+-[^-]+-[^-]+)-./.exec(rest)?.[1];
  return id && ROLLOUT_ID.test(id) ? id : undefined;
}

/**
 * Pull-request mode's writer (ADR 0030): a write for a team is committed on that team's branch, planned on the
 * branch's tree (its pending change) or on main when it has none, and the branch's pull request is opened, or
 * updated by the push when one is open. A change that writes any path that is not its owner's is refused before
 * anything is pushed (the layout decides: ADR 0032). Merging is the reviewers'.
 */
export class ProposingWriter {
  constructor(
    private readonly repo: Pick<FluxRepo, "propose" | "branch" | "proposals" | "deleteProposal">,
    private readonly forge: Forge,
    private readonly layout: Pick<RepoLayout, "ownerOf">,
  ) {}

  /** The open pull request of the owner's branch: its pending change, and where review stands. */
  async pending(owner: ProposalOwner): Promise<ReviewRef | undefined> {
    const pr = await this.forge.findOpenPullRequest(proposalBranch(owner), this.repo.branch);
    return pr && reviewRef(pr);
  }

  /** Every team's open pull request (one listing of the forge's open pull requests), by team name. */
  async teamsInReview(): Promise<Array<{ team: string; pullRequest: ReviewRef }>> {
    const open = await this.forge.openPullRequests(this.repo.branch, TEAM_BRANCH_PREFIX);
    return open
      .flatMap((pr) => {
        const team = teamOfBranch(pr.head);
        return team ? [{ team, pullRequest: reviewRef(pr) }] : [];
      })
      .sort((a, b) => (a.team < b.team ? -1 : a.team > b.team ? 1 : 0));
  }

  /**
   * Closes the owner's open pull request without merge (its change is dropped whole); undefined when none is open.
   * The branch stays until the sweep: deleting it now would race the owner's next write (see `sweep`).
   */
  async withdraw(owner: ProposalOwner): Promise<ReviewRef | undefined> {
    const open = await this.forge.findOpenPullRequest(proposalBranch(owner), this.repo.branch);
    return open && reviewRef(await this.forge.closePullRequest(open.number));
  }

  /** The owner's last pull request, whatever became of it (open, merged, closed without merge), if recent. */
  async latest(owner: ProposalOwner): Promise<ReviewRef | undefined> {
    const pr = await this.forge.latestPullRequest(proposalBranch(owner), this.repo.branch);
    return pr && reviewRef(pr);
  }

  /**
   * Deletes the branches whose last pull request was merged or closed at least `olderThanMs` before `now`: a closed
   * one's change was dropped whole (nothing of it reached main), a merged one's is on main. A branch pushed to since
   * (a new change on its way to a new pull request) is kept, by a lease on the commit the pull request proposed; so is
   * a branch with no pull request.
   *
   * Why wait: the next write of an owner reuses its branch (a push over it), but a deleted one is created again, and
   * Gitea closes the open pull requests of a deleted branch later, from a queue: a pull request opened on the new
   * branch before that runs would be closed too. A branch idle for long is rarely written to in that moment.
   */
  async sweep(olderThanMs: number, now = Date.now()): Promise<SweptProposal[]> {
    const branches = await this.repo.proposals();
    const swept: SweptProposal[] = [];
    for (const [branch, head] of branches) {
      const pr = await this.forge.latestPullRequest(branch, this.repo.branch);
      if (!pr || (pr.state !== "merged" && pr.state !== "closed") || pr.headCommit !== head) continue;
      if (!pr.closedAt || now - Date.parse(pr.closedAt) < olderThanMs) continue;
      if (await this.repo.deleteProposal(branch, head)) swept.push({ branch, pullRequest: reviewRef(pr) });
    }
    return swept;
  }

  /**
   * The first path of a change that may not go to the owner's branch, if any: a team's writes only that team's paths
   * (an adoption also the hand-written files outside Berth's layout, never another owner's); a rollout wave's writes
   * its teams' paths, nothing of the layout's (an index) and not the rollout's own file (kept on the records branch).
   */
  private outsider(owner: ProposalOwner, paths: Iterable<string>): string | undefined {
    const allowed = (path: string) => {
      const of = this.layout.ownerOf(path);
      if ("team" in owner)
        return (of.kind === "team" && of.team === owner.team) || (owner.adopts === true && of.kind === "unowned");
      return of.kind === "team";
    };
    return [...paths].find((path) => !allowed(path));
  }

  async propose(
    owner: ProposalOwner,
    mutate: (tree: RepoTree) => Promise<RepoChange | null>,
    origin: ChangeOrigin,
  ): Promise<Proposal> {
    const branch = proposalBranch(owner);
    // Only an open pull request is a pending change to extend: a branch whose pull request was merged or closed
    // starts again from main (planned on what main holds now, not on what that branch held).
    const pending = await this.forge.findOpenPullRequest(branch, this.repo.branch);
    let planned: RepoChange | null = null;
    const result = await this.repo.propose(
      branch,
      async (tree) => {
        const change = await mutate(tree);
        const outside = change ? this.outsider(owner, change.files.keys()) : undefined;
        if (outside !== undefined) {
          const of = describeOwner(this.layout.ownerOf(outside));
          if ("team" in owner) throw new PathOwnershipError(owner.team, outside, of);
          throw new GitOpsError("invalid-change", `the change writes ${outside}, ${of}, outside ${branch}'s teams`);
        }
        planned = change;
        return change;
      },
      origin,
      { fromMain: !pending },
    );
    if (!result.onBranch) return { ...result, pullRequest: null };
    const subject = (planned as RepoChange | null)?.subject ?? `berth: ${branch}`;
    try {
      const pullRequest = await this.forge.openPullRequest({
        head: branch,
        base: this.repo.branch,
        title: subject,
        body: [
          ...((planned as RepoChange | null)?.body ?? []),
          "",
          "Proposed by Berth: merge to apply, close to drop it.",
        ].join("\n"),
      });
      return { ...result, pullRequest };
    } catch (err) {
      // No pull request proposes the branch this write started (new, or restarted from main): it goes, so nothing is
      // left that no one reviews. A branch with an open pull request keeps it. Leased on this write's commit.
      if (!pending) await this.repo.deleteProposal(branch, result.revision).catch(() => false);
      throw err;
    }
  }
}

/**
 * The API's store in pull-request mode: reads from the Flux repo's branch as in direct mode, writes proposed. A write
 * names its team in its Berth-Team trailer (TeamService and AdoptionService set it); a write for no team is refused:
 * rollouts propose their waves through ProposedWaves (ADR 0030).
 */
export class ReviewedStore implements TeamStore {
  constructor(
    private readonly repo: Pick<FluxRepo, "snapshot" | "ping" | "treeAt">,
    private readonly writer: Pick<ProposingWriter, "propose">,
  ) {}

  treeAt(revision: string): Promise<RepoTree | undefined> {
    return this.repo.treeAt(revision);
  }

  snapshot(maxAgeMs?: number): Promise<RepoTree> {
    return this.repo.snapshot(maxAgeMs);
  }

  ping(): Promise<void> {
    return this.repo.ping();
  }

  async transact(
    mutate: (tree: RepoTree) => Promise<RepoChange | null>,
    origin: ChangeOrigin,
  ): Promise<{ revision: string; committed: boolean; files: string[]; review?: ReviewRef }> {
    const team = origin.trailers?.find((t) => t.key === TRAILER_TEAM)?.value;
    if (!team) throw new NotProposedError("a write that is not one team's (a rollout)");
    const adopts = origin.trailers?.some((t) => t.key === TRAILER_ACTION && t.value === ADOPT_ACTION) ?? false;
    const { revision, committed, files, pullRequest } = await this.writer.propose({ team, adopts }, mutate, origin);
    return {
      revision,
      committed,
      files,
      ...(pullRequest
        ? { review: { number: pullRequest.number, url: pullRequest.url, state: pullRequest.state } }
        : {}),
    };
  }
}

/**
 * Pull-request mode's housekeeping: every `intervalMs` the branches whose pull request was merged or closed are
 * deleted (`ProposingWriter.sweep`), each said in the log. Polling, so a merge or close is noticed without any
 * webhook; a failed sweep is logged and tried again at the next.
 */
export class ProposalSweeper {
  private readonly stopper = new AbortController();
  private loop: Promise<void> | undefined;

  constructor(
    private readonly writer: Pick<ProposingWriter, "sweep">,
    private readonly opts: {
      intervalMs: number;
      /** How long a merged or closed pull request's branch is kept (see `ProposingWriter.sweep`). */
      keepMs: number;
      logger: { info(fields: object, message: string): void; warn(fields: object, message: string): void };
      /** Told about each branch deleted (e.g. to forget a cached review). */
      onSwept?: (swept: SweptProposal) => void;
    },
  ) {}

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopper.abort();
    await this.loop;
  }

  /** One sweep now: what it deleted. */
  async sweepNow(): Promise<SweptProposal[]> {
    const swept = await this.writer.sweep(this.opts.keepMs);
    for (const s of swept) {
      const { number, url, state } = s.pullRequest;
      this.opts.logger.info(
        { branch: s.branch, pullRequest: number, url, state },
        state === "merged"
          ? `pull request #${number} merged: deleted its branch ${s.branch}`
          : `pull request #${number} closed without merge: deleted its branch ${s.branch}; nothing of it was applied`,
      );
      this.opts.onSwept?.(s);
    }
    return swept;
  }

  private async run(): Promise<void> {
    const signal = this.stopper.signal;
    while (!signal.aborted) {
      await this.sweepNow().catch((err: unknown) =>
        this.opts.logger.warn({ err }, "pull-request sweep failed; trying again at the next"),
      );
      await sleep(this.opts.intervalMs, undefined, { signal }).catch(() => undefined);
    }
  }
}

/**
 * Pull-request mode's rollout waves (ADR 0030): each wave's team files as one pull request from branch
 * `berth/rollout/<id>-<wave>`, proposed, followed and closed through the same writer and forge as team changes.
 */
export class ProposedWaves implements WaveProposals {
  constructor(
    private readonly writer: Pick<ProposingWriter, "propose">,
    private readonly forge: Pick<Forge, "pullRequest" | "closePullRequest">,
  ) {}

  async propose(
    rollout: string,
    wave: string,
    plan: (tree: RepoTree) => Promise<RepoChange | null>,
    origin: ChangeOrigin,
  ): Promise<{ number: number; url: string } | undefined> {
    const { pullRequest } = await this.writer.propose({ rollout: `${rollout}-${wave}` }, plan, origin);
    return pullRequest ? { number: pullRequest.number, url: pullRequest.url } : undefined;
  }

  async state(pullRequest: number): Promise<"open" | "merged" | "closed"> {
    const { state } = await this.forge.pullRequest(pullRequest);
    return state === "merged" || state === "closed" ? state : "open";
  }

  async close(pullRequest: number): Promise<void> {
    const current = await this.forge.pullRequest(pullRequest);
    if (current.state !== "merged" && current.state !== "closed") await this.forge.closePullRequest(pullRequest);
  }
}

/**
 * Pull-request mode's store for rollouts (ADR 0030). A rollout's file changes at every step (wave proposed, merged,
 * passed, paused), so it is kept on an unprotected branch of its own that Flux does not read (`records`, e.g.
 * `berth/rollouts`), pushed to directly; its teams are read from the Flux repo's branch (`main`), where only reviewed
 * pull requests land. Reads see one tree: the rollouts folder from the records branch, everything else from main;
 * its revision and history (idempotent creates) are the records branch's. A write may change rollout files only.
 */
export class RolloutRecords implements TeamStore {
  constructor(
    private readonly main: Pick<FluxRepo, "snapshot" | "ping" | "treeAt">,
    private readonly records: Pick<FluxRepo, "snapshot" | "transact">,
    private readonly rolloutsDir: string,
  ) {}

  /** Trees at a revision the clusters report: main's, as Flux applied them. */
  treeAt(revision: string): Promise<RepoTree | undefined> {
    return this.main.treeAt(revision);
  }

  async snapshot(maxAgeMs?: number): Promise<RepoTree> {
    const [main, records] = await Promise.all([this.main.snapshot(maxAgeMs), this.records.snapshot(maxAgeMs)]);
    return overlayFolder(main, records, this.rolloutsDir);
  }

  ping(): Promise<void> {
    return this.main.ping();
  }

  async transact(
    mutate: (tree: RepoTree) => Promise<RepoChange | null>,
    origin: ChangeOrigin,
  ): Promise<{ revision: string; committed: boolean; files: string[] }> {
    return this.records.transact(async (records) => {
      const change = await mutate(overlayFolder(await this.main.snapshot(0), records, this.rolloutsDir));
      const outside = change && [...change.files.keys()].find((path) => !path.startsWith(`${this.rolloutsDir}/`));
      if (outside)
        throw new NotProposedError(
          `a rollout without waves (its teams' files and its own file in one commit, such as ${outside}; give it waves: each is proposed as one pull request)`,
        );
      return change;
    }, origin);
  }
}

/** `base` with folder `dir` read from `over` instead; revision and history are `over`'s. */
export function overlayFolder(base: RepoTree, over: RepoTree, dir: string): RepoTree {
  const inDir = (path: string) => path === dir || path.startsWith(`${dir}/`);
  /** The root, and each folder on the way to `dir`: they hold files of both trees. */
  const holdsDir = (folder: string) => folder === "" || dir.startsWith(`${folder}/`);
  const from = (path: string) => (inDir(path) ? over : base);
  return {
    revision: over.revision,
    read: (path) => from(path).read(path),
    list: async (folder) => {
      if (inDir(folder)) return over.list(folder);
      const listed = await base.list(folder);
      // A listing that holds the folder (the root) shows the overlay's files there, not the base's.
      if (!holdsDir(folder)) return listed;
      const prefix = `${dir}/`;
      return [...listed.filter((p) => !p.startsWith(prefix)), ...(await over.list(dir))].sort();
    },
    hasContent: (path, content) => from(path).hasContent(path, content),
    findCommit: (trailers) => over.findCommit(trailers),
    ...overlayIds(base, over, inDir, holdsDir),
  };
}

/**
 * Content ids (the readers' cache keys) for `overlayFolder`, when both trees have them: a team listing stays one read
 * per changed team folder. A folder that holds the overlaid one mixes two trees: it has no entries or id to give.
 */
function overlayIds(
  base: RepoTree,
  over: RepoTree,
  inDir: (path: string) => boolean,
  holdsDir: (folder: string) => boolean,
): Pick<RepoTree, "entries" | "contentId"> {
  const { entries: baseEntries, contentId: baseId } = base;
  const { entries: overEntries, contentId: overId } = over;
  if (!baseEntries || !overEntries || !baseId || !overId) return {};
  const single = (path: string) => {
    if (holdsDir(path)) throw new Error(`${path || "the root"} holds files of two branches: it has no content id`);
  };
  return {
    entries: async (folder) => {
      if (inDir(folder)) return overEntries.call(over, folder);
      single(folder);
      return baseEntries.call(base, folder);
    },
    contentId: async (path) => {
      if (inDir(path)) return overId.call(over, path);
      single(path);
      return baseId.call(base, path);
    },
  };
}
