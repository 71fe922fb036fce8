import { compareVersions, type DriftReport, type Fleet, type Onboarding, type TeamFailure } from "@berth/core";
import type { TeamStore } from "./team-service.js";

export interface TemplateVersionInfo {
  version: string;
  /** New teams get this version (platform.templateVersion). */
  default: boolean;
  /** The version's folder is loaded; false for a version teams still use but whose folder is gone. */
  available: boolean;
  /** Teams rendered with this version. */
  teams: number;
}

export type DriftAnswer = DriftReport & { revision: string | undefined };

/** Fleet-wide reads: template versions in use, repo drift. */
export class FleetService {
  /**
   * Drift reports of the newest revision read, with and without diffs: a report re-renders the whole fleet,
   * so it is computed once per revision and every caller meanwhile shares it (a poller with the read role
   * must not turn each GET into a fleet render).
   */
  private drifts = new Map<string, Promise<DriftAnswer>>();

  constructor(
    private readonly onboarding: Onboarding,
    private readonly store: Pick<TeamStore, "snapshot">,
    private readonly fleet: Fleet,
  ) {}

  /** Every generated file that differs from Berth's render of its team file (hand edits), with diffs. */
  async drift(options: { diffs: boolean }): Promise<DriftAnswer> {
    const tree = await this.store.snapshot();
    const key = `${tree.revision ?? ""}\0${options.diffs}`;
    let report = this.drifts.get(key);
    if (!report) {
      // Only the newest revision's reports are kept: an older one is never asked for again.
      if (![...this.drifts.keys()].some((k) => k.startsWith(`${tree.revision ?? ""}\0`))) this.drifts = new Map();
      const computed = this.fleet.drift(tree, options).then((r) => ({ revision: tree.revision, ...r }));
      computed.catch(() => {
        if (this.drifts.get(key) === computed) this.drifts.delete(key); // a failure is not kept
      });
      this.drifts.set(key, computed);
      report = computed;
    }
    return report;
  }

  /** Every template version (on disk, or still used by a team) with how many teams use it. */
  async templates(): Promise<{
    revision: string | undefined;
    default: string;
    items: TemplateVersionInfo[];
    broken: TeamFailure[];
  }> {
    const tree = await this.store.snapshot();
    const { teams, broken } = await this.onboarding.listTeams(tree);
    const counts = new Map<string, number>(this.onboarding.catalog.versions().map((v) => [v, 0]));
    for (const team of teams) {
      const v = team.templateVersion ?? this.onboarding.catalog.defaultVersion;
      counts.set(v, (counts.get(v) ?? 0) + 1);
    }
    const items = [...counts]
      .sort(([a], [b]) => compareVersions(a, b))
      .map(([version, n]) => ({
        version,
        default: version === this.onboarding.catalog.defaultVersion,
        available: this.onboarding.catalog.has(version),
        teams: n,
      }));
    return { revision: tree.revision, default: this.onboarding.catalog.defaultVersion, items, broken };
  }
}
