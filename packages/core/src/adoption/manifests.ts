import { isMap, parseAllDocuments } from "yaml";
import { YAML_PARSE_OPTIONS } from "../serialize.js";

/**
 * The objects adoption reads, and how it reads them. A hand-written object is whatever its author wrote:
 * parseManifestFile checked only apiVersion, kind and metadata.name, so every other field is `unknown` until
 * a step reads it (valueAt, recordAt) or parses it with a schema.
 */

/** A Kubernetes object as built (kustomize, then Flux's substitution). */
export type Manifest = Record<string, unknown>;

/** One built object, where it came from, and the cluster whose Flux Kustomization builds it. */
export interface SourceObject {
  obj: Manifest;
  file: string;
  cluster: string;
}

/** The value at `path` below `value`; undefined where a step is missing or not an object (as `?.` reads). */
export function valueAt(value: unknown, ...path: string[]): unknown {
  let at = value;
  for (const key of path) {
    if (at === null || typeof at !== "object") return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

/** The mapping at `path`, or an empty one when there is none. */
export function recordAt(value: unknown, ...path: string[]): Record<string, unknown> {
  const at = valueAt(value, ...path);
  return at !== null && typeof at === "object" && !Array.isArray(at) ? (at as Record<string, unknown>) : {};
}

export const kindOf = (o: Manifest): string => String(o.kind);
export const nameOf = (o: Manifest): unknown => valueAt(o, "metadata", "name");
export const namespaceOf = (o: Manifest): unknown => valueAt(o, "metadata", "namespace");
/** The API group of `apiVersion` ("" for the core group). */
export const groupOf = (o: Manifest): string => /^([^/]*)\//.exec(String(o.apiVersion))?.[1] ?? "";
/** What makes two objects the same object on a cluster: group, kind, namespace and name. */
export const identityOf = (o: Manifest): string =>
  `${String(o.apiVersion).split("/")[0]}|${kindOf(o)}|${String(namespaceOf(o) ?? "")}|${String(nameOf(o))}`;

/** `Kind namespace/name`, as the report names an object. */
export function describeObject(o: Manifest): string {
  const ns = namespaceOf(o);
  return `${kindOf(o)} ${ns ? `${String(ns)}/` : ""}${String(nameOf(o))}`;
}

/** `file#Kind/namespace/name`: where a problem with an object is, for the report's issues. */
export function sourceRef(o: SourceObject): string {
  const ns = namespaceOf(o.obj);
  return `${o.file}#${kindOf(o.obj)}/${ns ? `${String(ns)}/` : ""}${String(nameOf(o.obj))}`;
}

export const FLUX_KUSTOMIZATION_GROUP = "kustomize.toolkit.fluxcd.io";
/** Groups of the ASO objects Berth renders for a team. */
export const ASO_GROUPS = new Set(["resources.azure.com", "managedidentity.azure.com", "authorization.azure.com"]);
/** The ASO annotation that says what deleting the object does to its Azure resource. */
export const RECONCILE_POLICY = "serviceoperator.azure.com/reconcile-policy";

export function isFluxKustomization(o: unknown): o is Manifest {
  const apiVersion = valueAt(o, "apiVersion");
  return (
    valueAt(o, "kind") === "Kustomization" &&
    typeof apiVersion === "string" &&
    apiVersion.startsWith(`${FLUX_KUSTOMIZATION_GROUP}/`)
  );
}

/**
 * The hand-written Flux Kustomization with `suspend: true` and `prune: false`, edited in place (its
 * comments and layout kept): Flux stops applying it, and deleting it later deletes nothing of the team.
 * `shared` says whether the file holds other documents too (often every tenant's Kustomization of a cluster, the
 * others live and pruning): then only this document may go, never the file.
 */
export function suspendKustomization(
  text: string | undefined,
  name: string,
  teamSpec: string,
): { text: string; shared: boolean } {
  const docs = parseAllDocuments(text ?? "", YAML_PARSE_OPTIONS);
  const others = docs.filter((d) => {
    const o: unknown = d.toJS();
    return o !== null && o !== undefined && !(isFluxKustomization(o) && nameOf(o) === name);
  });
  const shared = others.length > 0;
  for (const doc of docs) {
    const o: unknown = doc.toJS();
    if (!isFluxKustomization(o) || nameOf(o) !== name) continue;
    doc.setIn(["spec", "suspend"], true);
    doc.setIn(["spec", "prune"], false);
    const spec = doc.getIn(["spec"], true);
    if (isMap(spec)) {
      spec.commentBefore = shared
        ? ` Adopted by Berth (${teamSpec}): suspended and not pruning, so removing this document deletes nothing.\n Once every cluster applied the adoption commit, remove this document (not the file, which holds other documents).`
        : ` Adopted by Berth (${teamSpec}): suspended and not pruning, so deleting this file deletes nothing.\n Delete it once every cluster applied the adoption commit.`;
    }
  }
  return { text: docs.map((d) => d.toString({ lineWidth: 0 })).join(""), shared };
}

/** Every object of rendered YAML files (Berth's own render: well formed by construction). */
export function renderedObjects(files: Iterable<string>): Manifest[] {
  return [...files]
    .flatMap((text) => parseAllDocuments(text, YAML_PARSE_OPTIONS).map((d): unknown => d.toJS()))
    .filter((o): o is Manifest => o !== null && typeof o === "object");
}
