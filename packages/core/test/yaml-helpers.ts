/** YAML reading helpers for tests: how Kubernetes, kustomize and Flux would read Berth's output. */
import { isAlias, isMap, isScalar, parseAllDocuments, Scalar, visit, type Document } from "yaml";

export type YamlVersion = "1.1" | "1.2";

/** Every document of a file under one YAML version; throws on any error or warning. */
export function parseDocs(text: string, version: YamlVersion): Document.Parsed[] {
  const docs = parseAllDocuments(text, { version, uniqueKeys: true, prettyErrors: true });
  if (!Array.isArray(docs)) throw new Error("not a YAML stream");
  for (const doc of docs) {
    const problem = doc.errors[0] ?? doc.warnings[0];
    if (problem) throw new Error(`YAML ${version}: ${problem.message}`);
  }
  return docs;
}

/** The plain JS objects of a file under one YAML version (no aliases allowed). */
export function parseObjects(text: string, version: YamlVersion): unknown[] {
  return parseDocs(text, version).map((d) => d.toJS({ maxAliasCount: 0 }));
}

export function hasAnchorsOrAliases(doc: Document.Parsed): boolean {
  let found = false;
  visit(doc, {
    Node(_key, node) {
      if (isAlias(node) || ("anchor" in node && node.anchor)) found = true;
    },
  });
  return found;
}

/**
 * How Go's yaml (gopkg.in/yaml.v2 and v3, used by Kubernetes' sigs.k8s.io/yaml, kustomize and Flux)
 * resolves an untagged plain scalar. Written from yaml.v2's resolve.go: a fixed table of booleans and
 * nulls, then for anything starting with a digit, sign or dot: `_` removed, strconv base-0 integers,
 * YAML-style floats, 0b binaries, and timestamps.
 */
const GO_BOOL = new Set(
  "y Y yes Yes YES on On ON true True TRUE n N no No NO off Off OFF false False FALSE".split(" "),
);
const GO_NULL = new Set(["", "~", "null", "Null", "NULL"]);
const GO_SPECIAL_FLOAT = new Set(".inf .Inf .INF +.inf +.Inf +.INF -.inf -.Inf -.INF .nan .NaN .NAN".split(" "));
export function goYamlType(plain: string): "bool" | "null" | "int" | "float" | "timestamp" | "merge" | "str" {
  if (GO_BOOL.has(plain)) return "bool";
  if (GO_NULL.has(plain)) return "null";
  if (GO_SPECIAL_FLOAT.has(plain)) return "float";
  if (plain === "<<") return "merge";
  if (!/^[-+.0-9]/.test(plain)) return "str";
  if (/^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:$|[Tt ])/.test(plain)) return "timestamp";
  const s = plain.replaceAll("_", "");
  if (/^[-+]?(?:0[xX][0-9a-fA-F]+|0[oO]?[0-7]+|0[bB][01]+|[0-9]+)$/.test(s)) return "int";
  if (/^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/.test(s)) return "float";
  return "str";
}

/** Plain (unquoted) scalars of a document with the JS value YAML gave them. */
export function plainScalars(doc: Document.Parsed): Array<{ source: string; value: unknown }> {
  const out: Array<{ source: string; value: unknown }> = [];
  visit(doc, {
    Scalar(_key, node) {
      if (isScalar(node) && node.type === Scalar.PLAIN && node.source !== undefined)
        out.push({ source: node.source, value: node.value });
    },
  });
  return out;
}

/** Disagreements between the yaml package's reading of plain scalars and Go's. */
export function goDisagreements(doc: Document.Parsed): string[] {
  return plainScalars(doc)
    .filter(({ source, value }) => {
      const go = goYamlType(source);
      const js =
        value === null ? "null" : typeof value === "boolean" ? "bool" : typeof value === "number" ? "num" : "str";
      if (go === "int" || go === "float") return js !== "num";
      if (go === "timestamp" || go === "merge") return true; // never acceptable unquoted in output
      return go !== js;
    })
    .map(({ source }) => source);
}

export function isObjectMap(doc: Document.Parsed): boolean {
  return isMap(doc.contents);
}

/**
 * A rendered Kubernetes object as the tests read it: the fields Berth's templates always write, typed (the
 * round-trip test checks they are there); what a test reads of `spec` beyond these is unknown until it narrows.
 */
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: {
    azureName?: string;
    path?: string;
    labels?: Record<string, string>;
    description?: string;
    [field: string]: unknown;
  };
  /** A kustomization's. */
  resources?: string[];
}

/** parseObjects for a file of rendered Kubernetes objects. */
export function parseManifests(text: string, version: YamlVersion): Manifest[] {
  return parseObjects(text, version) as Manifest[];
}
