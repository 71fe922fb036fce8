import { createTwoFilesPatch } from "diff";
import { RepoContentError, TeamExistsError, TeamNotFoundError } from "./errors.js";
import { repoLayout, TEAM_SPEC_FILE, type RepoLayout } from "./layout.js";
import { allClusters, type Platform } from "./platform.js";
import { renderClusterTeamsIndex, renderTeam } from "./render.js";
import type { RepoChange, RepoTree } from "./repo.js";
import { parseTeamFile } from "./team-file.js";
import type { Team } from "./team.js";
import type { TemplateSet } from "./template-set.js";
import { validateTeam, validateTeamSpec } from "./validate.js";

export type FileStatus = "added" | "modified" | "deleted";
export interface FileChange {
  path: string;
  status: FileStatus;
}
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
export class Onboarding {
  private readonly layout: RepoLayout;

  constructor(
    readonly platform: Platform,
    readonly templates: TemplateSet,
  ) {
    this.layout = repoLayout(platform);
  }

  async readTeam(tree: RepoTree, name: string): Promise<Team | undefined> {
    const path = this.layout.teamSpec(name);
    const text = await tree.read(path);
    if (text === undefined) return undefined;
    const team = parseTeamFile(text, path);
    if (team.name !== name) throw new RepoContentError(path, `metadata.name is "${team.name}", expected "${name}"`);
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

  async listTeams(tree: RepoTree): Promise<Team[]> {
    const names = await this.listTeamNames(tree);
    const teams = await Promise.all(names.map((n) => this.readTeam(tree, n)));
    return teams.filter((t): t is Team => t !== undefined);
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
