import {
  describeChange,
  type Adoption,
  type AdoptionPlan,
  type AdoptionRequest,
  type ChangeOrigin,
  type FileChange,
} from "@berth/core";
import type { ReviewRef } from "./idempotency.js";
import { TRAILER_ACTION, TRAILER_TEAM, type TeamStore } from "./team-service.js";

/** The action trailer of an adoption's commit: in pull-request mode it marks a write that may edit hand-written files. */
export const ADOPT_ACTION = "adopt";

/** Adoption of hand-written teams (docs/adoption.md): a preview, and the commit of team file and layout. */
export class AdoptionService {
  constructor(
    private readonly adoption: Adoption,
    private readonly store: TeamStore,
  ) {}

  /** What adopting the team would commit, from a fresh fetch (hand edits are what adoption is about). */
  async preview(name: string, request: AdoptionRequest) {
    const tree = await this.store.snapshot(0);
    const preview = await this.adoption.preview(tree, name, request);
    return {
      revision: tree.revision,
      team: preview.team,
      report: preview.report,
      files: preview.files,
      diff: preview.diff,
    };
  }

  /**
   * One commit: the team file, Berth's layout, the hand-written Flux Kustomizations suspended. In pull-request mode
   * that commit is proposed on the team's branch instead (`review`), and nothing is on the Flux repo's branch until a
   * reviewer merges it.
   */
  async adopt(
    name: string,
    request: AdoptionRequest,
    origin: ChangeOrigin,
  ): Promise<{
    team: AdoptionPlan["team"];
    report: AdoptionPlan["report"];
    revision: string;
    files: FileChange[];
    review?: ReviewRef;
  }> {
    // Planned once on a snapshot first: a refusal (or a limit) answers without queueing in the writer's
    // lane, so a hostile tree never holds other teams' writes. The commit plans again on the lane's tree,
    // which records what it reads (the writer re-plans when the remote moves under those paths).
    await this.adoption.plan(await this.store.snapshot(0), name, request);
    let planned: { plan: AdoptionPlan; files: FileChange[] } | undefined;
    const trailers = [
      ...(origin.trailers ?? []),
      { key: TRAILER_ACTION, value: ADOPT_ACTION },
      { key: TRAILER_TEAM, value: name },
    ];
    const result = await this.store.transact(
      async (tree) => {
        const plan = await this.adoption.plan(tree, name, request);
        planned = { plan, files: await describeChange(tree, plan.change.files) };
        return plan.change;
      },
      { ...origin, trailers },
    );
    if (!planned) throw new Error("adoption finished without a plan");
    return {
      team: planned.plan.team,
      report: planned.plan.report,
      revision: result.revision,
      files: planned.files,
      ...(result.review ? { review: result.review } : {}),
    };
  }
}
