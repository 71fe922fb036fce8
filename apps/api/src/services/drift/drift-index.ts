import { repoLayout, type DriftedFile, type Fleet, type RepoTree, type TeamFailure } from "@berth/core";

/** One page of GET /v1/fleet/drift, as the route answers it (less `fix` and the cursor's encoding). */
export interface DriftPage {
  revision: string | undefined;
  /** The whole fleet's counts, the same on every page. */
  summary: { checked: number; drifted: number; files: number; failed: number };
  teams: Array<{ team: string; templateVersion: string; files: DriftedFile[] }>;
  /** On the first page only. */
  layout: DriftedFile[];
  failed: TeamFailure[];
  /** The page's last team when more follow: the next page starts after it. */
  lastOfPage?: string;
}

export interface DriftPageQuery {
  /** Teams after this name (none: from the first). */
  after?: string | undefined;
  /** Drifted or failed teams per page. */
  limit: number;
  diffs: boolean;
}

/** What an update did: for logs, metrics and the tests that show it is incremental. */
export interface DriftUpdate {
  revision: string | undefined;
  /** Teams rendered again (every team on the first update; then those the commits since touched). */
  rendered: number;
  ms: number;
}

type Entry =
  | { kind: "ok"; templateVersion: string; files: DriftedFile[]; clusters: ReadonlySet<string> }
  | { kind: "failed"; error: string };

/**
 * Every team's drift at one revision, kept per team and brought forward commit by commit: a commit re-renders
 * only the teams whose paths it touched (their folder, their Flux files), not the fleet. The index keeps each
 * drifted file's path and kind, never its diff: a page with diffs renders its own teams again, so memory is a
 * few hundred bytes a team, whatever the hand edits hold. Runs in the drift worker (worker.ts), off the API's
 * event loop; nothing here knows about threads.
 */
export class DriftIndex {
  private revision: string | undefined | null = null;
  private readonly entries = new Map<string, Entry>();
  /** Drifted or failed teams, sorted: what pages walk. */
  private listed: string[] = [];
  private layout: DriftedFile[] = [];
  private summary: DriftPage["summary"] = { checked: 0, drifted: 0, files: 0, failed: 0 };

  constructor(private readonly fleet: Fleet) {}

  /** The revision the index describes (null before the first update). */
  get at(): string | undefined | null {
    return this.revision;
  }

  /**
   * Brings the index to `tree`. `changed`: every path that differs from the revision the index is at; without
   * it (or before the first update) every team is rendered.
   */
  async update(tree: RepoTree, changed?: readonly string[]): Promise<DriftUpdate> {
    const started = performance.now();
    const { onboarding } = this.fleet;
    const layout = repoLayout(onboarding.platform);
    const names = await onboarding.listTeamNames(tree);
    const present = new Set(names);
    for (const name of [...this.entries.keys()]) if (!present.has(name)) this.entries.delete(name);
    let touched: string[];
    if (changed === undefined || this.revision === null) touched = names;
    else {
      const owners = new Set<string>();
      for (const path of changed) {
        const owner = layout.ownerOf(path);
        if (owner.kind === "team") owners.add(owner.team);
      }
      touched = names.filter((name) => owners.has(name) || !this.entries.has(name));
    }
    const folderIds = await onboarding.teamFolderIds(tree);
    const results = await Promise.all(
      touched.map((name) => this.fleet.teamDrift(tree, name, { diffs: false, folderId: folderIds.get(name) })),
    );
    for (const r of results) {
      if (r.kind === "gone") this.entries.delete(r.team);
      else if (r.kind === "failed") this.entries.set(r.team, { kind: "failed", error: r.error });
      else
        this.entries.set(r.team, {
          kind: "ok",
          templateVersion: r.templateVersion,
          files: r.files,
          clusters: r.clusters,
        });
    }
    // The indexes list every team, so any commit may put them off: checked again each time (no render needed).
    this.layout = await this.fleet.layoutDrift(tree, this.memberships(), { diffs: false });
    this.listed = [...this.entries]
      .filter(([, e]) => e.kind === "failed" || e.files.length > 0)
      .map(([name]) => name)
      .sort();
    let files = this.layout.length;
    let failed = 0;
    for (const name of this.listed) {
      const e = this.entries.get(name);
      if (e?.kind === "ok") files += e.files.length;
      else failed += 1;
    }
    this.summary = { checked: names.length, drifted: this.listed.length - failed, files, failed };
    this.revision = tree.revision;
    return { revision: tree.revision, rendered: touched.length, ms: Math.round(performance.now() - started) };
  }

  /** A page of the index at `tree` (which must be the tree of the last update), with diffs when asked. */
  async page(tree: RepoTree, query: DriftPageQuery): Promise<DriftPage> {
    if (tree.revision !== this.revision) throw new Error("drift index: page asked at a revision it is not at");
    const { after, limit, diffs } = query;
    const start = after === undefined ? 0 : upperBound(this.listed, after);
    const names = this.listed.slice(start, start + limit);
    const page: DriftPage = {
      revision: this.revision,
      summary: this.summary,
      teams: [],
      layout: [],
      failed: [],
    };
    const described = await Promise.all(
      names.map(async (name) => {
        const entry = this.entries.get(name);
        if (!diffs || entry?.kind !== "ok") return { name, entry };
        const fresh = await this.fleet.teamDrift(tree, name, { diffs: true });
        return { name, entry: fresh.kind === "ok" ? { ...entry, files: fresh.files } : entry };
      }),
    );
    for (const { name, entry } of described) {
      if (entry?.kind === "ok")
        page.teams.push({ team: name, templateVersion: entry.templateVersion, files: entry.files });
      else if (entry?.kind === "failed") page.failed.push({ team: name, error: entry.error });
    }
    if (after === undefined)
      page.layout = diffs ? await this.fleet.layoutDrift(tree, this.memberships(), { diffs: true }) : this.layout;
    const last = names.at(-1);
    if (last !== undefined && start + limit < this.listed.length) page.lastOfPage = last;
    return page;
  }

  private memberships(): Array<{ team: string; clusters: ReadonlySet<string> }> {
    const out: Array<{ team: string; clusters: ReadonlySet<string> }> = [];
    for (const [team, e] of this.entries) if (e.kind === "ok") out.push({ team, clusters: e.clusters });
    return out;
  }
}

/** The index of the first name after `name` in sorted `names`. */
function upperBound(names: readonly string[], name: string): number {
  let lo = 0;
  let hi = names.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const at = names[mid];
    if (at !== undefined && at <= name) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
