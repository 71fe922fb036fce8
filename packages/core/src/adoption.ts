import { isMap, parseAllDocuments } from "yaml";
import { z } from "zod";
import { clustersOf } from "./context.js";
import { DomainError, TeamExistsError, TeamValidationError, type FieldIssue } from "./errors.js";
import { LOWERCASE_GUID } from "./patterns.js";
import { PlainVar, substituteValue, substitutionDisabled, withoutPlainVars, type SubstitutionProblem, type VarResolution } from "./flux-substitute.js";
import { BuildBudget, BuildLimitError, CLUSTER_SCOPED_KINDS, DEFAULT_BUILD_LIMITS, KUSTOMIZATION_FILES, kustomizeBuild, KustomizeBuildError, parseManifestFile, repoPath, type Build, type BuildLimits } from "./kustomize.js";
import { describeOwner, repoLayout, type RepoLayout } from "./layout.js";
import { azureNames as berthAzureNames, teamNames } from "./naming.js";
import { describeWithDiff, type Onboarding } from "./onboarding.js";
import type { FileChange } from "./repo.js";
import { allClusters, type Cluster } from "./platform.js";
import type { RepoChange, RepoTree } from "./repo.js";
import { YAML_PARSE_OPTIONS } from "./serialize.js";
import { knownPlatformVars } from "./render.js";
import { MANAGED_LABEL_PREFIXES, teamSpecSchema, type AzureNames, type ExtraManifest, type Team } from "./team.js";
import { validateTeam } from "./validate.js";

/**
 * Adoption: bring a team that was hand-written into the Flux repo before Berth under Berth (docs/adoption.md).
 *
 * Berth finds the team's Flux Kustomizations (every Kustomization under the clusters folder whose build
 * holds the Namespace named after the team: that gives the clusters, hence the environments), builds them
 * as Flux would (kustomize.ts, then Flux's substitution: flux-substitute.ts), maps each object onto the
 * team spec, carries the team's other objects as its own manifests (spec.extraManifests), and renders
 * Berth's layout for it. It never guesses: an object, field or variable it cannot map, or two clusters that
 * disagree, is a report of what could not be mapped. A resource group or identity whose Azure name Berth would change
 * (Azure would create a new one) is refused unless the request keeps the names.
 *
 * The hand-written Flux Kustomizations are not deleted: the adoption commit suspends them and turns off
 * their pruning, so nothing of the team is deleted when they are removed later (Flux garbage-collects what
 * a deleted Kustomization applied when it prunes). Their files are listed for that cleanup.
 */

/**
 * The team fields a request may set instead of inferring them. Built from the team spec without its
 * defaults: a field the request leaves out must stay "not given" (a default would override what was inferred).
 */
const specOverridesSchema = z
  .object(
    Object.fromEntries(
      Object.entries(teamSpecSchema.shape)
        .filter(([key]) => key !== "templateVersion" && key !== "azureNames" && key !== "extraManifests")
        .map(([key, field]) => [key, (field instanceof z.ZodDefault ? (field.unwrap() as z.ZodType) : (field as z.ZodType)).optional()]),
    ) as Record<string, z.ZodOptional<z.ZodType>>,
  )
  .strict();

export const adoptionRequestSchema = z
  .object({
    keepAzureNames: z
      .boolean()
      .default(false)
      .describe("Keep the resource group and identity names the team has in Azure (recorded in spec.azureNames); without it, a rename is refused"),
    spec: specOverridesSchema
      .optional()
      .describe("Fields to set instead of what is inferred (e.g. owners when no RoleBinding names them)"),
  })
  .strict();
export type AdoptionRequest = z.infer<typeof adoptionRequestSchema>;

export interface AzureNameChange {
  cluster: string;
  kind: "ResourceGroup" | "UserAssignedIdentity";
  object: string;
  /** The name the resource has in Azure today. */
  from: string;
  /** What Berth's render names it. */
  to: string;
  /** true: the name stays (keepAzureNames); false: Azure would create a new resource. */
  kept: boolean;
}

export interface AdoptedObject {
  /** `Kind namespace/name` of the hand-written object, and where it came from. */
  ref: string;
  source: string;
  cluster: string;
  /**
   * updated: Berth's render has the same object (applied in place); carried: kept as the team's own
   * manifest (spec.extraManifests), applied in place; controller: the aso-credential Secret, which Berth's
   * controller writes now; left-behind: Berth renders it under another name.
   */
  fate: "updated" | "carried" | "controller" | "left-behind";
  note?: string;
}

export interface AdoptionPlan {
  team: Team;
  change: RepoChange;
  report: {
    /** The hand-written Flux Kustomizations adopted, per cluster. */
    kustomizations: Array<{ cluster: string; path: string; name: string; namespace: string; fate: "replaced" | "suspended" }>;
    /** Where each spec field came from. */
    mapped: Array<{ field: string; from: string }>;
    /** Each hand-written RoleAssignment and the catalog role it matched, and how. */
    roles: RoleMatch[];
    azureNames: AzureNameChange[];
    objects: AdoptedObject[];
    warnings: string[];
    /** Hand-written files no longer used, to delete once every cluster applied the adoption commit. */
    cleanup: string[];
  };
}

/** Input that cannot be mapped onto a team: each problem, never a guess. */
export class AdoptionUnmappableError extends DomainError {
  override readonly name = "AdoptionUnmappableError";
  readonly code = "adoption-unmappable";
  constructor(
    readonly team: string,
    private readonly fieldIssues: FieldIssue[],
  ) {
    super(
      `cannot adopt team "${team}": ${fieldIssues.length} thing(s) cannot be mapped onto a Berth team: ${fieldIssues
        .slice(0, 3)
        .map((i) => `${i.field}: ${i.rule}`)
        .join("; ")}${fieldIssues.length > 3 ? "; ..." : ""}`,
    );
  }

  override get issues(): FieldIssue[] {
    return this.fieldIssues;
  }
}

/** Berth's render would rename resources in Azure (a new resource group or identity): refused. */
export class AdoptionRecreatesError extends DomainError {
  override readonly name = "AdoptionRecreatesError";
  readonly code = "adoption-recreates-azure-resources";
  constructor(
    readonly team: string,
    readonly changes: AzureNameChange[],
  ) {
    super(
      `adopting team "${team}" would rename ${changes.length} Azure resource(s), and Azure would create new ones: ` +
        changes.map((c) => `${c.kind} ${c.from} → ${c.to} on ${c.cluster}`).join("; ") +
        "; adopt with keepAzureNames: true to keep the names",
    );
  }

  override get issues(): FieldIssue[] {
    return this.changes.map((c) => ({
      field: `${c.cluster} ${c.kind} ${c.object} spec.azureName`,
      rule: `is ${c.from} in Azure; Berth would name it ${c.to}, and Azure would create a new ${c.kind === "ResourceGroup" ? "(empty) resource group" : "identity (new client and principal id)"}: adopt with keepAzureNames: true`,
    }));
  }
}

type Obj = Record<string, any>;
interface SourceObject {
  obj: Obj;
  file: string;
  cluster: string;
}

const FLUX_KUSTOMIZATION_GROUP = "kustomize.toolkit.fluxcd.io";
/** Flux Kustomization spec fields adoption understands; any other changes what is applied and is refused. */
const FLUX_SPEC_FIELDS = new Set(["interval", "retryInterval", "timeout", "path", "prune", "wait", "sourceRef", "postBuild", "healthChecks", "healthCheckExprs", "force", "suspend", "dependsOn", "serviceAccountName", "decryption"]);
/** Namespace labels Berth sets itself (or Kubernetes does): not team labels, compared in the diff instead. */
const BERTH_NAMESPACE_LABELS = /^(kubernetes\.io\/metadata\.name|pod-security\.kubernetes\.io\/.*|toolkit\.fluxcd\.io\/tenant|app\.kubernetes\.io\/managed-by|backstage\.io\/kubernetes-id|berth\.dev\/.*)$/;
const ASO_GROUPS = new Set(["resources.azure.com", "managedidentity.azure.com", "authorization.azure.com"]);
const RECONCILE_POLICY = "serviceoperator.azure.com/reconcile-policy";

/** Where a `${VAR}` of a hand-written Kustomization would come from, for the report. */
interface FoundKustomization {
  cluster: string;
  path: string;
  kustomization: Obj;
  /** The objects of its build after Flux's substitution, for mapping (live-only variables left as `${VAR}`). */
  objects: SourceObject[];
  /** The same objects as Berth's Kustomization must apply them (platform-vars keys kept as `${VAR}`). */
  carried: Map<SourceObject, Obj>;
  files: string[];
  /** Variables only the live cluster knows (platform-vars the controller writes), by name. */
  liveOnly: Set<string>;
}

export interface AdoptionOptions {
  /** Bounds of one adoption's reading and building (defaults: DEFAULT_BUILD_LIMITS). */
  limits?: BuildLimits;
  /** The clock, and how to let other work run between files (the API yields to its event loop). */
  clock?: { now(): number; pause?(): Promise<void> };
}

export class Adoption {
  private readonly layout: RepoLayout;

  constructor(
    private readonly onboarding: Onboarding,
    private readonly options: AdoptionOptions = {},
  ) {
    this.layout = repoLayout(onboarding.platform);
  }

  async plan(tree: RepoTree, name: string, request: AdoptionRequest): Promise<AdoptionPlan> {
    if ((await tree.read(this.layout.teamSpec(name))) !== undefined) throw new TeamExistsError(name);
    const platform = this.onboarding.platform;
    const issues: FieldIssue[] = [];
    const issue = (field: string, rule: string) => issues.push({ field, rule });
    const warnings: string[] = [];
    const mapped: AdoptionPlan["report"]["mapped"] = [];
    const budget = new BuildBudget(this.options.limits ?? DEFAULT_BUILD_LIMITS, this.options.clock);

    const { found, unreadable } = await this.discover(tree, name, issue, budget);
    if (found.length === 0) {
      if (issues.length) throw new AdoptionUnmappableError(name, issues);
      issue(this.layout.clustersDir, `no Flux Kustomization under ${this.layout.clustersDir}/ builds a Namespace named ${name}: nothing to adopt`);
      // A file that cannot be read may be the one that holds the team: say which, and why.
      for (const u of unreadable) issue(u.path, `cannot be read, so adoption could not look for ${name} in it: ${u.reason}`);
      throw new AdoptionUnmappableError(name, issues);
    }
    for (const u of unreadable) warnings.push(`${u.path} under ${this.layout.clustersDir}/ cannot be read and was not searched: ${u.reason}`);
    await this.assertNotBerths(tree, name, found, issue);

    const clusters = new Map(allClusters(platform).map((c) => [c.name, c]));
    const perCluster = new Map<string, SourceObject[]>();
    for (const f of found) {
      if (!clusters.has(f.cluster)) {
        issue(f.path, `cluster ${f.cluster} is not in platform config`);
        continue;
      }
      if (perCluster.has(f.cluster)) {
        issue(f.path, `a second Flux Kustomization for team ${name} on cluster ${f.cluster} (${found.find((o) => o.cluster === f.cluster)!.path}): ambiguous`);
        continue;
      }
      perCluster.set(f.cluster, f.objects);
    }
    const carriedOf = new Map<SourceObject, Obj>(found.flatMap((f) => [...f.carried]));
    const liveOnly = new Set(found.flatMap((f) => [...f.liveOnly]));
    if (liveOnly.size) {
      warnings.push(`values only the live cluster knows (platform-vars written by Berth's controller): ${[...liveOnly].sort().map((v) => `\${${v}}`).join(", ")}; kept as variables`);
    }

    // ---- the team spec, field by field, from every cluster's objects (which must agree) ----
    const spec: Record<string, unknown> = {};
    const agree = (field: string, values: Array<{ value: unknown; from: string }>) => {
      const distinct = new Map(values.map((v) => [JSON.stringify(v.value), v]));
      if (distinct.size > 1) {
        issue(field, `the clusters disagree: ${[...distinct.values()].map((v) => `${JSON.stringify(v.value)} (${v.from})`).join(" vs ")}; Berth has one value per team`);
        return;
      }
      const only = [...distinct.values()][0];
      if (only !== undefined && only.value !== undefined) {
        spec[field] = only.value;
        mapped.push({ field, from: only.from });
      }
    };

    const byKind = (cluster: string, kind: string) => perCluster.get(cluster)!.filter((o) => o.obj.kind === kind);
    const ref = (o: SourceObject) => `${o.file}#${o.obj.kind}/${o.obj.metadata?.namespace ? `${o.obj.metadata.namespace}/` : ""}${o.obj.metadata?.name}`;
    const envs = new Set<string>();
    const quotas: Array<{ value: unknown; from: string }> = [];
    const limits: Array<{ value: unknown; from: string }> = [];
    const labels: Array<{ value: unknown; from: string }> = [];
    const descriptions: Array<{ value: unknown; from: string }> = [];
    const owners: Array<{ value: unknown; from: string }> = [];
    const roles: Array<{ value: unknown; from: string }> = [];
    const handled = new Set<SourceObject>();
    /** Objects carried as the team's own manifests (the object as Berth applies it), per cluster. */
    const extras = new Map<string, Array<{ source: SourceObject; object: Obj }>>();
    const carry = (cluster: string, o: SourceObject, object: Obj = structuredClone(carriedOf.get(o) ?? o.obj)) => {
      handled.add(o);
      const list = extras.get(cluster) ?? [];
      list.push({ source: o, object });
      extras.set(cluster, list);
    };
    const controllerOwned = new Set<SourceObject>();
    const pendingFics: Array<{ cluster: string; o: SourceObject }> = [];
    const roleMatches: RoleMatch[] = [];
    const azureObjects = new Map<string, { rg?: SourceObject; identity?: SourceObject }>();
    const catalog = platform.roleCatalog;

    for (const [cluster, objects] of perCluster) {
      envs.add(clusters.get(cluster)!.environment);
      // Only the team's namespace, and ASO objects in the ASO namespace: anything else is not the team's.
      for (const o of objects) {
        const kind = String(o.obj.kind);
        const ns = o.obj.metadata?.namespace;
        const aso = ASO_GROUPS.has(groupOf(o.obj)) || groupOf(o.obj).endsWith(".azure.com");
        if (kind === "Namespace" || kind === "Team") continue;
        if (CLUSTER_SCOPED_KINDS.has(kind)) {
          handled.add(o);
          issue(ref(o), `is a cluster-scoped ${kind}: not a team's; remove it from the team's tree (or move it to the platform's)`);
        } else if (ns !== name && !(aso && ns === platform.asoNamespace)) {
          handled.add(o);
          issue(ref(o), `is in namespace ${ns ?? "(none)"}: adoption takes the objects of namespace ${name}${aso ? ` and, for ASO objects, of ${platform.asoNamespace}` : ""}, nothing of another namespace`);
        }
      }
      const namespaces = byKind(cluster, "Namespace");
      for (const ns of namespaces) {
        handled.add(ns);
        if (ns.obj.metadata?.name !== name) {
          issue(ref(ns), `a second Namespace in the team's build; Berth gives a team exactly one, named ${name}`);
          continue;
        }
        const teamLabels: Record<string, string> = {};
        for (const [k, v] of Object.entries((ns.obj.metadata?.labels ?? {}) as Record<string, unknown>)) {
          if (BERTH_NAMESPACE_LABELS.test(k)) continue;
          if (MANAGED_LABEL_PREFIXES.some((p) => k === p || k.startsWith(p))) {
            issue(`${ref(ns)} metadata.labels.${k}`, "is a label key the platform manages; a team cannot set it");
            continue;
          }
          teamLabels[k] = String(v);
        }
        labels.push({ value: teamLabels, from: ref(ns) });
        const desc = ns.obj.metadata?.annotations?.["berth.dev/description"] ?? ns.obj.metadata?.annotations?.description;
        if (desc !== undefined) descriptions.push({ value: String(desc), from: `${ref(ns)} metadata.annotations` });
      }
      for (const o of byKind(cluster, "Team")) {
        handled.add(o);
        issue(ref(o), "is a Team object: the team is already Berth's, or someone wrote Berth's object by hand");
      }
      const unhandled = (kind: string) => byKind(cluster, kind).filter((o) => !handled.has(o));
      for (const q of unhandled("ResourceQuota")) {
        handled.add(q);
        quotas.push({ value: this.mapQuota(q.obj, ref(q), issue), from: ref(q) });
      }
      for (const l of unhandled("LimitRange")) {
        handled.add(l);
        const { value, rest } = this.mapLimits(l.obj, ref(l), issue);
        limits.push({ value, from: ref(l) });
        // min, max and other entries stay, as the team's own LimitRange; Berth's holds the defaults.
        if (rest) carry(cluster, l, rest(structuredClone(carriedOf.get(l) ?? l.obj)));
      }
      const groups: string[] = [];
      for (const rb of unhandled("RoleBinding")) {
        const role = rb.obj.roleRef;
        const subjects = (rb.obj.subjects ?? []) as Obj[];
        const ownersBinding = role?.kind === "ClusterRole" && role.name === "admin" && subjects.length > 0 && subjects.every((s) => s.kind === "Group" && LOWERCASE_GUID.test(String(s.name)));
        if (!ownersBinding) {
          carry(cluster, rb); // another role, or other subjects: the team's own binding
          continue;
        }
        handled.add(rb);
        groups.push(...subjects.map((s) => String(s.name)));
      }
      if (groups.length) owners.push({ value: [...new Set(groups)].sort(), from: `RoleBinding(s) on ${cluster}` });
      for (const sa of unhandled("ServiceAccount")) {
        if (sa.obj.metadata?.name === teamNames(name).serviceAccount) handled.add(sa);
        else carry(cluster, sa);
      }
      for (const secret of unhandled("Secret")) {
        handled.add(secret);
        if (secret.obj.metadata?.name === teamNames(name).asoCredentialSecret) controllerOwned.add(secret);
        else issue(ref(secret), "is a Secret: adoption does not carry secrets into the team spec (it is readable as the Team object); keep it out of git (sealed or external secrets) and adopt again");
      }
      const names: { rg?: SourceObject; identity?: SourceObject } = {};
      const rgs = unhandled("ResourceGroup");
      const ids = unhandled("UserAssignedIdentity");
      for (const [list, key] of [[rgs, "rg"], [ids, "identity"]] as const) {
        for (const o of list) handled.add(o);
        if (list.length > 1) issue(ref(list[1]!), `a second ${list[0]!.obj.kind} on ${cluster}; Berth gives a team one per cluster`);
        if (list[0]) names[key] = list[0];
      }
      azureObjects.set(cluster, names);
      for (const fic of unhandled("FederatedIdentityCredential")) {
        handled.add(fic);
        pendingFics.push({ cluster, o: fic });
      }
      const clusterRoles: string[] = [];
      const vars = this.configVars(clusters.get(cluster)!);
      for (const ra of unhandled("RoleAssignment")) {
        handled.add(ra);
        const match = this.mapRole(ra.obj, names.rg?.obj, catalog, vars, ref(ra), issue);
        if (match) {
          clusterRoles.push(match.role);
          roleMatches.push({ cluster, object: ref(ra), ...match });
        }
      }
      roles.push({ value: [...new Set(clusterRoles)].sort().map((role) => ({ role })), from: `RoleAssignments on ${cluster}` });
      for (const o of objects) {
        if (handled.has(o)) continue;
        const kind = String(o.obj.kind);
        const group = groupOf(o.obj);
        if ((group === "kustomize.toolkit.fluxcd.io" && kind === "Kustomization") || (group === "helm.toolkit.fluxcd.io" && kind === "HelmRelease")) {
          handled.add(o);
          issue(ref(o), `is a Flux ${kind}: it applies with Flux's own rights, beyond the team's namespace, so Berth does not carry it`);
        } else if (o.obj.metadata?.namespace !== name) {
          handled.add(o);
          issue(ref(o), `${o.obj.apiVersion} ${kind} in ${o.obj.metadata?.namespace}: the only ASO objects Berth carries in ${platform.asoNamespace} are federated credentials of the team's identity`);
        } else carry(cluster, o);
      }
    }

    spec.environments = [...envs].sort();
    mapped.push({ field: "environments", from: `clusters ${[...perCluster.keys()].sort().join(", ")}` });
    agree("labels", labels);
    agree("description", descriptions);
    agree("quota", quotas);
    agree("containerLimits", limits);
    agree("owners", owners);
    agree("roleAssignments", roles);
    for (const [field, value] of Object.entries(request.spec ?? {})) {
      if (value === undefined) continue;
      spec[field] = value;
      const at = mapped.findIndex((m) => m.field === field);
      if (at >= 0) mapped.splice(at, 1);
      mapped.push({ field, from: "the request" });
    }
    if (issues.length) throw new AdoptionUnmappableError(name, issues);

    let team = this.validated(name, { ...spec, name });

    // ---- Azure names: anything Berth would rename is a new resource in Azure ----
    const azure: AzureNameChange[] = [];
    const kept: AzureNames = {};
    for (const [cluster, objs] of azureObjects) {
      const berth = berthAzureNames(name, cluster);
      for (const [key, kind, to] of [["rg", "ResourceGroup", berth.resourceGroup], ["identity", "UserAssignedIdentity", berth.identity]] as const) {
        const o = objs[key];
        if (!o) {
          warnings.push(`${cluster}: no ${kind} in the hand-written manifests; Berth creates ${to}`);
          continue;
        }
        const from = String(o.obj.spec?.azureName ?? o.obj.metadata?.name ?? "");
        if (from.includes("${")) {
          issues.push({ field: `${ref(o)} spec.azureName`, rule: `"${from}" uses a platform variable only the cluster knows: Berth cannot tell the Azure name` });
          continue;
        }
        if (from === to) continue;
        azure.push({ cluster, kind, object: ref(o), from, to, kept: request.keepAzureNames });
        if (request.keepAzureNames) {
          const map = key === "rg" ? (kept.resourceGroups ??= {}) : (kept.identities ??= {});
          map[cluster] = from;
        }
      }
      if (objs.rg) {
        const location = objs.rg.obj.spec?.location;
        const platformLocation = clusters.get(cluster)!.vars.AZURE_LOCATION;
        if (typeof location === "string" && !location.includes("${") && platformLocation !== undefined && location !== platformLocation) {
          issues.push({ field: `${ref(objs.rg)} spec.location`, rule: `is ${location}; Berth renders \${AZURE_LOCATION} (${platformLocation} on ${cluster}): a resource group cannot move, Azure would need a new one` });
        } else if (typeof location === "string" && !location.includes("${") && platformLocation === undefined) {
          warnings.push(`${cluster}: the resource group is in ${location}; Berth renders \${AZURE_LOCATION}: make sure platform-vars on ${cluster} says ${location}`);
        }
      }
    }
    if (issues.length) throw new AdoptionUnmappableError(name, issues);
    const recreated = azure.filter((a) => !a.kept);
    if (recreated.length) throw new AdoptionRecreatesError(name, recreated);
    if (kept.resourceGroups || kept.identities) team = this.validated(name, { ...team, azureNames: kept });
    team = { ...team, templateVersion: this.onboarding.catalog.defaultVersion };

    // ---- federated credentials: Berth renders its own subjects; one for another subject is the team's ----
    const firstRender = this.renderAdopted(name, team);
    const berthSubjects = new Set([...firstRender.values()].flatMap((text) => parseAllDocuments(text, YAML_PARSE_OPTIONS).map((d) => d.toJS() as Obj)).filter((o) => o?.kind === "FederatedIdentityCredential").map((o) => String(o.spec?.subject)));
    for (const { cluster, o } of pendingFics) {
      if (berthSubjects.has(String(o.obj.spec?.subject))) continue;
      const identity = azureObjects.get(cluster)?.identity?.obj.metadata?.name;
      const object = structuredClone(carriedOf.get(o) ?? o.obj);
      if (identity === undefined || object.spec?.owner?.name !== identity) {
        issues.push({ field: `${ref(o)} spec.owner`, rule: `is owned by ${object.spec?.owner?.name ?? "(nothing)"}, not the team's identity: Berth carries federated credentials of the team's identity only` });
        continue;
      }
      // The same Azure identity (its name is kept), now under Berth's object: the credential follows it.
      object.spec.owner = { ...object.spec.owner, name: teamNames(name).identity };
      carry(cluster, o, object);
      handled.add(o);
    }
    if (issues.length) throw new AdoptionUnmappableError(name, issues);

    // ---- the team's own manifests: one entry for every cluster when they agree, else one per cluster ----
    const extraManifests = this.groupExtras(extras, clustersOf(team, platform).map((c) => c.name));
    if (extraManifests.length) team = this.validated(name, { ...team, extraManifests });

    // ---- the change: Berth's layout, and the hand-written Flux Kustomizations made harmless ----
    const rendered = this.renderAdopted(name, team);
    const files = await this.onboarding.changeFor(tree, name, rendered);
    const kustomizations: AdoptionPlan["report"]["kustomizations"] = [];
    // Berth's own Flux file paths, and the ones from before shards (Berth's write deletes what is there).
    const berthFlux = new Set(clustersOf(team, platform).flatMap((c) => this.layout.fluxKustomizationPaths(c.name, name)));
    const renderedObjects = [...rendered.values()].flatMap((text) => parseAllDocuments(text, YAML_PARSE_OPTIONS).map((d) => d.toJS() as Obj));
    const berthIds = new Set(renderedObjects.map(identityOf));
    for (const f of found.filter((x) => perCluster.has(x.cluster))) {
      const same = berthIds.has(identityOf(f.kustomization));
      if (same && berthFlux.has(f.path)) {
        kustomizations.push({ cluster: f.cluster, path: f.path, name: f.kustomization.metadata.name, namespace: f.kustomization.metadata.namespace, fate: "replaced" });
        continue;
      }
      if (berthFlux.has(f.path)) {
        throw new AdoptionUnmappableError(name, [{ field: f.path, rule: `holds Flux Kustomization ${f.kustomization.metadata.namespace}/${f.kustomization.metadata.name}, and Berth writes its own (${teamNames(name).fluxKustomization}) there: move the hand-written file first` }]);
      }
      files.set(f.path, suspendKustomization(await tree.read(f.path), f.kustomization.metadata.name, this.layout.teamSpec(name)));
      kustomizations.push({ cluster: f.cluster, path: f.path, name: f.kustomization.metadata.name, namespace: f.kustomization.metadata.namespace, fate: "suspended" });
    }

    const carriedSources = new Set([...extras.values()].flat().map((e) => e.source));
    const objects: AdoptedObject[] = [];
    for (const [cluster, list] of perCluster) {
      for (const o of list) {
        const objectRef = `${o.obj.kind} ${o.obj.metadata?.namespace ? `${o.obj.metadata.namespace}/` : ""}${o.obj.metadata?.name}`;
        if (controllerOwned.has(o)) {
          objects.push({ ref: objectRef, source: o.file, cluster, fate: "controller", note: "the namespace's ASO credential, which Berth's controller writes now (from Azure discovery or static config): nothing to carry" });
          continue;
        }
        if (carriedSources.has(o)) {
          objects.push({ ref: objectRef, source: o.file, cluster, fate: "carried", note: "kept as the team's own manifest (spec.extraManifests), applied in place by Berth's Kustomization" });
          continue;
        }
        const updated = berthIds.has(identityOf(o.obj));
        const aso = ASO_GROUPS.has(groupOf(o.obj));
        const detaches = ["detach-on-delete", "skip"].includes(String(o.obj.metadata?.annotations?.[RECONCILE_POLICY] ?? "manage"));
        objects.push({
          ref: objectRef,
          source: o.file,
          cluster,
          fate: updated ? "updated" : "left-behind",
          ...(updated
            ? {}
            : !aso
              ? { note: "still on the cluster, unmanaged: delete it once Berth's object is in place" }
              : detaches
                ? { note: `still on the cluster, unmanaged; its ${RECONCILE_POLICY} detaches, so deleting it leaves the Azure resource to Berth's object` }
                : { note: `still on the cluster and still managing its Azure resource: set ${RECONCILE_POLICY}: detach-on-delete on it before deleting it, or ASO deletes the Azure resource Berth's object now manages` }),
        });
      }
    }
    const dangerous = objects.filter((o) => o.note?.includes("or ASO deletes"));
    if (dangerous.length) {
      warnings.push(`${dangerous.length} hand-written ASO object(s) would delete their Azure resource if deleted as they are (${[...new Set(dangerous.map((o) => o.ref))].join(", ")}): see objects[].note`);
    }
    const envClusters = clustersOf(team, platform).map((c) => c.name).filter((c) => !perCluster.has(c));
    if (envClusters.length) warnings.push(`Berth also lands the team on ${envClusters.join(", ")} (every cluster of its environments), where it was not before`);

    const sources = [...new Set(found.filter((f) => perCluster.has(f.cluster)).flatMap((f) => f.files))].sort();
    const cleanup = [...new Set([...sources, ...kustomizations.filter((k) => k.fate === "suspended").map((k) => k.path)])].filter((p) => !files.has(p) || files.get(p) !== null).sort();
    return {
      team,
      change: {
        files,
        subject: `berth: adopt team ${name}`,
        body: [
          `from ${kustomizations.map((k) => `${k.path} (${k.fate})`).join(", ")}`,
          ...(azure.length ? [`kept Azure names: ${azure.map((a) => `${a.kind} ${a.from} on ${a.cluster}`).join(", ")}`] : []),
          ...(extraManifests.length ? [`carried: ${extraManifests.length} of the team's own manifest(s)`] : []),
          `environments: ${team.environments.join(", ")}`,
          `templates: ${team.templateVersion}`,
        ],
      },
      report: { kustomizations, mapped, roles: roleMatches, azureNames: azure, objects, warnings, cleanup },
    };
  }

  /** The plan with per-file status and a unified diff, for the preview. */
  async preview(tree: RepoTree, name: string, request: AdoptionRequest): Promise<AdoptionPlan & { files: Array<FileChange & { content: string | null }>; diff: string }> {
    const plan = await this.plan(tree, name, request);
    return { ...plan, ...(await describeWithDiff(tree, plan.change.files)) };
  }

  // ---------------------------------------------------------------------------------------------------

  /** validateTeam, its problems reported as what could not be mapped. */
  private validated(name: string, input: unknown): Team {
    try {
      return validateTeam(input, this.onboarding.platform);
    } catch (err) {
      if (err instanceof TeamValidationError) {
        const hint = (f: string) => (f === "owners" ? " (no RoleBinding grants admin to Entra ID groups: give spec.owners in the request)" : "");
        throw new AdoptionUnmappableError(name, err.issues.map((i) => ({ field: `spec.${i.field}`, rule: `${i.rule}${hint(i.field)}` })));
      }
      throw err;
    }
  }

  private renderAdopted(name: string, team: Team): Map<string, string> {
    try {
      return this.onboarding.render(team);
    } catch (err) {
      if (err instanceof TeamValidationError) throw new AdoptionUnmappableError(name, err.issues.map((i) => ({ field: `spec.${i.field}`, rule: i.rule })));
      throw err;
    }
  }

  /** Carried objects as team entries: one without a cluster when every cluster of the team has it alike. */
  private groupExtras(extras: Map<string, Array<{ source: SourceObject; object: Obj }>>, teamClusters: string[]): ExtraManifest[] {
    const byId = new Map<string, Map<string, Obj>>();
    for (const [cluster, list] of extras) {
      for (const { object } of list) {
        const id = identityOf(object);
        const m = byId.get(id) ?? new Map<string, Obj>();
        m.set(cluster, object);
        byId.set(id, m);
      }
    }
    const out: ExtraManifest[] = [];
    for (const perCluster of byId.values()) {
      const texts = new Set([...perCluster.values()].map((o) => JSON.stringify(o)));
      if (texts.size === 1 && teamClusters.every((c) => perCluster.has(c))) out.push({ object: perCluster.values().next().value! });
      else for (const [cluster, object] of perCluster) out.push({ cluster, object });
    }
    const key = (e: ExtraManifest) => `${e.cluster ?? ""}\0${e.object.kind}\0${(e.object.metadata as Obj)?.namespace}\0${(e.object.metadata as Obj)?.name}`;
    return out.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  }

  /**
   * Adoption edits only hand-written files: a found Kustomization in a file Berth owns for another team (or
   * a layout index), one with the name of another Berth team's Flux object, or a build that reads another
   * team's files is refused (issue 24, item 2).
   */
  private async assertNotBerths(tree: RepoTree, name: string, found: FoundKustomization[], issue: (f: string, r: string) => void): Promise<void> {
    const platform = this.onboarding.platform;
    const berthTeams = new Set(await this.onboarding.listTeamNames(tree));
    const fluxObjectOwner = new Map([...berthTeams].map((t) => [teamNames(t).fluxKustomization, t]));
    for (const f of found) {
      const owner = this.layout.ownerOf(f.path);
      if (owner.kind !== "unowned" && !(owner.kind === "team" && owner.team === name)) {
        issue(f.path, `is ${describeOwner(owner)}: adoption never edits Berth's files (a hand-edited Berth file? restore it through the API)`);
      }
      const other = f.kustomization.metadata?.namespace === platform.asoNamespace ? fluxObjectOwner.get(String(f.kustomization.metadata?.name)) : undefined;
      if (other !== undefined && other !== name) {
        issue(f.path, `Flux Kustomization ${platform.asoNamespace}/${f.kustomization.metadata.name} is the Flux object of Berth's team ${other}: adoption never suspends another team's Kustomization; rename the hand-written one`);
      }
      for (const file of f.files) {
        const o = this.layout.ownerOf(file);
        if (o.kind === "team" && o.team !== name && berthTeams.has(o.team)) issue(file, `is a file of Berth's team ${o.team}: the team's tree may not include another team's files`);
      }
    }
  }

  /**
   * The team's Flux Kustomizations: every Kustomization under the clusters folder that names the team (in
   * its name, its path or its substitutions: only those are built), whose build — after the substitution
   * its parent applies to it, and Flux's own postBuild substitution — holds the Namespace named after the team.
   */
  private async discover(
    tree: RepoTree,
    team: string,
    issue: (field: string, rule: string) => void,
    budget: BuildBudget,
  ): Promise<{ found: FoundKustomization[]; unreadable: Array<{ path: string; reason: string }> }> {
    const platform = this.onboarding.platform;
    const clusters = new Map(allClusters(platform).map((c) => [c.name, c]));
    const prefix = `${this.layout.clustersDir}/`;
    const found: FoundKustomization[] = [];
    const unreadable: Array<{ path: string; reason: string }> = [];
    const token = new RegExp(`(^|[^a-z0-9])${team}($|[^a-z0-9])`);
    const berthTeams = new Set(await this.onboarding.listTeamNames(tree));
    const mentions = (ks: Obj) =>
      [ks.metadata?.name, ks.spec?.path, ks.spec?.targetNamespace, ...Object.values((ks.spec?.postBuild?.substitute ?? {}) as Record<string, unknown>)]
        .map((v) => (v instanceof PlainVar ? v.text : v))
        .some((v) => typeof v === "string" && (v === team || v.split("/").includes(team) || token.test(v)));
    for (const path of await tree.list(this.layout.clustersDir)) {
      // kustomize's own files hold no objects (the cluster's root kustomization.yaml, Berth's indexes).
      if (!/\.ya?ml$/.test(path) || KUSTOMIZATION_FILES.includes(path.slice(path.lastIndexOf("/") + 1))) continue;
      // Berth's own files of other teams and the indexes are not hand-written: never read as such.
      const owner = this.layout.ownerOf(path);
      if (owner.kind === "cluster-teams-index" || (owner.kind === "team" && owner.team !== team && berthTeams.has(owner.team))) continue;
      const cluster = path.slice(prefix.length).split("/")[0]!;
      let docs: Obj[];
      try {
        docs = await parseManifestFile((await budget.read(tree, path)) ?? "", path, budget);
      } catch (err) {
        if (err instanceof BuildLimitError && err.limit !== "maxFileBytes") throw err;
        unreadable.push({ path, reason: (err as Error).message.replace(`${path}: `, "") });
        continue;
      }
      for (const raw of docs) {
        if (!isFluxKustomization(raw) || !mentions(raw)) continue;
        budget.countBuild(path);
        const c = clusters.get(cluster);
        const problems: SubstitutionProblem[] = [];
        const vars = c ? this.configVars(c) : {};
        // Its parent Kustomization applies it with the cluster's variables (e.g. spec.path with ${ENVIRONMENT}).
        const ks = substituteValue(raw, (v) => (vars[v] !== undefined ? { value: vars[v]! } : undefined), problems) as Obj;
        if (problems.length) {
          for (const p of problems) issue(`${path} (Flux Kustomization ${raw.metadata?.name})`, this.problemText(p, `its parent Kustomization substitutes it from the cluster's variables, and Berth's config for cluster ${cluster} has no value for it (platform.environments[].clusters[].vars)`));
          continue;
        }
        let target: string;
        try {
          target = repoPath("", String(ks.spec?.path ?? ""), path);
        } catch (err) {
          issue(`${path} spec.path`, (err as Error).message.replace(`${path}: `, ""));
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
        const unsupported = Object.keys(ks.spec ?? {}).filter((k) => !FLUX_SPEC_FIELDS.has(k));
        const substituted = this.fluxSubstitution(ks, built, c, path);
        const holdsTeam = substituted.objects.some((o) => o.obj.kind === "Namespace" && (o.obj.metadata?.name === team || String(o.obj.metadata?.name).includes("${")));
        if (!holdsTeam) continue;
        for (const k of unsupported) issue(`${path} spec.${k}`, `Flux Kustomization ${ks.metadata?.name}: adoption cannot map spec.${k} (it changes what Flux applies)`);
        for (const p of substituted.problems) issue(p.field, p.rule);
        const objects = substituted.objects.map((o) => ({ ...o, cluster }));
        for (const o of objects) {
          if (!o.obj.metadata?.namespace && !CLUSTER_SCOPED_KINDS.has(String(o.obj.kind)) && o.obj.kind !== "Team") {
            issue(`${o.file}#${o.obj.kind}/${o.obj.metadata?.name}`, "has no metadata.namespace: where Flux puts it depends on the Kustomization; give it one");
          }
        }
        const carried = new Map<SourceObject, Obj>();
        objects.forEach((o, i) => carried.set(o, substituted.carried[i]!));
        found.push({ cluster, path, kustomization: ks, objects, carried, files: built.files, liveOnly: substituted.liveOnly });
      }
    }
    return { found, unreadable };
  }

  /**
   * Flux's postBuild substitution of a build, twice: for mapping (every value Berth knows resolved, values
   * only the live cluster knows left as `${VAR}`), and as Berth's Kustomization must apply the objects it
   * carries (platform-vars keys kept as `${VAR}`, the rest resolved, literal `${` escaped as `$${`).
   * Without postBuild, Flux substitutes nothing: then every `${` is literal.
   */
  private fluxSubstitution(ks: Obj, built: Build, cluster: Cluster | undefined, path: string) {
    const platform = this.onboarding.platform;
    const postBuild = ks.spec?.postBuild as Obj | undefined;
    const inline = (postBuild?.substitute ?? {}) as Record<string, unknown>;
    const sources = ((postBuild?.substituteFrom ?? []) as Obj[]).map((s) => `${s.kind ?? "ConfigMap"} ${ks.metadata?.namespace ?? "?"}/${s.name}${s.optional ? " (optional)" : ""}`);
    const config = cluster ? this.configVars(cluster) : {};
    const known = knownPlatformVars(platform);
    const liveOnly = new Set<string>();
    const problems: FieldIssue[] = [];
    const inlineValue = (name: string) => (typeof inline[name] === "string" ? { value: inline[name] as string } : inline[name] !== undefined ? { value: String(inline[name]) } : undefined);
    const forMapping = (name: string): VarResolution => {
      const own = inlineValue(name);
      if (own || sources.length === 0) return own;
      if (config[name] !== undefined) return { value: config[name]! };
      if (known.has(name)) {
        liveOnly.add(name);
        return { keep: true };
      }
      return undefined;
    };
    const forBerth = (name: string): VarResolution => {
      const own = inlineValue(name);
      if (own || sources.length === 0) return own;
      if (known.has(name)) return { keep: true };
      return config[name] !== undefined ? { value: config[name]! } : undefined;
    };
    const objects: Array<{ obj: Obj; file: string }> = [];
    const carried: Obj[] = [];
    for (const o of built.objects) {
      if (!postBuild || substitutionDisabled(o.obj)) {
        const plain = withoutPlainVars(o.obj) as Obj;
        objects.push({ obj: plain, file: o.file });
        // Literal `${` stays literal under Berth's Kustomization too, unless Flux skips the object there as well.
        carried.push(substitutionDisabled(o.obj) ? plain : (substituteValue(plain, () => undefined, [], true) as Obj));
        continue;
      }
      const found: SubstitutionProblem[] = [];
      objects.push({ obj: substituteValue(o.obj, forMapping, found) as Obj, file: o.file });
      carried.push(substituteValue(o.obj, forBerth, [], true) as Obj);
      const at = `${o.file}#${o.obj.kind}/${withoutPlainVars(o.obj.metadata?.name)}`;
      for (const p of found) {
        problems.push({
          field: at,
          rule: this.problemText(
            p,
            `not in ${ks.metadata?.name}'s postBuild.substitute (${path})${sources.length ? `; Flux would take it from ${sources.join(", ")}, and Berth's config for cluster ${cluster?.name ?? "?"} has no value for it (platform.environments[].clusters[].vars)` : ", which has no substituteFrom"}`,
          ),
        });
      }
    }
    return { objects, carried, problems, liveOnly };
  }

  private problemText(p: SubstitutionProblem, where: string): string {
    if (p.kind === "unset") return `\${${p.variable}} cannot be resolved: ${where}; Berth never guesses a value`;
    if (p.kind === "structure") return `${p.variable}: its value would change the YAML structure, which adoption does not model`;
    return `${p.variable} is a substitution adoption does not evaluate (it knows \${VAR} and \${VAR:=default}); write it out`;
  }

  /** Platform values Berth knows for a cluster from its config. */
  private configVars(cluster: Cluster): Record<string, string> {
    return { CLUSTER_NAME: cluster.name, ENVIRONMENT: cluster.environment, ...cluster.vars };
  }

  private mapQuota(q: Obj, at: string, issue: (f: string, r: string) => void): unknown {
    const hard = (q.spec?.hard ?? {}) as Record<string, unknown>;
    const pick = (a: string, b: string, c?: string) => {
      const values = [hard[a], hard[b], ...(c ? [hard[c]] : [])].filter((v) => v !== undefined).map(String);
      if (new Set(values).size > 1) issue(`${at} spec.hard`, `${a} and ${b} differ (${values.join(" vs ")}); Berth sets them equal`);
      return values[0];
    };
    for (const k of Object.keys(hard)) {
      if (!["requests.cpu", "limits.cpu", "cpu", "requests.memory", "limits.memory", "memory", "pods"].includes(k)) {
        issue(`${at} spec.hard.${k}`, "Berth's quota has cpu, memory and pods only");
      }
    }
    const cpu = pick("requests.cpu", "limits.cpu", "cpu");
    const memory = pick("requests.memory", "limits.memory", "memory");
    const pods = hard.pods === undefined ? undefined : Number(hard.pods);
    if (cpu === undefined || memory === undefined || pods === undefined || !Number.isInteger(pods)) {
      issue(`${at} spec.hard`, "Berth's quota needs cpu, memory and pods together");
      return undefined;
    }
    return { cpu, memory, pods };
  }

  /**
   * A LimitRange's Container defaults (Berth's containerLimits), and — when it holds more (min, max,
   * maxLimitRequestRatio, entries for Pods or claims) — how to keep the rest as the team's own LimitRange.
   */
  private mapLimits(l: Obj, at: string, issue: (f: string, r: string) => void): { value: unknown; rest?: (o: Obj) => Obj } {
    const entries = (l.spec?.limits ?? []) as Obj[];
    const containers = entries.filter((e) => e.type === "Container" && (e.default !== undefined || e.defaultRequest !== undefined));
    const restOf = (o: Obj): Obj => {
      o.spec.limits = (o.spec.limits as Obj[])
        .map((e) => (e.type === "Container" ? Object.fromEntries(Object.entries(e).filter(([k]) => k !== "default" && k !== "defaultRequest")) : e))
        .filter((e) => Object.keys(e).some((k) => k !== "type"));
      return o;
    };
    const hasRest = restOf(structuredClone(l)).spec.limits.length > 0;
    if (containers.length === 0) return { value: undefined, ...(hasRest ? { rest: restOf } : {}) };
    if (containers.length > 1) {
      issue(`${at} spec.limits`, "two Container entries with defaults; Berth's LimitRange has one (default and defaultRequest)");
      return { value: undefined };
    }
    const entry = containers[0]!;
    const pair = (o: Obj | undefined) => (o && o.cpu !== undefined && o.memory !== undefined && Object.keys(o).length === 2 ? { cpu: String(o.cpu), memory: String(o.memory) } : undefined);
    const def = pair(entry.default);
    const req = pair(entry.defaultRequest);
    if (!def || !req) {
      issue(`${at} spec.limits`, "Berth's LimitRange needs default and defaultRequest, each with cpu and memory (nothing else)");
      return { value: undefined };
    }
    return { value: { defaultRequest: req, default: def }, ...(hasRest ? { rest: restOf } : {}) };
  }

  /**
   * The catalog role a RoleAssignment grants: the same role definition, and the same scope — the team's
   * resource group, or the entry's ARM id with its `${VAR}`s resolved from what Berth knows of the cluster
   * ("exact"), or, for a variable Berth does not know, matched as any one path segment ("pattern", with
   * the value found). ARM ids compare case-insensitively, as Azure does.
   */
  private mapRole(
    ra: Obj,
    rg: Obj | undefined,
    catalog: ReadonlyArray<{ id: string; roleDefinitionId: string; scope: { kind: string; armId?: string } }>,
    vars: Record<string, string>,
    at: string,
    issue: (f: string, r: string) => void,
  ): Omit<RoleMatch, "cluster" | "object"> | undefined {
    const definition = String(ra.spec?.roleDefinitionReference?.armId ?? "").split("/").at(-1)?.toLowerCase();
    const owner = (ra.spec?.owner ?? {}) as Obj;
    const scope = owner.armId !== undefined ? { kind: "armId", armId: String(owner.armId) } : owner.kind === "ResourceGroup" || (owner.name && rg && owner.name === rg.metadata?.name) ? { kind: "teamResourceGroup" } : undefined;
    if (!definition || !scope) {
      issue(`${at} spec`, "cannot tell its role definition or scope (roleDefinitionReference.armId and owner)");
      return undefined;
    }
    for (const entry of catalog) {
      if (entry.roleDefinitionId.toLowerCase() !== definition || entry.scope.kind !== scope.kind) continue;
      if (scope.kind === "teamResourceGroup") return { role: entry.id, scope: "team-resource-group" };
      const m = matchArmId(entry.scope.armId!, scope.armId!, vars);
      if (m) return { role: entry.id, scope: m.unresolved.length ? "pattern" : "exact", ...(m.unresolved.length ? { variables: Object.fromEntries(m.unresolved) } : {}) };
    }
    issue(`${at} spec.roleDefinitionReference`, `role definition ${definition} on ${scope.kind === "armId" ? scope.armId : "the team's resource group"} is not in the platform's role catalog`);
    return undefined;
  }
}

/** How a hand-written RoleAssignment was matched to a catalog role. */
export interface RoleMatch {
  cluster: string;
  object: string;
  role: string;
  /** team-resource-group; exact: the entry's ARM id with known values; pattern: some variables matched any value. */
  scope: "team-resource-group" | "exact" | "pattern";
  /** For a pattern match: each variable Berth does not know, and the value the hand-written id has there. */
  variables?: Record<string, string>;
}

/** `pattern` (an ARM id with `${VAR}`s) against a concrete ARM id, case-insensitively. */
export function matchArmId(pattern: string, armId: string, vars: Record<string, string>): { unresolved: Array<[string, string]> } | undefined {
  const names: string[] = [];
  let source = "";
  let last = 0;
  for (const m of pattern.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)) {
    source += escapeRegex(pattern.slice(last, m.index));
    const known = vars[m[1]!];
    if (known !== undefined) source += escapeRegex(known);
    else {
      names.push(m[1]!);
      source += "([^/]+)";
    }
    last = m.index! + m[0].length;
  }
  source += escapeRegex(pattern.slice(last));
  const match = new RegExp(`^${source}$`, "i").exec(armId);
  if (!match) return undefined;
  return { unresolved: names.map((n, i) => [n, match[i + 1]!]) };
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

const groupOf = (o: Obj) => (String(o.apiVersion).includes("/") ? String(o.apiVersion).split("/")[0]! : "");
const identityOf = (o: Obj) => `${String(o.apiVersion).split("/")[0]}|${o.kind}|${o.metadata?.namespace ?? ""}|${o.metadata?.name}`;

function isFluxKustomization(o: Obj | null): o is Obj {
  return !!o && o.kind === "Kustomization" && typeof o.apiVersion === "string" && o.apiVersion.startsWith(`${FLUX_KUSTOMIZATION_GROUP}/`);
}

/**
 * The hand-written Flux Kustomization with `suspend: true` and `prune: false`, edited in place (its
 * comments and layout kept): Flux stops applying it, and deleting it later deletes nothing of the team.
 */
function suspendKustomization(text: string | undefined, name: string, teamSpec: string): string {
  const docs = parseAllDocuments(text ?? "", YAML_PARSE_OPTIONS);
  for (const doc of docs) {
    const o = doc.toJS() as Obj | null;
    if (!isFluxKustomization(o) || o.metadata?.name !== name) continue;
    doc.setIn(["spec", "suspend"], true);
    doc.setIn(["spec", "prune"], false);
    const spec = doc.getIn(["spec"], true) as { commentBefore?: string | null } | undefined;
    if (spec && isMap(spec)) {
      spec.commentBefore = ` Adopted by Berth (${teamSpec}): suspended and not pruning, so deleting this file deletes nothing.\n Delete it once every cluster applied the adoption commit.`;
    }
  }
  return docs.map((d) => d.toString({ lineWidth: 0 })).join("");
}
