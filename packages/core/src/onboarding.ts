import { createTwoFilesPatch } from "diff";
import { RepoContentError, TeamExistsError, TeamNotFoundError } from "./errors.js";
import { repoLayout, TEAM_SPEC_FILE, type RepoLayout } from "./layout.js";
import { allClusters, type Platform } from "./platform.js";
import { renderClusterTeamsIndex, renderTeam } from "./render.js";
import type { FileChange, FileStatus, RepoChange, RepoTree } from "./repo.js";
import { parseTeamFile } from "./team-file.js";
import type { Team } from "./team.js";
import type { TemplateSet } from "./template-set.js";
import { validateTeam, validateTeamSpec } from "./validate.js";

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

export class Onboarding {
  private readonly layout: RepoLayout;
  private readonly parsed = new Map<string, Team | null>();
  private lastList: { id: string; teams: Promise<Team[]> } | undefined;

  constructor(
    readonly platform: Platform,
    readonly templates: TemplateSet,
  ) {
    this.layout = repoLayout(platform);
  }

  async readTeam(tree: RepoTree, name: string): Promise<Team | undefined> {
    const folderId = tree.contentId ? await tree.contentId(this.layout.teamDir(name)) : undefined;
    if (tree.contentId && folderId === undefined) return undefined;
    return this.parsedTeam(tree, name, folderId);
  }

  /**
   * The team in folder `name`, parsed once per folder content id: a team whose folder did not change since it
   * was last read is not read or parsed again, whatever else the commit changed.
   */
  private async parsedTeam(tree: RepoTree, name: string, folderId: string | undefined): Promise<Team | undefined> {
    const key = folderId === undefined ? undefined : `${name}\0${folderId}`;
    const hit = key === undefined ? undefined : this.parsed.get(key);
    if (hit !== undefined) return hit ?? undefined;
    const path = this.layout.teamSpec(name);
    const text = await tree.read(path);
    let team: Team | undefined;
    if (text !== undefined) {
      team = parseTeamFile(text, path);
      if (team.name !== name) throw new RepoContentError(path, `metadata.name is "${team.name}", expected "${name}"`);
    }
    if (key !== undefined) {
      // Bounded: old folder ids pile up as teams change; starting over costs one parse per team.
      if (this.parsed.size >= MAX_PARSED_TEAMS) this.parsed.clear();
      this.parsed.set(key, team ?? null);
    }
    return team;
  }

  /** Every team with a spec in the tree (`teams/<team>/base/team.yaml`), sorted. */
  async listTeamNames(tree: RepoTree): Promise<string[]> {
    const prefix = `${this.layout.teamsDir}/`;
    const suffix = `/base/${TEAM_SPEC_FILE}`;
    return (await tree.list(this.layout.teamsDir))
      .filter((p) => p.startsWith(prefix) && p.endsWith(suffix))
      .map((p) => p.slice(prefix.length, -suffix.length))
      .filter((name) => name !== "" && !name.includes("/"))
      .sort();
  }

  /**
   * Every team, sorted by name. With content ids (the git adapter), the answer is reused while the teams
   * folder is unchanged (concurrent readers share one build), and only changed team folders are parsed again.
   */
  async listTeams(tree: RepoTree): Promise<Team[]> {
    if (!tree.entries || !tree.contentId) {
      const names = await this.listTeamNames(tree);
      const teams = await Promise.all(names.map((n) => this.readTeam(tree, n)));
      return teams.filter((t): t is Team => t !== undefined);
    }
    const id = await tree.contentId(this.layout.teamsDir);
    if (id === undefined) return [];
    if (this.lastList?.id !== id) {
      const teams = this.listByFolder(tree);
      const entry = { id, teams };
      this.lastList = entry;
      teams.catch(() => {
        if (this.lastList === entry) this.lastList = undefined;
      });
    }
    return [...(await this.lastList!.teams)];
  }

  private async listByFolder(tree: RepoTree): Promise<Team[]> {
    const folders = (await tree.entries!(this.layout.teamsDir)).filter((e) => e.kind === "folder");
    const teams = await Promise.all(folders.map((f) => this.parsedTeam(tree, f.name, f.id)));
    return teams.filter((t): t is Team => t !== undefined).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  render(team: Team): Map<string, string> {
    return renderTeam(team, this.platform, this.templates);
  }

  async planCreate(tree: RepoTree, input: unknown): Promise<{ team: Team; change: RepoChange }> {
    const team = validateTeam(input, this.platform);
    if ((await tree.read(this.layout.teamSpec(team.name))) !== undefined) throw new TeamExistsError(team.name);
    const files = await this.changeFor(tree, team.name, this.render(team));
    return { team, change: { files, subject: `berth: onboard team ${team.name}`, body: this.describe(team) } };
  }

  async planUpdate(tree: RepoTree, name: string, spec: unknown): Promise<{ team: Team; change: RepoChange }> {
    const team = validateTeamSpec(name, spec, this.platform);
    if ((await this.readTeam(tree, name)) === undefined) throw new TeamNotFoundError(name);
    const files = await this.changeFor(tree, name, this.render(team));
    return { team, change: { files, subject: `berth: update team ${name}`, body: this.describe(team) } };
  }

  /** Re-renders an existing team from its spec in the repo (after a template or platform change). */
  async planRerender(tree: RepoTree, name: string): Promise<{ team: Team; change: RepoChange }> {
    const team = await this.readTeam(tree, name);
    if (team === undefined) throw new TeamNotFoundError(name);
    const files = await this.changeFor(tree, name, this.render(validateTeam(team, this.platform)));
    return { team, change: { files, subject: `berth: re-render team ${name} (templates ${this.templates.version})` } };
  }

  async planDelete(tree: RepoTree, name: string): Promise<{ team: Team; change: RepoChange }> {
    const team = await this.readTeam(tree, name);
    if (team === undefined) throw new TeamNotFoundError(name);
    const files = await this.changeFor(tree, name, new Map());
    return { team, change: { files, subject: `berth: offboard team ${name}` } };
  }

  /** What a create (new team) or update (existing team) would change, without committing. */
  async preview(tree: RepoTree, input: unknown, existingName?: string): Promise<Preview> {
    const team = existingName === undefined ? validateTeam(input, this.platform) : validateTeamSpec(existingName, input, this.platform);
    if (existingName !== undefined && (await this.readTeam(tree, existingName)) === undefined) throw new TeamNotFoundError(existingName);
    const changes = await this.changeFor(tree, team.name, this.render(team));
    const files: Preview["files"] = [];
    const patches: string[] = [];
    for (const [path, content] of changes) {
      const before = await tree.read(path);
      files.push({ path, status: fileStatus(before, content), content });
      patches.push(
        createTwoFilesPatch(before === undefined ? "/dev/null" : `a/${path}`, content === null ? "/dev/null" : `b/${path}`, before ?? "", content ?? ""),
      );
    }
    return { team, files, diff: patches.join("") };
  }

  private describe(team: Team): string[] {
    return [
      `environments: ${team.environments.join(", ")}`,
      `roles: ${team.roleAssignments.map((r) => r.role).join(", ") || "(none)"}`,
    ];
  }

  /**
   * The files to write or delete so the repo holds exactly `desired` for this team, plus every cluster's
   * teams index updated for it. Files of the team that are no longer rendered are deleted. Only paths the
   * team owns (layout.ownerOf) are written or deleted as the team's; the indexes are rebuilt as indexes.
   */
  private async changeFor(tree: RepoTree, team: string, desired: Map<string, string>): Promise<Map<string, string | null>> {
    this.layout.assertOwnedBy(team, desired.keys());
    const owned = (path: string) => {
      const owner = this.layout.ownerOf(path);
      return owner.kind === "team" && owner.team === team;
    };
    const changes = new Map<string, string | null>();
    const existing = new Set((await tree.list(this.layout.teamDir(team))).filter(owned));
    const clusters = allClusters(this.platform).map((c) => c.name);
    for (const cluster of clusters) {
      const flux = this.layout.fluxKustomization(cluster, team);
      if (owned(flux) && (await tree.read(flux)) !== undefined) existing.add(flux);
    }
    for (const [path, content] of desired) {
      if ((await tree.read(path)) !== content) changes.set(path, content);
    }
    for (const path of existing) {
      if (!desired.has(path)) changes.set(path, null);
    }
    for (const cluster of clusters) {
      const dir = this.layout.clusterTeamsDir(cluster);
      const index = this.layout.clusterTeamsIndex(cluster);
      const members = new Set(
        (await tree.list(dir))
          .map((p) => this.layout.ownerOf(p))
          .flatMap((owner) => (owner.kind === "team" ? [owner.team] : [])),
      );
      if (desired.has(this.layout.fluxKustomization(cluster, team))) members.add(team);
      else members.delete(team);
      const content = renderClusterTeamsIndex(members);
      if ((await tree.read(index)) !== content) changes.set(index, content);
    }
    return changes;
  }
}
