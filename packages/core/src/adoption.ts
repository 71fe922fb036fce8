import { isMap, parseAllDocuments, parseDocument } from "yaml";
import { z } from "zod";
import { clustersOf } from "./context.js";
import { TeamExistsError, TeamValidationError, type FieldIssue } from "./errors.js";
import { repoLayout, type RepoLayout } from "./layout.js";
import { azureNames as berthAzureNames, teamNames } from "./naming.js";
import { describeWithDiff, type Onboarding } from "./onboarding.js";
import type { FileChange } from "./repo.js";
import { allClusters, type Cluster } from "./platform.js";
import type { RepoChange, RepoTree } from "./repo.js";
import { YAML_PARSE_OPTIONS } from "./serialize.js";
import { MANAGED_LABEL_PREFIXES, teamSpecSchema, type AzureNames, type Team } from "./team.js";
import { validateTeam } from "./validate.js";

/**
 * Adoption: bring a team that was hand-written into the Flux repo before Berth under Berth (docs/adoption.md).
 *
 * Berth finds the team's Flux Kustomizations (every Kustomization under the clusters folder whose build
 * holds the Namespace named after the team: that gives the clusters, hence the environments), builds them
 * as Flux would (kustomize `resources` only), maps each object onto the team spec, and renders Berth's
 * layout for it. It never guesses: an object or field it cannot map, or two clusters that disagree, is a
 * report of what could not be mapped. A resource group or identity whose Azure name Berth would change
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
        .filter(([key]) => key !== "templateVersion" && key !== "azureNames")
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
  /** updated: Berth's render has the same object (applied in place); left-behind: Berth renders it under another name. */
  fate: "updated" | "left-behind";
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
    azureNames: AzureNameChange[];
    objects: AdoptedObject[];
    warnings: string[];
    /** Hand-written files no longer used, to delete once every cluster applied the adoption commit. */
    cleanup: string[];
  };
}

/** Input that cannot be mapped onto a team: each problem, never a guess. */
export class AdoptionUnmappableError extends Error {
  override readonly name = "AdoptionUnmappableError";
  constructor(
    readonly team: string,
    readonly issues: FieldIssue[],
  ) {
    super(`cannot adopt team "${team}": ${issues.length} thing(s) cannot be mapped onto a Berth team: ${issues.slice(0, 3).map((i) => `${i.field}: ${i.rule}`).join("; ")}${issues.length > 3 ? "; ..." : ""}`);
  }
}

/** Berth's render would rename resources in Azure (a new resource group or identity): refused. */
export class AdoptionRecreatesError extends Error {
  override readonly name = "AdoptionRecreatesError";
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

export class Adoption {
  private readonly layout: RepoLayout;

  constructor(private readonly onboarding: Onboarding) {
    this.layout = repoLayout(onboarding.platform);
  }

  async plan(tree: RepoTree, name: string, request: AdoptionRequest): Promise<AdoptionPlan> {
    if ((await tree.read(this.layout.teamSpec(name))) !== undefined) throw new TeamExistsError(name);
    const platform = this.onboarding.platform;
    const issues: FieldIssue[] = [];
    const issue = (field: string, rule: string) => issues.push({ field, rule });
    const warnings: string[] = [];
    const mapped: AdoptionPlan["report"]["mapped"] = [];

    const found = await this.discover(tree, name, issue);
    if (found.length === 0) {
      issue(this.layout.clustersDir, `no Flux Kustomization under ${this.layout.clustersDir}/ builds a Namespace named ${name}: nothing to adopt`);
      throw new AdoptionUnmappableError(name, issues);
    }
    const clusters = new Map(allClusters(platform).map((c) => [c.name, c]));
    const perCluster = new Map<string, SourceObject[]>();
    for (const f of found) {
      if (!clusters.has(f.cluster)) {
        issue(f.path, `cluster ${f.cluster} is not in platform config`);
        continue;
      }
      if (perCluster.has(f.cluster)) {
        issue(f.path, `a second Flux Kustomization for team ${name} on cluster ${f.cluster} (${perCluster.get(f.cluster)![0]?.file ?? "?"}): ambiguous`);
        continue;
      }
      perCluster.set(f.cluster, f.objects);
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
    const azureObjects = new Map<string, { rg?: SourceObject; identity?: SourceObject }>();
    const catalog = platform.roleCatalog;

    for (const [cluster, objects] of perCluster) {
      envs.add(clusters.get(cluster)!.environment);
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
      for (const q of byKind(cluster, "ResourceQuota")) {
        handled.add(q);
        quotas.push({ value: this.mapQuota(q.obj, ref(q), issue), from: ref(q) });
      }
      for (const l of byKind(cluster, "LimitRange")) {
        handled.add(l);
        limits.push({ value: this.mapLimits(l.obj, ref(l), issue), from: ref(l) });
      }
      const groups: string[] = [];
      for (const rb of byKind(cluster, "RoleBinding")) {
        handled.add(rb);
        const role = rb.obj.roleRef;
        if (role?.kind !== "ClusterRole" || role.name !== "admin") {
          issue(`${ref(rb)} roleRef`, `binds ${role?.kind ?? "?"} ${role?.name ?? "?"}: Berth grants a team's owners ClusterRole admin and nothing else`);
          continue;
        }
        for (const [i, s] of ((rb.obj.subjects ?? []) as Obj[]).entries()) {
          if (s.kind === "Group" && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(String(s.name))) groups.push(String(s.name));
          else issue(`${ref(rb)} subjects.${i}`, `${s.kind} ${s.name}: Berth's owners are Entra ID groups (object ids)`);
        }
      }
      if (groups.length) owners.push({ value: [...new Set(groups)].sort(), from: `RoleBinding(s) on ${cluster}` });
      for (const sa of byKind(cluster, "ServiceAccount")) {
        handled.add(sa);
        if (sa.obj.metadata?.name !== teamNames(name).serviceAccount) {
          issue(ref(sa), `Berth renders one ServiceAccount, ${teamNames(name).serviceAccount}; others belong in the team's own manifests`);
        }
      }
      const names: { rg?: SourceObject; identity?: SourceObject } = {};
      const rgs = byKind(cluster, "ResourceGroup");
      const ids = byKind(cluster, "UserAssignedIdentity");
      for (const [list, key] of [[rgs, "rg"], [ids, "identity"]] as const) {
        for (const o of list) handled.add(o);
        if (list.length > 1) issue(ref(list[1]!), `a second ${list[0]!.obj.kind} on ${cluster}; Berth gives a team one per cluster`);
        if (list[0]) names[key] = list[0];
      }
      azureObjects.set(cluster, names);
      for (const fic of byKind(cluster, "FederatedIdentityCredential")) handled.add(fic); // Berth renders its own set; shown in the diff
      const clusterRoles: string[] = [];
      for (const ra of byKind(cluster, "RoleAssignment")) {
        handled.add(ra);
        const roleId = this.mapRole(ra.obj, names.rg?.obj, catalog, ref(ra), issue);
        if (roleId) clusterRoles.push(roleId);
      }
      roles.push({ value: [...new Set(clusterRoles)].sort().map((role) => ({ role })), from: `RoleAssignments on ${cluster}` });
      for (const o of objects) if (!handled.has(o)) issue(ref(o), `${o.obj.apiVersion} ${o.obj.kind} is not part of a Berth team`);
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

    let team: Team;
    try {
      team = validateTeam({ ...spec, name }, platform);
    } catch (err) {
      if (err instanceof TeamValidationError) {
        const hint = (f: string) => (f === "owners" ? " (no RoleBinding grants admin to Entra ID groups: give spec.owners in the request)" : "");
        throw new AdoptionUnmappableError(name, err.issues.map((i) => ({ field: `spec.${i.field}`, rule: `${i.rule}${hint(i.field)}` })));
      }
      throw err;
    }

    // ---- Azure names: anything Berth would rename is a new resource in Azure ----
    const azure: AzureNameChange[] = [];
    const kept: AzureNames = {};
    for (const [cluster, objs] of azureObjects) {
      const berth = berthAzureNames(name, cluster);
      const vars = this.knownVars(clusters.get(cluster)!, found.find((f) => f.cluster === cluster)!.inlineVars);
      for (const [key, kind, to] of [["rg", "ResourceGroup", berth.resourceGroup], ["identity", "UserAssignedIdentity", berth.identity]] as const) {
        const o = objs[key];
        if (!o) {
          warnings.push(`${cluster}: no ${kind} in the hand-written manifests; Berth creates ${to}`);
          continue;
        }
        const raw = String(o.obj.spec?.azureName ?? o.obj.metadata?.name ?? "");
        const from = raw.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (m, v: string) => vars[v] ?? m);
        if (from.includes("${")) {
          issues.push({ field: `${ref(o)} spec.azureName`, rule: `"${raw}" uses a platform variable only the cluster knows: Berth cannot tell the Azure name` });
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
    if (kept.resourceGroups || kept.identities) team = validateTeam({ ...team, azureNames: kept }, platform);
    team = { ...team, templateVersion: this.onboarding.catalog.defaultVersion };

    // ---- the change: Berth's layout, and the hand-written Flux Kustomizations made harmless ----
    const rendered = this.onboarding.render(team);
    const files = await this.onboarding.changeFor(tree, name, rendered);
    const kustomizations: AdoptionPlan["report"]["kustomizations"] = [];
    // Berth's own Flux file paths, and the ones from before shards (Berth's write deletes what is there).
    const berthFlux = new Set(clustersOf(team, platform).flatMap((c) => this.layout.fluxKustomizationPaths(c.name, name)));
    const renderedObjects = [...rendered.values()].flatMap((text) => parseAllDocuments(text, YAML_PARSE_OPTIONS).map((d) => d.toJS() as Obj));
    const identityOf = (o: Obj) => `${String(o.apiVersion).split("/")[0]}|${o.kind}|${o.metadata?.namespace ?? ""}|${o.metadata?.name}`;
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

    const objects: AdoptedObject[] = [];
    for (const [cluster, list] of perCluster) {
      for (const o of list) {
        const updated = berthIds.has(identityOf(o.obj));
        const aso = ASO_GROUPS.has(String(o.obj.apiVersion).split("/")[0] ?? "");
        const detaches = ["detach-on-delete", "skip"].includes(String(o.obj.metadata?.annotations?.[RECONCILE_POLICY] ?? "manage"));
        objects.push({
          ref: `${o.obj.kind} ${o.obj.metadata?.namespace ? `${o.obj.metadata.namespace}/` : ""}${o.obj.metadata?.name}`,
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
          `environments: ${team.environments.join(", ")}`,
          `templates: ${team.templateVersion}`,
        ],
      },
      report: { kustomizations, mapped, azureNames: azure, objects, warnings, cleanup },
    };
  }

  /** The plan with per-file status and a unified diff, for the preview. */
  async preview(tree: RepoTree, name: string, request: AdoptionRequest): Promise<AdoptionPlan & { files: Array<FileChange & { content: string | null }>; diff: string }> {
    const plan = await this.plan(tree, name, request);
    return { ...plan, ...(await describeWithDiff(tree, plan.change.files)) };
  }

  // ---------------------------------------------------------------------------------------------------

  /** Every Flux Kustomization under the clusters folder whose build holds the team's Namespace. */
  private async discover(
    tree: RepoTree,
    team: string,
    issue: (field: string, rule: string) => void,
  ): Promise<Array<{ cluster: string; path: string; kustomization: Obj; objects: SourceObject[]; files: string[]; inlineVars: Record<string, string> }>> {
    const prefix = `${this.layout.clustersDir}/`;
    const out = [];
    for (const path of await tree.list(this.layout.clustersDir)) {
      if (!/\.ya?ml$/.test(path)) continue;
      const cluster = path.slice(prefix.length).split("/")[0]!;
      let docs: Obj[];
      try {
        docs = parseAllDocuments((await tree.read(path)) ?? "", YAML_PARSE_OPTIONS).map((d) => d.toJS({ maxAliasCount: 0 }) as Obj);
      } catch {
        continue; // not this team's business unless it builds its namespace; an unreadable file cannot
      }
      for (const ks of docs) {
        if (!isFluxKustomization(ks)) continue;
        const target = normalize(String(ks.spec?.path ?? ""));
        let built: { objects: Array<{ obj: Obj; file: string }>; files: string[] };
        try {
          built = await buildKustomization(tree, target);
        } catch (err) {
          // Only a Kustomization that looks like the team's is worth a complaint.
          if (target.split("/").includes(team) || ks.metadata?.name === team) issue(path, `cannot build ${target}: ${(err as Error).message}`);
          continue;
        }
        if (!built.objects.some((o) => o.obj.kind === "Namespace" && o.obj.metadata?.name === team)) continue;
        const unsupported = Object.keys(ks.spec ?? {}).filter((k) => !FLUX_SPEC_FIELDS.has(k));
        for (const k of unsupported) issue(`${path} spec.${k}`, `Flux Kustomization ${ks.metadata?.name}: adoption cannot map spec.${k} (it changes what Flux applies)`);
        const inlineVars = (ks.spec?.postBuild?.substitute ?? {}) as Record<string, string>;
        const objects = built.objects.map((o) => ({ obj: o.obj, file: o.file, cluster }));
        for (const o of objects) {
          if (!o.obj.metadata?.namespace && isNamespaced(o.obj)) {
            issue(`${o.file}#${o.obj.kind}/${o.obj.metadata?.name}`, "has no metadata.namespace: where Flux puts it depends on the Kustomization; give it one");
          }
        }
        out.push({ cluster, path, kustomization: ks, objects, files: built.files, inlineVars });
      }
    }
    return out;
  }

  /** Platform values Berth knows for a cluster (config, and the Kustomization's inline substitutions). */
  private knownVars(cluster: Cluster, inline: Record<string, string>): Record<string, string> {
    return { CLUSTER_NAME: cluster.name, ENVIRONMENT: cluster.environment, ...cluster.vars, ...inline };
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

  private mapLimits(l: Obj, at: string, issue: (f: string, r: string) => void): unknown {
    const limits = (l.spec?.limits ?? []) as Obj[];
    if (limits.length !== 1 || limits[0]!.type !== "Container") {
      issue(`${at} spec.limits`, "Berth's LimitRange has one Container entry (default and defaultRequest)");
      return undefined;
    }
    const entry = limits[0]!;
    for (const k of Object.keys(entry)) if (!["type", "default", "defaultRequest"].includes(k)) issue(`${at} spec.limits.0.${k}`, "Berth's LimitRange sets default and defaultRequest only");
    const pair = (o: Obj | undefined) => (o && o.cpu !== undefined && o.memory !== undefined && Object.keys(o).length === 2 ? { cpu: String(o.cpu), memory: String(o.memory) } : undefined);
    const def = pair(entry.default);
    const req = pair(entry.defaultRequest);
    if (!def || !req) {
      issue(`${at} spec.limits.0`, "Berth's LimitRange needs default and defaultRequest, each with cpu and memory (nothing else)");
      return undefined;
    }
    return { defaultRequest: req, default: def };
  }

  /** The catalog role a RoleAssignment grants: same role definition and the same scope. */
  private mapRole(ra: Obj, rg: Obj | undefined, catalog: ReadonlyArray<{ id: string; roleDefinitionId: string; scope: { kind: string; armId?: string } }>, at: string, issue: (f: string, r: string) => void): string | undefined {
    const definition = String(ra.spec?.roleDefinitionReference?.armId ?? "").split("/").at(-1)?.toLowerCase();
    const owner = (ra.spec?.owner ?? {}) as Obj;
    const scope = owner.armId !== undefined ? { kind: "armId", armId: String(owner.armId) } : owner.kind === "ResourceGroup" || (owner.name && rg && owner.name === rg.metadata?.name) ? { kind: "teamResourceGroup" } : undefined;
    if (!definition || !scope) {
      issue(`${at} spec`, "cannot tell its role definition or scope (roleDefinitionReference.armId and owner)");
      return undefined;
    }
    const match = catalog.find((r) => r.roleDefinitionId.toLowerCase() === definition && r.scope.kind === scope.kind && (scope.kind !== "armId" || r.scope.armId === scope.armId));
    if (!match) {
      issue(`${at} spec.roleDefinitionReference`, `role definition ${definition} on ${scope.kind === "armId" ? scope.armId : "the team's resource group"} is not in the platform's role catalog`);
      return undefined;
    }
    return match.id;
  }
}

function isFluxKustomization(o: Obj | null): o is Obj {
  return !!o && o.kind === "Kustomization" && typeof o.apiVersion === "string" && o.apiVersion.startsWith(`${FLUX_KUSTOMIZATION_GROUP}/`);
}

const CLUSTER_SCOPED = new Set(["Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Team"]);
function isNamespaced(o: Obj): boolean {
  return !CLUSTER_SCOPED.has(String(o.kind));
}

function normalize(path: string): string {
  const parts: string[] = [];
  for (const seg of path.split("/")) {
    if (seg === "..") parts.pop();
    else if (seg !== "." && seg !== "") parts.push(seg);
  }
  return parts.join("/");
}

/**
 * What Flux builds from a folder, for adoption: `kustomization.yaml` with `resources` only (files and
 * folders, recursively), or — without one — every YAML file below the folder, as Flux generates it. Any
 * other kustomize feature (patches, generators, name prefixes, common labels...) changes the objects in
 * ways adoption does not model: an error, never a guess.
 */
async function buildKustomization(tree: RepoTree, dir: string, seen = new Set<string>()): Promise<{ objects: Array<{ obj: Obj; file: string }>; files: string[] }> {
  const kfile = `${dir}/kustomization.yaml`;
  const text = await tree.read(kfile);
  let resources: string[];
  const files: string[] = [];
  if (text === undefined) {
    const all = (await tree.list(dir)).filter((p) => /\.ya?ml$/.test(p));
    if (all.length === 0) throw new Error(`${dir} holds no manifests`);
    resources = all.map((p) => p.slice(dir.length + 1));
  } else {
    if (seen.has(kfile)) throw new Error(`${kfile} is included twice`);
    seen.add(kfile);
    files.push(kfile);
    const k = parseDocument(text, YAML_PARSE_OPTIONS);
    if (k.errors.length || !isMap(k.contents)) throw new Error(`${kfile} is not a YAML mapping`);
    const body = k.toJS() as Obj;
    const extra = Object.keys(body).filter((key) => !["apiVersion", "kind", "resources"].includes(key));
    if (extra.length) throw new Error(`${kfile} uses ${extra.join(", ")}: adoption supports kustomizations that list resources only`);
    resources = ((body.resources ?? []) as unknown[]).map(String);
  }
  const objects: Array<{ obj: Obj; file: string }> = [];
  for (const r of resources) {
    const path = normalize(`${dir}/${r}`);
    const content = await tree.read(path);
    if (content !== undefined) {
      files.push(path);
      for (const doc of parseAllDocuments(content, YAML_PARSE_OPTIONS)) {
        if (doc.errors.length) throw new Error(`${path}: ${doc.errors[0]!.message}`);
        const obj = doc.toJS({ maxAliasCount: 0 }) as Obj | null;
        if (obj) objects.push({ obj, file: path });
      }
    } else {
      const nested = await buildKustomization(tree, path, seen);
      objects.push(...nested.objects);
      files.push(...nested.files);
    }
  }
  return { objects, files };
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
