import type { ChangeOrigin, RepoChange, RepoLayout, RepoTree } from "@berth/core";
import type { ReviewRef } from "../services/idempotency.js";
import type { TeamStore } from "../services/team-service.js";
import { TRAILER_TEAM } from "../services/team-service.js";
import { NotProposedError } from "../services/errors.js";
import { GitOpsError, type FluxRepo, type Forge, type ProposeResult, type PullRequest } from "@berth/gitops";

/** A write in pull-request mode: the commit on its branch, and the pull request that proposes the branch. */
export interface Proposal extends ProposeResult {
  /** Null only when nothing was committed and the branch does not exist (nothing to review). */
  pullRequest: PullRequest | null;
}

/** Whose pending change a write extends: a team's (onboard, update, offboard, adopt) or a rollout wave's. */
export type ProposalOwner = { team: string } | { rollout: string };

export const proposalBranch = (owner: ProposalOwner) =>
  "team" in owner ? `berth/team/${owner.team}` : `berth/rollout/${owner.rollout}`;

/**
 * Pull-request mode's writer (ADR 0030): a write for a team is committed on that team's branch, planned on the
 * branch's tree (its pending change) or on main when it has none, and the branch's pull request is opened, or
 * updated by the push when one is open. A change that writes any path that is not its owner's is refused before
 * anything is pushed (the layout decides: ADR 0032). Merging is the reviewers'.
 */
export class ProposingWriter {
  constructor(
    private readonly repo: Pick<FluxRepo, "propose" | "branch">,
    private readonly forge: Forge,
    private readonly layout: Pick<RepoLayout, "proposalBranchOf">,
  ) {}

  /** The open pull request of the owner's branch: its pending change, and where review stands. */
  async pending(owner: ProposalOwner): Promise<ReviewRef | undefined> {
    const pr = await this.forge.findOpenPullRequest(proposalBranch(owner), this.repo.branch);
    return pr && { number: pr.number, url: pr.url, state: pr.state };
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
        if (change && change.files.size > 0 && this.layout.proposalBranchOf(change.files.keys()) !== branch)
          throw new GitOpsError(
            "invalid-change",
            `the change writes paths outside ${branch}'s (a cluster index?): pull-request mode needs platform.layout.appliedBy slices`,
          );
        planned = change;
        return change;
      },
      origin,
      { fromMain: !pending },
    );
    if (!result.onBranch) return { ...result, pullRequest: null };
    const subject = (planned as RepoChange | null)?.subject ?? `berth: ${branch}`;
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
  }
}

/**
 * The API's store in pull-request mode: reads from the Flux repo's branch as in direct mode, writes proposed. A write
 * names its team in its Berth-Team trailer (TeamService sets it on every team write); a write for no team (a rollout,
 * an adoption) is refused for now: pull-request mode proposes team writes only (ADR 0030, issue 38).
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
    if (!team) throw new NotProposedError("a write that is not one team's (a rollout, an adoption)");
    const { revision, committed, files, pullRequest } = await this.writer.propose({ team }, mutate, origin);
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
