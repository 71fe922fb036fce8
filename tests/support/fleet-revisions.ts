import type { FluxRepo } from "@berth/gitops";
import { FleetCommits } from "../../apps/api/src/services/slice-branches.js";

/** A revision of the main branch: `main@sha1:<commit>`. */
const MAIN_REVISION = /^main@sha1:([0-9a-f]{40})$/;

/**
 * The main-branch commit a revision Flux reports stands for, read as the API reads it (FleetCommits over
 * FluxRepo.fleetCommit): `main@sha1:<c>` is `c`; a slice branch's commit names its main-branch commit. Any other ref
 * is not the fleet's. A slice commit is fetched with its branch, so only while the branch holds it: Flux reports the
 * revision it fetched, which the branch held then.
 */
export class FleetRevisions {
  private readonly commits: FleetCommits;

  /** `repo`: a clone of the fleet's own (opened when first asked), never one a test or the API writes with. */
  constructor(repo: () => FluxRepo) {
    this.commits = new FleetCommits({ fleetCommit: (sha, branch) => repo().fleetCommit(sha, branch) });
  }

  /** Whether `revision` stands for the main-branch commit `sha`. */
  async is(revision: string | undefined, sha: string): Promise<boolean> {
    return revision !== undefined && (await this.of(revision)) === sha;
  }

  of(revision: string): Promise<string | undefined> {
    const main = MAIN_REVISION.exec(revision)?.[1];
    return main !== undefined ? Promise.resolve(main) : this.commits.of(revision);
  }
}
