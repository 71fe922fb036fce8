import { CST, isScalar, isSeq, parseDocument, Parser, type Document } from "yaml";

/**
 * Editing the fleet repository's YAML in place, as `berth cluster add` and `berth cluster slices` do: what Berth does
 * not own in a file (comments, other documents, other entries) is kept as it was.
 */

/** Why a cluster's Flux files cannot be written as asked. */
export class ClusterInstallError extends Error {
  override readonly name = "ClusterInstallError";
}

/**
 * Each document of a multi-document file, `edit` applied; refused when no document was edited. A document `edit`
 * leaves alone is kept byte for byte (its comments and line breaks), an edited one is written again.
 */
export function editDocuments(
  text: string,
  path: string,
  edit: (doc: Document.Parsed, o: { kind?: string; name?: string }) => boolean,
): string {
  let edited = 0;
  let out = "";
  for (const token of new Parser().parse(text)) {
    const source = CST.stringify(token);
    if (token.type !== "document") {
      out += source;
      continue;
    }
    const doc = parseDocument(source);
    const [error] = doc.errors;
    if (error) throw new ClusterInstallError(`${path}: ${error.message}`);
    const o = doc.toJS() as { kind?: string; metadata?: { name?: string } } | null;
    if (o && edit(doc, { kind: o.kind, name: o.metadata?.name })) {
      edited++;
      out += doc.toString({ lineWidth: 0, flowCollectionPadding: false });
    } else out += source;
  }
  if (edited === 0) throw new ClusterInstallError(`${path} does not hold the object Berth installs there`);
  return out;
}

/** The resources a kustomization.yaml lists (none when it is absent or lists none). */
export function resourcesOf(text: string | undefined): string[] {
  const resources = (text === undefined ? undefined : (parseDocument(text).toJS() as { resources?: unknown } | null))
    ?.resources;
  return Array.isArray(resources) ? resources.filter((r): r is string => typeof r === "string") : [];
}

/** A kustomization.yaml with `resource` listed last; as it was when listed already. */
export function withResource(text: string, path: string, resource: string): string {
  const doc = parseDocument(text);
  const resources = doc.get("resources");
  if (!isSeq(resources)) throw new ClusterInstallError(`${path} has no resources list`);
  if (resources.items.some((i) => isScalar(i) && i.value === resource)) return text;
  resources.add(doc.createNode(resource));
  return doc.toString({ lineWidth: 0 });
}

/** A kustomization.yaml without `resource`. */
export function withoutResource(text: string, path: string, resource: string): string {
  const doc = parseDocument(text);
  const resources = doc.get("resources");
  if (!isSeq(resources)) throw new ClusterInstallError(`${path} has no resources list`);
  resources.items = resources.items.filter((i) => !(isScalar(i) && i.value === resource));
  return doc.toString({ lineWidth: 0 });
}
