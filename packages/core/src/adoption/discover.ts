import {
  BuildLimitError,
  CLUSTER_SCOPED_KINDS,
  KUSTOMIZATION_FILES,
  kustomizeBuild,
  KustomizeBuildError,
  parseManifestFile,
  PlainVar,
  repoPath,
  substituteValue,
  substitutionDisabled,
  withoutPlainVars,
  type Build,
  type BuildBudget,
  type SubstitutionProblem,
  type VarResolution,
} from "@berth/kustomize";
import { describeOwner, type RepoLayout } from "../layout.js";
import { knownPlatformVars } from "../render.js";
import { teamNames } from "../naming.js";
import { allClusters, type Cluster, type Platform } from "../platform.js";
import type { RepoTree } from "../repo.js";
import {
  isFluxKustomization,
  kindOf,
  nameOf,
  namespaceOf,
  recordAt,
  valueAt,
  type Manifest,
  type SourceObject,
} from "./manifests.js";
import type { Unmappable } from "./model.js";

/**
 * Step 1 of adoption: find the team's hand-written Flux Kustomizations and build each as Flux would
 * (kustomize.ts, then Flux's postBuild substitution: flux-substitute.ts).
 */

/** Flux Kustomization spec fields adoption understands; any other changes what is applied and is refused. */
const FLUX_SPEC_FIELDS = new Set([
  "interval",
  "retryInterval",
  "timeout",
  "path",
  "prune",
  "wait",
  "sourceRef",
  "postBuild",
  "healthChecks",
  "healthCheckExprs",
  "force",
  "suspend",
  "dependsOn",
  "serviceAccountName",
  "decryption",
]);

/** One of the team's Flux Kustomizations, built. */
export interface FoundKustomization {
  cluster: string;
  path: string;
  /** The Flux Kustomization, after the substitution its parent applies to it. */
  kustomization: Manifest;
  /** The objects of its build after Flux's substitution, for mapping (live-only variables left as `${VAR}`). */
  objects: SourceObject[];
  /** The same objects as Berth's Kustomization must apply them (platform-vars keys kept as `${VAR}`). */
  carried: Map<SourceObject, Manifest>;
  files: string[];
  /** Variables only the live cluster knows (platform-vars the controller writes), by name. */
  liveOnly: Set<string>;
  /**
   * Variables Flux takes from the ConfigMap the team's identity exports its client id to (substituteFrom), each
   * with where it comes from; and the objects that use them.
   */
  clientId: { vars: Map<string, string>; usedBy: Map<SourceObject, string[]> };
}

export interface Discovery {
  found: FoundKustomization[];
  /** Files under the clusters folder that are not valid manifests: they were not searched. */
  unreadable: Array<{ path: string; reason: string }>;
}

export interface DiscoverContext {
  platform: Platform;
  layout: RepoLayout;
  /** The teams Berth has already (their files are not hand-written). */
  berthTeams: ReadonlySet<string>;
  budget: BuildBudget;
  unmappable: Unmappable;
}

/** Platform values Berth knows for a cluster from its config. */
export function configVars(cluster: Cluster): Record<string, string> {
  return { CLUSTER_NAME: cluster.name, ENVIRONMENT: cluster.environment, ...cluster.vars };
}

/** A variable's value from a cluster's variables, if they have one. */
function valueIn(vars: Record<string, string>, name: string): { value: string } | undefined {
  const value = vars[name];
  return value === undefined ? undefined : { value };
}

/**
 * The team's Flux Kustomizations: every Kustomization under the clusters folder that names the team (in
 * its name, its path or its substitutions: only those are built), whose build — after the substitution
 * its parent applies to it, and Flux's own postBuild substitution — holds the Namespace named after the team.
 */
export async function discover(tree: RepoTree, team: string, ctx: DiscoverContext): Promise<Discovery> {
  const { layout, budget, berthTeams } = ctx;
  const issue = ctx.unmappable.add;
  const clusters = new Map(allClusters(ctx.platform).map((c) => [c.name, c]));
  const prefix = `${layout.clustersDir}/`;
  const found: FoundKustomization[] = [];
  const unreadable: Discovery["unreadable"] = [];
  const token = new RegExp(`(^|[^a-z0-9])${team}($|[^a-z0-9])`);
  const mentions = (ks: Manifest) =>
    [
      nameOf(ks),
      valueAt(ks, "spec", "path"),
      valueAt(ks, "spec", "targetNamespace"),
      ...Object.values(recordAt(ks, "spec", "postBuild", "substitute")),
    ]
      .map((v) => (v instanceof PlainVar ? v.text : v))
      .some((v) => typeof v === "string" && (v === team || v.split("/").includes(team) || token.test(v)));
  for (const path of await tree.list(layout.clustersDir)) {
    // kustomize's own files hold no objects (the cluster's root kustomization.yaml, Berth's indexes).
    if (!/\.ya?ml$/.test(path) || KUSTOMIZATION_FILES.includes(path.slice(path.lastIndexOf("/") + 1))) continue;
    // Berth's own files of other teams and the indexes are not hand-written: never read as such.
    const owner = layout.ownerOf(path);
    if (
      owner.kind === "cluster-teams-index" ||
      (owner.kind === "team" && owner.team !== team && berthTeams.has(owner.team))
    )
      continue;
    const [cluster = ""] = path.slice(prefix.length).split("/"); // split gives one part at least
    const text = (await readOrUnreadable(tree, path, budget, unreadable)) ?? "";
    let docs: Manifest[];
    try {
      docs = await parseManifestFile(text, path, budget);
    } catch (err) {
      // Not valid manifests: reported (a warning, or the reason nothing was found), not searched.
      if (!(err instanceof KustomizeBuildError)) throw err;
      unreadable.push({ path, reason: err.message.replace(`${path}: `, "") });
      continue;
    }
    for (const raw of docs) {
      if (!isFluxKustomization(raw) || !mentions(raw)) continue;
      budget.countBuild(path);
      const c = clusters.get(cluster);
      const problems: SubstitutionProblem[] = [];
      const vars = c ? configVars(c) : {};
      // Its parent Kustomization applies it with the cluster's variables (e.g. spec.path with ${ENVIRONMENT}).
      const ks = substituteObject(raw, (v) => valueIn(vars, v), problems);
      if (problems.length) {
        for (const p of problems)
          issue(
            `${path} (Flux Kustomization ${String(nameOf(raw))})`,
            problemText(
              p,
              `its parent Kustomization substitutes it from the cluster's variables, and Berth's config for cluster ${cluster} has no value for it (platform.environments[].clusters[].vars)`,
            ),
          );
        continue;
      }
      let target: string;
      try {
        target = repoPath("", String(valueAt(ks, "spec", "path") ?? ""), path);
      } catch (err) {
        if (!(err instanceof KustomizeBuildError)) throw err;
        issue(`${path} spec.path`, err.message.replace(`${path}: `, ""));
        continue;
      }
      let built: Build;
      try {
        built = await kustomizeBuild(tree, target, budget);
      } catch (err) {
        if (!(err instanceof KustomizeBuildError)) throw err;
        issue(path, `cannot build ${target || "."}: ${err.message}`);
        continue;
      }
      const unsupported = Object.keys(recordAt(ks, "spec")).filter((k) => !FLUX_SPEC_FIELDS.has(k));
      const substituted = fluxSubstitution(ctx.platform, ks, built, c, path);
      const holdsTeam = substituted.objects.some(
        (o) => o.obj.kind === "Namespace" && (nameOf(o.obj) === team || String(nameOf(o.obj)).includes("${")),
      );
      if (!holdsTeam) continue;
      for (const k of unsupported)
        issue(
          `${path} spec.${k}`,
          `Flux Kustomization ${String(nameOf(ks))}: adoption cannot map spec.${k} (it changes what Flux applies)`,
        );
      for (const p of substituted.problems) issue(p.field, p.rule);
      // Each object as mapping reads it, and as Berth's Kustomization must apply it.
      const carried = new Map<SourceObject, Manifest>();
      const usedBy = new Map<SourceObject, string[]>();
      const objects = substituted.objects.map(({ carried: applied, clientIdVars, ...o }) => {
        const source = { ...o, cluster };
        carried.set(source, applied);
        if (clientIdVars.length) usedBy.set(source, clientIdVars);
        return source;
      });
      for (const o of objects) {
        if (!namespaceOf(o.obj) && !CLUSTER_SCOPED_KINDS.has(kindOf(o.obj)) && o.obj.kind !== "Team") {
          issue(
            `${o.file}#${kindOf(o.obj)}/${String(nameOf(o.obj))}`,
            "has no metadata.namespace: where Flux puts it depends on the Kustomization; give it one",
          );
        }
      }
      found.push({
        cluster,
        path,
        kustomization: ks,
        objects,
        carried,
        files: built.files,
        liveOnly: substituted.liveOnly,
        clientId: { vars: substituted.clientIdVars, usedBy },
      });
    }
  }
  return { found, unreadable };
}

/**
 * A file's text; a file too large to read is recorded as unreadable (and read as empty). Every other error
 * — the repository failing to answer — is thrown: it says nothing about the file, and hiding it would
 * turn a broken read into "not searched".
 */
async function readOrUnreadable(
  tree: RepoTree,
  path: string,
  budget: BuildBudget,
  unreadable: Discovery["unreadable"],
): Promise<string | undefined> {
  try {
    return await budget.read(tree, path);
  } catch (err) {
    if (!(err instanceof BuildLimitError && err.limit === "maxFileBytes")) throw err;
    unreadable.push({ path, reason: err.message.replace(`${path}: `, "") });
    return undefined;
  }
}

/**
 * Adoption edits only hand-written files: a found Kustomization in a file Berth owns for another team (or
 * a layout index), one with the name of another Berth team's Flux object, or a build that reads another
 * team's files is refused (issue 24, item 2).
 */
export function checkHandWritten(found: readonly FoundKustomization[], name: string, ctx: DiscoverContext): void {
  const { platform, layout, berthTeams } = ctx;
  const issue = ctx.unmappable.add;
  const fluxObjectOwner = new Map([...berthTeams].map((t) => [teamNames(t).fluxKustomization, t]));
  for (const f of found) {
    const owner = layout.ownerOf(f.path);
    if (owner.kind !== "unowned" && !(owner.kind === "team" && owner.team === name)) {
      issue(
        f.path,
        `is ${describeOwner(owner)}: adoption never edits Berth's files (a hand-edited Berth file? restore it through the API)`,
      );
    }
    const other =
      namespaceOf(f.kustomization) === platform.asoNamespace
        ? fluxObjectOwner.get(String(nameOf(f.kustomization)))
        : undefined;
    if (other !== undefined && other !== name) {
      issue(
        f.path,
        `Flux Kustomization ${platform.asoNamespace}/${String(nameOf(f.kustomization))} is the Flux object of Berth's team ${other}: adoption never suspends another team's Kustomization; rename the hand-written one`,
      );
    }
    for (const file of f.files) {
      const o = layout.ownerOf(file);
      if (o.kind === "team" && o.team !== name && berthTeams.has(o.team))
        issue(file, `is a file of Berth's team ${o.team}: the team's tree may not include another team's files`);
    }
  }
}

/** An object substituted: still an object (substitution changes values, never the shape around them). */
function substituteObject(
  obj: Manifest,
  resolve: (name: string) => VarResolution,
  problems: SubstitutionProblem[],
  escape = false,
): Manifest {
  return substituteValue(obj, resolve, problems, escape) as Manifest;
}

/**
 * Flux's postBuild substitution of a build, twice: for mapping (every value Berth knows resolved, values
 * only the live cluster knows left as `${VAR}`), and as Berth's Kustomization must apply the objects it
 * carries (platform-vars keys kept as `${VAR}`, the rest resolved, literal `${` escaped as `$${`).
 * Without postBuild, Flux substitutes nothing: then every `${` is literal.
 */
function fluxSubstitution(platform: Platform, ks: Manifest, built: Build, cluster: Cluster | undefined, path: string) {
  const postBuild = valueAt(ks, "spec", "postBuild");
  const inline = recordAt(postBuild, "substitute");
  const substituteFrom = valueAt(postBuild, "substituteFrom");
  const sources = (Array.isArray(substituteFrom) ? substituteFrom : []).map(
    (s: unknown) =>
      `${String(valueAt(s, "kind") ?? "ConfigMap")} ${String(namespaceOf(ks) ?? "?")}/${String(valueAt(s, "name"))}${valueAt(s, "optional") ? " (optional)" : ""}`,
  );
  const config = cluster ? configVars(cluster) : {};
  const known = knownPlatformVars(platform);
  const liveOnly = new Set<string>();
  const problems: Array<{ field: string; rule: string }> = [];
  const inlineValue = (name: string) => {
    const value = inline[name];
    return typeof value === "string" ? { value } : value !== undefined ? { value: String(value) } : undefined;
  };
  const clientIdVars = identityClientIdVars(ks, built, (name) => inlineValue(name) ?? valueIn(config, name));
  let used: Set<string> = new Set();
  const forMapping = (name: string): VarResolution => {
    const own = inlineValue(name);
    if (own || sources.length === 0) return own;
    if (clientIdVars.has(name)) {
      used.add(name);
      return { keep: true };
    }
    const configured = valueIn(config, name);
    if (configured) return configured;
    if (known.has(name)) {
      liveOnly.add(name);
      return { keep: true };
    }
    return undefined;
  };
  const forBerth = (name: string): VarResolution => {
    const own = inlineValue(name);
    if (own || sources.length === 0) return own;
    if (known.has(name) || clientIdVars.has(name)) return { keep: true };
    return valueIn(config, name);
  };
  const objects: Array<{ obj: Manifest; file: string; carried: Manifest; clientIdVars: string[] }> = [];
  for (const o of built.objects) {
    if (!postBuild || substitutionDisabled(o.obj)) {
      const plain = withoutPlainVars(o.obj) as Manifest; // an object with its PlainVars as text: still an object
      // Literal `${` stays literal under Berth's Kustomization too, unless Flux skips the object there as well.
      objects.push({
        obj: plain,
        file: o.file,
        carried: substitutionDisabled(o.obj) ? plain : substituteObject(plain, () => undefined, [], true),
        clientIdVars: [],
      });
      continue;
    }
    const found: SubstitutionProblem[] = [];
    used = new Set();
    objects.push({
      obj: substituteObject(o.obj, forMapping, found),
      file: o.file,
      carried: substituteObject(o.obj, forBerth, [], true),
      clientIdVars: [...used].sort(),
    });
    const at = `${o.file}#${kindOf(o.obj)}/${String(withoutPlainVars(nameOf(o.obj)))}`;
    for (const p of found) {
      problems.push({
        field: at,
        rule: problemText(
          p,
          `not in ${String(nameOf(ks))}'s postBuild.substitute (${path})${sources.length ? `; Flux would take it from ${sources.join(", ")}, and Berth's config for cluster ${cluster?.name ?? "?"} has no value for it (platform.environments[].clusters[].vars)` : ", which has no substituteFrom"}`,
        ),
      });
    }
  }
  return { objects, problems, liveOnly, clientIdVars };
}

/**
 * The variables that are the team identity's client id: the key an identity of the build exports it under
 * (`operatorSpec.configMaps.clientId`), read by Flux from that ConfigMap when the Kustomization lists it in
 * `substituteFrom` and sits in the identity's namespace (Flux reads substituteFrom there). Mapped to the variable
 * and where it comes from. Other exported values (principalId, tenantId) are not recognised: they stay unresolved.
 */
function identityClientIdVars(ks: Manifest, built: Build, known: (name: string) => VarResolution): Map<string, string> {
  const out = new Map<string, string>();
  const listed = valueAt(ks, "spec", "postBuild", "substituteFrom");
  const configMaps = new Set(
    (Array.isArray(listed) ? listed : [])
      .filter((s: unknown) => (valueAt(s, "kind") ?? "ConfigMap") === "ConfigMap")
      .map((s: unknown) => String(valueAt(s, "name"))),
  );
  for (const o of built.objects) {
    if (o.obj.kind !== "UserAssignedIdentity" || !String(o.obj.apiVersion).startsWith("managedidentity.azure.com/"))
      continue;
    // The identity's own names with the values Berth knows (e.g. ${TEAM_NAMESPACE}-mi-credential).
    const identity = substituteObject(withoutPlainVars(o.obj) as Manifest, known, []);
    const ref = recordAt(identity, "spec", "operatorSpec", "configMaps", "clientId");
    const [name, key, namespace] = [ref.name, ref.key, namespaceOf(identity)];
    if (typeof name !== "string" || typeof key !== "string" || name.includes("${") || key.includes("${")) continue;
    if (!configMaps.has(name) || namespace !== namespaceOf(ks)) continue;
    out.set(
      key,
      `ConfigMap ${String(namespace)}/${name}, key ${key}, where UserAssignedIdentity ${String(nameOf(identity))} exports its client id (operatorSpec.configMaps.clientId)`,
    );
  }
  return out;
}

function problemText(p: SubstitutionProblem, where: string): string {
  if (p.kind === "unset") return `\${${p.variable}} cannot be resolved: ${where}; Berth never guesses a value`;
  if (p.kind === "structure")
    return `${p.variable}: its value would change the YAML structure, which adoption does not model`;
  return `${p.variable} is a substitution adoption does not evaluate (it knows \${VAR} and \${VAR:=default}); write it out`;
}
