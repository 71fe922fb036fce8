import { SLICE_BRANCHES } from "@berth/core";
import type { FluxRepo } from "@berth/gitops";

/** A Flux revision of the fleet: the main branch's, or a slice branch's (per-slice fetch, ADR 0036). */
const FLEET_REVISION = new RegExp(`^(main|${SLICE_BRANCHES}[^@/]+/[^@/]+)@sha1:([0-9a-f]{40})$`);

/**
 * The main-branch commit a revision Flux reports stands for, read as the API reads it (FluxRepo.fleetCommit):
 * `main@sha1:<c>` is `c`; a slice branch's commit holds only the slice's folders and names its main-branch commit in
 * its `Berth-Fleet-Commit` trailer. Any other ref is not the fleet's. A slice commit is fetched with its branch, so
 * only while the branch holds it: Flux reports the revision it fetched, which the branch held then.
 */
export class FleetRevisions {
  private readonly known = new Map<string, Promise<string | undefined>>();

  /** `repo`: a clone of the fleet's own (opened when first asked), never one a test or the API writes with. */
  constructor(private readonly repo: () => FluxRepo) {}

  /** Whether `revision` stands for the main-branch commit `sha`. */
  async is(revision: string | undefined, sha: string): Promise<boolean> {
    return revision !== undefined && (await this.of(revision)) === sha;
  }

  of(revision: string): Promise<string | undefined> {
    const m = FLEET_REVISION.exec(revision);
    if (!m) return Promise.resolve(undefined);
    const [, branch, sha] = m as unknown as [string, string, string];
    if (branch === "main") return Promise.resolve(sha);
    // One look-up per commit however many Kustomizations report it; one that found nothing is tried again next time.
    let found = this.known.get(sha);
    if (!found) {
      found = this.repo()
        .fleetCommit(sha, branch)
        .catch(() => undefined);
      this.known.set(sha, found);
      void found.then((fleet) => fleet === undefined && this.known.delete(sha));
    }
    return found;
  }
}
