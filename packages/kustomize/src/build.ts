// Default import: fast-json-patch is CommonJS for Node, whose named exports Node's ESM loader cannot see.
import fastJsonPatch, { type Operation } from "fast-json-patch";
import { Composer, isMap, isSeq, Parser, parseAllDocuments, stringify, visit, type Document } from "yaml";
import { KustomizeError } from "./errors.js";
import { PlainVar } from "./flux-substitute.js";
import { YAML_PARSE_OPTIONS } from "./yaml.js";

/** What a build reads: a tree of files, e.g. one commit of the Flux repo (core's RepoTree is one). */
export interface SourceTree {
  /** The file's text, or undefined when it does not exist. */
  read(path: string): Promise<string | undefined>;
  /** Every file path below `dir` (recursive), sorted; empty when the folder does not exist. */
  list(dir: string): Promise<readonly string[]>;
}

/**
 * What kustomize builds from a folder of the Flux repo, for adoption (docs/decisions/0014-adoption-build.md).
 *
 * A subset of kustomize v5, built in-process on the repo tree: `resources` (files and nested
 * kustomizations, `bases`), `namespace`, `namePrefix`/`nameSuffix`, `commonLabels`/`labels`,
 * `commonAnnotations`, `patches`, `patchesStrategicMerge` and `patchesJson6902`, in kustomize's order.
 * Anything else — generators, components, replacements, images, remote resources, a strategic-merge patch
 * that sets a list, a name reference kustomize would rewrite — is refused with the file and the feature,
 * never approximated. tests/kustomize/differential.test.ts builds every fixture with this and with
 * `kubectl kustomize` (kustomize v5.5) and requires the same objects.
 *
 * Every build runs under a BuildBudget: bytes, documents, resource entries, nesting depth and time are
 * bounded, and the budget's checkpoint lets the caller yield to its event loop between files.
 */

/**
 * A Kubernetes object as kustomize handles it: whatever its author wrote, walked field by field as kustomize
 * walks it. `any` on purpose, in this one place: the build reads and writes fields of every kind of object
 * (patches, name references, labels), and each value whose shape matters is checked where it is read
 * (parseManifestFile checks apiVersion, kind and metadata.name; the builder checks lists and maps it edits).
 * No narrower type holds: a JSON 6902 patch may rewrite or remove any field, those checked included.
 * Code that maps objects onto something typed reads them as `unknown` instead (adoption/manifests.ts).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a hand-written object of any kind, any field rewritable by a patch: see above
export type KubeObject = Record<string, any>;
export interface BuiltObject {
  obj: KubeObject;
  /** The file the object came from. */
  file: string;
}
export interface Build {
  objects: BuiltObject[];
  /** Every file the build read (kustomization files, resources, patches), in reading order. */
  files: string[];
}

export interface BuildLimits {
  /** Largest file read. */
  maxFileBytes: number;
  /** All files read by one adoption. */
  maxTotalBytes: number;
  /** YAML documents parsed by one adoption. */
  maxDocuments: number;
  /** Entries of one kustomization's `resources` (and patches). */
  maxEntries: number;
  /** Nested kustomizations below a Flux Kustomization's path. */
  maxDepth: number;
  /** Flux Kustomizations built by one adoption. */
  maxBuilds: number;
  /** Wall time of one adoption's discovery, in milliseconds. */
  maxMillis: number;
}

export const DEFAULT_BUILD_LIMITS: Readonly<BuildLimits> = Object.freeze({
  maxFileBytes: 1024 * 1024,
  maxTotalBytes: 16 * 1024 * 1024,
  maxDocuments: 5_000,
  maxEntries: 500,
  maxDepth: 16,
  maxBuilds: 64,
  maxMillis: 10_000,
});

/** A limit of the BuildBudget was reached: the work stops there. */
export class BuildLimitError extends KustomizeError {
  override readonly name = "BuildLimitError";
  readonly kind = "limit";
  constructor(
    readonly limit: keyof BuildLimits,
    readonly value: number,
    message: string,
  ) {
    super(message);
  }
}

/** The folder cannot be built, or not the way kustomize would: `file` says where. */
export class KustomizeBuildError extends KustomizeError {
  override readonly name = "KustomizeBuildError";
  readonly kind = "build";
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(`${file}: ${message}`);
  }
}

/**
 * What one adoption may still read and parse. `pause` is the caller's way to let other work run (the API
 * yields to its event loop); the domain only calls it between files.
 */
export class BuildBudget {
  bytes = 0;
  documents = 0;
  builds = 0;
  private readonly started: number;
  private lastPause: number;

  constructor(
    readonly limits: BuildLimits = DEFAULT_BUILD_LIMITS,
    private readonly clock: { now(): number; pause?(): Promise<void> } = { now: () => Date.now() },
  ) {
    this.started = clock.now();
    this.lastPause = this.started;
  }

  /** Between two files: refuses past the time limit, and pauses at most every 10 ms of work. */
  async checkpoint(): Promise<void> {
    const now = this.clock.now();
    if (now - this.started > this.limits.maxMillis) {
      throw new BuildLimitError(
        "maxMillis",
        this.limits.maxMillis,
        `building the hand-written tree took longer than ${this.limits.maxMillis} ms, adoption's limit`,
      );
    }
    if (this.clock.pause && now - this.lastPause >= 10) {
      await this.clock.pause();
      this.lastPause = this.clock.now();
    }
  }

  /** A file's text, counted against the byte limits; undefined when it does not exist. */
  async read(tree: SourceTree, path: string): Promise<string | undefined> {
    await this.checkpoint();
    const text = await tree.read(path);
    if (text === undefined) return undefined;
    const bytes = utf8Length(text);
    if (bytes > this.limits.maxFileBytes) {
      throw new BuildLimitError(
        "maxFileBytes",
        this.limits.maxFileBytes,
        `${path} is ${bytes} bytes; adoption reads files of at most ${this.limits.maxFileBytes} bytes`,
      );
    }
    this.bytes += bytes;
    if (this.bytes > this.limits.maxTotalBytes) {
      throw new BuildLimitError(
        "maxTotalBytes",
        this.limits.maxTotalBytes,
        `adoption read more than ${this.limits.maxTotalBytes} bytes (at ${path}), its limit`,
      );
    }
    return text;
  }

  countDocument(path: string): void {
    if (++this.documents > this.limits.maxDocuments) {
      throw new BuildLimitError(
        "maxDocuments",
        this.limits.maxDocuments,
        `adoption parsed more than ${this.limits.maxDocuments} YAML documents (at ${path}), its limit`,
      );
    }
  }

  countBuild(what: string): void {
    if (++this.builds > this.limits.maxBuilds) {
      throw new BuildLimitError(
        "maxBuilds",
        this.limits.maxBuilds,
        `adoption would build more than ${this.limits.maxBuilds} Flux Kustomizations (at ${what}), its limit`,
      );
    }
  }
}

function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x80) bytes += c >= 0x800 && (c < 0xd800 || c > 0xdfff) ? 2 : c >= 0x800 ? 0 : 1;
  }
  return bytes;
}

/**
 * The Kubernetes objects of one YAML file, each checked to be one (a mapping with apiVersion, kind and
 * metadata.name). Plain scalars holding `${` become PlainVar, for Flux's substitution. Anchors and aliases
 * are refused: an alias can expand without bound, and a hand-written team has no need of them.
 */
export async function parseManifestFile(text: string, path: string, budget: BuildBudget): Promise<KubeObject[]> {
  const out: KubeObject[] = [];
  let i = 0;
  const take = (doc: Document.Parsed) => {
    budget.countDocument(path);
    // Documents after the first are numbered; a single-document file's errors need no number.
    const at = ++i > 1 ? `document ${i}: ` : "";
    const yamlError = firstYamlError(doc);
    if (yamlError !== undefined) throw new KustomizeBuildError(path, `${at}not valid YAML: ${yamlError}`);
    visit(doc, {
      Alias() {
        throw new KustomizeBuildError(
          path,
          `${at}uses a YAML alias; adoption reads no anchors or aliases (one can expand without bound): write the values out`,
        );
      },
      Scalar(key, node) {
        // kustomize writes every string plain that YAML allows plain, whatever the source's quotes: Flux
        // then substitutes that text, so `"${CPU}"` reads as a number once substituted, as on the cluster.
        if (key !== "key" && typeof node.value === "string" && node.value.includes("${") && writtenPlain(node.value))
          node.value = new PlainVar(node.value);
      },
    });
    const obj = doc.toJS({ maxAliasCount: 0 }) as unknown;
    if (obj === null || obj === undefined) return;
    if (typeof obj !== "object" || Array.isArray(obj)) {
      const what =
        typeof obj === "string"
          ? `the text ${JSON.stringify(obj.length > 60 ? `${obj.slice(0, 60)}...` : obj)}`
          : Array.isArray(obj)
            ? "a list"
            : `a ${typeof obj}`;
      throw new KustomizeBuildError(
        path,
        `${at}holds ${what}, not a Kubernetes object${typeof obj === "string" ? " (a symbolic link? Berth reads no links)" : ""}`,
      );
    }
    const o = obj as KubeObject;
    const text = (v: unknown) => (typeof v === "string" || v instanceof PlainVar) && String(v) !== "";
    const missing = ["apiVersion", "kind"].filter((k) => typeof o[k] !== "string" || o[k] === "");
    if (!text(o.metadata?.name)) missing.push("metadata.name");
    if (missing.length)
      throw new KustomizeBuildError(path, `${at}is not a Kubernetes object: no ${missing.join(", ")}`);
    out.push(o);
  };
  // One document at a time (yaml's streaming parser), with a checkpoint between documents: a large file
  // never holds the caller's event loop for long.
  const composer = new Composer(YAML_PARSE_OPTIONS);
  for (const token of new Parser().parse(text)) {
    for (const doc of composer.next(token)) {
      take(doc as Document.Parsed);
      await budget.checkpoint();
    }
  }
  for (const doc of composer.end()) take(doc as Document.Parsed);
  return out;
}

/** The first line of a parsed document's first error; undefined when it parsed cleanly. */
function firstYamlError(doc: Pick<Document.Parsed, "errors">): string | undefined {
  const [error] = doc.errors;
  return error?.message.split("\n")[0];
}

/** Whether YAML writes this string without quotes (kustomize's output, as the yaml package's). */
function writtenPlain(value: string): boolean {
  const text = stringify(value, { version: "1.1", lineWidth: 0 }).trimEnd();
  return !text.startsWith('"') && !text.startsWith("'") && !text.startsWith("|") && !text.startsWith(">");
}

/** The names kustomize reads a folder's kustomization from. */
export const KUSTOMIZATION_FILES = ["kustomization.yaml", "kustomization.yml", "Kustomization"];
/** The kustomization fields built here; any other is refused by name. */
const SUPPORTED_FIELDS = new Set([
  "apiVersion",
  "kind",
  "metadata",
  "resources",
  "bases",
  "namespace",
  "namePrefix",
  "nameSuffix",
  "commonLabels",
  "labels",
  "commonAnnotations",
  "patches",
  "patchesStrategicMerge",
  "patchesJson6902",
]);
const SUPPORTED_LIST =
  "resources, namespace, namePrefix, nameSuffix, commonLabels, labels, commonAnnotations, patches, patchesStrategicMerge, patchesJson6902";

/** Kinds kustomize treats as cluster-scoped (no namespace set); any other kind, custom ones included, is namespaced. */
export const CLUSTER_SCOPED_KINDS = new Set([
  "Namespace",
  "ClusterRole",
  "ClusterRoleBinding",
  "CustomResourceDefinition",
  "PersistentVolume",
  "StorageClass",
  "PriorityClass",
  "IngressClass",
  "RuntimeClass",
  "CSIDriver",
  "CSINode",
  "VolumeAttachment",
  "Node",
  "APIService",
  "ValidatingWebhookConfiguration",
  "MutatingWebhookConfiguration",
  "ValidatingAdmissionPolicy",
  "ValidatingAdmissionPolicyBinding",
  "CertificateSigningRequest",
  "FlowSchema",
  "PriorityLevelConfiguration",
  "ComponentStatus",
  "PodSecurityPolicy",
]);
/** Kinds whose selectors and pod templates kustomize's label and annotation transformers also change. */
const WORKLOAD_KINDS = new Set([
  "Service",
  "ReplicationController",
  "Deployment",
  "ReplicaSet",
  "DaemonSet",
  "StatefulSet",
  "Job",
  "CronJob",
  "PodDisruptionBudget",
]);

interface Resource {
  obj: KubeObject;
  file: string;
  /** Name and namespace before this build's prefix, suffix and namespace: what references name. */
  origName: string;
  origNamespace: string | undefined;
}

/**
 * Builds `dir` as Flux does: its kustomization file, or — for the Flux Kustomization's own path only — a
 * generated one listing every manifest below it (a sub-folder holding a kustomization is built as one).
 */
export async function kustomizeBuild(tree: SourceTree, dir: string, budget: BuildBudget): Promise<Build> {
  const files: string[] = [];
  const resources = await buildDir(tree, dir, budget, files, 0, true);
  return { objects: resources.map((r) => ({ obj: r.obj, file: r.file })), files };
}

async function kustomizationFile(
  tree: SourceTree,
  dir: string,
  budget: BuildBudget,
): Promise<{ path: string; text: string } | undefined> {
  const found: Array<{ path: string; text: string }> = [];
  for (const name of KUSTOMIZATION_FILES) {
    const path = dir === "" ? name : `${dir}/${name}`;
    const text = await budget.read(tree, path);
    if (text !== undefined) found.push({ path, text });
  }
  if (found.length > 1)
    throw new KustomizeBuildError(
      dir || ".",
      `holds ${found.map((f) => f.path.split("/").at(-1)).join(" and ")}: kustomize refuses a folder with more than one kustomization file`,
    );
  return found[0];
}

async function buildDir(
  tree: SourceTree,
  dir: string,
  budget: BuildBudget,
  files: string[],
  depth: number,
  fluxRoot: boolean,
): Promise<Resource[]> {
  if (depth > budget.limits.maxDepth) {
    throw new BuildLimitError(
      "maxDepth",
      budget.limits.maxDepth,
      `${dir}: kustomizations nest deeper than ${budget.limits.maxDepth} levels, adoption's limit`,
    );
  }
  const k = await kustomizationFile(tree, dir, budget);
  if (!k) {
    if (!fluxRoot)
      throw new KustomizeBuildError(
        dir,
        "is listed as a resource but holds no kustomization.yaml (kustomize needs one in every folder it builds)",
      );
    return generatedBuild(tree, dir, budget, files, depth);
  }
  files.push(k.path);
  const docs = parseAllDocuments(k.text, YAML_PARSE_OPTIONS);
  const doc = Array.isArray(docs) && docs.length === 1 ? docs[0] : undefined;
  const yamlError = doc && firstYamlError(doc);
  if (!doc || yamlError !== undefined || !isMap(doc.contents))
    throw new KustomizeBuildError(k.path, `is not one YAML mapping${yamlError !== undefined ? `: ${yamlError}` : ""}`);
  let body: KubeObject;
  try {
    body = doc.toJS({ maxAliasCount: 0 }) as KubeObject;
  } catch (err) {
    throw new KustomizeBuildError(k.path, `cannot be read: ${(err as Error).message}`);
  }
  if (body.kind !== undefined && body.kind !== "Kustomization")
    throw new KustomizeBuildError(k.path, `is a ${String(body.kind)}; adoption builds kind Kustomization only`);
  const unsupported = Object.keys(body).filter((key) => !SUPPORTED_FIELDS.has(key));
  if (unsupported.length)
    throw new KustomizeBuildError(
      k.path,
      `uses ${unsupported.join(", ")}, which adoption does not build (it builds ${SUPPORTED_LIST})`,
    );

  const entries = [...stringList(body, "bases", k.path), ...stringList(body, "resources", k.path)];
  if (entries.length > budget.limits.maxEntries) {
    throw new BuildLimitError(
      "maxEntries",
      budget.limits.maxEntries,
      `${k.path} lists ${entries.length} resources; adoption builds at most ${budget.limits.maxEntries} per kustomization`,
    );
  }
  const seen = new Set<string>();
  const resources: Resource[] = [];
  for (const entry of entries) {
    if (seen.has(entry))
      throw new KustomizeBuildError(
        k.path,
        `lists resource ${entry} twice (kustomize refuses a resource it already has)`,
      );
    seen.add(entry);
    if (
      /^[a-z][a-z0-9+.-]*:\/\//i.test(entry) ||
      entry.startsWith("git@") ||
      /(^|\/)github\.com\//.test(entry) ||
      entry.includes("?ref=")
    ) {
      throw new KustomizeBuildError(
        k.path,
        `resource ${entry} is remote; adoption builds only what is in the Flux repo`,
      );
    }
    const path = repoPath(dir, entry, k.path);
    const text = await budget.read(tree, path);
    if (text !== undefined) {
      files.push(path);
      for (const obj of await parseManifestFile(text, path, budget)) resources.push(resourceOf(obj, path));
    } else if ((await tree.list(path)).length > 0) {
      resources.push(...(await buildDir(tree, path, budget, files, depth + 1, false)));
    } else {
      throw new KustomizeBuildError(k.path, `resource ${entry} (${path}) does not exist`);
    }
  }
  assertUniqueIds(resources, k.path);
  await transform(tree, dir, body, resources, budget, files, k.path);
  return resources;
}

/** Flux's generated kustomization for a path without one: every manifest below, sub-kustomizations as folders. */
async function generatedBuild(
  tree: SourceTree,
  dir: string,
  budget: BuildBudget,
  files: string[],
  depth: number,
): Promise<Resource[]> {
  const all = await tree.list(dir);
  if (all.length === 0) throw new KustomizeBuildError(dir || ".", "does not exist or is empty");
  const prefix = dir === "" ? "" : `${dir}/`;
  const kustomized = new Set(
    all
      .filter((p) => KUSTOMIZATION_FILES.includes(p.slice(p.lastIndexOf("/") + 1)))
      .map((p) => p.slice(0, p.lastIndexOf("/")))
      .filter((d) => d.length > dir.length),
  );
  const under = (p: string) => [...kustomized].find((d) => p.startsWith(`${d}/`));
  const manifests = all.filter((p) => /\.(ya?ml|json)$/.test(p) && !under(p));
  if (manifests.length + kustomized.size > budget.limits.maxEntries) {
    throw new BuildLimitError(
      "maxEntries",
      budget.limits.maxEntries,
      `${dir} holds ${manifests.length} manifests; adoption builds at most ${budget.limits.maxEntries} per folder`,
    );
  }
  if (manifests.length === 0 && kustomized.size === 0) throw new KustomizeBuildError(dir || ".", "holds no manifests");
  const resources: Resource[] = [];
  for (const path of manifests) {
    if (!path.startsWith(prefix)) continue;
    const text = (await budget.read(tree, path)) ?? "";
    files.push(path);
    for (const obj of await parseManifestFile(text, path, budget)) resources.push(resourceOf(obj, path));
  }
  for (const sub of [...kustomized].sort()) {
    if (!under(sub)) resources.push(...(await buildDir(tree, sub, budget, files, depth + 1, false)));
  }
  assertUniqueIds(resources, dir);
  return resources;
}

function resourceOf(obj: KubeObject, file: string): Resource {
  return {
    obj,
    file,
    origName: String(obj.metadata.name),
    origNamespace:
      obj.metadata.namespace === undefined || obj.metadata.namespace === null
        ? undefined
        : String(obj.metadata.namespace),
  };
}

function stringList(body: KubeObject, field: string, file: string): string[] {
  const value = body[field];
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((v) => typeof v !== "string"))
    throw new KustomizeBuildError(file, `${field} must be a list of paths`);
  return value as string[];
}

/** `entry` relative to `dir`, as a repo path; a path that leaves the repository or is absolute is refused. */
export function repoPath(dir: string, entry: string, file: string): string {
  if (entry.startsWith("/"))
    throw new KustomizeBuildError(file, `${entry} is an absolute path; resources are paths inside the Flux repo`);
  const parts = dir === "" ? [] : dir.split("/");
  for (const seg of entry.split("/")) {
    if (seg === "..") {
      if (parts.length === 0)
        throw new KustomizeBuildError(file, `${entry} leaves the Flux repo (it goes above its root)`);
      parts.pop();
    } else if (seg !== "." && seg !== "") parts.push(seg);
  }
  return parts.join("/");
}

const idOf = (o: KubeObject) => `${o.apiVersion}|${o.kind}|${o.metadata?.namespace ?? ""}|${o.metadata?.name}`;
const describe = (o: KubeObject) =>
  `${o.kind} ${o.metadata?.namespace ? `${o.metadata.namespace}/` : ""}${o.metadata?.name}`;

function assertUniqueIds(resources: Resource[], file: string): void {
  const ids = new Map<string, Resource>();
  for (const r of resources) {
    const id = idOf(r.obj);
    const other = ids.get(id);
    if (other)
      throw new KustomizeBuildError(
        file,
        `${describe(r.obj)} comes twice (${other.file} and ${r.file}); kustomize refuses a resource id it already has`,
      );
    ids.set(id, r);
  }
}

// ---- transformers, in kustomize's order: strategic-merge patches, patches, namespace, prefix, suffix,
// ---- labels, annotations, JSON 6902 patches; then the ServiceAccount references they changed.

async function transform(
  tree: SourceTree,
  dir: string,
  body: KubeObject,
  resources: Resource[],
  budget: BuildBudget,
  files: string[],
  kfile: string,
): Promise<void> {
  const readPatch = async (path: string): Promise<string> => {
    const full = repoPath(dir, path, kfile);
    const text = await budget.read(tree, full);
    if (text === undefined) throw new KustomizeBuildError(kfile, `patch ${path} (${full}) does not exist`);
    files.push(full);
    return text;
  };
  const list = (field: string): unknown[] => {
    const v = body[field];
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v)) throw new KustomizeBuildError(kfile, `${field} must be a list`);
    if (v.length > budget.limits.maxEntries)
      throw new BuildLimitError(
        "maxEntries",
        budget.limits.maxEntries,
        `${kfile} lists ${v.length} ${field}; adoption applies at most ${budget.limits.maxEntries}`,
      );
    return v;
  };

  for (const entry of list("patchesStrategicMerge")) {
    if (typeof entry !== "string")
      throw new KustomizeBuildError(kfile, "patchesStrategicMerge entries must be paths or inline patches");
    const text = /\n|:/.test(entry) && !/\.ya?ml$/.test(entry) ? entry : await readPatch(entry);
    for (const patch of parsePatch(text, kfile, budget)) {
      if (Array.isArray(patch))
        throw new KustomizeBuildError(
          kfile,
          "patchesStrategicMerge holds a JSON 6902 patch; it belongs in patches with a target",
        );
      strategicMerge(resources, patch, undefined, kfile);
    }
  }
  for (const [i, entry] of list("patches").entries()) {
    const p = entry as KubeObject;
    if (!p || typeof p !== "object") throw new KustomizeBuildError(kfile, `patches[${i}] must be a mapping`);
    const extra = Object.keys(p).filter((key) => !["path", "patch", "target"].includes(key));
    if (extra.length)
      throw new KustomizeBuildError(kfile, `patches[${i}] uses ${extra.join(", ")}, which adoption does not build`);
    if ((p.path === undefined) === (p.patch === undefined))
      throw new KustomizeBuildError(kfile, `patches[${i}] needs exactly one of path and patch`);
    const text = p.patch !== undefined ? String(p.patch) : await readPatch(String(p.path));
    for (const patch of parsePatch(text, kfile, budget)) {
      if (Array.isArray(patch)) {
        if (!p.target) throw new KustomizeBuildError(kfile, `patches[${i}] is a JSON 6902 patch without a target`);
        jsonPatch(resources, patch, p.target as KubeObject, kfile, `patches[${i}]`);
      } else strategicMerge(resources, patch, p.target as KubeObject | undefined, kfile);
    }
  }
  if (body.namespace !== undefined) {
    if (typeof body.namespace !== "string") throw new KustomizeBuildError(kfile, "namespace must be a string");
    for (const r of resources) {
      if (r.obj.kind === "Namespace") r.obj.metadata.name = body.namespace;
      else if (!CLUSTER_SCOPED_KINDS.has(r.obj.kind)) r.obj.metadata.namespace = body.namespace;
    }
  }
  const prefix = optionalString(body, "namePrefix", kfile);
  const suffix = optionalString(body, "nameSuffix", kfile);
  if (prefix || suffix) {
    const renamed = new Map<string, Resource>();
    for (const r of resources) {
      if (r.obj.kind === "Namespace" || r.obj.kind === "CustomResourceDefinition") continue;
      renamed.set(String(r.obj.metadata.name), r);
      r.obj.metadata.name = `${prefix}${r.obj.metadata.name}${suffix}`;
    }
    assertNoNameReferences(resources, renamed, kfile);
  }
  const labels = labelSets(body, kfile);
  for (const { pairs, selectors, templates } of labels) {
    for (const r of resources) {
      const kind = String(r.obj.kind);
      if ((selectors || templates) && WORKLOAD_KINDS.has(kind)) {
        throw new KustomizeBuildError(
          kfile,
          `${selectors ? "commonLabels (or labels with includeSelectors)" : "labels with includeTemplates"} on ${describe(r.obj)} also changes its selectors or pod template, which adoption does not build; use labels without includeSelectors`,
        );
      }
      setAll(r.obj, ["metadata", "labels"], pairs, true);
      if (selectors && kind === "NetworkPolicy") {
        setAll(r.obj, ["spec", "podSelector", "matchLabels"], pairs, false);
        for (const rule of asArray(r.obj.spec?.ingress))
          for (const peer of asArray(rule?.from)) setAll(peer, ["podSelector", "matchLabels"], pairs, false);
        for (const rule of asArray(r.obj.spec?.egress))
          for (const peer of asArray(rule?.to)) setAll(peer, ["podSelector", "matchLabels"], pairs, false);
      }
    }
  }
  if (body.commonAnnotations !== undefined) {
    const pairs = stringMap(body.commonAnnotations, "commonAnnotations", kfile);
    for (const r of resources) {
      if (WORKLOAD_KINDS.has(String(r.obj.kind)) && r.obj.kind !== "Service" && r.obj.kind !== "PodDisruptionBudget") {
        throw new KustomizeBuildError(
          kfile,
          `commonAnnotations on ${describe(r.obj)} also changes its pod template, which adoption does not build`,
        );
      }
      setAll(r.obj, ["metadata", "annotations"], pairs, true);
    }
  }
  for (const [i, entry] of list("patchesJson6902").entries()) {
    const p = entry as KubeObject;
    if (!p?.target || (p.path === undefined) === (p.patch === undefined))
      throw new KustomizeBuildError(kfile, `patchesJson6902[${i}] needs a target and exactly one of path and patch`);
    const text = p.patch !== undefined ? String(p.patch) : await readPatch(String(p.path));
    for (const patch of parsePatch(text, kfile, budget)) {
      if (!Array.isArray(patch))
        throw new KustomizeBuildError(kfile, `patchesJson6902[${i}] is not a list of operations`);
      jsonPatch(resources, patch, p.target as KubeObject, kfile, `patchesJson6902[${i}]`);
    }
  }
  fixServiceAccountSubjects(resources);
  assertUniqueIds(resources, kfile);
}

function optionalString(body: KubeObject, field: string, file: string): string {
  const v = body[field];
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") throw new KustomizeBuildError(file, `${field} must be a string`);
  return v;
}

function stringMap(value: unknown, field: string, file: string): Record<string, string> {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new KustomizeBuildError(file, `${field} must be a mapping`);
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== "string")
      throw new KustomizeBuildError(
        file,
        `${field}.${k} is ${v === null ? "null" : `a ${typeof v}`}, not a string (kustomize refuses it; quote it)`,
      );
  }
  return value as Record<string, string>;
}

function labelSets(
  body: KubeObject,
  file: string,
): Array<{ pairs: Record<string, string>; selectors: boolean; templates: boolean }> {
  const out: Array<{ pairs: Record<string, string>; selectors: boolean; templates: boolean }> = [];
  if (body.commonLabels !== undefined)
    out.push({ pairs: stringMap(body.commonLabels, "commonLabels", file), selectors: true, templates: true });
  if (body.labels !== undefined) {
    if (!Array.isArray(body.labels)) throw new KustomizeBuildError(file, "labels must be a list");
    for (const [i, l] of (body.labels as KubeObject[]).entries()) {
      const extra = Object.keys(l ?? {}).filter(
        (key) => !["pairs", "includeSelectors", "includeTemplates"].includes(key),
      );
      if (extra.length)
        throw new KustomizeBuildError(file, `labels[${i}] uses ${extra.join(", ")}, which adoption does not build`);
      out.push({
        pairs: stringMap(l.pairs ?? {}, `labels[${i}].pairs`, file),
        selectors: l.includeSelectors === true,
        templates: l.includeTemplates === true || l.includeSelectors === true,
      });
    }
  }
  return out;
}

/** A list field of a hand-written object, or none: its entries are objects as KubeObject is (fields of any shape). */
function asArray(value: unknown): KubeObject[] {
  return Array.isArray(value) ? value : [];
}

/** Sets every pair at `path` under `obj`; the maps on the way are created only when `create`. */
function setAll(obj: KubeObject, path: string[], pairs: Record<string, string>, create: boolean): void {
  let at: KubeObject = obj;
  for (const key of path) {
    if (at[key] === undefined || at[key] === null) {
      if (!create) return;
      at[key] = {};
    }
    if (typeof at[key] !== "object" || Array.isArray(at[key])) return;
    at = at[key];
  }
  Object.assign(at, pairs);
}

/** Fields that name another object (`name`, `roleRef.name`, `serviceAccountName`, `secretName`...). */
function nameFields(value: unknown, out: string[], key = ""): void {
  if (typeof value === "string" || value instanceof PlainVar) {
    if (key === "name" || /[a-z]Name$/.test(key)) out.push(String(value instanceof PlainVar ? value.text : value));
  } else if (Array.isArray(value)) for (const v of value) nameFields(v, out, key);
  else if (value && typeof value === "object") for (const [k, v] of Object.entries(value)) nameFields(v, out, k);
}

/**
 * kustomize rewrites references to an object it renames (a RoleBinding's roleRef, a pod's ConfigMap...).
 * Adoption models that for ServiceAccount subjects only; any other field that names a renamed object is
 * refused rather than built differently.
 */
function assertNoNameReferences(resources: Resource[], renamed: Map<string, Resource>, file: string): void {
  for (const r of resources) {
    const { metadata, ...rest } = r.obj;
    const { name: _own, namespace: _ns, ...otherMeta } = (metadata ?? {}) as KubeObject;
    const body = { ...rest, metadata: otherMeta } as KubeObject;
    if (r.obj.kind === "RoleBinding" || r.obj.kind === "ClusterRoleBinding") {
      body.subjects = asArray(body.subjects).filter((s) => s?.kind !== "ServiceAccount");
    }
    const names: string[] = [];
    nameFields(body, names);
    for (const name of names) {
      const target = renamed.get(name);
      if (target) {
        throw new KustomizeBuildError(
          file,
          `namePrefix/nameSuffix renames ${target.obj.kind} ${name}, and ${describe(r.obj)} refers to it by name; kustomize would rewrite that reference, which adoption does not build`,
        );
      }
    }
  }
}

/** kustomize's name reference for ServiceAccount subjects: a subject naming a ServiceAccount of the build follows its new name and namespace. */
function fixServiceAccountSubjects(resources: Resource[]): void {
  const accounts = resources.filter((r) => r.obj.kind === "ServiceAccount");
  if (accounts.length === 0) return;
  for (const r of resources) {
    if (r.obj.kind !== "RoleBinding" && r.obj.kind !== "ClusterRoleBinding") continue;
    for (const s of asArray(r.obj.subjects)) {
      if (s?.kind !== "ServiceAccount") continue;
      const ns = s.namespace === undefined ? undefined : String(s.namespace);
      const sa = accounts.find(
        (a) =>
          a.origName === String(s.name) &&
          (ns === undefined || ns === a.origNamespace || ns === String(a.obj.metadata.namespace)),
      );
      if (!sa) continue;
      const moved =
        String(sa.obj.metadata.name) !== sa.origName ||
        (sa.obj.metadata.namespace === undefined ? undefined : String(sa.obj.metadata.namespace)) !== sa.origNamespace;
      if (!moved) continue;
      s.name = sa.obj.metadata.name;
      if (sa.obj.metadata.namespace !== undefined) s.namespace = sa.obj.metadata.namespace;
    }
  }
}

function parsePatch(text: string, file: string, budget: BuildBudget): Array<KubeObject | KubeObject[]> {
  const docs = parseAllDocuments(text, YAML_PARSE_OPTIONS);
  if (!Array.isArray(docs)) throw new KustomizeBuildError(file, "a patch is not a YAML stream");
  const out: Array<KubeObject | KubeObject[]> = [];
  for (const doc of docs) {
    budget.countDocument(file);
    const yamlError = firstYamlError(doc);
    if (yamlError !== undefined) throw new KustomizeBuildError(file, `a patch is not valid YAML: ${yamlError}`);
    if (doc.contents === null) continue;
    if (!isMap(doc.contents) && !isSeq(doc.contents))
      throw new KustomizeBuildError(file, "a patch must be a mapping or a list of operations");
    try {
      out.push(doc.toJS({ maxAliasCount: 0 }) as KubeObject | KubeObject[]);
    } catch (err) {
      throw new KustomizeBuildError(file, `a patch cannot be read: ${(err as Error).message}`);
    }
  }
  return out;
}

/** Resources a patch target selects (kustomize: group, version, kind exact; name and namespace anchored regular expressions). */
function selectTargets(resources: Resource[], target: KubeObject, file: string): Resource[] {
  const extra = Object.keys(target).filter(
    (key) => !["group", "version", "kind", "name", "namespace", "labelSelector", "annotationSelector"].includes(key),
  );
  if (extra.length)
    throw new KustomizeBuildError(file, `a patch target uses ${extra.join(", ")}, which adoption does not build`);
  const regex = (v: unknown) => {
    try {
      return new RegExp(`^(?:${String(v)})$`);
    } catch {
      throw new KustomizeBuildError(file, `a patch target's ${String(v)} is not a regular expression`);
    }
  };
  const name = target.name !== undefined ? regex(target.name) : undefined;
  const namespace = target.namespace !== undefined ? regex(target.namespace) : undefined;
  const selector = (sel: unknown, what: string) => {
    if (sel === undefined) return undefined;
    const pairs = String(sel)
      .split(",")
      .map((p) => p.trim().split("="));
    if (pairs.some((p) => p.length !== 2 || !p[0]))
      throw new KustomizeBuildError(
        file,
        `a patch target's ${what} ${String(sel)}: adoption builds key=value selectors only`,
      );
    return pairs as Array<[string, string]>;
  };
  const labels = selector(target.labelSelector, "labelSelector");
  const annotations = selector(target.annotationSelector, "annotationSelector");
  return resources.filter((r) => {
    const [g, v] = String(r.obj.apiVersion).includes("/")
      ? String(r.obj.apiVersion).split("/")
      : ["", String(r.obj.apiVersion)];
    return (
      (target.group === undefined || target.group === g) &&
      (target.version === undefined || target.version === v) &&
      (target.kind === undefined || target.kind === r.obj.kind) &&
      (!name || name.test(String(r.obj.metadata.name))) &&
      (!namespace || namespace.test(String(r.obj.metadata.namespace ?? ""))) &&
      (!labels || labels.every(([k, val]) => r.obj.metadata.labels?.[k] === val)) &&
      (!annotations || annotations.every(([k, val]) => r.obj.metadata.annotations?.[k] === val))
    );
  });
}

/**
 * A strategic-merge patch of mappings and scalars: maps merge, `null` deletes. Lists merge by keys that
 * depend on each kind's schema (or are replaced, for custom kinds), so a patch that sets one is refused,
 * as are the `$patch` directives.
 */
function strategicMerge(resources: Resource[], patch: KubeObject, target: KubeObject | undefined, file: string): void {
  let matches: Resource[];
  if (target) matches = selectTargets(resources, target, file);
  else {
    if (typeof patch.kind !== "string" || typeof patch.metadata?.name !== "string")
      throw new KustomizeBuildError(file, "a strategic-merge patch without a target needs kind and metadata.name");
    matches = resources.filter(
      (r) =>
        r.obj.kind === patch.kind &&
        (String(r.obj.metadata.name) === patch.metadata.name || r.origName === patch.metadata.name) &&
        (patch.metadata.namespace === undefined || String(r.obj.metadata.namespace) === patch.metadata.namespace),
    );
    if (matches.length !== 1)
      throw new KustomizeBuildError(
        file,
        `found ${matches.length} resources for the patch of ${patch.kind} ${patch.metadata.name}; kustomize needs exactly one`,
      );
  }
  const { apiVersion: _a, kind: _k, metadata, ...rest } = patch;
  const { name: _n, namespace: _ns, ...meta } = (metadata ?? {}) as KubeObject;
  const body = Object.keys(meta).length ? { ...rest, metadata: meta } : rest;
  for (const r of matches) mergeInto(r.obj, body, file, "");
}

function mergeInto(into: KubeObject, patch: KubeObject, file: string, at: string): void {
  for (const [key, value] of Object.entries(patch)) {
    const path = at ? `${at}.${key}` : key;
    if (key.startsWith("$"))
      throw new KustomizeBuildError(
        file,
        `a strategic-merge patch uses ${key} (at ${path}), which adoption does not build`,
      );
    if (value === null) delete into[key];
    else if (Array.isArray(value))
      throw new KustomizeBuildError(
        file,
        `a strategic-merge patch sets the list ${path}; how kustomize merges lists depends on the kind's schema, so adoption does not build it: use a JSON 6902 patch`,
      );
    else if (typeof value === "object" && !(value instanceof PlainVar)) {
      if (into[key] === undefined || into[key] === null || typeof into[key] !== "object" || Array.isArray(into[key]))
        into[key] = {};
      mergeInto(into[key], value as KubeObject, file, path);
    } else into[key] = value;
  }
}

function jsonPatch(resources: Resource[], ops: KubeObject[], target: KubeObject, file: string, what: string): void {
  for (const r of selectTargets(resources, target, file)) {
    try {
      fastJsonPatch.applyPatch(r.obj, ops as Operation[], true, true);
    } catch (err) {
      throw new KustomizeBuildError(
        file,
        `${what} cannot be applied to ${describe(r.obj)}: ${(err as Error).message.split("\n")[0]}`,
      );
    }
  }
}
