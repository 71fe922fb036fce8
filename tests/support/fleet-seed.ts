/**
 * Teams rendered offline, file for file as Berth's API would commit them (the same Onboarding, the same index
 * rebuild), for tests and benchmarks that need a fleet in the repository before anything runs: many teams at
 * once, or a repository as an earlier Berth wrote it (`layout: "flat"`: before ADR 0013's shards, every Flux file
 * at clusters/<cluster>/teams/<team>.yaml, listed by one index).
 */
import {
  Onboarding,
  platformSchema,
  repoLayout,
  renderShardIndex,
  validateTeam,
  type Platform,
  type TeamInput,
} from "@berth/core";
import { join } from "node:path";
import { loadTemplateCatalog } from "@berth/config";
import { MemoryRepoTree } from "../../packages/core/test/fixtures.js";
import { REPO_ROOT } from "./berth.js";

export interface SeedOptions {
  /** The platform section of Berth's config (as the API reads it). */
  platform: Record<string, unknown>;
  templatesDir: string;
  /** Every team's version (default: the platform's), or each team's. */
  templateVersion?: string | ((team: string) => string);
  layout?: "sharded" | "flat";
}

/**
 * A platform harness's `seed` (startFluxPlatform): teams in environment dev owned by `owner`, rendered with the
 * repository's templates.
 */
export const devTeamsSeed =
  (names: readonly string[], owner: string, opts: Pick<SeedOptions, "layout"> = {}) =>
  (platform: Record<string, unknown>): Promise<Map<string, string>> =>
    renderFleet(
      names.map((name) => ({ name, owners: [owner], environments: ["dev"] })),
      { platform, templatesDir: join(REPO_ROOT, "templates"), ...opts },
    );

/** Every file onboarding `teams` writes, as one commit would hold them (path → content). */
export async function renderFleet(teams: TeamInput[], opts: SeedOptions): Promise<Map<string, string>> {
  const platform = platformSchema.parse(opts.platform) as Platform;
  const versionOf = (team: string) =>
    typeof opts.templateVersion === "function"
      ? opts.templateVersion(team)
      : (opts.templateVersion ?? platform.templateVersion);
  const onboarding = new Onboarding(platform, await loadTemplateCatalog(opts.templatesDir, platform.templateVersion));
  const files = new Map<string, string>();
  for (const input of teams) {
    const team = { ...validateTeam(input, platform), templateVersion: versionOf(input.name) };
    for (const [path, content] of onboarding.render(team)) files.set(path, content);
  }
  for (const [path, content] of await onboarding.indexChanges(new MemoryRepoTree(files), [], { every: true })) {
    if (content === null) files.delete(path);
    else files.set(path, content);
  }
  return opts.layout === "flat" ? flatten(files, platform) : files;
}

/** The same files as a Berth before shards wrote them: Flux files at the top of each cluster's teams folder. */
function flatten(files: Map<string, string>, platform: Platform): Map<string, string> {
  const layout = repoLayout(platform);
  const out = new Map<string, string>();
  const teamsByCluster = new Map<string, string[]>();
  for (const [path, content] of files) {
    const owner = layout.ownerOf(path);
    if (!path.startsWith(`${platform.layout.clustersDir}/`)) {
      out.set(path, content);
      continue;
    }
    if (owner.kind !== "team") continue; // the shard indexes and the top index are rebuilt below
    const cluster = path.split("/")[1]!;
    out.set(layout.flatFluxKustomization(cluster, owner.team), content);
    teamsByCluster.set(cluster, [...(teamsByCluster.get(cluster) ?? []), owner.team]);
  }
  for (const [cluster, teams] of teamsByCluster) out.set(layout.clusterTeamsIndex(cluster), renderShardIndex(teams));
  return out;
}
