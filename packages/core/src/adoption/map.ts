import { LOWERCASE_GUID } from "../patterns.js";
import { CLUSTER_SCOPED_KINDS } from "@berth/kustomize";
import { teamNames } from "../naming.js";
import type { Cluster, Platform } from "../platform.js";
import { MANAGED_LABEL_PREFIXES } from "../team.js";
import { configVars } from "./discover.js";
import {
  ASO_GROUPS,
  groupOf,
  kindOf,
  nameOf,
  namespaceOf,
  recordAt,
  sourceRef,
  valueAt,
  type Manifest,
  type SourceObject,
} from "./manifests.js";
import type { MappedField, RoleMatch, Unmappable } from "./model.js";

/**
 * Step 2 of adoption: map each cluster's built objects onto the team spec. Each kind has its own mapping
 * (Namespace → labels and description, ResourceQuota → quota, LimitRange → containerLimits, RoleBindings of
 * the admin role to Entra ID groups → owners, RoleAssignments → roleAssignments); what Berth renders itself
 * is recognised (the team's ServiceAccount, the ASO credential Secret, the resource group and identity); the
 * rest is carried as the team's own manifests. Every cluster must agree on each field: Berth has one value per team.
 */

/** Namespace labels Berth sets itself (or Kubernetes does): not team labels, compared in the diff instead. */
const BERTH_NAMESPACE_LABELS =
  /^(kubernetes\.io\/metadata\.name|pod-security\.kubernetes\.io\/.*|toolkit\.fluxcd\.io\/tenant|app\.kubernetes\.io\/managed-by|backstage\.io\/kubernetes-id|berth\.dev\/.*)$/;

/** A field's value as one cluster's objects give it, and where it came from. */
interface Sourced {
  value: unknown;
  from: string;
}

/** The hand-written resource group and identity of one cluster (Berth renders its own: their Azure names are compared). */
export interface AzureObjects {
  rg?: SourceObject;
  identity?: SourceObject;
}

/** One object kept as the team's own manifest: where it came from, and the object as Berth's Kustomization applies it. */
export interface Carried {
  source: SourceObject;
  object: Manifest;
}

export interface SpecMapping {
  /** The spec fields the objects give, each agreed by every cluster. */
  spec: Record<string, unknown>;
  mapped: MappedField[];
  roles: RoleMatch[];
  /** Objects carried as the team's own manifests, per cluster. */
  extras: Map<string, Carried[]>;
  /** The aso-credential Secrets, which Berth's controller writes now. */
  controllerOwned: Set<SourceObject>;
  /** FederatedIdentityCredentials, decided once Berth's render says which subjects it has (plan.ts). */
  federatedCredentials: Array<{ cluster: string; o: SourceObject }>;
  azureObjects: Map<string, AzureObjects>;
  /** The team's Flux sources moved from the platform's Flux namespace into the team's (carried), each with its note. */
  moved: Map<SourceObject, string>;
}

/**
 * Maps every cluster's objects; problems go to `unmappable`. `carriedOf` gives each object as Berth's
 * Kustomization must apply it (discover.ts), which is what a carried object keeps.
 */
export function mapObjects(
  name: string,
  platform: Platform,
  perCluster: ReadonlyMap<Cluster, SourceObject[]>,
  carriedOf: ReadonlyMap<SourceObject, Manifest>,
  unmappable: Unmappable,
  fluxNamespaces: ReadonlySet<string> = new Set(),
): SpecMapping {
  const mapper = new ObjectMapper(name, platform, carriedOf, unmappable, fluxNamespaces);
  for (const [cluster, objects] of perCluster) mapper.mapCluster(cluster, objects);
  return mapper.result([...perCluster.keys()]);
}

class ObjectMapper {
  private readonly issue: Unmappable["add"];
  private readonly handled = new Set<SourceObject>();
  private readonly envs = new Set<string>();
  private readonly values = {
    labels: [] as Sourced[],
    description: [] as Sourced[],
    quota: [] as Sourced[],
    containerLimits: [] as Sourced[],
    owners: [] as Sourced[],
    roleAssignments: [] as Sourced[],
  };
  private readonly out: Omit<SpecMapping, "spec" | "mapped"> = {
    roles: [],
    extras: new Map(),
    controllerOwned: new Set(),
    federatedCredentials: [],
    azureObjects: new Map(),
    moved: new Map(),
  };

  constructor(
    private readonly name: string,
    private readonly platform: Platform,
    private readonly carriedOf: ReadonlyMap<SourceObject, Manifest>,
    unmappable: Unmappable,
    /** Where the platform keeps its Flux objects (the ASO namespace, the hand-written Kustomizations'). */
    private readonly fluxNamespaces: ReadonlySet<string>,
  ) {
    this.issue = unmappable.add;
  }

  mapCluster(cluster: Cluster, objects: SourceObject[]): void {
    this.envs.add(cluster.environment);
    this.refuseOutsideTheTeam(objects);
    this.mapNamespaces(objects);
    for (const o of this.ofKind(objects, "Team")) {
      this.handled.add(o);
      this.issue(
        sourceRef(o),
        "is a Team object: the team is already Berth's, or someone wrote Berth's object by hand",
      );
    }
    this.mapQuotas(objects);
    this.mapLimitRanges(cluster.name, objects);
    this.mapOwners(cluster.name, objects);
    this.recogniseRendered(cluster.name, objects);
    const azure = this.mapAzureObjects(cluster.name, objects);
    for (const fic of this.unhandled(objects, "FederatedIdentityCredential")) {
      this.handled.add(fic);
      this.out.federatedCredentials.push({ cluster: cluster.name, o: fic });
    }
    this.mapRoleAssignments(cluster, objects, azure);
    this.moveTeamSources(cluster.name, objects);
    this.carryTheRest(cluster.name, objects);
  }

  /** The spec every cluster agrees on, and where each field came from. */
  result(clusters: Cluster[]): SpecMapping {
    const spec: Record<string, unknown> = { environments: [...this.envs].sort() };
    const mapped: MappedField[] = [
      {
        field: "environments",
        from: `clusters ${clusters
          .map((c) => c.name)
          .sort()
          .join(", ")}`,
      },
    ];
    for (const [field, values] of Object.entries(this.values)) {
      const distinct = new Map(values.map((v) => [JSON.stringify(v.value), v]));
      if (distinct.size > 1) {
        this.issue(
          field,
          `the clusters disagree: ${[...distinct.values()].map((v) => `${JSON.stringify(v.value)} (${v.from})`).join(" vs ")}; Berth has one value per team`,
        );
        continue;
      }
      const only = [...distinct.values()][0];
      if (only !== undefined && only.value !== undefined) {
        spec[field] = only.value;
        mapped.push({ field, from: only.from });
      }
    }
    return { spec, mapped, ...this.out };
  }

  /** Carries an object as the team's own manifest (by default as Berth's Kustomization applies it). */
  carry(cluster: string, o: SourceObject, object: Manifest = structuredClone(this.carriedOf.get(o) ?? o.obj)): void {
    this.handled.add(o);
    const list = this.out.extras.get(cluster) ?? [];
    list.push({ source: o, object });
    this.out.extras.set(cluster, list);
  }

  private ofKind(objects: SourceObject[], kind: string): SourceObject[] {
    return objects.filter((o) => o.obj.kind === kind);
  }

  private unhandled(objects: SourceObject[], kind: string): SourceObject[] {
    return this.ofKind(objects, kind).filter((o) => !this.handled.has(o));
  }

  /** Only the team's namespace, and ASO objects in the ASO namespace: anything else is not the team's. */
  private refuseOutsideTheTeam(objects: SourceObject[]): void {
    const { name, platform } = this;
    for (const o of objects) {
      const kind = kindOf(o.obj);
      const ns = namespaceOf(o.obj);
      const aso = ASO_GROUPS.has(groupOf(o.obj)) || groupOf(o.obj).endsWith(".azure.com");
      if (kind === "Namespace" || kind === "Team" || this.isTeamSource(o)) continue;
      if (CLUSTER_SCOPED_KINDS.has(kind)) {
        this.handled.add(o);
        this.issue(
          sourceRef(o),
          `is a cluster-scoped ${kind}: not a team's; remove it from the team's tree (or move it to the platform's)`,
        );
      } else if (ns !== name && !(aso && ns === platform.asoNamespace)) {
        this.handled.add(o);
        this.issue(
          sourceRef(o),
          `is in namespace ${String(ns ?? "(none)")}: adoption takes the objects of namespace ${name}${aso ? ` and, for ASO objects, of ${platform.asoNamespace}` : ""}, nothing of another namespace`,
        );
      }
    }
  }

  /** The team's Namespace: its labels (except those Berth or Kubernetes set) and its description. */
  private mapNamespaces(objects: SourceObject[]): void {
    for (const ns of this.ofKind(objects, "Namespace")) {
      this.handled.add(ns);
      if (nameOf(ns.obj) !== this.name) {
        this.issue(
          sourceRef(ns),
          `a second Namespace in the team's build; Berth gives a team exactly one, named ${this.name}`,
        );
        continue;
      }
      const teamLabels: Record<string, string> = {};
      for (const [k, v] of Object.entries(recordAt(ns.obj, "metadata", "labels"))) {
        if (BERTH_NAMESPACE_LABELS.test(k)) continue;
        if (MANAGED_LABEL_PREFIXES.some((p) => k === p || k.startsWith(p))) {
          this.issue(
            `${sourceRef(ns)} metadata.labels.${k}`,
            "is a label key the platform manages; a team cannot set it",
          );
          continue;
        }
        teamLabels[k] = String(v);
      }
      this.values.labels.push({ value: teamLabels, from: sourceRef(ns) });
      const annotations = recordAt(ns.obj, "metadata", "annotations");
      const desc = annotations["berth.dev/description"] ?? annotations.description;
      if (desc !== undefined)
        this.values.description.push({ value: String(desc), from: `${sourceRef(ns)} metadata.annotations` });
    }
  }

  private mapQuotas(objects: SourceObject[]): void {
    for (const q of this.unhandled(objects, "ResourceQuota")) {
      this.handled.add(q);
      this.values.quota.push({ value: mapQuota(q.obj, sourceRef(q), this.issue), from: sourceRef(q) });
    }
  }

  private mapLimitRanges(cluster: string, objects: SourceObject[]): void {
    for (const l of this.unhandled(objects, "LimitRange")) {
      this.handled.add(l);
      const { value, rest } = mapLimits(l.obj, sourceRef(l), this.issue);
      this.values.containerLimits.push({ value, from: sourceRef(l) });
      // min, max and other entries stay, as the team's own LimitRange; Berth's holds the defaults.
      if (rest) this.carry(cluster, l, rest(structuredClone(this.carriedOf.get(l) ?? l.obj)));
    }
  }

  /** RoleBindings of the admin ClusterRole to Entra ID groups only: the owners. Any other binding is the team's own. */
  private mapOwners(cluster: string, objects: SourceObject[]): void {
    const groups: string[] = [];
    for (const rb of this.unhandled(objects, "RoleBinding")) {
      const role = recordAt(rb.obj, "roleRef");
      const listed = valueAt(rb.obj, "subjects");
      const subjects: unknown[] = Array.isArray(listed) ? listed : [];
      const ownersBinding =
        role.kind === "ClusterRole" &&
        role.name === "admin" &&
        subjects.length > 0 &&
        subjects.every((s) => valueAt(s, "kind") === "Group" && LOWERCASE_GUID.test(String(valueAt(s, "name"))));
      if (!ownersBinding) {
        this.carry(cluster, rb); // another role, or other subjects: the team's own binding
        continue;
      }
      this.handled.add(rb);
      groups.push(...subjects.map((s) => String(valueAt(s, "name"))));
    }
    if (groups.length)
      this.values.owners.push({ value: [...new Set(groups)].sort(), from: `RoleBinding(s) on ${cluster}` });
  }

  /** The team's ServiceAccount and the ASO credential Secret, which Berth renders or writes itself; other Secrets are refused. */
  private recogniseRendered(cluster: string, objects: SourceObject[]): void {
    const names = teamNames(this.name);
    for (const sa of this.unhandled(objects, "ServiceAccount")) {
      if (nameOf(sa.obj) === names.serviceAccount) this.handled.add(sa);
      else this.carry(cluster, sa);
    }
    for (const secret of this.unhandled(objects, "Secret")) {
      this.handled.add(secret);
      if (nameOf(secret.obj) === names.asoCredentialSecret) this.out.controllerOwned.add(secret);
      else
        this.issue(
          sourceRef(secret),
          "is a Secret: adoption does not carry secrets into the team spec (it is readable as the Team object); keep it out of git (sealed or external secrets) and adopt again",
        );
    }
  }

  /** One resource group and one identity per cluster: their Azure names are compared with Berth's in plan.ts. */
  private mapAzureObjects(cluster: string, objects: SourceObject[]): AzureObjects {
    const found: AzureObjects = {};
    for (const [kind, key] of [
      ["ResourceGroup", "rg"],
      ["UserAssignedIdentity", "identity"],
    ] as const) {
      const list = this.unhandled(objects, kind);
      for (const o of list) this.handled.add(o);
      const [first, second] = list;
      if (second) this.issue(sourceRef(second), `a second ${kind} on ${cluster}; Berth gives a team one per cluster`);
      if (first) found[key] = first;
    }
    this.out.azureObjects.set(cluster, found);
    return found;
  }

  private mapRoleAssignments(cluster: Cluster, objects: SourceObject[], azure: AzureObjects): void {
    const clusterRoles: string[] = [];
    const vars = configVars(cluster);
    for (const ra of this.unhandled(objects, "RoleAssignment")) {
      this.handled.add(ra);
      const match = mapRole(ra.obj, azure.rg?.obj, this.platform.roleCatalog, vars, sourceRef(ra), this.issue);
      if (match) {
        clusterRoles.push(match.role);
        this.out.roles.push({ cluster: cluster.name, object: sourceRef(ra), ...match });
      }
    }
    this.values.roleAssignments.push({
      value: [...new Set(clusterRoles)].sort().map((role) => ({ role })),
      from: `RoleAssignments on ${cluster.name}`,
    });
  }

  /**
   * A Flux source of the team kept in the platform's Flux namespace: a source.toolkit.fluxcd.io object there, in the
   * team's own build, named after the team (`<team>` or `<team>-...`, e.g. `ledger-helm-repo`). ADR 0027.
   */
  private isTeamSource(o: SourceObject): boolean {
    const name = String(nameOf(o.obj));
    return (
      groupOf(o.obj) === FLUX_SOURCE_GROUP &&
      this.fluxNamespaces.has(String(namespaceOf(o.obj))) &&
      (name === this.name || name.startsWith(`${this.name}-`))
    );
  }

  /**
   * The team's Flux sources move into its namespace under the same name (ADR 0027): Berth's team applier may write
   * only `<team>` and `<team>--*` in the ASO namespace, nothing in another Flux namespace. The references the team's
   * carried objects make to them follow; the old source stays on the cluster (nothing is deleted) for the
   * references outside the team's tree (HelmReleases of other Kustomizations) until they are repointed.
   */
  private moveTeamSources(cluster: string, objects: SourceObject[]): void {
    const moves: Array<{ kind: string; name: string; from: string }> = [];
    for (const o of objects) {
      if (this.handled.has(o) || !this.isTeamSource(o)) continue;
      const kind = kindOf(o.obj);
      const name = String(nameOf(o.obj));
      const from = String(namespaceOf(o.obj));
      const taken = objects.find(
        (other) =>
          other !== o &&
          kindOf(other.obj) === kind &&
          nameOf(other.obj) === name &&
          namespaceOf(other.obj) === this.name,
      );
      if (taken) {
        this.handled.add(o);
        this.issue(
          sourceRef(o),
          `is the team's ${kind} in ${from}, which Berth moves into namespace ${this.name}, where ${sourceRef(taken)} has its name already`,
        );
        continue;
      }
      const object = structuredClone(this.carriedOf.get(o) ?? o.obj);
      recordAt(object, "metadata").namespace = this.name;
      this.carry(cluster, o, object);
      moves.push({ kind, name, from });
      this.out.moved.set(
        o,
        `the team's ${kind}, moved to ${kind} ${this.name}/${name} (Berth's team applier writes no other name in ${from}); this one stays on the cluster, unmanaged, for what still names ${from}/${name} (HelmReleases of other Kustomizations): point them at ${this.name}/${name}, then delete it`,
      );
    }
    // The team's own objects that name a moved source follow it.
    for (const { object } of this.out.extras.get(cluster) ?? [])
      for (const m of moves) repointSourceRefs(object, m.kind, m.name, m.from, this.name);
  }

  /** Everything not mapped is the team's own manifest, except Flux objects and ASO objects of other kinds in the ASO namespace. */
  private carryTheRest(cluster: string, objects: SourceObject[]): void {
    for (const o of objects) {
      if (this.handled.has(o)) continue;
      const kind = kindOf(o.obj);
      const group = groupOf(o.obj);
      if (
        (group === "kustomize.toolkit.fluxcd.io" && kind === "Kustomization") ||
        (group === "helm.toolkit.fluxcd.io" && kind === "HelmRelease")
      ) {
        this.handled.add(o);
        this.issue(
          sourceRef(o),
          `is a Flux ${kind}: it applies with Flux's own rights, beyond the team's namespace, so Berth does not carry it`,
        );
      } else if (namespaceOf(o.obj) !== this.name) {
        this.handled.add(o);
        this.issue(
          sourceRef(o),
          `${String(o.obj.apiVersion)} ${kind} in ${String(namespaceOf(o.obj))}: the only ASO objects Berth carries in ${this.platform.asoNamespace} are federated credentials of the team's identity`,
        );
      } else this.carry(cluster, o);
    }
  }
}

/** The API group of Flux's sources (HelmRepository, GitRepository, OCIRepository, Bucket). */
const FLUX_SOURCE_GROUP = "source.toolkit.fluxcd.io";

/** Every `{kind, name, namespace}` reference below `value` to the moved source, pointed at its new namespace. */
function repointSourceRefs(value: unknown, kind: string, name: string, from: string, to: string): void {
  if (Array.isArray(value)) {
    for (const v of value) repointSourceRefs(v, kind, name, from, to);
    return;
  }
  if (value === null || typeof value !== "object") return;
  const ref = value as Record<string, unknown>;
  if (ref.kind === kind && ref.name === name && ref.namespace === from && !("metadata" in ref)) ref.namespace = to;
  for (const v of Object.values(ref)) repointSourceRefs(v, kind, name, from, to);
}

/** A ResourceQuota's hard limits as Berth's quota (cpu, memory, pods; requests and limits equal). */
function mapQuota(q: Manifest, at: string, issue: Unmappable["add"]): unknown {
  const hard = recordAt(q, "spec", "hard");
  const pick = (a: string, b: string, c?: string) => {
    const values = [hard[a], hard[b], ...(c ? [hard[c]] : [])].filter((v) => v !== undefined).map(String);
    if (new Set(values).size > 1)
      issue(`${at} spec.hard`, `${a} and ${b} differ (${values.join(" vs ")}); Berth sets them equal`);
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

/** The entries of a LimitRange's spec.limits. */
function limitEntries(o: Manifest): unknown[] {
  const entries = valueAt(o, "spec", "limits");
  return Array.isArray(entries) ? entries : [];
}

/** A LimitRange entry without its Container defaults (Berth's LimitRange holds those). */
function withoutDefaults(entry: unknown): unknown {
  if (valueAt(entry, "type") !== "Container") return entry;
  return Object.fromEntries(Object.entries(recordAt(entry)).filter(([k]) => k !== "default" && k !== "defaultRequest"));
}

/**
 * A LimitRange's Container defaults (Berth's containerLimits), and — when it holds more (min, max,
 * maxLimitRequestRatio, entries for Pods or claims) — how to keep the rest as the team's own LimitRange.
 */
function mapLimits(
  l: Manifest,
  at: string,
  issue: Unmappable["add"],
): { value: unknown; rest?: (o: Manifest) => Manifest } {
  const entries = limitEntries(l);
  const containers = entries.filter(
    (e) =>
      valueAt(e, "type") === "Container" &&
      (valueAt(e, "default") !== undefined || valueAt(e, "defaultRequest") !== undefined),
  );
  const restOf = (o: Manifest): Manifest => {
    // An entry with nothing left but its type says nothing: dropped.
    recordAt(o, "spec").limits = limitEntries(o)
      .map(withoutDefaults)
      .filter((e) => typeof e !== "object" || e === null || Object.keys(e).some((k) => k !== "type"));
    return o;
  };
  const hasRest = limitEntries(restOf(structuredClone(l))).length > 0;
  if (containers.length === 0) return { value: undefined, ...(hasRest ? { rest: restOf } : {}) };
  if (containers.length > 1) {
    issue(
      `${at} spec.limits`,
      "two Container entries with defaults; Berth's LimitRange has one (default and defaultRequest)",
    );
    return { value: undefined };
  }
  const entry = containers[0];
  const pair = (o: unknown) => {
    const r = recordAt(o);
    return r.cpu !== undefined && r.memory !== undefined && Object.keys(r).length === 2
      ? { cpu: String(r.cpu), memory: String(r.memory) }
      : undefined;
  };
  const def = pair(valueAt(entry, "default"));
  const req = pair(valueAt(entry, "defaultRequest"));
  if (!def || !req) {
    issue(
      `${at} spec.limits`,
      "Berth's LimitRange needs default and defaultRequest, each with cpu and memory (nothing else)",
    );
    return { value: undefined };
  }
  return { value: { defaultRequest: req, default: def }, ...(hasRest ? { rest: restOf } : {}) };
}

type RoleCatalog = Platform["roleCatalog"];

/**
 * The catalog role a RoleAssignment grants: the same role definition, and the same scope — the team's
 * resource group, or the entry's ARM id with its `${VAR}`s resolved from what Berth knows of the cluster
 * ("exact"), or, for a variable Berth does not know, matched as any one path segment ("pattern", with
 * the value found). ARM ids compare case-insensitively, as Azure does.
 */
function mapRole(
  ra: Manifest,
  rg: Manifest | undefined,
  catalog: RoleCatalog,
  vars: Record<string, string>,
  at: string,
  issue: Unmappable["add"],
): Omit<RoleMatch, "cluster" | "object"> | undefined {
  const definition = String(valueAt(ra, "spec", "roleDefinitionReference", "armId") ?? "")
    .split("/")
    .at(-1)
    ?.toLowerCase();
  const owner = recordAt(ra, "spec", "owner");
  const scope =
    owner.armId !== undefined
      ? { kind: "armId" as const, armId: String(owner.armId) }
      : owner.kind === "ResourceGroup" || (owner.name && rg && owner.name === nameOf(rg))
        ? { kind: "teamResourceGroup" as const }
        : undefined;
  if (!definition || !scope) {
    issue(`${at} spec`, "cannot tell its role definition or scope (roleDefinitionReference.armId and owner)");
    return undefined;
  }
  for (const entry of catalog) {
    if (entry.roleDefinitionId.toLowerCase() !== definition || entry.scope.kind !== scope.kind) continue;
    if (scope.kind === "teamResourceGroup") return { role: entry.id, scope: "team-resource-group" };
    if (entry.scope.kind !== "armId") continue;
    const m = matchArmId(entry.scope.armId, scope.armId, vars);
    if (m)
      return {
        role: entry.id,
        scope: m.unresolved.length ? "pattern" : "exact",
        ...(m.unresolved.length ? { variables: Object.fromEntries(m.unresolved) } : {}),
      };
  }
  issue(
    `${at} spec.roleDefinitionReference`,
    `role definition ${definition} on ${scope.kind === "armId" ? scope.armId : "the team's resource group"} is not in the platform's role catalog`,
  );
  return undefined;
}

/** `pattern` (an ARM id with `${VAR}`s) against a concrete ARM id, case-insensitively. */
export function matchArmId(
  pattern: string,
  armId: string,
  vars: Record<string, string>,
): { unresolved: Array<[string, string]> } | undefined {
  const names: string[] = [];
  let source = "";
  let last = 0;
  for (const m of pattern.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)) {
    const [whole, name] = m;
    if (name === undefined) throw new Error(`${pattern}: \${…} without a variable name`); // (the name group always takes part)
    source += escapeRegex(pattern.slice(last, m.index));
    const known = vars[name];
    if (known !== undefined) source += escapeRegex(known);
    else {
      names.push(name);
      source += "([^/]+)";
    }
    last = m.index + whole.length;
  }
  source += escapeRegex(pattern.slice(last));
  const match = new RegExp(`^${source}$`, "i").exec(armId);
  if (!match) return undefined;
  // One group per unresolved name, in order; each takes part in every match.
  const unresolved = names.map((n, i): [string, string] => {
    const value = match[i + 1];
    if (value === undefined) throw new Error(`${pattern}: matching ${armId} gave no value for \${${n}}`);
    return [n, value];
  });
  return { unresolved };
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
