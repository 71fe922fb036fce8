import type { ClusterStatus, FleetResponse } from "@berth/api-contract";
import {
  allClusters,
  clustersOf,
  repoLayout,
  type Cluster,
  type Onboarding,
  type RepoTree,
  type Team,
  type TeamListing,
} from "@berth/core";
import type { CommitSummary } from "@berth/gitops";
import type { TeamStatusReader } from "../adapters/team-status.js";
import type { ReviewRef } from "./idempotency.js";
import type { PendingReviews } from "./team-service.js";

/** What the board reads from the Flux repo; @berth/gitops' FluxRepo provides it. */
export interface RepoReader {
  snapshot(maxAgeMs?: number): Promise<RepoTree>;
  history(
    paths: readonly string[],
    options?: { revision?: string | undefined; limit?: number },
  ): Promise<CommitSummary[]>;
}

export interface TeamFile {
  path: string;
  content: string;
}

export interface TeamDetail {
  team: Team;
  revision: string | undefined;
  ready: boolean;
  clusters: ClusterStatus[];
  /** The newest commits touching the team's files, newest first. */
  commits: CommitSummary[];
  /** Every file Berth rendered for the team at `revision`, sorted by path. */
  files: TeamFile[];
  /** Pull-request mode: the team's last pull request (a change in review, or the last merged or closed). */
  review?: ReviewRef;
}

const everyReady = (clusters: ClusterStatus[]) => clusters.length > 0 && clusters.every((c) => c.ready);

/**
 * Read views across teams for the status page and GET /v1/status: every team × cluster from one repo
 * snapshot and the shared per-cluster status cache (so a fleet view costs one listing per cluster).
 */
export class StatusBoard {
  private readonly layout;
  /** The teams of the last revision read: pages poll every few seconds, the repo changes far less often. */
  private teamsAt: { revision: string | undefined; listing: Promise<TeamListing> } | undefined;

  constructor(
    private readonly onboarding: Onboarding,
    private readonly repo: RepoReader,
    private readonly statusReader: TeamStatusReader,
    private readonly reviews?: Pick<PendingReviews, "latest">,
  ) {
    this.layout = repoLayout(onboarding.platform);
  }

  /** Pull-request mode: the team's last pull request, for a team the Flux repo does not hold (yet). */
  async review(name: string): Promise<ReviewRef | undefined> {
    return this.reviews?.latest(name);
  }

  /** Every cluster of the platform, in config order (the fleet's columns). */
  clusters(): Cluster[] {
    return allClusters(this.onboarding.platform);
  }

  async fleet(): Promise<FleetResponse> {
    const tree = await this.repo.snapshot();
    if (!this.teamsAt || this.teamsAt.revision !== tree.revision) {
      const listing = this.onboarding.listTeams(tree);
      this.teamsAt = { revision: tree.revision, listing };
      listing.catch(() => {
        if (this.teamsAt?.listing === listing) this.teamsAt = undefined; // a failed read is not kept
      });
    }
    const { teams, broken } = await this.teamsAt.listing;
    const rows = await Promise.all(
      teams.map(async (team) => {
        const clusters = await this.statusReader.read(team.name, clustersOf(team, this.onboarding.platform));
        return { team: team.name, ready: everyReady(clusters), clusters };
      }),
    );
    return { revision: tree.revision ?? null, teams: rows, broken };
  }

  /** One team with its status, history and rendered files; undefined when the repo has no such team. */
  async team(name: string, options: { commits?: number } = {}): Promise<TeamDetail | undefined> {
    const tree = await this.repo.snapshot();
    const team = await this.onboarding.readTeam(tree, name);
    if (!team) return undefined;
    const targets = clustersOf(team, this.onboarding.platform);
    // Its Flux files: where Berth writes them, or still where they were before shards (absent ones drop out).
    const kustomizations = targets.flatMap((c) => this.layout.fluxKustomizationPaths(c.name, name));
    const [clusters, commits, teamPaths, review] = await Promise.all([
      this.statusReader.read(name, targets),
      // Every cluster's Flux file, not only today's targets: the history shows moves between environments.
      this.repo.history(
        [
          ...this.layout.teamDirs(name),
          ...this.clusters().flatMap((c) => this.layout.fluxKustomizationPaths(c.name, name)),
        ],
        {
          revision: tree.revision,
          limit: options.commits ?? 10,
        },
      ),
      Promise.all(this.layout.teamDirs(name).map((dir) => tree.list(dir))).then((lists) => lists.flat()),
      // The page of a team in the Flux repo does without its review line when the forge does not answer.
      this.reviews?.latest(name).catch(() => undefined),
    ]);
    const paths = [...teamPaths, ...kustomizations].sort();
    const files = (await Promise.all(paths.map(async (path) => ({ path, content: await tree.read(path) })))).filter(
      (f): f is TeamFile => f.content !== undefined,
    );
    return {
      team,
      revision: tree.revision,
      ready: everyReady(clusters),
      clusters,
      commits,
      files,
      ...(review ? { review } : {}),
    };
  }
}
