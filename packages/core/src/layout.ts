import { createHash } from "node:crypto";
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
  | { kind: "cluster-teams-index"; cluster: string; shard?: string }
  | { kind: "rollout"; id: string }
  | { kind: "unowned" };

/**
 * The shard of a team's Flux file on every cluster: the first two hex digits of the SHA-256 of its name.
 * A pure function of the name, so every replica and tool agrees; changing it would be a migration.
 * docs/decisions/0013-sharded-cluster-indexes.md.
 */
export function teamShard(team: string): string {
  let shard = shards.get(team);
  if (shard === undefined) {
    if (shards.size >= MAX_REMEMBERED_OWNERS) shards.clear();
    shard = createHash("sha256").update(team).digest("hex").slice(0, 2);
    shards.set(team, shard);
  }
  return shard;
}
/** Shards already computed: a whole-folder rebuild asks for every team of a cluster. */
const shards = new Map<string, string>();
/** A shard's name: two hex digits. */
export const SHARD = /^[0-9a-f]{2}$/;
/** The folders of a team's own folder: how a team folder named like a shard is told from a shard's folder. */
export const TEAM_FOLDER_PARTS: readonly string[] = ["base", "clusters"];

/**
 * A cluster's teams folder, read from a listing of it: the teams in each shard folder and the teams whose
 * Flux file is still at the folder's top (the layout before shards). Only paths ownerOf gives to a team.
 */
export interface ClusterTeamsListing {
  shards: Map<string, string[]>;
  flat: string[];
  /** Every shard folder holding a file (its index or a team's), whether or not it holds a team. */
  folders: Set<string>;
}

/** Where Berth writes each file in the Flux repo. docs/repo-layout.md describes the same tree. */
export function repoLayout(platform: Platform) {
  const { teamsDir, clustersDir, rolloutsDir } = platform.layout;
  /** Hash slices cut by the folder's shard, so a team's folder sits in its shard's (ADR 0034). */
  const foldersByShard = platform.layout.slices.by === "hash";
  const teamDir = foldersByShard
    ? (team: string) => `${teamsDir}/${teamShard(team)}/${team}`
    : (team: string) => `${teamsDir}/${team}`;
  /**
   * Every folder the team's files may be in: its own, and with hash slices also where first-letter slices kept it
   * (`<teamsDir>/<team>/`), still the team's while a fleet moves (ADR 0034): read from there, deleted by its next
   * write, which writes the folder in its shard.
   */
  const teamDirs = foldersByShard
    ? (team: string) => [teamDir(team), `${teamsDir}/${team}`]
    : (team: string) => [teamDir(team)];
  /** The team a path under the teams folder belongs to and the rest of the path, or undefined. */
  const teamPath = (path: string): { team: string; rest: string[] } | undefined => {
    if (!path.startsWith(`${teamsDir}/`)) return undefined;
    const segments = path.slice(teamsDir.length + 1).split("/");
    if (foldersByShard) {
      const [shard, team, ...rest] = segments;
      // A team folder's own parts are never a team's name there: `teams/ca/base/` is the folder of a team `ca`
      // from before, though `base` hashes to `ca` (so no team may be named `base` or `clusters`: teamPathCollisions).
      if (shard && team && SHARD.test(shard) && teamShard(team) === shard && !TEAM_FOLDER_PARTS.includes(team))
        return { team, rest };
      // Else a team folder of the layout before, if it can be one: a shard's folder holds team folders, so a path in
      // it is another team's only through a team folder's own parts (a team named like a shard, e.g. `cd`); a team
      // folder in another shard than its own is nobody's.
      if (shard && SHARD.test(shard) && (team === undefined || !TEAM_FOLDER_PARTS.includes(team))) return undefined;
    }
    const [team, ...rest] = segments;
    return team ? { team, rest } : undefined;
  };
  const clusterTeamsDir = (cluster: string) => `${clustersDir}/${cluster}/teams`;
  /** The cluster's top index: its shard folders that hold a team (and any Flux file not moved into one yet). */
  const clusterTeamsIndex = (cluster: string) => `${clusterTeamsDir(cluster)}/kustomization.yaml`;
  const shardDir = (cluster: string, shard: string) => `${clusterTeamsDir(cluster)}/${shard}`;
  /** A shard's index: the Flux files of the shard's teams. */
  const shardIndex = (cluster: string, shard: string) => `${shardDir(cluster, shard)}/kustomization.yaml`;
  const fluxKustomization = (cluster: string, team: string) => `${shardDir(cluster, teamShard(team))}/${team}.yaml`;
  /** Where the team's Flux file was before shards: still the team's, deleted by its next write. */
  const flatFluxKustomization = (cluster: string, team: string) => `${clusterTeamsDir(cluster)}/${team}.yaml`;
  /** Every path the team's Flux file on `cluster` may have: in its shard, and where it was before shards. */
  const fluxKustomizationPaths = (cluster: string, team: string) => [
    fluxKustomization(cluster, team),
    flatFluxKustomization(cluster, team),
  ];
  const teamSpec = (team: string) => `${teamDir(team)}/base/${TEAM_SPEC_FILE}`;

  // ownerOf is pure and asked for many paths on every write: remembered per path, the answers shared and frozen.
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
  const yamlStem = (file: string) =>
    file.endsWith(".yaml") && file.length > ".yaml".length ? file.slice(0, -".yaml".length) : undefined;
  const computeOwner = (path: string): PathOwner => {
    // Only a canonical path can be owned: "teams/a/../../x", "teams/a//x" or "./x" name another file than
    // their prefix says, so a guard that trusted the prefix would let them through.
    if (path.split("/").some((segment) => segment === "" || segment === "." || segment === ".."))
      return { kind: "unowned" };
    const clusterPrefix = `${clustersDir}/`;
    if (path.startsWith(clusterPrefix)) {
      const [cluster, teams, first, second, ...rest] = path.slice(clusterPrefix.length).split("/");
      if (cluster && teams === "teams" && first && second === undefined) {
        if (path === clusterTeamsIndex(cluster)) return { kind: "cluster-teams-index", cluster };
        const team = yamlStem(first);
        if (team) return { kind: "team", team };
      }
      if (cluster && teams === "teams" && first && second && rest.length === 0 && SHARD.test(first)) {
        if (path === shardIndex(cluster, first)) return { kind: "cluster-teams-index", cluster, shard: first };
        // A team's file in another shard than its own is nobody's: no write may touch it.
        const team = yamlStem(second);
        if (team && teamShard(team) === first) return { kind: "team", team };
      }
    }
    const rolloutsPrefix = `${rolloutsDir}/`;
    if (path.startsWith(rolloutsPrefix)) {
      const file = path.slice(rolloutsPrefix.length);
      const id = file.includes("/") ? undefined : yamlStem(file);
      if (id) return { kind: "rollout", id };
    }
    const inTeams = teamPath(path);
    if (inTeams && inTeams.rest.length > 0) return { kind: "team", team: inTeams.team };
    return { kind: "unowned" };
  };

  /**
   * The teams of a listing of the cluster's teams folder (or of one shard folder), by shard: exactly the
   * paths ownerOf gives to a team there, in one pass without asking it per path (each write reads the
   * shards it touches, and the whole folder when the top index changes).
   */
  const clusterTeamsListing = (cluster: string, paths: readonly string[]): ClusterTeamsListing => {
    const prefix = `${clusterTeamsDir(cluster)}/`;
    const out: ClusterTeamsListing = { shards: new Map(), flat: [], folders: new Set() };
    for (const path of paths) {
      if (!path.startsWith(prefix) || !path.endsWith(".yaml")) continue;
      const rest = path.slice(prefix.length);
      const slash = rest.indexOf("/");
      if (slash === -1) {
        if (rest !== "kustomization.yaml" && rest.length > ".yaml".length)
          out.flat.push(rest.slice(0, -".yaml".length));
        continue;
      }
      const shard = rest.slice(0, slash);
      if (SHARD.test(shard)) out.folders.add(shard);
      const team = rest.slice(slash + 1, -".yaml".length);
      if (
        team === "" ||
        team === "kustomization" ||
        team.includes("/") ||
        !SHARD.test(shard) ||
        teamShard(team) !== shard
      )
        continue;
      let members = out.shards.get(shard);
      if (!members) out.shards.set(shard, (members = []));
      members.push(team);
    }
    return out;
  };

  return {
    teamsDir,
    clustersDir,
    rolloutsDir,
    /** Whether a Flux object reads the cluster indexes, so Berth keeps them (platform.layout.appliedBy, ADR 0032). */
    writesIndexes: platform.layout.appliedBy === "cluster-index",
    /** A rollout's state file: spec and status, changed only by that rollout's commits. */
    rolloutFile: (id: string) => `${rolloutsDir}/${id}.yaml`,
    teamDir,
    /** Whether team folders sit in shard folders (`<teamsDir>/<hh>/<team>/`, hash slices) rather than at the top. */
    foldersByShard,
    teamPath,
    teamDirs,
    /** Where the team's spec may be, in the order to read them (see teamDirs). */
    teamSpecs: (team: string) => teamDirs(team).map((dir) => `${dir}/base/${TEAM_SPEC_FILE}`),
    /** The team whose spec is at `path`, or undefined: how a listing of the teams folder finds the teams. */
    teamOfSpec(path: string): string | undefined {
      const found = teamPath(path);
      return found && found.rest.length === 2 && found.rest[0] === "base" && found.rest[1] === TEAM_SPEC_FILE
        ? found.team
        : undefined;
    },
    /**
     * The team spec (kind Team): Berth's source of truth, and inside the base so Flux applies it as the
     * cluster-scoped Team object (CRD teams.berth.dev). Kustomize only reads files under its root.
     */
    teamSpec,
    baseDir: (team: string) => `${teamDir(team)}/base`,
    clusterDir: (team: string, cluster: string) => `${teamDir(team)}/clusters/${cluster}`,
    clusterTeamsDir,
    /** The team's Flux Kustomization on `cluster`, in the team's shard folder. */
    fluxKustomization,
    flatFluxKustomization,
    fluxKustomizationPaths,
    clusterTeamsIndex,
    shardDir,
    shardIndex,
    clusterTeamsListing,
    ownerOf,
    /**
     * The write guard: refuses (PathOwnershipError) when any of `paths` is not the team's own, e.g. a
     * layout file reached through a colliding name or another team's file. Validation refuses such names
     * first; this keeps a change from ever writing them, whatever produced it.
     */
    assertOwnedBy(team: string, paths: Iterable<string>): void {
      for (const path of paths) {
        const owner = ownerOf(path);
        if (owner.kind !== "team" || owner.team !== team)
          throw new PathOwnershipError(team, path, describeOwner(owner));
      }
    },
    /**
     * The fixed paths a team named `team` would own on these clusters that resolve to another owner: empty
     * for every name that is safe to use. Derived from ownerOf, so any file the layout adds is covered.
     */
    teamPathCollisions(team: string, clusters: readonly string[]): Array<{ path: string; owner: PathOwner }> {
      const paths = [teamSpec(team), ...clusters.flatMap((c) => fluxKustomizationPaths(c, team))];
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
      return `cluster ${owner.cluster}'s teams index${owner.shard ? ` of shard ${owner.shard}` : ""}, which Berth's layout owns`;
    case "team":
      return `a file of team ${owner.team}`;
    case "rollout":
      return `the state file of rollout ${owner.id}`;
    case "unowned":
      return "a file outside the teams layout";
  }
}
