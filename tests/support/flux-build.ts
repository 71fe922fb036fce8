/**
 * What Flux's kustomize-controller builds from the Flux repo, for the fast render dry-run test
 * (tests/kube/render-dry-run.test.ts): follow a folder's `kustomization.yaml` resources (nested folders such as
 * `../../base` included), then substitute `${VAR}` from platform-vars strictly, as Flux 2.9 does. Enough for the
 * layout Berth writes (plain resource lists). A stand-in: tests/flux/chain.test.ts holds it to real Flux (the same
 * files give exactly the objects kustomize-controller applied).
 */
import { parseAllDocuments } from "yaml";

/** A repo path with `.` and `..` segments resolved. */
export function normalizeRepoPath(path: string): string {
  const parts: string[] = [];
  for (const seg of path.split("/")) {
    if (seg === "..") parts.pop();
    else if (seg !== "." && seg !== "") parts.push(seg);
  }
  return parts.join("/");
}

/** Every manifest file a kustomization folder builds from, in order; `seen` collects the kustomization files. */
export function kustomizeFiles(files: ReadonlyMap<string, string>, dir: string, seen = new Set<string>()): string[] {
  const k = `${dir}/kustomization.yaml`;
  const text = files.get(k);
  if (text === undefined) throw new Error(`${k} does not exist`);
  if (seen.has(k)) throw new Error(`${k} is included twice`);
  seen.add(k);
  const { resources } = parseYamlObjects(text)[0] as { resources: string[] };
  const out: string[] = [];
  for (const r of resources) {
    const path = normalizeRepoPath(`${dir}/${r}`);
    if (files.has(path)) out.push(path);
    else out.push(...kustomizeFiles(files, path, seen));
  }
  return out;
}

/** Flux postBuild substitution, strict: an undefined variable fails the whole build; `$${VAR}` escapes. */
export function substituteFluxVars(text: string, vars: Readonly<Record<string, string>>, source: string): string {
  return text.replace(/(\$?)\$\{([^}]*)\}/g, (m, esc: string, name: string) => {
    if (esc) return m.slice(1);
    const value = vars[name];
    if (value === undefined)
      throw new Error(`${source}: \${${name}} is not in platform-vars (Flux would fail the whole build)`);
    return value;
  });
}

/** The objects of a YAML file as Kubernetes reads it (1.1); throws on any parse error. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests/flux/* and tests/support/flux*.ts (moving now) read it at any depth; typed after they land
export function parseYamlObjects(text: string): Array<Record<string, any>> {
  return parseAllDocuments(text, { version: "1.1", uniqueKeys: true }).map((d) => {
    if (d.errors[0]) throw new Error(d.errors[0].message);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    return d.toJS({ maxAliasCount: 0 }) as Record<string, any>;
  });
}
