/**
 * Server-side apply with dryRun=All, object by object, reporting what the server would not keep.
 *
 * A field the schema does not declare is handled two ways by the apiserver (checked on 1.35): a create or
 * update keeps the object and drops the field with only a Warning header (field validation defaults to Warn),
 * so `kubectl apply --dry-run=server` "passes" and what is stored differs from git; server-side apply, which
 * Flux's kustomize-controller uses, refuses the whole object with HTTP 500 "failed to create typed patch object:
 * .spec.x: field not declared in schema", so Flux would fail the team's Kustomization.
 *
 * This helper reports such fields as `pruned` problems, one per field:
 *  - SSA's "field not declared in schema" paths are parsed, removed from the object, and the apply
 *    is retried, so the rest of the object is still validated;
 *  - the object the server returns is compared with the one sent: every field dropped or changed
 *    is reported — ignoring `status` and the metadata the server fills in (uid, managedFields...).
 *
 * Requests go through raw HTTPS (see kube-http.ts) so that no client-side model drops fields first.
 * Namespaced objects need their namespace to exist (create it first; a dry run does not).
 */
import type { KubeConfig } from "@kubernetes/client-node";
import { kubeRequest, objectPath, resolveResource } from "./kube-http.js";

export type DryRunProblemKind = "rejected" | "pruned" | "changed";

export interface DryRunProblem {
  kind: DryRunProblemKind;
  /** JSON path of the field, e.g. `spec.foo` or `spec.items[2].name`; empty for a rejected object. */
  path: string;
  message: string;
  sent?: unknown;
  returned?: unknown;
}

export interface DryRunResult {
  /** `apiVersion/kind namespace/name` */
  ref: string;
  ok: boolean;
  problems: DryRunProblem[];
  /** The object as the server would store it (absent when rejected). */
  returned?: Record<string, unknown>;
}

interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; [k: string]: unknown };
  [k: string]: unknown;
}

/** Metadata fields a client sets; everything else in metadata is the server's. */
const CLIENT_METADATA = new Set(["name", "namespace", "labels", "annotations", "finalizers", "ownerReferences"]);

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function join(path: string, key: string | number): string {
  if (typeof key === "number") return `${path}[${key}]`;
  return /^[A-Za-z_$][\w$]*$/.test(key) ? (path ? `${path}.${key}` : key) : `${path}[${JSON.stringify(key)}]`;
}

function sameScalar(a: unknown, b: unknown): boolean {
  return a === b || (typeof a === "number" && typeof b === "number" && Number(a) === Number(b));
}

/** Every field of `sent` that is missing from, or different in, `returned`. */
export function compareSentAndReturned(sent: unknown, returned: unknown, path = ""): DryRunProblem[] {
  if (sent === null || sent === undefined) return []; // null means "unset" in an apply
  if (isPlainObject(sent)) {
    if (!isPlainObject(returned)) {
      return [
        returned === undefined
          ? { kind: "pruned", path, message: `${path} was dropped by the server`, sent }
          : {
              kind: "changed",
              path,
              message: `${path}: sent an object, got ${JSON.stringify(returned)}`,
              sent,
              returned,
            },
      ];
    }
    const problems: DryRunProblem[] = [];
    for (const [k, v] of Object.entries(sent)) {
      const p = join(path, k);
      if (v === null || v === undefined) continue;
      if (!(k in returned)) {
        problems.push({ kind: "pruned", path: p, message: `${p} was dropped by the server (unknown field?)`, sent: v });
        continue;
      }
      problems.push(...compareSentAndReturned(v, returned[k], p));
    }
    return problems;
  }
  if (Array.isArray(sent)) {
    if (!Array.isArray(returned)) {
      return [
        returned === undefined
          ? { kind: "pruned", path, message: `${path} was dropped by the server`, sent }
          : { kind: "changed", path, message: `${path}: sent a list, got ${JSON.stringify(returned)}`, sent, returned },
      ];
    }
    const problems: DryRunProblem[] = [];
    sent.forEach((item, i) => {
      const p = join(path, i);
      if (i >= returned.length)
        problems.push({ kind: "pruned", path: p, message: `${p} was dropped by the server`, sent: item });
      else problems.push(...compareSentAndReturned(item, returned[i], p));
    });
    return problems;
  }
  if (returned === undefined) return [{ kind: "pruned", path, message: `${path} was dropped by the server`, sent }];
  if (!sameScalar(sent, returned)) {
    return [
      {
        kind: "changed",
        path,
        message: `${path}: sent ${JSON.stringify(sent)}, server has ${JSON.stringify(returned)}`,
        sent,
        returned,
      },
    ];
  }
  return [];
}

function refOf(o: KubeObject): string {
  const ns = o.metadata?.namespace ? `${o.metadata.namespace}/` : "";
  return `${o.apiVersion ?? "?"}/${o.kind ?? "?"} ${ns}${o.metadata?.name ?? "?"}`;
}

function statusMessage(body: string, json: unknown): string {
  const s = json as
    { message?: string; details?: { causes?: Array<{ field?: string; message?: string }> } } | undefined;
  if (s?.message) return s.message;
  return body.slice(0, 500);
}

export interface DryRunOptions {
  /** Force conflicts (apply `force=true`). Default true: a dry run is about schema, not ownership. */
  force?: boolean;
}

/**
 * Server-side applies each object with `dryRun=All` as `fieldManager` and returns, per object,
 * the problems found: `rejected` (the server refused it: validation, unknown kind, missing
 * namespace, RBAC), `pruned` (a field the schema does not declare — SSA's "field not declared in
 * schema" — or a sent field absent from the result), `changed` (a sent value came back different).
 */
export async function serverSideDryRunApply(
  kc: KubeConfig,
  objects: readonly Record<string, unknown>[],
  fieldManager: string,
  opts: DryRunOptions = {},
): Promise<DryRunResult[]> {
  const results: DryRunResult[] = [];
  for (const raw of objects) {
    const obj = raw as KubeObject;
    const ref = refOf(obj);
    if (!obj.apiVersion || !obj.kind || !obj.metadata?.name) {
      results.push({
        ref,
        ok: false,
        problems: [{ kind: "rejected", path: "", message: "apiVersion, kind and metadata.name are required" }],
      });
      continue;
    }
    let path: string;
    try {
      const info = await resolveResource(kc, obj.apiVersion, obj.kind);
      path = objectPath(obj.apiVersion, info, obj.metadata.namespace, obj.metadata.name);
    } catch (err) {
      results.push({ ref, ok: false, problems: [{ kind: "rejected", path: "", message: (err as Error).message }] });
      continue;
    }
    const query = new URLSearchParams({ dryRun: "All", fieldManager, force: String(opts.force ?? true) });
    const problems: DryRunProblem[] = [];
    let sent: KubeObject = obj;
    let returned: Record<string, unknown> | undefined;
    for (let attempt = 0; attempt < 5; attempt++) {
      const res = await kubeRequest(kc, {
        method: "PATCH",
        path: `${path}?${query}`,
        body: sent,
        contentType: "application/apply-patch+yaml",
      });
      if (res.status >= 200 && res.status <= 299) {
        returned = res.json as Record<string, unknown>;
        break;
      }
      const message = statusMessage(res.body, res.json);
      const undeclared = undeclaredFields(message);
      const stripped = undeclared.length ? withoutPaths(sent, undeclared) : undefined;
      if (!stripped) {
        problems.push({ kind: "rejected", path: "", message: `HTTP ${res.status}: ${message}` });
        break;
      }
      for (const p of undeclared) {
        problems.push({
          kind: "pruned",
          path: p,
          message: `${p} is not declared in the schema: create/update drop it with a warning, server-side apply (Flux's) refuses the object`,
          sent: valueAt(obj, p),
        });
      }
      sent = stripped;
    }
    if (!returned) {
      results.push({ ref, ok: false, problems });
      continue;
    }
    for (const [key, value] of Object.entries(sent)) {
      if (key === "status") continue;
      if (key === "metadata" && isPlainObject(value)) {
        const retMeta = isPlainObject(returned.metadata) ? returned.metadata : {};
        for (const [mk, mv] of Object.entries(value)) {
          if (!CLIENT_METADATA.has(mk)) continue;
          problems.push(...compareSentAndReturned(mv, retMeta[mk], `metadata.${mk}`));
        }
        continue;
      }
      problems.push(...compareSentAndReturned(value, returned[key], key));
    }
    results.push({ ref, ok: problems.length === 0, problems, returned });
  }
  return results;
}

// ---- "field not declared in schema" (structured-merge-diff paths) ---------------------------------

type Segment = { field: string } | { index: number } | { keys: Record<string, string> };

/** `.spec.tagz`, `.spec.containers[name="a"].foo`, `.spec.list[0].x` from an SSA error message. */
function undeclaredFields(message: string): string[] {
  if (!message.includes("field not declared in schema")) return [];
  const out = new Set<string>();
  for (const m of message.matchAll(/(?:^|\s|: )(\.[^\s:][^:]*?): field not declared in schema/g)) {
    if (m[1]) out.add(m[1].slice(1));
  }
  return [...out];
}

function parsePath(path: string): Segment[] | undefined {
  const segs: Segment[] = [];
  const re = /(?:^|\.)([^.[\]]+)|\[(\d+)\]|\[([^\]]+)\]/gy;
  let m: RegExpExecArray | null;
  let pos = 0;
  while (pos < path.length && (m = re.exec(path))) {
    if (m[1] !== undefined) segs.push({ field: m[1] });
    else if (m[2] !== undefined) segs.push({ index: Number(m[2]) });
    else if (m[3] !== undefined) {
      const keys: Record<string, string> = {};
      for (const kv of m[3].matchAll(/([^=,]+)=("(?:[^"\\]|\\.)*"|[^,]*)/g)) {
        const raw = kv[2] ?? "";
        try {
          keys[kv[1] ?? ""] = String(raw.startsWith('"') ? JSON.parse(raw) : raw);
        } catch {
          return undefined;
        }
      }
      segs.push({ keys });
    }
    pos = re.lastIndex;
  }
  return pos === path.length && segs.length ? segs : undefined;
}

function step(node: unknown, seg: Segment): unknown {
  if ("field" in seg) return isPlainObject(node) ? node[seg.field] : undefined;
  if (!Array.isArray(node)) return undefined;
  if ("index" in seg) return node[seg.index];
  return node.find((item) => isPlainObject(item) && Object.entries(seg.keys).every(([k, v]) => String(item[k]) === v));
}

function valueAt(obj: unknown, path: string): unknown {
  const segs = parsePath(path);
  return segs?.reduce<unknown>((node, seg) => step(node, seg), obj);
}

/** A deep copy of `obj` without the given paths, or undefined if one cannot be located. */
function withoutPaths<T>(obj: T, paths: string[]): T | undefined {
  const copy = structuredClone(obj);
  for (const path of paths) {
    const segs = parsePath(path);
    const last = segs?.at(-1);
    if (!segs || !last || !("field" in last)) return undefined;
    const parent = segs.slice(0, -1).reduce<unknown>((node, seg) => step(node, seg), copy);
    if (!isPlainObject(parent) || !(last.field in parent)) return undefined;
    delete parent[last.field];
  }
  return copy;
}

/** One line per problem, for assertion messages. */
export function formatDryRunProblems(results: readonly DryRunResult[]): string {
  return results.flatMap((r) => r.problems.map((p) => `${r.ref}: [${p.kind}] ${p.message}`)).join("\n");
}
