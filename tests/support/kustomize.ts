/**
 * kustomize and Flux, as a cluster's Flux would run them: `kubectl kustomize` (kubectl 1.32, kustomize v5.5,
 * preinstalled here; the same builder as Flux's kustomize-controller, before substitution) and Flux's postBuild
 * substitution.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { parseAllDocuments } from "yaml";

const run = promisify(execFile);

export type KubeObject = {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [k: string]: unknown;
  };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- install and image tests read built manifests at any depth; a precise type per kind is follow-up work
  [k: string]: any;
};

/** `kubectl kustomize <dir>` as text; rejects with kustomize's message. */
export async function kustomizeText(dir: string): Promise<string> {
  try {
    return (await run("kubectl", ["kustomize", dir], { maxBuffer: 64 * 1024 * 1024 })).stdout;
  } catch (err) {
    throw new Error(
      `kubectl kustomize ${dir} failed: ${(err as { stderr?: string }).stderr || (err as Error).message}`,
      { cause: err },
    );
  }
}

/** Parses YAML documents as Kubernetes reads them (YAML 1.1), skipping empty ones. */
export function parseManifests(text: string, source: string): KubeObject[] {
  return parseAllDocuments(text, { version: "1.1" }).flatMap((doc) => {
    if (doc.errors.length) throw new Error(`${source}: ${doc.errors[0]!.message}`);
    const obj = doc.toJS() as KubeObject | null;
    return obj ? [obj] : [];
  });
}

/** `kubectl kustomize <dir>`, parsed. */
export async function kustomizeBuild(dir: string): Promise<KubeObject[]> {
  return parseManifests(await kustomizeText(dir), dir);
}

/** Flux postBuild substitution, strict (Flux 2.9): an undefined variable fails the build; `$${VAR}` escapes. */
export function fluxSubstitute(text: string, vars: Record<string, string>, source: string): string {
  return text.replace(/(\$?)\$\{([^}]*)\}/g, (m, esc: string, name: string) => {
    if (esc) return m.slice(1);
    const value = vars[name];
    if (value === undefined)
      throw new Error(`${source}: \${${name}} is not in platform-vars (Flux would fail the whole build)`);
    return value;
  });
}
