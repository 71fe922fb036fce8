import {
  describeChange,
  type Adoption,
  type AdoptionPlan,
  type AdoptionRequest,
  type ChangeOrigin,
  type FileChange,
} from "@berth/core";
import type { TeamStore } from "./team-service.js";

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

  /** One commit: the team file, Berth's layout, the hand-written Flux Kustomizations suspended. */
  async adopt(
    name: string,
    request: AdoptionRequest,
    origin: ChangeOrigin,
  ): Promise<{ team: AdoptionPlan["team"]; report: AdoptionPlan["report"]; revision: string; files: FileChange[] }> {
    // Planned once on a snapshot first: a refusal (or a limit) answers without queueing in the writer's
    // lane, so a hostile tree never holds other teams' writes. The commit plans again on the lane's tree,
    // which records what it reads (the writer re-plans when the remote moves under those paths).
    await this.adoption.plan(await this.store.snapshot(0), name, request);
    let planned: { plan: AdoptionPlan; files: FileChange[] } | undefined;
    const result = await this.store.transact(async (tree) => {
      const plan = await this.adoption.plan(tree, name, request);
      planned = { plan, files: await describeChange(tree, plan.change.files) };
      return plan.change;
    }, origin);
    if (!planned) throw new Error("adoption finished without a plan");
    return { team: planned.plan.team, report: planned.plan.report, revision: result.revision, files: planned.files };
  }
}
