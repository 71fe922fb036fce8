import { RenderError, RepoContentError, TeamValidationError } from "./errors.js";
import { repoLayout, type RepoLayout } from "./layout.js";
import { fileStatus, unifiedDiff, type Onboarding, type TeamFailure } from "./onboarding.js";
import type { FileChange, RepoTree } from "./repo.js";
import { matchesSelector, type TeamSelector } from "./rollout/index.js";
import { parseTeamFile } from "./team-file.js";
import type { Team, VersionedTeam } from "./team.js";
import { validateTeam } from "./validate.js";

/**
 * Rendering many teams at once: the fleet-wide part of rollouts and drift. Pure apart from reading the
 * tree it is handed. Renders are cached by (version, team file text), so a preview and the apply that
 * follows, or the waves of one rollout, render each team once per process.
 */

export interface TeamPlan {
  team: string;
  /** The version the team is on in the tree. */
  from: string;
  /** The version it is rendered with. */
  to: string;
  /** The team's own files that change (null: deleted). */
  files: Map<string, string | null>;
}

export interface FleetPlan {
  /** Teams whose files change, in the order asked. */
  changed: TeamPlan[];
  unchanged: string[];
  failed: TeamFailure[];
  /** Teams asked for that have no team file (offboarded meanwhile). */
  gone: string[];
  /** Every file to write: the changed teams' files and the cluster indexes that change with them. */
  files: Map<string, string | null>;
}

export interface TeamPreview {
  team: string;
  from: string;
  to: string;
  files: Array<FileChange & { content?: string | null }>;
  /** Unified diff of the team's files (empty when diffs were not asked for). */
  diff: string;
}

/** How a file of the repo differs from what Berth renders from the team files. */
export type DriftKind = "modified" | "missing" | "unexpected";

export interface DriftedFile {
  path: string;
  drift: DriftKind;
  /** Unified diff from the repo's content to Berth's render (empty when diffs were not asked for). */
  diff: string;
}

export interface DriftReport {
  /** Teams with at least one drifted file. */
  teams: Array<{ team: string; templateVersion: string; files: DriftedFile[] }>;
  /** Layout files (each cluster's teams index) that differ from the teams present. */
  layout: DriftedFile[];
  /** Teams whose files cannot be rendered (so their drift cannot be told). */
  failed: TeamFailure[];
  /** Teams checked. */
  checked: number;
}

const RENDER_CACHE_MAX = 20_000;

export class Fleet {
  private readonly layout: RepoLayout;
  private readonly renders = new Map<string, ReadonlyMap<string, string>>();

  constructor(readonly onboarding: Onboarding) {
    this.layout = repoLayout(onboarding.platform);
  }

  /**
   * Every team in the tree that the selector matches, sorted by name; and the teams whose file cannot be
   * read that it might match: those it names, or all of them when it names none (their labels and
   * environments cannot be read, so whether they match cannot be told).
   */
  async select(tree: RepoTree, selector: TeamSelector): Promise<{ teams: Team[]; broken: TeamFailure[] }> {
    const { teams, broken } = await this.onboarding.listTeams(tree);
    const names = selector.names ? new Set(selector.names) : undefined;
    return {
      teams: teams.filter((t) => matchesSelector(t, selector)),
      broken: broken.filter((b) => !names || names.has(b.team)),
    };
  }

  /**
   * Re-renders `names` on `version` (default: each team's own) against the tree: which teams change and how,
   * which cannot be rendered (and why), which are gone. A failure of one team does not stop the others;
   * the caller decides (an unstaged rollout commits nothing if any failed).
   */
  async plan(tree: RepoTree, names: readonly string[], version?: string): Promise<FleetPlan> {
    // Each team folder's content id from one listing, for the parse cache (asking git for 1,000 folders
    // one by one made it walk the 1,000-entry teams folder each time).
    const folders = tree.entries ? await tree.entries(this.layout.teamsDir) : [];
    const folderIds = new Map(folders.filter((e) => e.kind === "folder").map((e) => [e.name, e.id]));
    const results = await Promise.all(names.map((name) => this.planTeam(tree, name, version, folderIds.get(name))));
    const plan: FleetPlan = { changed: [], unchanged: [], failed: [], gone: [], files: new Map() };
    const memberships: Array<{ team: string; clusters: ReadonlySet<string> }> = [];
    for (const r of results) {
      if (r.kind === "gone") plan.gone.push(r.team);
      else if (r.kind === "failed") plan.failed.push({ team: r.team, error: r.error });
      else {
        memberships.push({ team: r.plan.team, clusters: r.clusters });
        if (r.plan.files.size === 0) plan.unchanged.push(r.plan.team);
        else {
          plan.changed.push(r.plan);
          for (const [path, content] of r.plan.files) plan.files.set(path, content);
        }
      }
    }
    // A re-render keeps each team on its clusters; the indexes change only if they were out of date (or the
    // teams move out of the pre-shard layout). Every index is checked: a hand edit of one is drift too.
    for (const [path, content] of await this.onboarding.indexChanges(tree, memberships, { every: true }))
      plan.files.set(path, content);
    return plan;
  }

  /** Per changed team: each file's status and a unified diff against the tree (when `diffs`). */
  async preview(
    tree: RepoTree,
    plan: FleetPlan,
    options: { diffs: boolean; contents?: boolean },
  ): Promise<TeamPreview[]> {
    return Promise.all(
      plan.changed.map(async (t) => {
        const files: TeamPreview["files"] = [];
        const patches: string[] = [];
        for (const [path, content] of [...t.files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
          const before = await tree.read(path);
          files.push({ path, status: fileStatus(before, content), ...(options.contents ? { content } : {}) });
          if (options.diffs) patches.push(unifiedDiff(path, before, content));
        }
        return { team: t.team, from: t.from, to: t.to, files, diff: patches.join("") };
      }),
    );
  }

  /**
   * Every file that differs from what Berth renders from the team files on their own versions: hand edits
   * in the Flux repo. A rollout without a target (same version) of the drifted teams is the fix.
   */
  async drift(tree: RepoTree, options: { diffs: boolean }): Promise<DriftReport> {
    const names = await this.onboarding.listTeamNames(tree);
    const plan = await this.plan(tree, names);
    const describe = async (path: string, after: string | null): Promise<DriftedFile> => {
      const before = await tree.read(path);
      const drift: DriftKind = after === null ? "unexpected" : before === undefined ? "missing" : "modified";
      // The diff goes from what the repo holds to what Berth would write.
      return { path, drift, diff: options.diffs ? unifiedDiff(path, before, after) : "" };
    };
    const teams = await Promise.all(
      plan.changed.map(async (t) => ({
        team: t.team,
        templateVersion: t.from,
        files: await Promise.all(
          [...t.files].sort(([a], [b]) => (a < b ? -1 : 1)).map(([path, content]) => describe(path, content)),
        ),
      })),
    );
    const teamPaths = new Set(plan.changed.flatMap((t) => [...t.files.keys()]));
    const layoutFiles = [...plan.files].filter(([path]) => !teamPaths.has(path)).sort(([a], [b]) => (a < b ? -1 : 1));
    const layout = await Promise.all(layoutFiles.map(([path, content]) => describe(path, content)));
    return { teams, layout, failed: plan.failed, checked: names.length };
  }

  /** The rendered files of a team on a version; cached by the team file's text and the version. */
  render(team: VersionedTeam, teamFileText: string): ReadonlyMap<string, string> {
    const key = `${team.templateVersion}\0${teamFileText}`;
    let files = this.renders.get(key);
    if (!files) {
      files = this.onboarding.render(team);
      if (this.renders.size >= RENDER_CACHE_MAX) {
        const [oldest] = this.renders.keys(); // insertion order: the first key is the oldest
        if (oldest !== undefined) this.renders.delete(oldest);
      }
      this.renders.set(key, files);
    }
    return files;
  }

  private async planTeam(
    tree: RepoTree,
    name: string,
    version: string | undefined,
    folderId: string | undefined,
  ): Promise<
    | { kind: "gone"; team: string }
    | { kind: "failed"; team: string; error: string }
    | { kind: "ok"; plan: TeamPlan; clusters: ReadonlySet<string> }
  > {
    const path = this.layout.teamSpec(name);
    const text = await tree.read(path);
    if (text === undefined) return { kind: "gone", team: name };
    try {
      // Parsed once per team folder content, shared with the selection's listing (a 1,000-team preview
      // parsed every team file twice).
      const stored = (await this.onboarding.readTeam(tree, name, folderId)) ?? parseTeamFile(text, path);
      const from = stored.templateVersion;
      const to = version ?? from;
      this.onboarding.catalog.get(to);
      // Validated again against today's platform: a team whose role left the catalog fails, it does not
      // quietly render something else.
      const team = { ...validateTeam(stored, this.onboarding.platform), templateVersion: to };
      const rendered = this.render(team, text);
      const files = await this.onboarding.teamFileChanges(tree, name, rendered);
      return {
        kind: "ok",
        plan: { team: name, from, to, files },
        clusters: this.onboarding.clustersIn(name, rendered),
      };
    } catch (err) {
      if (err instanceof RenderError || err instanceof RepoContentError || err instanceof TeamValidationError) {
        return { kind: "failed", team: name, error: err.message };
      }
      throw err;
    }
  }
}
