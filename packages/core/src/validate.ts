import type { z } from "zod";
import { TeamValidationError, type FieldIssue } from "./errors.js";
import type { Platform } from "./platform.js";
import { teamSchema, teamSpecSchema, type Team, type TeamSpec } from "./team.js";

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

/** Checks that need the platform: declared environments, role catalog, the platform's own namespaces. */
function platformIssues(team: { name?: string } & TeamSpec, platform: Platform): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const envs = new Set(platform.environments.map((e) => e.name));
  team.environments.forEach((env, i) => {
    if (!envs.has(env)) {
      issues.push({ field: `environments.${i}`, rule: `must be one of the platform's environments: ${[...envs].join(", ")}` });
    }
  });
  const roles = new Set(platform.roleCatalog.map((r) => r.id));
  team.roleAssignments.forEach((ra, i) => {
    if (!roles.has(ra.role)) {
      issues.push({
        field: `roleAssignments.${i}.role`,
        rule: roles.size ? `must be one of the role catalog's ids: ${[...roles].join(", ")}` : "no roles are offered by the platform",
      });
    }
  });
  if (team.name !== undefined) {
    const reserved = new Set([
      ...platform.reservedNames,
      platform.asoNamespace,
      platform.fluxSource.namespace,
      platform.federatedCredential.asoNamespace,
      // A team there would get admin over the controller's own namespace (and the controller write access to it).
      platform.controller.namespace,
    ]);
    if (reserved.has(team.name)) issues.push({ field: "name", rule: "is reserved for the platform" });
  }
  return issues;
}

/** Validates a new team (name included) against the model and the platform. Throws TeamValidationError. */
export function validateTeam(input: unknown, platform: Platform): Team {
  const parsed = teamSchema.safeParse(input);
  if (!parsed.success) throw new TeamValidationError(toFieldIssues(parsed.error));
  const issues = platformIssues(parsed.data, platform);
  if (issues.length) throw new TeamValidationError(issues);
  return parsed.data;
}

/** Validates the spec of an existing team (its name comes from the URL or the repo path). */
export function validateTeamSpec(name: string, input: unknown, platform: Platform): Team {
  const parsed = teamSpecSchema.safeParse(input);
  if (!parsed.success) throw new TeamValidationError(toFieldIssues(parsed.error));
  return validateTeam({ ...parsed.data, name }, platform);
}
