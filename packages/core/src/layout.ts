import { PathOwnershipError } from "./errors.js";
import type { Platform } from "./platform.js";

/** File name of the team spec in the team's base folder; no template may render into it. */
export const TEAM_SPEC_FILE = "team.yaml";

/**
 * Who owns a path of the Flux repo. Every path Berth writes belongs to exactly one owner: a team (its
 * folder and its Flux Kustomization file on each cluster) or the layout itself (each cluster's teams
 * index). A write on behalf of a team may only touch that team's paths and the indexes.
 */
export type PathOwner =
  | { kind: "team"; team: string }
  | { kind: "cluster-teams-index"; cluster: string }
  | { kind: "rollout"; id: string }
  | { kind: "unowned" };

/** Where Berth writes each file in the Flux repo. docs/repo-layout.md describes the same tree. */
export function repoLayout(platform: Platform) {
  const { teamsDir, clustersDir, rolloutsDir } = platform.layout;
  const teamDir = (team: string) => `${teamsDir}/${team}`;
  const clusterTeamsDir = (cluster: string) => `${clustersDir}/${cluster}/teams`;
  const clusterTeamsIndex = (cluster: string) => `${clusterTeamsDir(cluster)}/kustomization.yaml`;
  const fluxKustomization = (cluster: string, team: string) => `${clusterTeamsDir(cluster)}/${team}.yaml`;
  const teamSpec = (team: string) => `${teamDir(team)}/base/${TEAM_SPEC_FILE}`;

  // ownerOf is pure and asked for every file of each cluster's teams folder on every write (the indexes are
  // rebuilt from them): remembered per path, the answers shared and frozen.
  const owners = new Map<string, PathOwner>();
  /**
   * The owner of `path`. Layout files are matched first, by the same functions that build them, so a team
   * whose derived paths would land on one of them cannot own it (see teamPathCollisions).
   */
  const ownerOf = (path: string): PathOwner => {
    let owner = owners.get(path);
    if (owner === undefined) {
      if (owners.size >= MAX_REMEMBERED_OWNERS) owners.clear();
      owner = Object.freeze(computeOwner(path));
      owners.set(path, owner);
    }
    return owner;
  };
  const computeOwner = (path: string): PathOwner => {
    // Only a canonical path can be owned: "teams/a/../../x", "teams/a//x" or "./x" name another file than
    // their prefix says, so a guard that trusted the prefix would let them through.
    if (path.split("/").some((segment) => segment === "" || segment === "." || segment === "..")) return { kind: "unowned" };
    const clusterPrefix = `${clustersDir}/`;
    if (path.startsWith(clusterPrefix)) {
      const [cluster, teams, file, ...rest] = path.slice(clusterPrefix.length).split("/");
      if (cluster && teams === "teams" && file && rest.length === 0) {
        if (path === clusterTeamsIndex(cluster)) return { kind: "cluster-teams-index", cluster };
        if (file.endsWith(".yaml") && file.length > ".yaml".length) return { kind: "team", team: file.slice(0, -".yaml".length) };
      }
    }
    const rolloutsPrefix = `${rolloutsDir}/`;
    if (path.startsWith(rolloutsPrefix)) {
      const file = path.slice(rolloutsPrefix.length);
      if (!file.includes("/") && file.endsWith(".yaml") && file.length > ".yaml".length) return { kind: "rollout", id: file.slice(0, -".yaml".length) };
    }
    const teamsPrefix = `${teamsDir}/`;
    if (path.startsWith(teamsPrefix)) {
      const [team, ...rest] = path.slice(teamsPrefix.length).split("/");
      if (team && rest.length > 0) return { kind: "team", team };
    }
    return { kind: "unowned" };
  };

  /**
   * The teams whose Flux file is among `paths` (a listing of the cluster's teams folder), in listing order:
   * exactly the paths ownerOf gives to a team there, without asking it per path. Each write rebuilds every
   * cluster's index from its folder, a thousand paths each: ownerOf's lookups were most of that time.
   */
  const teamsInClusterListing = (cluster: string, paths: readonly string[]): string[] => {
    const prefix = `${clusterTeamsDir(cluster)}/`;
    const index = clusterTeamsIndex(cluster);
    const teams: string[] = [];
    for (const path of paths) {
      if (path === index || !path.startsWith(prefix) || !path.endsWith(".yaml")) continue;
      const team = path.slice(prefix.length, -".yaml".length);
      if (team !== "" && !team.includes("/")) teams.push(team);
    }
    return teams;
  };

  return {
    teamsDir,
    clustersDir,
    rolloutsDir,
    /** A rollout's state file: spec and status, changed only by that rollout's commits. */
    rolloutFile: (id: string) => `${rolloutsDir}/${id}.yaml`,
    teamDir,
    /**
     * The team spec (kind Team): Berth's source of truth, and inside the base so Flux applies it as the
     * cluster-scoped Team object (CRD teams.berth.dev). Kustomize only reads files under its root.
     */
    teamSpec,
    baseDir: (team: string) => `${teamDir(team)}/base`,
    clusterDir: (team: string, cluster: string) => `${teamDir(team)}/clusters/${cluster}`,
    clusterTeamsDir,
    fluxKustomization,
    clusterTeamsIndex,
    teamsInClusterListing,
    ownerOf,
    /**
     * The write guard: refuses (PathOwnershipError) when any of `paths` is not the team's own, e.g. a
     * layout file reached through a colliding name or another team's file. Validation refuses such names
     * first; this keeps a change from ever writing them, whatever produced it.
     */
    assertOwnedBy(team: string, paths: Iterable<string>): void {
      for (const path of paths) {
        const owner = ownerOf(path);
        if (owner.kind !== "team" || owner.team !== team) throw new PathOwnershipError(team, path, describeOwner(owner));
      }
    },
    /**
     * The fixed paths a team named `team` would own on these clusters that resolve to another owner: empty
     * for every name that is safe to use. Derived from ownerOf, so any file the layout adds is covered.
     */
    teamPathCollisions(team: string, clusters: readonly string[]): Array<{ path: string; owner: PathOwner }> {
      const paths = [teamSpec(team), ...clusters.map((c) => fluxKustomization(c, team))];
      return paths
        .map((path) => ({ path, owner: ownerOf(path) }))
        .filter(({ owner }) => owner.kind !== "team" || owner.team !== team);
    },
  };
}
export type RepoLayout = ReturnType<typeof repoLayout>;

/** Paths whose owner is remembered (a 5,000-team fleet has ~130,000 files); past that, start over. */
const MAX_REMEMBERED_OWNERS = 200_000;

/** Why a layout owner is not the team's, in words for an error message. */
export function describeOwner(owner: PathOwner): string {
  switch (owner.kind) {
    case "cluster-teams-index":
      return `cluster ${owner.cluster}'s teams index, which Berth's layout owns`;
    case "team":
      return `a file of team ${owner.team}`;
    case "rollout":
      return `the state file of rollout ${owner.id}`;
    case "unowned":
      return "a file outside the teams layout";
  }
}
