import type { GateTeamReport, RepoTree } from "@berth/core";
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
