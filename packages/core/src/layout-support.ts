import type { Platform } from "./platform.js";

/**
 * The fleet layouts Berth still writes but no longer installs, each with its end date (docs/repo-layout.md,
 * "Retiring a layout"; the rule of docs/templates.md: six months after flux/ stopped installing it). Each is the
 * default of its setting today, so a platform that never set it is on it; the default is removed on the end date
 * rather than changed, because a changed default would re-point every team Kustomization of such a platform
 * without a migration.
 */
export interface RetiringLayout {
  /** The platform config setting, as a path. */
  setting: string;
  /** The value that names the old layout. */
  value: string;
  /** What flux/ installs instead. */
  installed: string;
  /** The last day the value is accepted (UTC). */
  until: string;
  /** Where the move is described. */
  migration: string;
  of(platform: Platform): string;
}

export const RETIRING_LAYOUTS: readonly RetiringLayout[] = [
  {
    setting: "platform.fluxSource.kind",
    value: "GitRepository",
    installed: "ExternalArtifact",
    until: "2027-06-03",
    migration: "docs/install.md, Upgrade (ADR 0019, then ADR 0022)",
    of: (p) => p.fluxSource.kind,
  },
  {
    setting: "platform.fluxSource.artifactPrefix",
    value: "team-",
    installed: "team-files-",
    until: "2027-06-03",
    migration: "docs/install.md, Moving to team slices (ADR 0022)",
    // The prefix only names a layout when team Kustomizations read artifacts.
    of: (p) => (p.fluxSource.kind === "ExternalArtifact" ? p.fluxSource.artifactPrefix : ""),
  },
  {
    setting: "platform.layout.appliedBy",
    value: "cluster-index",
    installed: "slices",
    until: "2027-06-03",
    migration: "docs/install.md, Moving to team slices, step 2 (ADR 0032)",
    of: (p) => p.layout.appliedBy,
  },
];

/** One line per retiring layout the platform is on, for the API's and the controller's log at start. */
export function layoutNotices(platform: Platform): string[] {
  return RETIRING_LAYOUTS.filter((l) => l.of(platform) === l.value).map(
    (l) =>
      `${l.setting} is ${l.value} (set, or its default): a layout flux/ no longer installs (it installs ` +
      `${l.installed}), accepted until ${l.until}, when this value and its default go; move as ${l.migration} says`,
  );
}
