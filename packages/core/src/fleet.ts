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
  /** The diff was cut (DRIFT_DIFF_BUDGET) or left out (DRIFT_DIFF_INPUT_MAX); it ends with DIFF_TRUNCATED. */
  truncated: boolean;
}

/** One team's drift: its drifted files (none when it matches), or why it cannot be rendered. */
export type TeamDrift =
  | { kind: "gone"; team: string }
  | { kind: "failed"; team: string; error: string }
  | {
      kind: "ok";
      team: string;
      templateVersion: string;
      files: DriftedFile[];
      /** The clusters its render puts it on: what the cluster indexes must list. */
      clusters: ReadonlySet<string>;
    };

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

/**
 * Characters of diff per team (and for the layout files together): a hand edit can be megabytes, and a
 * fleet of them made a 67 MB answer. Past it, a file's diff is cut at a line end and ends with DIFF_TRUNCATED.
 */
export const DRIFT_DIFF_BUDGET = 32 * 1024;
/** Files larger than this (either side) are not diffed at all: diffing two unlike megabyte files is slow. */
export const DRIFT_DIFF_INPUT_MAX = 1024 * 1024;
/** Starts the line that ends a cut diff (a `\` line, as git's "No newline at end of file", so patch tools skip it). */
export const DIFF_TRUNCATED = "\\ Berth: diff truncated";

const RENDER_CACHE_MAX = 20_000;

export class Fleet {
  private readonly layout: RepoLayout;
  private readonly renders = new Map<string, ReadonlyMap<string, string>>();
  private readonly renderCacheMax: number;

  /** `renderCacheMax`: renders kept (0: none, for a caller that keeps its own results, as drift does). */
  constructor(
    readonly onboarding: Onboarding,
    options: { renderCacheMax?: number } = {},
  ) {
    this.layout = repoLayout(onboarding.platform);
    this.renderCacheMax = options.renderCacheMax ?? RENDER_CACHE_MAX;
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
    const folderIds = await this.onboarding.teamFolderIds(tree);
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
   * in the Flux repo. A rollout without a target (same version) of the drifted teams is the fix. Renders
   * the whole fleet: the API keeps a per-team index instead (apps/api services/drift, ADR 0026).
   */
  async drift(tree: RepoTree, options: { diffs: boolean }): Promise<DriftReport> {
    const names = await this.onboarding.listTeamNames(tree);
    const folderIds = await this.onboarding.teamFolderIds(tree);
    const results = await Promise.all(
      names.map((name) => this.teamDrift(tree, name, { ...options, folderId: folderIds.get(name) })),
    );
    const report: DriftReport = { teams: [], layout: [], failed: [], checked: names.length };
    const memberships: Array<{ team: string; clusters: ReadonlySet<string> }> = [];
    for (const r of results) {
      if (r.kind === "failed") report.failed.push({ team: r.team, error: r.error });
      if (r.kind !== "ok") continue;
      memberships.push({ team: r.team, clusters: r.clusters });
      if (r.files.length > 0) report.teams.push({ team: r.team, templateVersion: r.templateVersion, files: r.files });
    }
    report.layout = await this.layoutDrift(tree, memberships, options);
    return report;
  }

  /**
   * One team's drift: each of its own files that differs from its render on its own version, sorted by path,
   * with diffs (at most DRIFT_DIFF_BUDGET characters in all) when asked. `folderId` as for plan().
   */
  async teamDrift(
    tree: RepoTree,
    name: string,
    options: { diffs: boolean; folderId?: string | undefined },
  ): Promise<TeamDrift> {
    const r = await this.planTeam(tree, name, undefined, options.folderId);
    if (r.kind !== "ok") return r;
    const changed = [...r.plan.files].sort(([a], [b]) => (a < b ? -1 : 1));
    return {
      kind: "ok",
      team: name,
      templateVersion: r.plan.from,
      files: await describeDrift(tree, changed, options.diffs),
      clusters: r.clusters,
    };
  }

  /**
   * The cluster teams indexes that do not list exactly the teams present, given every renderable team's
   * clusters (teams that cannot be rendered keep the places the indexes give them).
   */
  async layoutDrift(
    tree: RepoTree,
    memberships: ReadonlyArray<{ team: string; clusters: ReadonlySet<string> }>,
    options: { diffs: boolean },
  ): Promise<DriftedFile[]> {
    const changes = await this.onboarding.indexChanges(tree, memberships, { every: true });
    return describeDrift(
      tree,
      [...changes].sort(([a], [b]) => (a < b ? -1 : 1)),
      options.diffs,
    );
  }

  /** The rendered files of a team on a version; cached by the team file's text and the version. */
  render(team: VersionedTeam, teamFileText: string): ReadonlyMap<string, string> {
    const key = `${team.templateVersion}\0${teamFileText}`;
    let files = this.renders.get(key);
    if (!files) {
      files = this.onboarding.render(team);
      if (this.renderCacheMax === 0) return files;
      if (this.renders.size >= this.renderCacheMax) {
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
    const spec = await this.onboarding.teamSpecIn(tree, name);
    if (spec === undefined) return { kind: "gone", team: name };
    const { path, text } = spec;
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

/**
 * Each changed file as drift, in the order given: from what the repo holds to what Berth would write, the
 * diffs together within DRIFT_DIFF_BUDGET (the files past it keep their path and kind, with no diff).
 */
async function describeDrift(
  tree: RepoTree,
  changes: ReadonlyArray<readonly [string, string | null]>,
  diffs: boolean,
): Promise<DriftedFile[]> {
  const out: DriftedFile[] = [];
  let left = DRIFT_DIFF_BUDGET;
  for (const [path, after] of changes) {
    const before = await tree.read(path);
    const drift: DriftKind = after === null ? "unexpected" : before === undefined ? "missing" : "modified";
    if (!diffs) {
      out.push({ path, drift, diff: "", truncated: false });
      continue;
    }
    if ((before?.length ?? 0) > DRIFT_DIFF_INPUT_MAX || (after?.length ?? 0) > DRIFT_DIFF_INPUT_MAX) {
      out.push({
        path,
        drift,
        diff: `${DIFF_TRUNCATED}: a side is over ${DRIFT_DIFF_INPUT_MAX} characters\n`,
        truncated: true,
      });
      continue;
    }
    if (left <= 0) {
      out.push({
        path,
        drift,
        diff: `${DIFF_TRUNCATED}: the team's diffs are over ${DRIFT_DIFF_BUDGET} characters\n`,
        truncated: true,
      });
      continue;
    }
    const diff = unifiedDiff(path, before, after);
    const cut = truncateDiff(diff, left);
    left = cut === diff ? left - diff.length : 0; // once one is cut, the files after it get none
    out.push({ path, drift, diff: cut, truncated: cut !== diff });
  }
  return out;
}

/** `diff` if it fits in `budget` characters; else its lines that fit, and a line saying how much was cut. */
export function truncateDiff(diff: string, budget: number): string {
  if (diff.length <= budget) return diff;
  const end = diff.lastIndexOf("\n", budget - 1) + 1;
  return `${diff.slice(0, end)}${DIFF_TRUNCATED}: ${diff.length - end} more characters (a team's diffs are limited to ${DRIFT_DIFF_BUDGET})\n`;
}
