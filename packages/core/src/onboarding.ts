import { createTwoFilesPatch, formatPatch, structuredPatch } from "diff";
import {
  RepoContentError,
  TeamExistsError,
  TeamNotFoundError,
  TeamValidationError,
  TemplateVersionRetiredError,
  type FieldIssue,
} from "./errors.js";
import { repoLayout, SHARD, TEAM_FOLDER_PARTS, teamShard, type RepoLayout } from "./layout.js";
import { allClusters, type Platform } from "./platform.js";
import { renderClusterTeamsIndex, renderShardIndex, renderTeam } from "./render.js";
import { type FileChange, type FileStatus, type RepoChange, type RepoTree } from "./repo.js";
import { parseTeamFile } from "./team-file.js";
import type { Team, VersionedTeam } from "./team.js";
import { TemplateCatalog } from "./template-catalog.js";
import type { TemplateSet } from "./template-set.js";
import { validateTeam, validateTeamSpec } from "./validate.js";

const codePointOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** What writing `after` (null: deleting) does to a file that holds `before` (undefined: absent). */
export function fileStatus(before: string | undefined, after: string | null): FileStatus {
  return after === null ? "deleted" : before === undefined ? "added" : "modified";
}

/** Each file of a change with its status against the tree the change was planned on, in code-point order. */
export async function describeChange(tree: RepoTree, files: ReadonlyMap<string, string | null>): Promise<FileChange[]> {
  const out: FileChange[] = [];
  for (const [path, content] of files) out.push({ path, status: fileStatus(await tree.read(path), content) });
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * A validated team and its rendered files: the part of a write that does not depend on the repo, done
 * before the write queues so the writer lane only does the tree-dependent part (docs/decisions/0005).
 */
export interface PreparedTeam {
  team: VersionedTeam;
  files: ReadonlyMap<string, string>;
  /** The version the request named, if it named one (an update must not change it). */
  requestedVersion?: string;
}

export interface Preview {
  team: Team;
  files: Array<FileChange & { content: string | null }>;
  /** Unified diff of every changed file against the repo. */
  diff: string;
}

/**
 * The request path's domain logic: read teams from a RepoTree, turn an API request into one RepoChange.
 * Pure apart from reading the tree it is handed; the git adapter commits what it returns.
 */
/** Parsed teams kept by folder content id; beyond this many the cache starts over. */
const MAX_PARSED_TEAMS = 50_000;

/** A team that cannot be read or rendered, and why (a hand-edited or corrupt team file, a render error). */
export interface TeamFailure {
  team: string;
  error: string;
}

/** Every readable team, and the team folders whose team file cannot be read: one broken file spoils no listing. */
export interface TeamListing {
  teams: Team[];
  broken: TeamFailure[];
}

/** What the parse cache holds per team folder: the team, no team file, or why the file cannot be read. */
type ParsedFolder = VersionedTeam | null | { unreadable: RepoContentError };

/** A tree that lists a folder's entries with their content ids (the git adapter): listings can be reused. */
type FolderListingTree = RepoTree & Required<Pick<RepoTree, "entries" | "contentId">>;
const listsFolders = (tree: RepoTree): tree is FolderListingTree =>
  tree.entries !== undefined && tree.contentId !== undefined;

export class Onboarding {
  private readonly layout: RepoLayout;
  /** Every template version Berth can render with; the default is what new teams get. */
  readonly catalog: TemplateCatalog;
  private readonly parsed = new Map<string, ParsedFolder>();
  private lastList: { id: string; listing: Promise<TeamListing> } | undefined;

  constructor(
    readonly platform: Platform,
    templates: TemplateCatalog | TemplateSet,
  ) {
    this.layout = repoLayout(platform);
    this.catalog = templates instanceof TemplateCatalog ? templates : TemplateCatalog.of(templates);
  }

  /**
   * The team in the tree, undefined when it has no folder. `folderId` is its folder's content id when the
   * caller has it already (from one listing of the teams folder): git then need not find each folder again.
   */
  async readTeam(tree: RepoTree, name: string, folderId?: string): Promise<VersionedTeam | undefined> {
    if (folderId !== undefined || !tree.contentId) return this.parsedTeam(tree, name, folderId);
    // Its folder, or where the layout before kept it (layout.teamDirs): the first that is there.
    for (const dir of this.layout.teamDirs(name)) {
      const id = await tree.contentId(dir);
      if (id !== undefined) return this.parsedTeam(tree, name, id);
    }
    return undefined;
  }

  /**
   * The team in folder `name`, parsed once per folder content id: a team whose folder did not change since it
   * was last read is not read or parsed again, whatever else the commit changed.
   */
  private async parsedTeam(
    tree: RepoTree,
    name: string,
    folderId: string | undefined,
  ): Promise<VersionedTeam | undefined> {
    const key = folderId === undefined ? undefined : `${name}\0${folderId}`;
    const hit = key === undefined ? undefined : this.parsed.get(key);
    if (hit !== undefined) {
      // A broken file is remembered too: a listing at every poll must not parse an alias bomb again.
      if (hit !== null && "unreadable" in hit) throw hit.unreadable;
      return hit ?? undefined;
    }
    const spec = await this.teamSpecIn(tree, name);
    const path = spec?.path ?? this.layout.teamSpec(name);
    const text = spec?.text;
    let result: ParsedFolder = null;
    if (text !== undefined) {
      try {
        const team = parseTeamFile(text, path);
        if (team.name !== name) throw new RepoContentError(path, `metadata.name is "${team.name}", expected "${name}"`);
        result = team;
      } catch (err) {
        if (!(err instanceof RepoContentError)) throw err;
        result = { unreadable: err };
      }
    }
    if (key !== undefined) {
      // Bounded: old folder ids pile up as teams change; starting over costs one parse per team.
      if (this.parsed.size >= MAX_PARSED_TEAMS) this.parsed.clear();
      this.parsed.set(key, result);
    }
    if (result !== null && "unreadable" in result) throw result.unreadable;
    return result ?? undefined;
  }

  /** The team's spec file and its text: in its folder, or where the layout before kept it (layout.teamSpecs). */
  async teamSpecIn(tree: RepoTree, name: string): Promise<{ path: string; text: string } | undefined> {
    for (const path of this.layout.teamSpecs(name)) {
      const text = await tree.read(path);
      if (text !== undefined) return { path, text };
    }
    return undefined;
  }

  /** Every team with a spec in the tree (`teams/<team>/base/team.yaml`), sorted. */
  async listTeamNames(tree: RepoTree): Promise<string[]> {
    const names = new Set<string>();
    for (const path of await tree.list(this.layout.teamsDir)) {
      const name = this.layout.teamOfSpec(path);
      if (name !== undefined) names.add(name);
    }
    return [...names].sort();
  }

  /**
   * Each team folder's name and content id, from listings of the teams folder (and of its shard folders when team
   * folders sit in them): one listing per folder instead of asking git for each team's.
   */
  async teamFolderIds(tree: RepoTree): Promise<Map<string, string>> {
    if (!tree.entries) return new Map();
    const entries = tree.entries.bind(tree);
    const top = (await entries(this.layout.teamsDir)).filter((e) => e.kind === "folder");
    if (!this.layout.foldersByShard) return new Map(top.map((e) => [e.name, e.id]));
    const inShards = new Map<string, string>();
    const before = new Map<string, string>();
    await Promise.all(
      top.map(async (folder) => {
        // Not a shard's folder: a team's where the layout before kept it, until its next write moves it.
        if (!SHARD.test(folder.name)) return void before.set(folder.name, folder.id);
        const inside = (await entries(`${this.layout.teamsDir}/${folder.name}`)).filter((e) => e.kind === "folder");
        // A team's folder in another shard than its own is nobody's (layout.teamPath); a team named like a shard and
        // kept where the layout before kept it shows by its own parts.
        for (const e of inside) {
          if (TEAM_FOLDER_PARTS.includes(e.name)) before.set(folder.name, folder.id);
          else if (teamShard(e.name) === folder.name) inShards.set(e.name, e.id);
        }
      }),
    );
    // A team in both places (a move cut short by hand) is read from its shard's folder, as readTeam reads it.
    return new Map([...before, ...inShards]);
  }

  /**
   * Every team, sorted by name, and every team folder whose team file cannot be read (reported, not thrown:
   * one broken file must not take down every listing). With content ids (the git adapter), the answer is
   * reused while the teams folder is unchanged (concurrent readers share one build), and only changed team
   * folders are parsed again.
   */
  async listTeams(tree: RepoTree): Promise<TeamListing> {
    if (!listsFolders(tree)) {
      const names = await this.listTeamNames(tree);
      return this.collect(names.map((name) => ({ name, read: this.readTeam(tree, name) })));
    }
    const id = await tree.contentId(this.layout.teamsDir);
    if (id === undefined) return { teams: [], broken: [] };
    let entry = this.lastList;
    if (entry?.id !== id) {
      const listing = this.listByFolder(tree);
      const fresh = { id, listing };
      this.lastList = entry = fresh;
      listing.catch(() => {
        if (this.lastList === fresh) this.lastList = undefined;
      });
    }
    const { teams, broken } = await entry.listing;
    return { teams: [...teams], broken: [...broken] };
  }

  private async listByFolder(tree: FolderListingTree): Promise<TeamListing> {
    const folders = await this.teamFolderIds(tree);
    return this.collect([...folders].map(([name, id]) => ({ name, read: this.parsedTeam(tree, name, id) })));
  }

  /** Teams read concurrently, sorted by name; a file that cannot be read goes to `broken`, with why. */
  private async collect(reads: Array<{ name: string; read: Promise<Team | undefined> }>): Promise<TeamListing> {
    type Settled = { name: string; ok: true; team: Team | undefined } | { name: string; ok: false; reason: unknown };
    const settled = await Promise.all(
      reads.map(({ name, read }) =>
        read.then(
          (team): Settled => ({ name, ok: true, team }),
          (reason: unknown): Settled => ({ name, ok: false, reason }),
        ),
      ),
    );
    const listing: TeamListing = { teams: [], broken: [] };
    for (const read of settled) {
      if (read.ok) {
        if (read.team) listing.teams.push(read.team);
      } else if (read.reason instanceof RepoContentError)
        listing.broken.push({ team: read.name, error: read.reason.message });
      else throw read.reason;
    }
    listing.teams.sort((a, b) => codePointOrder(a.name, b.name));
    listing.broken.sort((a, b) => codePointOrder(a.team, b.team));
    return listing;
  }

  /** Every file of the team, rendered with its template version (the default when it names none). */
  render(team: Team): Map<string, string> {
    return renderTeam(team, this.platform, this.catalog.get(team.templateVersion ?? this.catalog.defaultVersion));
  }

  /** Validates a new team (its version must exist; default: the platform's) and renders it. No tree. */
  prepareCreate(input: unknown): PreparedTeam {
    const requested = versionOf(input);
    const team = this.withVersionCheck(() => validateTeam(input, this.platform), requested);
    return this.prepared({ ...team, templateVersion: requested ?? this.catalog.defaultVersion }, requested);
  }

  /**
   * Validates an update of team `name` whose current version is `currentVersion` (as last seen) and renders
   * it on that version. A body may repeat the version, not change it: only a rollout moves a team.
   */
  prepareUpdate(name: string, spec: unknown, currentVersion: string): PreparedTeam {
    const requested = versionOf(spec);
    const team = this.withVersionCheck(() => validateTeamSpec(name, spec, this.platform), requested, currentVersion);
    if (!this.catalog.has(currentVersion))
      throw new TemplateVersionRetiredError(name, currentVersion, this.catalog.versions());
    return this.prepared({ ...team, templateVersion: currentVersion }, requested);
  }

  async planCreate(tree: RepoTree, input: unknown | PreparedTeam): Promise<{ team: Team; change: RepoChange }> {
    const prepared = isPrepared(input) ? input : this.prepareCreate(input);
    const { team } = prepared;
    if ((await this.teamSpecIn(tree, team.name)) !== undefined) throw new TeamExistsError(team.name);
    const files = await this.changeFor(tree, team.name, prepared.files);
    return { team, change: { files, subject: `berth: onboard team ${team.name}`, body: this.describe(team) } };
  }

  async planUpdate(
    tree: RepoTree,
    name: string,
    spec: unknown | PreparedTeam,
  ): Promise<{ team: Team; change: RepoChange }> {
    const current = await this.readTeam(tree, name);
    if (current === undefined) throw new TeamNotFoundError(name);
    let prepared = isPrepared(spec) ? spec : this.prepareUpdate(name, spec, current.templateVersion);
    if (prepared.team.templateVersion !== current.templateVersion) {
      // A rollout moved the team since the request was prepared: render on the version it is on now.
      if (prepared.requestedVersion !== undefined)
        throw versionChangeRefused(prepared.requestedVersion, current.templateVersion);
      prepared = this.prepared({ ...prepared.team, templateVersion: current.templateVersion });
    }
    const { team } = prepared;
    const files = await this.changeFor(tree, name, prepared.files);
    return { team, change: { files, subject: `berth: update team ${name}`, body: this.describe(team) } };
  }

  async planDelete(tree: RepoTree, name: string): Promise<{ team: Team; change: RepoChange }> {
    const team = await this.readTeam(tree, name);
    if (team === undefined) throw new TeamNotFoundError(name);
    const files = await this.changeFor(tree, name, new Map());
    return { team, change: { files, subject: `berth: offboard team ${name}` } };
  }

  /** What a create (new team) or update (existing team) would change, without committing. */
  async preview(tree: RepoTree, input: unknown, existingName?: string): Promise<Preview> {
    let prepared: PreparedTeam;
    if (existingName === undefined) prepared = this.prepareCreate(input);
    else {
      const current = await this.readTeam(tree, existingName);
      if (current === undefined) throw new TeamNotFoundError(existingName);
      prepared = this.prepareUpdate(existingName, input, current.templateVersion);
    }
    const changes = await this.changeFor(tree, prepared.team.name, prepared.files);
    return { team: prepared.team, ...(await describeWithDiff(tree, changes)) };
  }

  private prepared(team: VersionedTeam, requestedVersion?: string): PreparedTeam {
    return { team, files: this.render(team), ...(requestedVersion !== undefined ? { requestedVersion } : {}) };
  }

  /**
   * Runs a validation and adds the template version's own rule: it must exist (new team) or equal the
   * team's current one (update). Reported with the other problems, in one 422.
   */
  private withVersionCheck(validate: () => Team, requested: string | undefined, currentVersion?: string): Team {
    const issues: FieldIssue[] = [];
    if (requested !== undefined && currentVersion !== undefined && requested !== currentVersion) {
      issues.push(...versionChangeRefused(requested, currentVersion).issues);
    } else if (
      requested !== undefined &&
      typeof requested === "string" &&
      !this.catalog.has(requested) &&
      currentVersion === undefined
    ) {
      issues.push({
        field: "templateVersion",
        rule: `must be one of the template versions: ${this.catalog.versions().join(", ")}`,
      });
    }
    try {
      const team = validate();
      if (issues.length) throw new TeamValidationError(issues);
      return team;
    } catch (err) {
      if (
        err instanceof TeamValidationError &&
        issues.length &&
        !err.issues.some((i) => i.field === "templateVersion")
      ) {
        throw new TeamValidationError([...err.issues, ...issues]);
      }
      throw err;
    }
  }

  private describe(team: Team): string[] {
    return [
      `environments: ${team.environments.join(", ")}`,
      `roles: ${team.roleAssignments.map((r) => r.role).join(", ") || "(none)"}`,
      `templates: ${team.templateVersion ?? this.catalog.defaultVersion}`,
    ];
  }

  /**
   * The files to write or delete so the repo holds exactly `desired` for this team, plus every cluster's
   * teams index updated for it. Files of the team that are no longer rendered are deleted. Only paths the
   * team owns (layout.ownerOf) are written or deleted as the team's; the indexes are rebuilt as indexes.
   */
  async changeFor(
    tree: RepoTree,
    team: string,
    desired: ReadonlyMap<string, string>,
  ): Promise<Map<string, string | null>> {
    const changes = await this.teamFileChanges(tree, team, desired);
    for (const [path, content] of await this.indexChanges(tree, [{ team, clusters: this.clustersIn(team, desired) }]))
      changes.set(path, content);
    return changes;
  }

  /** The team's own files (layout.ownerOf) that must change so the repo holds exactly `desired` for it. */
  async teamFileChanges(
    tree: RepoTree,
    team: string,
    desired: ReadonlyMap<string, string>,
  ): Promise<Map<string, string | null>> {
    this.layout.assertOwnedBy(team, desired.keys());
    const owned = (path: string) => {
      const owner = this.layout.ownerOf(path);
      return owner.kind === "team" && owner.team === team;
    };
    // Its folder, and where the layout before kept it (moved whole: deleted there, written in its shard's folder).
    const listed = await Promise.all(this.layout.teamDirs(team).map((dir) => tree.list(dir)));
    const existing = new Set(listed.flat().filter(owned));
    // Its Flux file on every cluster, where Berth writes it and where it was written before shards.
    const fluxFiles = allClusters(this.platform)
      .flatMap((c) => this.layout.fluxKustomizationPaths(c.name, team))
      .filter((flux) => owned(flux) && !desired.has(flux));
    const present = await Promise.all(
      fluxFiles.map(async (flux) => ((await tree.read(flux)) !== undefined ? flux : undefined)),
    );
    for (const flux of present) if (flux) existing.add(flux);
    const changes = new Map<string, string | null>();
    // Compared concurrently: a git tree answers from its index, or pipelines the reads.
    const same = await Promise.all([...desired].map(([path, content]) => tree.hasContent(path, content)));
    let i = 0;
    for (const [path, content] of desired) if (!same[i++]) changes.set(path, content);
    for (const path of existing) if (!desired.has(path)) changes.set(path, null);
    return changes;
  }

  /**
   * The cluster indexes after `updates` (each team joins its shard's index on `clusters` and leaves it on
   * the others; its Flux file at a cluster folder's top, from before shards, is gone), only those whose
   * content changes: each shard index a team of `updates` is in, rebuilt from its folder; each cluster's top
   * index when a shard gains its first team or loses its last, or a top-level Flux file goes. `every`
   * rebuilds every index from the folders (a fleet plan, drift): hand edits of the indexes show and are mended.
   * A layout that reads no index (slices) gets none: a write changes only its teams' paths, and `every` deletes the
   * indexes an earlier layout left.
   */
  async indexChanges(
    tree: RepoTree,
    updates: ReadonlyArray<{ team: string; clusters: ReadonlySet<string> }>,
    options: { every?: boolean } = {},
  ): Promise<Map<string, string | null>> {
    const changes = new Map<string, string | null>();
    if (!this.layout.writesIndexes) {
      if (!options.every) return changes;
      for (const cluster of allClusters(this.platform).map((c) => c.name))
        for (const path of await tree.list(this.layout.clusterTeamsDir(cluster)))
          if (this.layout.ownerOf(path).kind === "cluster-teams-index") changes.set(path, null);
      return changes;
    }
    const byShard = new Map<string, Array<{ team: string; clusters: ReadonlySet<string> }>>();
    for (const update of updates) {
      const shard = teamShard(update.team);
      const list = byShard.get(shard);
      if (list) list.push(update);
      else byShard.set(shard, [update]);
    }
    for (const cluster of allClusters(this.platform).map((c) => c.name)) {
      const whole = options.every
        ? this.layout.clusterTeamsListing(cluster, await tree.list(this.layout.clusterTeamsDir(cluster)))
        : undefined;
      let topChanges = options.every === true;
      const shardsAfter = new Map<string, boolean>();
      const shards = new Set([...byShard.keys(), ...(whole?.folders ?? [])]);
      for (const shard of shards) {
        const before = whole
          ? (whole.shards.get(shard) ?? [])
          : (this.layout
              .clusterTeamsListing(cluster, await tree.list(this.layout.shardDir(cluster, shard)))
              .shards.get(shard) ?? []);
        const members = new Set(before);
        for (const { team, clusters } of byShard.get(shard) ?? []) {
          if (clusters.has(cluster)) members.add(team);
          else members.delete(team);
        }
        shardsAfter.set(shard, members.size > 0);
        if (before.length > 0 !== members.size > 0) topChanges = true;
        const index = this.layout.shardIndex(cluster, shard);
        if (members.size === 0) {
          if ((await tree.read(index)) !== undefined) changes.set(index, null);
          continue;
        }
        const content = renderShardIndex(members);
        if (!(await tree.hasContent(index, content))) changes.set(index, content);
      }
      if (!topChanges) {
        const flat = await Promise.all(
          updates.map(({ team }) => tree.read(this.layout.flatFluxKustomization(cluster, team))),
        );
        if (flat.some((text) => text !== undefined)) topChanges = true;
      }
      // Berth keeps a top index on every cluster, even one without teams (Flux applies the folder).
      if (!topChanges && (await tree.read(this.layout.clusterTeamsIndex(cluster))) !== undefined) continue;
      // The top index changes: rebuilt from the whole folder (rare once most shards hold a team).
      const listing =
        whole ?? this.layout.clusterTeamsListing(cluster, await tree.list(this.layout.clusterTeamsDir(cluster)));
      const updated = new Set(updates.map((u) => u.team));
      const nonEmpty = new Set([...listing.shards.keys()].filter((shard) => shardsAfter.get(shard) ?? true));
      for (const [shard, holds] of shardsAfter) if (holds) nonEmpty.add(shard);
      const content = renderClusterTeamsIndex(
        nonEmpty,
        listing.flat.filter((team) => !updated.has(team)),
      );
      const index = this.layout.clusterTeamsIndex(cluster);
      if (!(await tree.hasContent(index, content))) changes.set(index, content);
    }
    return changes;
  }

  /** The clusters whose Flux file is among a team's rendered files. */
  clustersIn(team: string, files: ReadonlyMap<string, string>): Set<string> {
    return new Set(
      allClusters(this.platform)
        .map((c) => c.name)
        .filter((c) => files.has(this.layout.fluxKustomization(c, team))),
    );
  }
}

/** Each changed file with its status and content, and one unified diff of them all against the tree. */
export async function describeWithDiff(
  tree: RepoTree,
  changes: ReadonlyMap<string, string | null>,
): Promise<{ files: Array<FileChange & { content: string | null }>; diff: string }> {
  const files: Array<FileChange & { content: string | null }> = [];
  const patches: string[] = [];
  for (const [path, content] of changes) {
    const before = await tree.read(path);
    files.push({ path, status: fileStatus(before, content), content });
    patches.push(unifiedDiff(path, before, content));
  }
  return { files, diff: patches.join("") };
}

/** Lines of context around each change: the `diff` package's default, which the fast path must match. */
const DIFF_CONTEXT = 4;

/**
 * A git-style unified diff of one file (`/dev/null` for an added or deleted side), in the `diff` package's
 * format. A fleet preview diffs tens of thousands of files whose change is a few lines, so the common head
 * and tail beyond the hunk context are cut before diffing and the hunks moved back: the same diff as
 * createTwoFilesPatch's whenever the alignment is unique, a correct one always (packages/core/test/diff.test.ts).
 */
export function unifiedDiff(path: string, before: string | undefined, after: string | null): string {
  const oldName = before === undefined ? "/dev/null" : `a/${path}`;
  const newName = after === null ? "/dev/null" : `b/${path}`;
  const a = before ?? "";
  const b = after ?? "";
  const reference = () => createTwoFilesPatch(oldName, newName, a, b);
  if (a === "" || b === "" || !a.endsWith("\n") || !b.endsWith("\n") || a === b) return reference();
  const la = a.split("\n");
  const lb = b.split("\n");
  la.pop();
  lb.pop();
  let head = 0;
  while (head < la.length && head < lb.length && la[head] === lb[head]) head++;
  let tail = 0;
  while (tail < la.length - head && tail < lb.length - head && la[la.length - 1 - tail] === lb[lb.length - 1 - tail])
    tail++;
  const start = Math.max(0, head - DIFF_CONTEXT);
  const cut = Math.max(0, tail - DIFF_CONTEXT);
  if (start === 0 && cut === 0) return reference();
  const window = (lines: string[]) => `${lines.slice(start, lines.length - cut).join("\n")}\n`;
  const patch = structuredPatch(oldName, newName, window(la), window(lb));
  for (const hunk of patch.hunks) {
    hunk.oldStart += start;
    hunk.newStart += start;
  }
  return formatPatch(patch);
}

function versionOf(input: unknown): string | undefined {
  const v =
    input !== null && typeof input === "object" ? (input as { templateVersion?: unknown }).templateVersion : undefined;
  return typeof v === "string" ? v : undefined;
}

function isPrepared(value: unknown): value is PreparedTeam {
  const v = value as PreparedTeam | null;
  return typeof v === "object" && v !== null && v.files instanceof Map && typeof v.team === "object";
}

function versionChangeRefused(requested: string, current: string): TeamValidationError {
  return new TeamValidationError([
    {
      field: "templateVersion",
      rule: `is ${current}; an update cannot change it to ${requested}: a rollout moves teams between versions (POST /v1/rollouts)`,
    },
  ]);
}
