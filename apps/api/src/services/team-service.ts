import {
  clustersOf,
  describeChange,
  TeamNotFoundError,
  type CommitInfo,
  type FileChange,
  type Onboarding,
  type Preview,
  type RepoChange,
  type RepoTree,
  type Team,
  type TeamFailure,
  type Trailer,
} from "@berth/core";
import { IdempotentWrites, type ReviewRef, type TransactionStore, type WriteRequest } from "./idempotency.js";
import type { ClusterStatus, TeamStatusReader } from "../adapters/team-status.js";

/** Pull-request mode: a team's pull requests (ADR 0030). */
export interface PendingReviews {
  /** The open pull request holding the team's pending change, if any. */
  pending(team: string): Promise<ReviewRef | undefined>;
  /** The team's last pull request, open, merged or closed without merge (recent ones only). */
  latest(team: string): Promise<ReviewRef | undefined>;
  /** Closes the team's open pull request without merge: what it was, closed; undefined when none is open. */
  withdraw(team: string): Promise<ReviewRef | undefined>;
  /** Every team with an open pull request, by name. */
  inReview(): Promise<TeamInReview[]>;
}
export interface TeamInReview {
  team: string;
  pullRequest: ReviewRef;
}

/** What the API needs from the Flux repo; @berth/gitops' FluxRepo provides it. */
export interface TeamStore extends TransactionStore {
  ping(): Promise<void>;
}

export type WriteAction = "create" | "update" | "delete";

/** Audit trailers on every commit the API writes (docs/operations.md, "Who changed a team"). */
export const TRAILER_ACTION = "Berth-Action";
export const TRAILER_TEAM = "Berth-Team";

export type { WriteRequest };

interface Outcome {
  revision: string;
  committed: boolean;
  files: FileChange[];
  /** The answer is the original outcome of an earlier request with the same Idempotency-Key. */
  replayed: boolean;
  /** Pull-request mode: the pull request the change waits in (revision is then its branch's commit). */
  review?: ReviewRef;
}
export interface WriteResult extends Outcome {
  team: Team;
}
export interface DeleteResult extends Outcome {
  team: string;
  /**
   * Pull-request mode: the team was only in review (not in the Flux repo), so offboarding it closed its onboarding's
   * pull request (`review`) without merge; nothing was committed.
   */
  withdrawn?: boolean;
}

export interface TeamPage {
  revision: string | undefined;
  teams: Team[];
  /** Every team whose file cannot be read (on every page): reported, not served. */
  broken: TeamFailure[];
  /** The last name of this page when more follow (the next page starts after it). */
  lastOfPage?: string;
}

/**
 * The request path: validate → render → commit. Domain decisions are Onboarding's; this class runs them
 * inside a repo transaction, which may re-run them on a fresher tree when the push races.
 */
export class TeamService {
  private readonly writes: IdempotentWrites;

  constructor(
    private readonly onboarding: Onboarding,
    private readonly store: TeamStore,
    private readonly statusReader: TeamStatusReader,
    private readonly reviews?: PendingReviews,
  ) {
    this.writes = new IdempotentWrites(store);
  }

  /** The team's change waiting in review (pull-request mode); undefined when none is open or the mode is direct. */
  async review(name: string): Promise<ReviewRef | undefined> {
    return this.reviews?.pending(name);
  }

  /** The teams whose change waits in an open pull request; undefined in direct mode (nothing is ever in review). */
  async inReview(): Promise<TeamInReview[] | undefined> {
    return this.reviews?.inReview();
  }

  /**
   * The team's status on every cluster it lands on, as each cluster's controller reports it. In pull-request mode it
   * starts with the team's last pull request: a team whose onboarding is still in review (or was closed without
   * merge) has a status, with no cluster.
   */
  async status(name: string): Promise<{
    team: string;
    revision: string | undefined;
    ready: boolean;
    clusters: ClusterStatus[];
    review?: ReviewRef;
  }> {
    // A forge that does not answer costs a team in the Flux repo only its review line; a team that is only in review
    // has nothing else to show, so its status fails with the forge's error.
    const lookup = this.reviews?.latest(name).then(
      (review) => ({ review }),
      (error: unknown) => ({ error }),
    );
    const [{ revision, team }, found] = await Promise.all([this.get(name), lookup]);
    if (found && "error" in found && !team) throw found.error;
    const review = found && "review" in found ? found.review : undefined;
    if (!team && !review) throw new TeamNotFoundError(name);
    const clusters = team ? await this.statusReader.read(name, clustersOf(team, this.onboarding.platform)) : [];
    return {
      team: name,
      revision,
      ready: clusters.length > 0 && clusters.every((c) => c.ready),
      clusters,
      ...(review ? { review } : {}),
    };
  }

  /** Teams in name order after `after`, at most `limit` of them (all when no limit). */
  async list(page: { limit?: number; after?: string } = {}): Promise<TeamPage> {
    const tree = await this.store.snapshot();
    const { teams: all, broken } = await this.onboarding.listTeams(tree);
    const { after, limit } = page;
    const start = after === undefined ? 0 : all.findIndex((t) => t.name > after);
    const rest = start === -1 ? [] : all.slice(start);
    const teams = limit === undefined ? rest : rest.slice(0, limit);
    if (teams.length < rest.length) {
      const last = teams.at(-1);
      // The route allows limits of 1-1000: a page of none would have no place to continue from.
      if (last === undefined) throw new RangeError(`a page of ${limit} teams cannot continue`);
      return { revision: tree.revision, teams, broken, lastOfPage: last.name };
    }
    return { revision: tree.revision, teams, broken };
  }

  /** The current revision, without reading any team (for conditional requests). */
  async revision(): Promise<string | undefined> {
    return (await this.store.snapshot()).revision;
  }

  async get(name: string): Promise<{ revision: string | undefined; team: Team | undefined }> {
    const tree = await this.store.snapshot();
    return { revision: tree.revision, team: await this.onboarding.readTeam(tree, name) };
  }

  /**
   * Validation and rendering happen here, before the write queues: an invalid request is answered before it
   * waits, and the writer lane only runs the part that depends on the tree (docs/decisions/0010-rollouts.md,
   * "where the time went").
   */
  async create(input: unknown, request: WriteRequest): Promise<WriteResult> {
    const prepared = this.onboarding.prepareCreate(input);
    const name = prepared.team.name;
    const outcome = await this.write("create", name, (tree) => this.onboarding.planCreate(tree, prepared), request);
    return this.withTeam(outcome, name);
  }

  /** Rendered on the team's version as last seen; planUpdate re-renders if a rollout moved it meanwhile. */
  async update(name: string, spec: unknown, request: WriteRequest): Promise<WriteResult> {
    const current = await this.onboarding.readTeam(await this.store.snapshot(), name);
    const prepared = this.onboarding.prepareUpdate(
      name,
      spec,
      current?.templateVersion ?? this.onboarding.catalog.defaultVersion,
    );
    return this.withTeam(
      await this.write("update", name, (tree) => this.onboarding.planUpdate(tree, name, prepared), request),
      name,
    );
  }

  async delete(name: string, request: WriteRequest): Promise<DeleteResult> {
    if (this.reviews) {
      // A team whose onboarding is only in review: offboarding it is dropping that pull request, not proposing a
      // commit that removes what main never held.
      const tree = await this.store.snapshot();
      if (!(await this.onboarding.readTeam(tree, name))) {
        const closed = await this.reviews.withdraw(name);
        if (closed)
          return {
            team: name,
            revision: tree.revision ?? "",
            committed: false,
            files: [],
            replayed: false,
            review: closed,
            withdrawn: true,
          };
      }
    }
    const outcome = await this.write("delete", name, (tree) => this.onboarding.planDelete(tree, name), request);
    return { ...outcome, team: name };
  }

  async preview(input: unknown, existingName?: string): Promise<Preview & { revision: string | undefined }> {
    const tree = await this.store.snapshot();
    return { revision: tree.revision, ...(await this.onboarding.preview(tree, input, existingName)) };
  }

  /** The original outcome of a write, from its commit. */
  private async replayed(original: CommitInfo): Promise<Outcome & { tree: RepoTree }> {
    return {
      revision: original.revision,
      committed: true,
      files: await original.changes(),
      replayed: true,
      tree: original.tree,
    };
  }

  /** A replayed create or update answers with the team as its commit left it. */
  private async withTeam(outcome: Outcome & { team?: Team; tree?: RepoTree }, name: string): Promise<WriteResult> {
    const { tree, team, ...rest } = outcome;
    const found = team ?? (tree ? await this.onboarding.readTeam(tree, name) : undefined);
    if (!found) throw new Error(`the commit ${outcome.revision} does not hold team ${name}`);
    return { ...rest, team: found };
  }

  /** One write as one commit, answered from the original commit when it is a retry (IdempotentWrites). */
  private async write(
    action: WriteAction,
    team: string,
    plan: (tree: RepoTree) => Promise<{ team: Team; change: RepoChange }>,
    request: WriteRequest,
  ): Promise<Outcome & { team?: Team; tree?: RepoTree }> {
    let planned: { team: Team; files: FileChange[] } | undefined;
    const trailers: Trailer[] = [
      { key: TRAILER_ACTION, value: action },
      { key: TRAILER_TEAM, value: team },
    ];
    const outcome = await this.writes.write(request, trailers, async (tree) => {
      planned = undefined;
      const { team: planTeam, change } = await plan(tree);
      planned = { team: planTeam, files: await describeChange(tree, change.files) };
      return change.files.size ? change : null;
    });
    if (outcome.replayed)
      return { ...(await this.replayed(outcome.original)), ...(outcome.review ? { review: outcome.review } : {}) };
    if (!planned) throw new Error("transaction finished without planning a change");
    return {
      team: planned.team,
      revision: outcome.revision,
      committed: outcome.committed,
      files: outcome.committed ? planned.files : [],
      replayed: false,
      ...(outcome.review ? { review: outcome.review } : {}),
    };
  }
}
