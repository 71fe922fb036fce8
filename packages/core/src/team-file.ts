import { z } from "zod";
import { sortedByKey } from "./context.js";
import { LEGACY_TEMPLATE_VERSION } from "./template-catalog.js";
import { parseRepoFile, toYamlFile } from "./serialize.js";
import { TEAM_API_VERSION, TEAM_KIND } from "./team-object.js";
import { teamNameSchema, teamSpecSchema, type Team, type VersionedTeam } from "./team.js";

/**
 * The team's spec as stored in the Flux repo (`teams/<name>/base/team.yaml`, layout.teamSpec): the source of
 * truth. It is a resource of the team's base, so Flux applies it on every cluster of the team as the
 * cluster-scoped Team object of the controller's CRD `teams.berth.dev` (metadata.name = team name).
 */

const teamFileSchema = z
  .object({
    apiVersion: z.literal(TEAM_API_VERSION),
    kind: z.literal(TEAM_KIND),
    metadata: z.object({ name: teamNameSchema }).strict(),
    spec: teamSpecSchema,
  })
  .strict();

/** A team as a Kubernetes-shaped object, with keys in a fixed order so equal teams serialize equally. */
export function teamObject(team: Team) {
  const spec: Record<string, unknown> = {
    description: team.description,
    owners: [...team.owners],
    environments: [...team.environments],
  };
  if (team.quota) spec.quota = { ...team.quota };
  if (team.containerLimits) spec.containerLimits = structuredClone(team.containerLimits);
  spec.roleAssignments = team.roleAssignments.map((r) => ({ role: r.role }));
  spec.labels = sortedByKey(team.labels);
  if (team.azureNames) {
    const names: Record<string, unknown> = {};
    if (team.azureNames.resourceGroups) names.resourceGroups = sortedByKey(team.azureNames.resourceGroups);
    if (team.azureNames.identities) names.identities = sortedByKey(team.azureNames.identities);
    spec.azureNames = names;
  }
  if (team.extraManifests?.length)
    spec.extraManifests = team.extraManifests.map((e) => ({
      ...(e.cluster !== undefined ? { cluster: e.cluster } : {}),
      object: structuredClone(e.object),
    }));
  if (team.templateVersion !== undefined) spec.templateVersion = team.templateVersion;
  return { apiVersion: TEAM_API_VERSION, kind: TEAM_KIND, metadata: { name: team.name }, spec };
}

export function serializeTeamFile(team: Team): string {
  return toYamlFile(
    [teamObject(team)],
    [
      "Berth team spec: the source of truth for this team; every other file of the team is rendered from it.",
      "Flux applies it as the cluster-scoped Team object (CRD teams.berth.dev): `kubectl get teams` lists it.",
      "Change it through Berth's API (PUT /v1/teams/" + team.name + "), not by hand.",
    ],
  );
}

/**
 * Parses and validates a team file read from git; anything else is a RepoContentError naming the path.
 * The team always carries its template version: a file without one is a v1 team (LEGACY_TEMPLATE_VERSION).
 */
export function parseTeamFile(text: string, path: string): VersionedTeam {
  const file = parseRepoFile(text, path, teamFileSchema);
  return {
    ...file.spec,
    name: file.metadata.name,
    templateVersion: file.spec.templateVersion ?? LEGACY_TEMPLATE_VERSION,
  };
}
