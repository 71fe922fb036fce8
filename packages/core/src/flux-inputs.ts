import { teamShard, type RepoLayout } from "./layout.js";
import type { RepoTree } from "./repo.js";

/**
 * What Flux on a cluster reads of the Flux repo, for the two questions a push raises (ADR 0019, 0020): which
 * clusters' Flux must fetch it, and whether a cluster that applied an older commit already runs what a newer one
 * holds for a team. A team's inputs on a cluster are its base, its folder for that cluster and its Flux file there:
 * exactly what the cluster's ArtifactGenerators put into the team's artifact and the cluster's team Flux files.
 */

/** The paths Flux on `cluster` reads for `team` (folders and files; the Flux file where it is, or was before shards). */
export function teamInputsOnCluster(layout: RepoLayout, team: string, cluster: string): string[] {
  return [layout.baseDir(team), layout.clusterDir(team, cluster), ...layout.fluxKustomizationPaths(cluster, team)];
}

/**
 * The clusters whose Flux reads any of `paths` (a push's changes), sorted: a cluster's own folder, a team's folder
 * for that cluster, and for a change to a team's base every cluster the team has a folder for in `tree` (the pushed
 * head). Other paths (rollout state files) concern no cluster.
 */
export async function clustersReading(tree: RepoTree, layout: RepoLayout, paths: Iterable<string>): Promise<string[]> {
  return [...(await fluxReadsOf(tree, layout, paths)).keys()];
}

/**
 * What of a push each cluster's Flux reads, by cluster (sorted as clustersReading): the shards of the teams it
 * touched there (teamShard), which a cluster whose slices fetch for themselves wakes only (ADR 0036), or undefined
 * when it touched a file of the cluster that is no team's (every slice, then).
 */
export async function fluxReadsOf(
  tree: RepoTree,
  layout: RepoLayout,
  paths: Iterable<string>,
): Promise<Map<string, string[] | undefined>> {
  const reads = new Map<string, Set<string> | undefined>();
  const read = (cluster: string, team: string | undefined) => {
    const shards = reads.has(cluster) ? reads.get(cluster) : new Set<string>();
    if (shards && team !== undefined) shards.add(teamShard(team));
    reads.set(cluster, team === undefined ? undefined : shards);
  };
  const wholeTeams = new Set<string>();
  const clustersPrefix = `${layout.clustersDir}/`;
  for (const path of paths) {
    if (path.startsWith(clustersPrefix)) {
      const cluster = path.slice(clustersPrefix.length).split("/")[0];
      const owner = layout.ownerOf(path);
      if (cluster) read(cluster, owner.kind === "team" ? owner.team : undefined);
      continue;
    }
    const inTeams = layout.teamPath(path);
    if (!inTeams) continue;
    const [part, cluster] = inTeams.rest;
    if (part === "clusters" && cluster) read(cluster, inTeams.team);
    else wholeTeams.add(inTeams.team);
  }
  for (const team of wholeTeams)
    for (const dir of layout.teamDirs(team))
      for (const cluster of await folderNames(tree, `${dir}/clusters`)) read(cluster, team);
  return new Map(
    [...reads.keys()].sort().map((cluster) => {
      const shards = reads.get(cluster);
      return [cluster, shards && [...shards].sort()];
    }),
  );
}

/**
 * Whether Flux on `cluster` reads the same for `team` in both trees: then a cluster that applied `a` runs what `b`
 * holds for the team, though `a` is older (Flux reconciles a team only when its own inputs change).
 */
export async function sameTeamOnCluster(
  a: RepoTree,
  b: RepoTree,
  layout: RepoLayout,
  team: string,
  cluster: string,
): Promise<boolean> {
  for (const path of teamInputsOnCluster(layout, team, cluster)) if (!(await sameAt(a, b, path))) return false;
  return true;
}

/**
 * Whether Flux on `cluster` reads the same of `shards` in both trees (per-slice fetch, ADR 0036): then the branch of
 * the slice that holds them, at `a`, need not move to `b`. The shards' folders alike answer at once; else, team by team
 * in a shard whose team folders changed, the inputs of each team that is on the cluster in either tree: a change to a
 * team on other clusters only is not this cluster's.
 */
export async function sameShardsOnCluster(
  a: RepoTree,
  b: RepoTree,
  layout: RepoLayout,
  cluster: string,
  shards: readonly string[],
): Promise<boolean> {
  for (const shard of shards) {
    if (!(await sameAt(a, b, `${layout.clustersDir}/${cluster}/teams/${shard}`))) return false;
    const teamsShard = `${layout.teamsDir}/${shard}`;
    if (await sameAt(a, b, teamsShard)) continue;
    const teams = new Set([...(await folderNames(a, teamsShard)), ...(await folderNames(b, teamsShard))]);
    for (const team of teams) {
      const [x, y] = await contentsAt(a, b, layout.clusterDir(team, cluster));
      if (x === undefined && y === undefined) continue;
      if (!(await sameTeamOnCluster(a, b, layout, team, cluster))) return false;
    }
  }
  return true;
}

/** The fingerprints of `path` in both trees. */
function contentsAt(a: RepoTree, b: RepoTree, path: string) {
  return Promise.all([contentOf(a, path), contentOf(b, path)]);
}

async function sameAt(a: RepoTree, b: RepoTree, path: string): Promise<boolean> {
  const [x, y] = await contentsAt(a, b, path);
  return x === y;
}

/** A comparable fingerprint of a file or folder: git's object id when the tree has one, else its files' text. */
async function contentOf(tree: RepoTree, path: string): Promise<string | undefined> {
  if (tree.contentId) return tree.contentId(path);
  const file = await tree.read(path);
  if (file !== undefined) return `file:${file}`;
  const files = await tree.list(path);
  if (files.length === 0) return undefined;
  const texts = await Promise.all(files.map(async (f) => `${f}\u0000${(await tree.read(f)) ?? ""}`));
  return `folder:${texts.join("\u0000")}`;
}

/** The names of the folders directly in `dir`. */
async function folderNames(tree: RepoTree, dir: string): Promise<string[]> {
  if (tree.entries) return (await tree.entries(dir)).filter((e) => e.kind === "folder").map((e) => e.name);
  const names = new Set<string>();
  for (const path of await tree.list(dir)) {
    const rest = path.slice(dir.length + 1).split("/");
    if (rest.length > 1 && rest[0]) names.add(rest[0]);
  }
  return [...names];
}
