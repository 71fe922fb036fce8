import type { Platform } from "./platform.js";

/** File name of the team spec in the team's base folder; no template may render into it. */
export const TEAM_SPEC_FILE = "team.yaml";

/** Where Berth writes each file in the Flux repo. docs/repo-layout.md describes the same tree. */
export function repoLayout(platform: Platform) {
  const { teamsDir, clustersDir } = platform.layout;
  const teamDir = (team: string) => `${teamsDir}/${team}`;
  return {
    teamsDir,
    clustersDir,
    teamDir,
    /**
     * The team spec (kind Team): Berth's source of truth, and inside the base so Flux applies it as the
     * cluster-scoped Team object (CRD teams.berth.dev). Kustomize only reads files under its root.
     */
    teamSpec: (team: string) => `${teamDir(team)}/base/${TEAM_SPEC_FILE}`,
    baseDir: (team: string) => `${teamDir(team)}/base`,
    clusterDir: (team: string, cluster: string) => `${teamDir(team)}/clusters/${cluster}`,
    clusterTeamsDir: (cluster: string) => `${clustersDir}/${cluster}/teams`,
    fluxKustomization: (cluster: string, team: string) => `${clustersDir}/${cluster}/teams/${team}.yaml`,
    clusterTeamsIndex: (cluster: string) => `${clustersDir}/${cluster}/teams/kustomization.yaml`,
  };
}
export type RepoLayout = ReturnType<typeof repoLayout>;
