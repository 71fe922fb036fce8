import type { z } from "zod";
import { TeamValidationError, type FieldIssue } from "./errors.js";
import { describeOwner, repoLayout } from "./layout.js";
import { allClusters, type Platform } from "./platform.js";
import { teamSchema, teamSpecSchema, type Team } from "./team.js";

/** Turns zod issues into field/rule pairs an API client can show next to the field. */
export function toFieldIssues(error: z.ZodError, prefix: string[] = []): FieldIssue[] {
  return error.issues.flatMap((issue) => {
    const field = [...prefix, ...issue.path.map(String)].join(".") || "(body)";
    // zod reports a bad record key (a label key) as "Invalid key in record" and nests the key schema's
    // own messages: report those, so the client learns which rule the key broke.
    if (issue.code === "invalid_key" && issue.issues.length) return issue.issues.map((inner) => ({ field, rule: inner.message }));
    return [{ field, rule: issue.message }];
  });
}

/**
 * Checks that need the platform: declared environments, role catalog, the platform's own namespaces. They
 * read the raw input defensively, so a request that also breaks schema rules learns every problem at once.
 */
function platformIssues(input: unknown, platform: Platform): FieldIssue[] {
  const team = (input !== null && typeof input === "object" ? input : {}) as Record<string, unknown>;
  const issues: FieldIssue[] = [];
  const envs = new Set(platform.environments.map((e) => e.name));
  (Array.isArray(team.environments) ? team.environments : []).forEach((env: unknown, i) => {
    if (typeof env === "string" && !envs.has(env)) {
      issues.push({ field: `environments.${i}`, rule: `must be one of the platform's environments: ${[...envs].join(", ")}` });
    }
  });
  const roles = new Set(platform.roleCatalog.map((r) => r.id));
  (Array.isArray(team.roleAssignments) ? team.roleAssignments : []).forEach((ra: unknown, i) => {
    const role = ra !== null && typeof ra === "object" ? (ra as { role?: unknown }).role : undefined;
    if (typeof role === "string" && !roles.has(role)) {
      issues.push({
        field: `roleAssignments.${i}.role`,
        rule: roles.size ? `must be one of the role catalog's ids: ${[...roles].join(", ")}` : "no roles are offered by the platform",
      });
    }
  });
  // Kept Azure names only make sense for clusters the team lands on.
  const azureNames = team.azureNames !== null && typeof team.azureNames === "object" ? (team.azureNames as Record<string, unknown>) : {};
  const envList = Array.isArray(team.environments) ? team.environments.filter((e): e is string => typeof e === "string") : [];
  const teamClusters = new Set(allClusters(platform).filter((c) => envList.includes(c.environment)).map((c) => c.name));
  for (const kind of ["resourceGroups", "identities"]) {
    const map = azureNames[kind];
    if (map === null || typeof map !== "object") continue;
    for (const cluster of Object.keys(map)) {
      if (!teamClusters.has(cluster)) issues.push({ field: `azureNames.${kind}.${cluster}`, rule: `must name a cluster the team lands on: ${[...teamClusters].join(", ") || "(none)"}` });
    }
  }
  if (typeof team.name === "string") {
    const reserved = new Set([
      ...platform.reservedNames,
      platform.asoNamespace,
      platform.fluxSource.namespace,
      platform.federatedCredential.asoNamespace,
      // A team there would get admin over the controller's own namespace (and the controller write access to it).
      platform.controller.namespace,
    ]);
    if (reserved.has(team.name)) issues.push({ field: "name", rule: "is reserved for the platform" });
    // Every path the team would own must be the team's own: a name whose files land on a layout file
    // (e.g. a cluster's teams index) would overwrite it. Checked on every cluster, not just the team's.
    const layout = repoLayout(platform);
    const clusters = allClusters(platform).map((c) => c.name);
    const collision = layout.teamPathCollisions(team.name, clusters)[0];
    if (collision) issues.push({ field: "name", rule: `cannot be used: the team's file ${collision.path} would be ${describeOwner(collision.owner)}` });
  }
  return issues;
}

/** Schema issues and platform issues together, each field/rule pair once. */
function allIssues(schemaIssues: FieldIssue[], input: unknown, platform: Platform): FieldIssue[] {
  const seen = new Set<string>();
  return [...schemaIssues, ...platformIssues(input, platform)].filter((i) => {
    const key = `${i.field}\n${i.rule}`;
    return seen.has(key) ? false : (seen.add(key), true);
  });
}

/** Validates a new team (name included) against the model and the platform. Throws TeamValidationError. */
export function validateTeam(input: unknown, platform: Platform): Team {
  const parsed = teamSchema.safeParse(input);
  const issues = allIssues(parsed.success ? [] : toFieldIssues(parsed.error), input, platform);
  if (!parsed.success || issues.length) throw new TeamValidationError(issues);
  return parsed.data;
}

/** Validates the spec of an existing team (its name comes from the URL or the repo path). */
export function validateTeamSpec(name: string, input: unknown, platform: Platform): Team {
  const parsed = teamSpecSchema.safeParse(input);
  if (!parsed.success) {
    const withName = input !== null && typeof input === "object" ? { ...input, name } : { name };
    throw new TeamValidationError(allIssues(toFieldIssues(parsed.error), withName, platform));
  }
  return validateTeam({ ...parsed.data, name }, platform);
}
