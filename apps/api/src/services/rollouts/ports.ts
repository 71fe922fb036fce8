import type { ChangeOrigin, GateTeamReport, RepoChange, RepoTree, Rollout } from "@berth/core";
import type { TeamStore } from "../team-service.js";

// What the rollout service and its engine share, so that neither imports the other.

/** What rollouts need from the Flux repo: the team store, and trees at the revisions clusters report. */
export interface RolloutStore extends TeamStore {
  treeAt(revision: string): Promise<RepoTree | undefined>;
}

/** The engine as the service sees it: drive a rollout after a change, show its last gate evaluation. */
export interface EngineHandle {
  kick(rolloutId: string): void;
  progress(id: string): GateProgress | undefined;
  /** Runs `fn` while no pass over rollout `id` runs on this replica, and holds the next one until `fn` ends. */
  hold<T>(id: string, fn: () => Promise<T>): Promise<T>;
  /**
   * Pull-request mode: closes the pull request an aborted rollout's wave waits in, once the abort is committed. It
   * does not throw: a close that fails is logged and tried again at each resync, on every replica, until it holds.
   */
  withdraw(r: Rollout): Promise<void>;
}

/** The last gate evaluation of a rollout's current wave, on the replica driving it. */
export interface GateProgress {
  evaluatedAt: string;
  wave: string;
  verdict: "pass" | "wait" | "halt";
  message: string;
  ready: number;
  waiting: number;
  failed: number;
  teams: GateTeamReport[];
}

/**
 * Pull-request mode (ADR 0030): each wave's team files go to the Flux repo's branch as one pull request, and the
 * wave's gate starts once it is merged. The rollout's own file is kept where the store writes (not on that branch).
 */
export interface WaveProposals {
  /**
   * Commits the change `plan` makes on the branch's tree (main's head) on the wave's branch and opens its pull
   * request, or finds the one a retry opened. Undefined when `plan` has nothing to change (no pull request).
   */
  propose(
    rollout: string,
    wave: string,
    plan: (tree: RepoTree) => Promise<RepoChange | null>,
    origin: ChangeOrigin,
  ): Promise<{ number: number; url: string } | undefined>;
  /** Where the pull request stands: still open (whatever its review), merged, or closed without merge. */
  state(pullRequest: number): Promise<"open" | "merged" | "closed">;
  /** Closes it without merge (an aborted rollout's wave); a closed or merged one stays as it is. */
  close(pullRequest: number): Promise<void>;
}
