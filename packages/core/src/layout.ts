import type { Platform } from "./platform.js";

/** Where Berth writes each file in the Flux repo. docs/repo-layout.md describes the same tree. */
export function repoLayout(platform: Platform) {
  const { teamsDir, clustersDir } = platform.layout;
  const teamDir = (team: string) => `${teamsDir}/${team}`;
  return {
    teamsDir,
    clustersDir,
    teamDir,
    teamSpec: (team: string) => `${teamDir(team)}/team.yaml`,
    baseDir: (team: string) => `${teamDir(team)}/base`,
    clusterDir: (team: string, cluster: string) => `${teamDir(team)}/clusters/${cluster}`,
    clusterTeamsDir: (cluster: string) => `${clustersDir}/${cluster}/teams`,
    fluxKustomization: (cluster: string, team: string) => `${clustersDir}/${cluster}/teams/${team}.yaml`,
    clusterTeamsIndex: (cluster: string) => `${clustersDir}/${cluster}/teams/kustomization.yaml`,
  };
}
export type RepoLayout = ReturnType<typeof repoLayout>;
