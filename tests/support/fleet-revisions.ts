import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { SLICE_BRANCHES } from "@berth/core";
import { git } from "./git-remotes.js";

/** A Flux revision of the fleet: the main branch's, or a slice branch's (per-slice fetch, ADR 0036). */
const FLEET_REVISION = new RegExp(`^(main|${SLICE_BRANCHES}[^@/]+/[^@/]+)@sha1:([0-9a-f]{40})$`);
const FLEET_COMMIT = /^Berth-Fleet-Commit: ([0-9a-f]{40})$/m;

/**
 * The main-branch commit a revision Flux reports stands for, read as the API reads it: `main@sha1:<c>` is `c`; a
 * slice branch's commit holds only the slice's folders and names its main-branch commit in its `Berth-Fleet-Commit`
 * trailer (a branch's commit without one stands for itself). Any other ref is not the fleet's. Slice commits are
 * fetched from the fleet's remote into a scratch repository of the harness's own, so only while their branch holds
 * them: Flux reports the revision it fetched, which the branch held then.
 */
export class FleetRevisions {
  private readonly known = new Map<string, Promise<string | undefined>>();
  private scratch: Promise<string> | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly url: string,
    private readonly env: Record<string, string>,
    private readonly workDir: string,
  ) {}

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
      // One at a time: fetches into one repository would contend for its locks.
      const next = this.queue.then(() => this.lookUp(branch, sha));
      this.queue = next.catch(() => undefined);
      found = next;
      this.known.set(sha, found);
      void found.then((fleet) => fleet === undefined && this.known.delete(sha));
    }
    return found;
  }

  private async lookUp(branch: string, sha: string): Promise<string | undefined> {
    const dir = await (this.scratch ??= this.init());
    const read = () => git(["--git-dir", dir, "cat-file", "commit", sha]).catch(() => undefined);
    let body = await read();
    if (body === undefined) {
      const refspec = `+refs/heads/${branch}:refs/f/${branch}`;
      await git(["--git-dir", dir, "fetch", "--quiet", "--depth=1", "--no-tags", this.url, refspec], {
        env: this.env,
      }).catch(() => undefined);
      body = await read();
    }
    if (body === undefined) return undefined;
    return FLEET_COMMIT.exec(body.slice(body.indexOf("\n\n")))?.[1] ?? sha;
  }

  private async init(): Promise<string> {
    const dir = join(this.workDir, "fleet-revisions.git");
    await mkdir(dir, { recursive: true });
    await git(["init", "--quiet", "--bare", dir]);
    return dir;
  }
}
