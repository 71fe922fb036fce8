import type { z } from "zod";
import { TeamValidationError, type FieldIssue } from "./errors.js";
import { CLUSTER_SCOPED_KINDS } from "@berth/kustomize";
import { describeOwner, repoLayout } from "./layout.js";
import { teamNames } from "./naming.js";
import { knownPlatformVars } from "./render.js";
import { allClusters, type Platform } from "./platform.js";
import { teamSchema, teamSpecSchema, type LooseKubeObject, type Team } from "./team.js";

/** Turns zod issues into field/rule pairs an API client can show next to the field. */
export function toFieldIssues(error: z.ZodError, prefix: string[] = []): FieldIssue[] {
  return error.issues.flatMap((issue) => {
    const field = [...prefix, ...issue.path.map(String)].join(".") || "(body)";
    // zod reports a bad record key (a label key) as "Invalid key in record" and nests the key schema's
    // own messages: report those, so the client learns which rule the key broke.
    if (issue.code === "invalid_key" && issue.issues.length)
      return issue.issues.map((inner) => ({ field, rule: inner.message }));
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
      issues.push({
        field: `environments.${i}`,
        rule: `must be one of the platform's environments: ${[...envs].join(", ")}`,
      });
    }
  });
  const roles = new Set(platform.roleCatalog.map((r) => r.id));
  (Array.isArray(team.roleAssignments) ? team.roleAssignments : []).forEach((ra: unknown, i) => {
    const role = ra !== null && typeof ra === "object" ? (ra as { role?: unknown }).role : undefined;
    if (typeof role === "string" && !roles.has(role)) {
      issues.push({
        field: `roleAssignments.${i}.role`,
        rule: roles.size
          ? `must be one of the role catalog's ids: ${[...roles].join(", ")}`
          : "no roles are offered by the platform",
      });
    }
  });
  // Kept Azure names only make sense for clusters the team lands on.
  const azureNames =
    team.azureNames !== null && typeof team.azureNames === "object" ? (team.azureNames as Record<string, unknown>) : {};
  const envList = Array.isArray(team.environments)
    ? team.environments.filter((e): e is string => typeof e === "string")
    : [];
  const teamClusters = new Set(
    allClusters(platform)
      .filter((c) => envList.includes(c.environment))
      .map((c) => c.name),
  );
  for (const kind of ["resourceGroups", "identities"]) {
    const map = azureNames[kind];
    if (map === null || typeof map !== "object") continue;
    for (const cluster of Object.keys(map)) {
      if (!teamClusters.has(cluster))
        issues.push({
          field: `azureNames.${kind}.${cluster}`,
          rule: `must name a cluster the team lands on: ${[...teamClusters].join(", ") || "(none)"}`,
        });
    }
  }
  if (typeof team.name === "string")
    issues.push(...extraManifestIssues(team.name, team.extraManifests, teamClusters, platform));
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
    if (collision)
      issues.push({
        field: "name",
        rule: `cannot be used: the team's file ${collision.path} would be ${describeOwner(collision.owner)}`,
      });
  }
  return issues;
}

const ASO_GROUP = /\.azure\.com$/;
/** Kinds a team's extra manifests may not hold: they would act beyond the team (or hold secrets in git). */
const REFUSED_EXTRA = new Map<string, string>([
  [
    "Secret",
    "a Secret does not belong in the team spec (the Team object is readable cluster-wide): keep secrets out of git",
  ],
  [
    "kustomize.toolkit.fluxcd.io/Kustomization",
    "a Flux Kustomization applies with Flux's own rights, beyond the team's namespace",
  ],
  ["helm.toolkit.fluxcd.io/HelmRelease", "a HelmRelease installs with Flux's own rights, beyond the team's namespace"],
]);

/**
 * The rules a team's extra manifests follow (docs/adoption.md, "What is carried"): namespaced objects in
 * the team's namespace — or, for a FederatedIdentityCredential of the team's own identity, the ASO
 * namespace —, no kind that reaches beyond the team, and `${VAR}` only for platform-vars keys (which Flux
 * always defines; `$${` writes a literal `${`).
 */
function extraManifestIssues(
  name: string,
  value: unknown,
  teamClusters: ReadonlySet<string>,
  platform: Platform,
): FieldIssue[] {
  if (!Array.isArray(value)) return [];
  const issues: FieldIssue[] = [];
  const known = knownPlatformVars(platform);
  const ids = new Map<string, Array<{ cluster: string; index: number }>>();
  value.forEach((entry: unknown, i) => {
    const at = `extraManifests.${i}`;
    const e = (entry !== null && typeof entry === "object" ? entry : {}) as { cluster?: unknown; object?: unknown };
    if (typeof e.cluster === "string" && !teamClusters.has(e.cluster))
      issues.push({
        field: `${at}.cluster`,
        rule: `must name a cluster the team lands on: ${[...teamClusters].join(", ") || "(none)"}`,
      });
    const o = (e.object !== null && typeof e.object === "object" ? e.object : {}) as LooseKubeObject;
    const str = (v: unknown): v is string => typeof v === "string" && v !== "";
    const { apiVersion, kind } = o;
    const objectName = o.metadata?.name;
    const ns = o.metadata?.namespace;
    if (!str(apiVersion) || !str(kind) || !str(objectName) || !str(ns)) {
      issues.push({
        field: `${at}.object`,
        rule: "must be a Kubernetes object with apiVersion, kind, metadata.name and metadata.namespace",
      });
      return;
    }
    const slash = apiVersion.indexOf("/");
    const group = slash === -1 ? "" : apiVersion.slice(0, slash);
    const refused = REFUSED_EXTRA.get(kind) ?? REFUSED_EXTRA.get(`${group}/${kind}`);
    if (refused) issues.push({ field: `${at}.object.kind`, rule: `is ${kind}: ${refused}` });
    if (CLUSTER_SCOPED_KINDS.has(kind) || kind === "Team")
      issues.push({
        field: `${at}.object.kind`,
        rule: `is ${kind}, a cluster-scoped kind: a team's manifests stay in its namespace`,
      });
    const ownFic =
      group === "managedidentity.azure.com" &&
      kind === "FederatedIdentityCredential" &&
      o.spec?.owner?.name === teamNames(name).identity;
    if (ns !== name && !(ns === platform.asoNamespace && ownFic)) {
      issues.push({
        field: `${at}.object.metadata.namespace`,
        rule: `is ${ns}: a team's manifests live in its namespace ${name}${ASO_GROUP.test(group) ? ` (in ${platform.asoNamespace} only a FederatedIdentityCredential of the team's identity ${teamNames(name).identity})` : ""}`,
      });
    }
    for (const ref of fluxReferences(o)) {
      if (!known.has(ref))
        issues.push({
          field: `${at}.object`,
          rule: `uses \${${ref}}: Flux substitutes only platform-vars keys here (${[...known].sort().join(", ")}); write $\${ for a literal \${`,
        });
    }
    // The same object twice on one cluster (an entry for every cluster counts on each) is refused.
    const object = `${group}|${kind}|${ns}|${objectName}`;
    const cluster = typeof e.cluster === "string" ? e.cluster : "*";
    const before = ids.get(object) ?? [];
    const twice = before.find((b) => b.cluster === cluster || b.cluster === "*" || cluster === "*");
    if (twice !== undefined)
      issues.push({ field: at, rule: `is ${kind} ${ns}/${objectName} again (extraManifests.${twice.index})` });
    ids.set(object, [...before, { cluster, index: i }]);
  });
  return issues;
}

/** The variables Flux would substitute in a value: every `${...}` not escaped as `$${`, by its body. */
export function fluxReferences(value: unknown, out = new Set<string>()): Set<string> {
  if (typeof value === "string") {
    for (const [, escaped, body] of value.matchAll(/\$(\$?)\{([^}]*)\}/g))
      if (!escaped && body !== undefined) out.add(body);
  } else if (Array.isArray(value)) for (const v of value) fluxReferences(v, out);
  else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      fluxReferences(k, out);
      fluxReferences(v, out);
    }
  }
  return out;
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
