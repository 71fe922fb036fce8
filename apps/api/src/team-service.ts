import { clustersOf, describeChange, TeamNotFoundError, type ChangeOrigin, type FileChange, type Onboarding, type Preview, type RepoChange, type RepoTree, type Team } from "@berth/core";
import type { ClusterStatus, TeamStatusReader } from "./team-status.js";

/** What the API needs from the Flux repo; @berth/gitops' FluxRepo provides it. */
export interface TeamStore {
  transact(
    mutate: (tree: RepoTree) => Promise<RepoChange | null>,
    origin: ChangeOrigin,
  ): Promise<{ revision: string; committed: boolean; files: string[] }>;
  snapshot(maxAgeMs?: number): Promise<RepoTree>;
  ping(): Promise<void>;
}

export interface WriteResult {
  team: Team;
  /** The commit holding the change (the current head when nothing changed). */
  revision: string;
  committed: boolean;
  files: FileChange[];
}

/**
 * The request path: validate → render → commit. Domain decisions are Onboarding's; this class only runs
 * them inside a repo transaction, which may re-run them on a fresher tree when the push races.
 */
export class TeamService {
  constructor(
    private readonly onboarding: Onboarding,
    private readonly store: TeamStore,
    private readonly statusReader: TeamStatusReader,
  ) {}

  /** The team's status on every cluster it lands on, as each cluster's controller reports it. */
  async status(name: string): Promise<{ team: string; revision: string | undefined; ready: boolean; clusters: ClusterStatus[] }> {
    const { revision, team } = await this.get(name);
    if (!team) throw new TeamNotFoundError(name);
    const clusters = await this.statusReader.read(name, clustersOf(team, this.onboarding.platform));
    return { team: name, revision, ready: clusters.length > 0 && clusters.every((c) => c.ready), clusters };
  }

  async list(): Promise<{ revision: string | undefined; teams: Team[] }> {
    const tree = await this.store.snapshot();
    return { revision: tree.revision, teams: await this.onboarding.listTeams(tree) };
  }

  async get(name: string): Promise<{ revision: string | undefined; team: Team | undefined }> {
    const tree = await this.store.snapshot();
    return { revision: tree.revision, team: await this.onboarding.readTeam(tree, name) };
  }

  /**
   * Validation and rendering happen here, before the write queues: the writer lane only runs the part
   * that depends on the tree (docs/decisions/0005-rollouts.md, "where the time went").
   */
  async create(input: unknown, origin: ChangeOrigin): Promise<WriteResult> {
    const prepared = this.onboarding.prepareCreate(input);
    return this.write((tree) => this.onboarding.planCreate(tree, prepared), origin);
  }

  /** Rendered on the team's version as last seen; planUpdate re-renders if a rollout moved it meanwhile. */
  async update(name: string, spec: unknown, origin: ChangeOrigin): Promise<WriteResult> {
    const current = await this.onboarding.readTeam(await this.store.snapshot(), name);
    const prepared = this.onboarding.prepareUpdate(name, spec, current?.templateVersion ?? this.onboarding.catalog.defaultVersion);
    return this.write((tree) => this.onboarding.planUpdate(tree, name, prepared), origin);
  }

  delete(name: string, origin: ChangeOrigin): Promise<WriteResult> {
    return this.write((tree) => this.onboarding.planDelete(tree, name), origin);
  }

  async preview(input: unknown, existingName?: string): Promise<Preview & { revision: string | undefined }> {
    const tree = await this.store.snapshot();
    return { revision: tree.revision, ...(await this.onboarding.preview(tree, input, existingName)) };
  }

  private async write(plan: (tree: RepoTree) => Promise<{ team: Team; change: RepoChange }>, origin: ChangeOrigin): Promise<WriteResult> {
    let planned: { team: Team; files: FileChange[] } | undefined;
    const result = await this.store.transact(async (tree) => {
      const { team, change } = await plan(tree);
      planned = { team, files: await describeChange(tree, change.files) };
      return change.files.size ? change : null;
    }, origin);
    if (!planned) throw new Error("transaction finished without planning a change");
    return { team: planned.team, revision: result.revision, committed: result.committed, files: result.committed ? planned.files : [] };
  }
}
