import { compareVersions, type Onboarding, type TeamFailure } from "@berth/core";
import { driftBody } from "./drift/drift-body.js";
import type { DriftPageQuery } from "./drift/drift-index.js";
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

/** Where drift pages come from, serialized (drift-body.ts): a DriftThread. */
export interface DriftSource {
  body(revision: string, query: DriftPageQuery): Promise<Uint8Array>;
}

/** Fleet-wide reads: template versions in use, repo drift. */
export class FleetService {
  constructor(
    private readonly onboarding: Onboarding,
    private readonly store: Pick<TeamStore, "snapshot">,
    private readonly drifts: DriftSource,
  ) {}

  /**
   * A page of the generated files that differ from Berth's render of their team file (hand edits), at the
   * newest revision read, as the JSON body GET /v1/fleet/drift answers. Computed and serialized off the event
   * loop, commit by commit (services/drift, ADR 0026).
   */
  async drift(query: DriftPageQuery): Promise<Uint8Array> {
    const tree = await this.store.snapshot();
    if (tree.revision === undefined) {
      return driftBody({
        revision: undefined,
        summary: { checked: 0, drifted: 0, files: 0, failed: 0 },
        teams: [],
        layout: [],
        failed: [],
      });
    }
    return this.drifts.body(tree.revision, query);
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
