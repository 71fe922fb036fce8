import { clustersOf } from "../context.js";
import { TeamExistsError, TeamValidationError } from "../errors.js";
import { BuildBudget, BuildLimitError, DEFAULT_BUILD_LIMITS, type BuildLimits } from "@berth/kustomize";
import { repoLayout, type RepoLayout } from "../layout.js";
import { azureNames as berthAzureNames, teamNames } from "../naming.js";
import { describeWithDiff, type Onboarding } from "../onboarding.js";
import { allClusters, type Cluster } from "../platform.js";
import type { FileChange, RepoTree } from "../repo.js";
import type { AzureNames, ExtraManifest, Team } from "../team.js";
import { validateTeam } from "../validate.js";
import {
  checkHandWritten,
  discover,
  type DiscoverContext,
  type Discovery,
  type FoundKustomization,
} from "./discover.js";
import {
  ASO_GROUPS,
  describeObject,
  groupOf,
  identityOf,
  nameOf,
  namespaceOf,
  RECONCILE_POLICY,
  recordAt,
  renderedObjects,
  sourceRef,
  suspendKustomization,
  valueAt,
  type Manifest,
  type SourceObject,
} from "./manifests.js";
import { mapObjects, type Carried, type SpecMapping } from "./map.js";
import {
  AdoptionLimitError,
  AdoptionRecreatesError,
  AdoptionUnmappableError,
  Unmappable,
  type AdoptedObject,
  type AdoptionPlan,
  type AdoptionRequest,
  type AzureNameChange,
} from "./model.js";

/**
 * Adoption: bring a team that was hand-written into the Flux repo before Berth under Berth (docs/adoption.md).
 *
 * Berth finds the team's Flux Kustomizations (every Kustomization under the clusters folder whose build
 * holds the Namespace named after the team: that gives the clusters, hence the environments), builds them
 * as Flux would (discover.ts: kustomize.ts, then Flux's substitution), maps each object onto the team spec
 * (map.ts), carries the team's other objects as its own manifests (spec.extraManifests), and renders
 * Berth's layout for it (this file). It never guesses: an object, field or variable it cannot map, or two
 * clusters that disagree, is a report of what could not be mapped. A resource group or identity whose Azure
 * name Berth would change (Azure would create a new one) is refused unless the request keeps the names.
 *
 * The hand-written Flux Kustomizations are not deleted: the adoption commit suspends them and turns off
 * their pruning, so nothing of the team is deleted when they are removed later (Flux garbage-collects what
 * a deleted Kustomization applied when it prunes). Their files are listed for that cleanup.
 */

export interface AdoptionOptions {
  /** Bounds of one adoption's reading and building (defaults: DEFAULT_BUILD_LIMITS). */
  limits?: BuildLimits;
  /** The clock, and how to let other work run between files (the API yields to its event loop). */
  clock?: { now(): number; pause?(): Promise<void> };
}

type Report = AdoptionPlan["report"];

export class Adoption {
  private readonly layout: RepoLayout;

  constructor(
    private readonly onboarding: Onboarding,
    private readonly options: AdoptionOptions = {},
  ) {
    this.layout = repoLayout(onboarding.platform);
  }

  /**
   * The adoption commit and its report. Each step refuses with every problem it found before the next
   * starts: find and build → one Kustomization per cluster → map onto the spec → Azure names → federated
   * credentials → the team's own manifests → the change.
   */
  async plan(tree: RepoTree, name: string, request: AdoptionRequest): Promise<AdoptionPlan> {
    if ((await this.onboarding.teamSpecIn(tree, name)) !== undefined) throw new TeamExistsError(name);
    const unmappable = new Unmappable();
    const warnings: string[] = [];

    const found = await this.find(tree, name, unmappable, warnings);
    const perCluster = this.onePerCluster(name, found, unmappable);
    const adopted = found.filter((f) => perCluster.has(f.cluster));
    const carriedOf = new Map<SourceObject, Manifest>(found.flatMap((f) => [...f.carried]));
    const liveOnly = new Set(found.flatMap((f) => [...f.liveOnly]));
    if (liveOnly.size) {
      warnings.push(
        `values only the live cluster knows (platform-vars written by Berth's controller): ${[...liveOnly]
          .sort()
          .map((v) => `\${${v}}`)
          .join(", ")}; kept as variables`,
      );
    }

    const mapping = mapObjects(
      name,
      this.onboarding.platform,
      new Map([...perCluster.values()].map((c) => [c.cluster, c.objects])),
      carriedOf,
      unmappable,
      new Set([this.onboarding.platform.asoNamespace, ...found.map((f) => String(namespaceOf(f.kustomization)))]),
    );
    this.checkClientIdUses(found, mapping, unmappable, warnings);
    const mapped = withRequested(mapping, request);
    unmappable.refuseIfAny(name);
    let team = this.validated(name, { ...mapping.spec, name });

    const azure = this.azureNames(name, mapping, request, unmappable, warnings);
    unmappable.refuseIfAny(name);
    const recreated = azure.changes.filter((a) => !a.kept);
    if (recreated.length) throw new AdoptionRecreatesError(name, recreated);
    if (azure.kept.resourceGroups || azure.kept.identities)
      team = this.validated(name, { ...team, azureNames: azure.kept });
    team = { ...team, templateVersion: this.onboarding.catalog.defaultVersion };

    this.carryFederatedCredentials(name, team, mapping, carriedOf, unmappable);
    unmappable.refuseIfAny(name);

    const extraManifests = groupExtras(
      mapping.extras,
      clustersOf(team, this.onboarding.platform).map((c) => c.name),
    );
    if (extraManifests.length) team = this.validated(name, { ...team, extraManifests });

    const rendered = this.renderAdopted(name, team);
    const files = await this.onboarding.changeFor(tree, name, rendered);
    const berthIds = new Set(renderedObjects(rendered.values()).map(identityOf));
    const { kustomizations, shared } = await this.replaceOrSuspend(tree, name, team, adopted, berthIds, files);
    const objects = objectFates(perCluster, mapping, berthIds);

    const dangerous = objects.filter((o) => o.note?.includes("or ASO deletes"));
    if (dangerous.length) {
      warnings.push(
        `${dangerous.length} hand-written ASO object(s) would delete their Azure resource if deleted as they are (${[...new Set(dangerous.map((o) => o.ref))].join(", ")}): see objects[].note`,
      );
    }
    const envClusters = clustersOf(team, this.onboarding.platform)
      .map((c) => c.name)
      .filter((c) => !perCluster.has(c));
    if (envClusters.length)
      warnings.push(
        `Berth also lands the team on ${envClusters.join(", ")} (every cluster of its environments), where it was not before`,
      );

    const { cleanup, cleanupDocuments } = this.cleanup(name, adopted, kustomizations, shared, files, warnings);
    return {
      team,
      change: {
        files,
        subject: `berth: adopt team ${name}`,
        body: [
          `from ${kustomizations.map((k) => `${k.path} (${k.fate})`).join(", ")}`,
          ...(azure.changes.length
            ? [`kept Azure names: ${azure.changes.map((a) => `${a.kind} ${a.from} on ${a.cluster}`).join(", ")}`]
            : []),
          ...(extraManifests.length ? [`carried: ${extraManifests.length} of the team's own manifest(s)`] : []),
          `environments: ${team.environments.join(", ")}`,
          `templates: ${team.templateVersion}`,
        ],
      },
      report: {
        kustomizations,
        mapped,
        roles: mapping.roles,
        azureNames: azure.changes,
        objects,
        warnings,
        cleanup,
        cleanupDocuments,
      },
    };
  }

  /** The plan with per-file status and a unified diff, for the preview. */
  async preview(
    tree: RepoTree,
    name: string,
    request: AdoptionRequest,
  ): Promise<AdoptionPlan & { files: Array<FileChange & { content: string | null }>; diff: string }> {
    const plan = await this.plan(tree, name, request);
    return { ...plan, ...(await describeWithDiff(tree, plan.change.files)) };
  }

  // ---- the steps ----------------------------------------------------------------------------------

  /** Step 1 (discover.ts): the team's hand-written Flux Kustomizations, built; refused when there is none. */
  private async find(
    tree: RepoTree,
    name: string,
    unmappable: Unmappable,
    warnings: string[],
  ): Promise<FoundKustomization[]> {
    const ctx: DiscoverContext = {
      platform: this.onboarding.platform,
      layout: this.layout,
      berthTeams: new Set(await this.onboarding.listTeamNames(tree)),
      budget: new BuildBudget(this.options.limits ?? DEFAULT_BUILD_LIMITS, this.options.clock),
      unmappable,
    };
    // The build's limits are the domain's 422 adoption-limit: one vocabulary at the edge.
    const { found, unreadable }: Discovery = await discover(tree, name, ctx).catch((err: unknown) => {
      throw err instanceof BuildLimitError ? new AdoptionLimitError(err) : err;
    });
    if (found.length === 0) {
      unmappable.refuseIfAny(name);
      unmappable.add(
        this.layout.clustersDir,
        `no Flux Kustomization under ${this.layout.clustersDir}/ builds a Namespace named ${name}: nothing to adopt`,
      );
      // A file that cannot be read may be the one that holds the team: say which, and why.
      for (const u of unreadable)
        unmappable.add(u.path, `cannot be read, so adoption could not look for ${name} in it: ${u.reason}`);
      unmappable.refuseIfAny(name);
    }
    for (const u of unreadable)
      warnings.push(`${u.path} under ${this.layout.clustersDir}/ cannot be read and was not searched: ${u.reason}`);
    checkHandWritten(found, name, ctx);
    return found;
  }

  /** One Flux Kustomization per cluster of the platform: another cluster, or a second one, cannot be mapped. */
  private onePerCluster(
    name: string,
    found: FoundKustomization[],
    unmappable: Unmappable,
  ): Map<string, { cluster: Cluster; objects: SourceObject[] }> {
    const clusters = new Map(allClusters(this.onboarding.platform).map((c) => [c.name, c]));
    const perCluster = new Map<string, { cluster: Cluster; objects: SourceObject[] }>();
    for (const f of found) {
      const cluster = clusters.get(f.cluster);
      if (!cluster) {
        unmappable.add(f.path, `cluster ${f.cluster} is not in platform config`);
        continue;
      }
      const first = found.find((o) => o.cluster === f.cluster);
      if (perCluster.has(f.cluster) && first) {
        unmappable.add(
          f.path,
          `a second Flux Kustomization for team ${name} on cluster ${f.cluster} (${first.path}): ambiguous`,
        );
        continue;
      }
      perCluster.set(f.cluster, { cluster, objects: f.objects });
    }
    return perCluster;
  }

  /**
   * Azure names: anything Berth would rename is a new resource in Azure. Returns each name Berth would change,
   * and the names to keep (spec.azureNames) when the request keeps them.
   */
  private azureNames(
    name: string,
    mapping: SpecMapping,
    request: AdoptionRequest,
    unmappable: Unmappable,
    warnings: string[],
  ): { changes: AzureNameChange[]; kept: AzureNames } {
    const clusters = new Map(allClusters(this.onboarding.platform).map((c) => [c.name, c]));
    const changes: AzureNameChange[] = [];
    const kept: AzureNames = {};
    for (const [cluster, objs] of mapping.azureObjects) {
      const berth = berthAzureNames(name, cluster);
      for (const [key, kind, to] of [
        ["rg", "ResourceGroup", berth.resourceGroup],
        ["identity", "UserAssignedIdentity", berth.identity],
      ] as const) {
        const o = objs[key];
        if (!o) {
          warnings.push(`${cluster}: no ${kind} in the hand-written manifests; Berth creates ${to}`);
          continue;
        }
        const from = String(valueAt(o.obj, "spec", "azureName") ?? nameOf(o.obj) ?? "");
        if (from.includes("${")) {
          unmappable.add(
            `${sourceRef(o)} spec.azureName`,
            `"${from}" uses a platform variable only the cluster knows: Berth cannot tell the Azure name`,
          );
          continue;
        }
        if (from === to) continue;
        changes.push({ cluster, kind, object: sourceRef(o), from, to, kept: request.keepAzureNames });
        if (request.keepAzureNames) {
          const names = key === "rg" ? (kept.resourceGroups ??= {}) : (kept.identities ??= {});
          names[cluster] = from;
        }
      }
      if (objs.rg) {
        const location = valueAt(objs.rg.obj, "spec", "location");
        const platformLocation = clusters.get(cluster)?.vars.AZURE_LOCATION;
        if (
          typeof location === "string" &&
          !location.includes("${") &&
          platformLocation !== undefined &&
          location !== platformLocation
        ) {
          unmappable.add(
            `${sourceRef(objs.rg)} spec.location`,
            `is ${location}; Berth renders \${AZURE_LOCATION} (${platformLocation} on ${cluster}): a resource group cannot move, Azure would need a new one`,
          );
        } else if (typeof location === "string" && !location.includes("${") && platformLocation === undefined) {
          warnings.push(
            `${cluster}: the resource group is in ${location}; Berth renders \${AZURE_LOCATION}: make sure platform-vars on ${cluster} says ${location}`,
          );
        }
      }
    }
    return { changes, kept };
  }

  /**
   * Federated credentials: Berth renders its own subjects; one for another subject is the team's, carried
   * with its owner renamed to Berth's identity object (the same Azure identity, its name kept).
   */
  private carryFederatedCredentials(
    name: string,
    team: Team,
    mapping: SpecMapping,
    carriedOf: ReadonlyMap<SourceObject, Manifest>,
    unmappable: Unmappable,
  ): void {
    const berthSubjects = new Set(
      renderedObjects(this.renderAdopted(name, team).values())
        .filter((o) => o.kind === "FederatedIdentityCredential")
        .map((o) => String(valueAt(o, "spec", "subject"))),
    );
    for (const { cluster, o } of mapping.federatedCredentials) {
      if (berthSubjects.has(String(valueAt(o.obj, "spec", "subject")))) continue;
      const identity = mapping.azureObjects.get(cluster)?.identity;
      const identityName = identity ? nameOf(identity.obj) : undefined;
      const object = structuredClone(carriedOf.get(o) ?? o.obj);
      const owner = recordAt(object, "spec", "owner");
      if (identityName === undefined || owner.name !== identityName) {
        unmappable.add(
          `${sourceRef(o)} spec.owner`,
          `is owned by ${String(owner.name ?? "(nothing)")}, not the team's identity: Berth carries federated credentials of the team's identity only`,
        );
        continue;
      }
      // The same Azure identity (its name is kept), now under Berth's object: the credential follows it.
      recordAt(object, "spec").owner = { ...owner, name: teamNames(name).identity };
      const list = mapping.extras.get(cluster) ?? [];
      list.push({ source: o, object });
      mapping.extras.set(cluster, list);
    }
  }

  /**
   * Each adopted Flux Kustomization: replaced when Berth writes the same object at the same path, else
   * suspended in place (its file edited in `files`). A hand-written one at the path where Berth writes its
   * own, under another name, is refused.
   */
  private async replaceOrSuspend(
    tree: RepoTree,
    name: string,
    team: Team,
    adopted: FoundKustomization[],
    berthIds: ReadonlySet<string>,
    files: Map<string, string | null>,
  ): Promise<{ kustomizations: Report["kustomizations"]; shared: Set<string> }> {
    const kustomizations: Report["kustomizations"] = [];
    const shared = new Set<string>();
    // Berth's own Flux file paths, and the ones from before shards (Berth's write deletes what is there).
    const berthFlux = new Set(
      clustersOf(team, this.onboarding.platform).flatMap((c) => this.layout.fluxKustomizationPaths(c.name, name)),
    );
    for (const f of adopted) {
      const ksName = String(nameOf(f.kustomization));
      const ksNamespace = String(namespaceOf(f.kustomization));
      if (berthIds.has(identityOf(f.kustomization)) && berthFlux.has(f.path)) {
        kustomizations.push({
          cluster: f.cluster,
          path: f.path,
          name: ksName,
          namespace: ksNamespace,
          fate: "replaced",
        });
        continue;
      }
      if (berthFlux.has(f.path)) {
        throw new AdoptionUnmappableError(name, [
          {
            field: f.path,
            rule: `holds Flux Kustomization ${ksNamespace}/${ksName}, and Berth writes its own (${teamNames(name).fluxKustomization}) there: move the hand-written file first`,
          },
        ]);
      }
      const suspended = suspendKustomization(
        files.get(f.path) ?? (await tree.read(f.path)),
        ksName,
        this.layout.teamSpec(name),
      );
      files.set(f.path, suspended.text);
      if (suspended.shared) shared.add(f.path);
      kustomizations.push({
        cluster: f.cluster,
        path: f.path,
        name: ksName,
        namespace: ksNamespace,
        fate: "suspended",
      });
    }
    return { kustomizations, shared };
  }

  /**
   * What to remove once every cluster applied the adoption commit: whole files only where nothing but the team's
   * is in them. A suspended Kustomization in a file with other documents (another team's, live and pruning) is
   * named as a document. A file the team's build reads outside every folder named after the team (a shared base)
   * may be read by other Kustomizations Berth did not build: named in a warning, not advised for deletion.
   */
  private cleanup(
    name: string,
    adopted: FoundKustomization[],
    kustomizations: Report["kustomizations"],
    shared: ReadonlySet<string>,
    files: ReadonlyMap<string, string | null>,
    warnings: string[],
  ): Pick<Report, "cleanup" | "cleanupDocuments"> {
    const suspended = kustomizations.filter((k) => k.fate === "suspended");
    const sources = new Set(adopted.flatMap((f) => f.files));
    const teamFolder = (p: string) => p.split("/").slice(0, -1).includes(name);
    const common = [...sources].filter((p) => !teamFolder(p)).sort();
    if (common.length)
      warnings.push(
        `${common.length} file(s) the team's build reads are in no folder named ${name} (${common.join(", ")}): other hand-written Kustomizations may read them too, so they are not in cleanup; delete them once none does`,
      );
    const whole = [...[...sources].filter(teamFolder), ...suspended.map((k) => k.path).filter((p) => !shared.has(p))];
    return {
      cleanup: [...new Set(whole)].filter((p) => files.get(p) !== null).sort(),
      cleanupDocuments: suspended
        .filter((k) => shared.has(k.path))
        .map((k) => ({ path: k.path, kind: "Kustomization", namespace: k.namespace, name: k.name })),
    };
  }

  /**
   * The team identity's client id, as the platform substitutes it from the ConfigMap the identity exports
   * (`${clientId}`), is Berth's too: its identity exports it to `<team>-identity`, and its controller writes it into
   * Secret aso-credential and ServiceAccount workload's client-id annotation. Those two objects are Berth's own, so
   * the value maps there; anywhere else Berth's Kustomization would have no value for it: refused, named.
   */
  private checkClientIdUses(
    found: readonly FoundKustomization[],
    mapping: SpecMapping,
    unmappable: Unmappable,
    warnings: string[],
  ): void {
    const names = teamNames("");
    const described = new Map<string, string>();
    for (const f of found) {
      for (const [v, where] of f.clientId.vars) described.set(v, where);
      for (const [o, vars] of f.clientId.usedBy) {
        const berths =
          mapping.controllerOwned.has(o) ||
          (o.obj.kind === "ServiceAccount" && nameOf(o.obj) === names.serviceAccount && !isCarried(mapping, o));
        if (berths) continue;
        unmappable.add(
          sourceRef(o),
          `uses ${vars.map((v) => `\${${v}}`).join(", ")}, the client id of the team's identity (${vars.map((v) => f.clientId.vars.get(v)).join("; ")}): Berth's controller writes it only into Secret ${names.asoCredentialSecret} and ServiceAccount ${names.serviceAccount}'s azure.workload.identity/client-id annotation, and Berth's Kustomization has no value for it here`,
        );
      }
    }
    for (const [v, where] of [...described].sort())
      warnings.push(
        `\${${v}} is the client id of the team's identity (${where}): Berth's identity exports it to its own ConfigMap, and Berth's controller writes it into Secret ${names.asoCredentialSecret} (AZURE_CLIENT_ID) and ServiceAccount ${names.serviceAccount} (azure.workload.identity/client-id)`,
      );
  }

  /** validateTeam, its problems reported as what could not be mapped. */
  private validated(name: string, input: unknown): Team {
    try {
      return validateTeam(input, this.onboarding.platform);
    } catch (err) {
      if (err instanceof TeamValidationError) {
        const hint = (f: string) =>
          f === "owners" ? " (no RoleBinding grants admin to Entra ID groups: give spec.owners in the request)" : "";
        throw new AdoptionUnmappableError(
          name,
          err.issues.map((i) => ({ field: `spec.${i.field}`, rule: `${i.rule}${hint(i.field)}` })),
        );
      }
      throw err;
    }
  }

  private renderAdopted(name: string, team: Team): Map<string, string> {
    try {
      return this.onboarding.render(team);
    } catch (err) {
      if (err instanceof TeamValidationError)
        throw new AdoptionUnmappableError(
          name,
          err.issues.map((i) => ({ field: `spec.${i.field}`, rule: i.rule })),
        );
      throw err;
    }
  }
}

/** Whether an object is carried as one of the team's own manifests. */
function isCarried(mapping: SpecMapping, o: SourceObject): boolean {
  return [...mapping.extras.values()].some((list) => list.some((c) => c.source === o));
}

/** The request's spec fields, set over what was inferred; returns where each field came from. */
function withRequested(mapping: SpecMapping, request: AdoptionRequest): Report["mapped"] {
  const mapped = [...mapping.mapped];
  for (const [field, value] of Object.entries(request.spec ?? {})) {
    if (value === undefined) continue;
    mapping.spec[field] = value;
    const at = mapped.findIndex((m) => m.field === field);
    if (at >= 0) mapped.splice(at, 1);
    mapped.push({ field, from: "the request" });
  }
  return mapped;
}

/** What became of each hand-written object: updated in place, carried, the controller's, or left behind (with what to do). */
function objectFates(
  perCluster: ReadonlyMap<string, { objects: SourceObject[] }>,
  mapping: SpecMapping,
  berthIds: ReadonlySet<string>,
): AdoptedObject[] {
  const carriedSources = new Set([...mapping.extras.values()].flat().map((e) => e.source));
  const objects: AdoptedObject[] = [];
  for (const [cluster, { objects: list }] of perCluster) {
    for (const o of list) {
      const ref = describeObject(o.obj);
      if (mapping.controllerOwned.has(o)) {
        objects.push({
          ref,
          source: o.file,
          cluster,
          fate: "controller",
          note: "the namespace's ASO credential, which Berth's controller writes now (from Azure discovery or static config): nothing to carry",
        });
        continue;
      }
      if (carriedSources.has(o)) {
        objects.push({
          ref,
          source: o.file,
          cluster,
          fate: "carried",
          note:
            mapping.moved.get(o) ??
            "kept as the team's own manifest (spec.extraManifests), applied in place by Berth's Kustomization",
        });
        continue;
      }
      const updated = berthIds.has(identityOf(o.obj));
      const aso = ASO_GROUPS.has(groupOf(o.obj));
      const detaches = ["detach-on-delete", "skip"].includes(
        String(recordAt(o.obj, "metadata", "annotations")[RECONCILE_POLICY] ?? "manage"),
      );
      objects.push({
        ref,
        source: o.file,
        cluster,
        fate: updated ? "updated" : "left-behind",
        ...(updated
          ? {}
          : !aso
            ? { note: "still on the cluster, unmanaged: delete it once Berth's object is in place" }
            : detaches
              ? {
                  note: `still on the cluster, unmanaged; its ${RECONCILE_POLICY} detaches, so deleting it leaves the Azure resource to Berth's object`,
                }
              : {
                  note: `still on the cluster and still managing its Azure resource: set ${RECONCILE_POLICY}: detach-on-delete on it before deleting it, or ASO deletes the Azure resource Berth's object now manages`,
                }),
      });
    }
  }
  return objects;
}

/** Carried objects as team entries: one without a cluster when every cluster of the team has it alike. */
function groupExtras(extras: ReadonlyMap<string, Carried[]>, teamClusters: string[]): ExtraManifest[] {
  const byId = new Map<string, Map<string, Manifest>>();
  for (const [cluster, list] of extras) {
    for (const { object } of list) {
      const id = identityOf(object);
      const m = byId.get(id) ?? new Map<string, Manifest>();
      m.set(cluster, object);
      byId.set(id, m);
    }
  }
  const out: ExtraManifest[] = [];
  for (const perCluster of byId.values()) {
    const texts = new Set([...perCluster.values()].map((o) => JSON.stringify(o)));
    const [first] = perCluster.values();
    if (first && texts.size === 1 && teamClusters.every((c) => perCluster.has(c))) out.push({ object: first });
    else for (const [cluster, object] of perCluster) out.push({ cluster, object });
  }
  const key = (e: ExtraManifest) =>
    `${e.cluster ?? ""}\0${String(e.object.kind)}\0${String(namespaceOf(e.object))}\0${String(nameOf(e.object))}`;
  return out.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}
