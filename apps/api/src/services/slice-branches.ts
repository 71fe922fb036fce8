import {
  repoLayout,
  type Cluster,
  sameShardsOnCluster,
  SLICE_BRANCHES,
  sliceBranches,
  type Platform,
  type RepoLayout,
  type RepoTree,
  type SliceBranch,
} from "@berth/core";
import { LRUCache } from "lru-cache";
import type pino from "pino";
import type { ClusterStatus, TeamStatusReader } from "../adapters/team-status.js";

/** What the follower needs of the Flux repo (the writer, FluxRepo). */
export interface FollowedRepo {
  branchesUnder(prefix: string): Promise<Map<string, string>>;
  advanceFollowers(
    moves: ReadonlyArray<{ branch: string; from?: string | undefined; to: string; folders: readonly string[] }>,
  ): Promise<string[]>;
  /** The main-branch commit a branch's commit stands for (a slice branch's commit holds only the slice's folders). */
  fleetCommit(sha: string, branch: string): Promise<string | undefined>;
  treeAt(revision: string): Promise<RepoTree | undefined>;
  snapshot(maxAgeMs?: number): Promise<RepoTree>;
}

/** What a pass moved: the branches' shards by cluster (for the Receivers, as FluxNotifier reads them), to `revision`. */
export interface Moved {
  revision: string | undefined;
  shards: Map<string, string[]>;
}

const NOTHING: Moved = { revision: undefined, shards: new Map() };

/**
 * Keeps each slice's branch (per-slice fetch, ADR 0036) at the newest commit of the main branch that changed what
 * its cluster reads of the slice's shards (sameShardsOnCluster), and nowhere newer: a slice's GitRepository then finds
 * a new revision only when its own teams changed, and its poll after anyone else's commit fetches nothing. The
 * branch's commits hold only the slice's folders of the main-branch commit they stand for, so the clone that a new
 * revision costs is the slice's N / K teams, not the fleet. Runs after each push of Berth's (before Flux is
 * told of it), and every `intervalMs` for the commits Berth did not push (a merged pull request, a commit by hand).
 */
export class SliceBranchFollower {
  private readonly branches: SliceBranch[];
  private readonly layout: RepoLayout;
  private tail: Promise<unknown> = Promise.resolve();
  /** The pass waiting behind the running one: later calls join it, with their newer revision. */
  private queued: { revision: string | undefined; done: Promise<Moved> } | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    platform: Platform,
    private readonly repo: FollowedRepo,
    private readonly opts: { intervalMs: number; logger: pino.Logger; onMoved?: (moved: Moved) => void },
  ) {
    this.branches = sliceBranches(platform);
    this.layout = repoLayout(platform);
  }

  /** Whether the platform's slices follow branches at all (per-slice fetch). */
  get enabled(): boolean {
    return this.branches.length > 0;
  }

  /**
   * Moves the slice branches whose slices `revision` (a commit Berth just pushed to the main branch; without it, the
   * main branch's head fetched now) changed. Resolves with what moved; a failure is logged, not thrown: the next pass
   * tries again, and a slice's branch behind meanwhile only delays that slice.
   */
  follow(revision?: string): Promise<Moved> {
    if (!this.enabled) return Promise.resolve(NOTHING);
    if (this.queued) {
      this.queued.revision = revision;
      return this.queued.done;
    }
    const queued: { revision: string | undefined; done: Promise<Moved> } = {
      revision,
      done: this.tail.then(() => {
        this.queued = undefined;
        return this.pass(queued.revision).catch((err: unknown) => {
          this.opts.logger.warn({ err }, "slice branches: not moved; the next pass tries again");
          return NOTHING;
        });
      }),
    };
    this.queued = queued;
    this.tail = queued.done;
    return queued.done;
  }

  /** Follows the main branch every intervalMs (commits Berth did not push). */
  start(): void {
    if (!this.enabled || this.timer) return;
    const tick = () => {
      this.timer = setTimeout(() => {
        void this.follow().then((moved) => {
          if (moved.shards.size > 0) this.opts.onMoved?.(moved);
          if (this.timer) tick();
        });
      }, this.opts.intervalMs);
      this.timer.unref();
    };
    tick();
    // At start: a branch that does not exist yet (a new install, a cluster added to the config) is created now.
    void this.follow().then((moved) => moved.shards.size > 0 && this.opts.onMoved?.(moved));
  }

  /** Stops the timer and waits for a pass under way. */
  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.tail;
  }

  private async pass(revision: string | undefined): Promise<Moved> {
    const head = revision ? await this.repo.treeAt(revision) : await this.repo.snapshot(0);
    const to = head?.revision;
    if (!head || !to) return NOTHING;
    const heads = await this.repo.branchesUnder(SLICE_BRANCHES);
    // Most branches sit at a few commits: each read once.
    const trees = new Map<string, Promise<RepoTree | undefined>>();
    const treeAt = (sha: string) => {
      let tree = trees.get(sha);
      if (!tree) trees.set(sha, (tree = this.repo.treeAt(sha).catch(() => undefined)));
      return tree;
    };
    const moves: Array<{ branch: SliceBranch; from: string | undefined }> = [];
    for (const branch of this.branches) {
      const from = heads.get(branch.branch);
      // The main-branch commit the branch stands for, whose folders its own commit holds.
      const was =
        from === undefined ? undefined : await this.repo.fleetCommit(from, branch.branch).catch(() => undefined);
      if (was === to) continue;
      const at = was === undefined ? undefined : await treeAt(was);
      if (at && (await sameShardsOnCluster(at, head, this.layout, branch.cluster, branch.shards))) continue;
      moves.push({ branch, from });
    }
    if (moves.length === 0) return NOTHING;
    const moved = new Set(
      await this.repo.advanceFollowers(
        moves.map(({ branch, from }) => ({ branch: branch.branch, from, to, folders: branch.folders })),
      ),
    );
    const shards = new Map<string, string[]>();
    for (const { branch } of moves)
      if (moved.has(branch.branch))
        shards.set(branch.cluster, [...(shards.get(branch.cluster) ?? []), ...branch.shards]);
    this.opts.logger.debug({ revision: to, moved: moved.size, of: moves.length }, "slice branches: moved");
    return { revision: to, shards };
  }
}

/** A Flux revision of a slice branch: `berth-slices/<cluster>/<slice>@sha1:<commit>`. */
const SLICE_REVISION = new RegExp(`^(${SLICE_BRANCHES}[a-z0-9][a-z0-9.-]*/[a-z0-9][a-z0-9.-]*)@sha1:([0-9a-f]{40})$`);

/**
 * The main-branch commit each revision of a slice branch stands for (its commit holds only the slice's folders and
 * names that commit, ADR 0036), looked up once per commit however many Kustomizations report it: commits are
 * immutable (the least recently read forgotten first). A look-up that found nothing (the remote did not answer, or
 * no longer holds the commit) is tried again the next time it is asked.
 */
export class FleetCommits {
  private readonly known = new LRUCache<string, Promise<string | undefined>>({ max: 10_000 });

  constructor(private readonly repo: Pick<FollowedRepo, "fleetCommit">) {}

  /** Undefined for a revision that is not a slice branch's, or whose commit was not found. */
  of(revision: string): Promise<string | undefined> {
    const m = SLICE_REVISION.exec(revision);
    if (!m) return Promise.resolve(undefined);
    const [, branch, sha] = m as unknown as [string, string, string];
    let found = this.known.get(sha);
    if (!found) {
      found = this.repo.fleetCommit(sha, branch).catch(() => undefined);
      this.known.set(sha, found);
      void found.then((fleet) => fleet === undefined && this.known.delete(sha));
    }
    return found;
  }
}

/**
 * Team statuses as the fleet's commits: a revision Flux reports on a slice branch is told as the main-branch commit it
 * stands for (FleetCommits), `<main>@sha1:<commit>`, which the status API, status pages and rollout gates compare
 * with the fleet's history. One that the repository does not hold (a branch moved twice since) is told as Flux said it.
 */
export class FleetRevisionStatusReader implements TeamStatusReader {
  private readonly commits: FleetCommits;

  constructor(
    private readonly reader: TeamStatusReader,
    repo: Pick<FollowedRepo, "fleetCommit">,
    private readonly mainBranch: string,
  ) {
    this.commits = new FleetCommits(repo);
  }

  async read(team: string, clusters: Cluster[]): Promise<ClusterStatus[]> {
    const statuses = await this.reader.read(team, clusters);
    return Promise.all(statuses.map(async (s) => (s.revision ? { ...s, revision: await this.told(s.revision) } : s)));
  }

  private async told(revision: string): Promise<string> {
    const fleet = await this.commits.of(revision);
    return fleet ? `${this.mainBranch}@sha1:${fleet}` : revision;
  }
}
