/**
 * Server-side apply and delete for any kind (core, namespaced, cluster-scoped, custom), through
 * client-node's KubernetesObjectApi (discovery maps apiVersion/kind to the path; its cache lives in
 * one client per KubeConfig). Failures come back as KubeApiError.
 */
import { KubernetesObjectApi, PatchStrategy, type KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import { apiClient } from "./client.js";
import { KubeApiError } from "./errors.js";
import type { EventRef } from "./events.js";

export { KubeApiError, isKubeApiError, type KubeApiErrorKind } from "./errors.js";

export interface ApplyOptions {
  /** SSA field manager; every field in `obj` becomes owned by it. */
  fieldManager: string;
  /** Take fields another manager owns instead of failing with a conflict. Default false (the API default). */
  force?: boolean;
  /** Validate and compute the result server-side without persisting it. */
  dryRun?: boolean;
}

/** Reference to an object for deletes: the shape events use. */
export type ObjectRef = EventRef;

export interface DeleteOptions {
  propagationPolicy?: "Foreground" | "Background" | "Orphan";
  dryRun?: boolean;
}

/** KubernetesObjectApi aimed at the `/status` subresource of whatever object it is given. */
class StatusObjectApi extends KubernetesObjectApi {
  // `action` is client-node's unexported KubernetesApiAction union; only "patch" reaches this class.
  protected override async specUriPath(spec: KubernetesObject, action: string): Promise<string> {
    return `${await super.specUriPath(spec, action as "patch")}/status`;
  }
}

/** Server-side apply of `obj` (its full desired state for the fields this manager owns). */
export async function applyObject<T extends KubernetesObject>(kc: KubeConfig, obj: T, opts: ApplyOptions): Promise<T> {
  return apply(apiClient(kc, KubernetesObjectApi), obj, opts, "apply");
}

/**
 * Server-side apply to the status subresource. Only apiVersion, kind, name, namespace and `status`
 * are sent: anything else in the body would be recorded as owned by this manager (the server
 * ignores its value), muddling ownership of spec.
 *
 * On apiservers before 1.22, managedFields do not tell a subresource apply from a main-resource one:
 * with one field manager for both, every spec apply drops its status ownership and every status
 * apply its spec ownership, so each pair bumps resourceVersion. Use a distinct manager for status
 * there (e.g. "<manager>-status") when the same process applies both.
 */
export async function applyStatus<T extends KubernetesObject>(kc: KubeConfig, obj: T, opts: ApplyOptions): Promise<T> {
  const { apiVersion, kind, metadata } = obj;
  const body = {
    apiVersion,
    kind,
    metadata: { name: metadata?.name, ...(metadata?.namespace ? { namespace: metadata.namespace } : {}) },
    status: (obj as { status?: unknown }).status ?? {},
  } as unknown as T;
  return apply(apiClient(kc, StatusObjectApi), body, opts, "apply status");
}

async function apply<T extends KubernetesObject>(api: KubernetesObjectApi, obj: T, opts: ApplyOptions, verb: string): Promise<T> {
  const body = prepareForApply(obj);
  try {
    return await api.patch(body, undefined, opts.dryRun ? "All" : undefined, opts.fieldManager, opts.force, PatchStrategy.ServerSideApply);
  } catch (err) {
    throw KubeApiError.from(err, `${verb} ${describe(obj)}`);
  }
}

/**
 * Deletes the object; resolves false when it was already gone (404), true otherwise.
 * Accepts a reference (`{apiVersion, kind, name, namespace}`) or an object with metadata.
 */
export async function deleteObject(kc: KubeConfig, ref: ObjectRef | KubernetesObject, opts: DeleteOptions = {}): Promise<boolean> {
  const spec = toHeader(ref);
  try {
    await apiClient(kc, KubernetesObjectApi).delete(spec, undefined, opts.dryRun ? "All" : undefined, undefined, undefined, opts.propagationPolicy);
    return true;
  } catch (err) {
    const e = KubeApiError.from(err, `delete ${describe(spec)}`);
    if (e.kind === "not-found") return false;
    throw e;
  }
}

/**
 * A copy fit for SSA: no managedFields (the server rejects them in an apply), and for Secrets
 * `stringData` folded into base64 `data`. stringData is write-only (the server moves it into
 * `data`), so a manager applying it owns `stringData.*` fields that never exist: it does not own the
 * `data` keys, cannot prune a key it stops applying, and sees no conflict when someone else edits them.
 */
function prepareForApply<T extends KubernetesObject>(obj: T): T {
  const copy = structuredClone(obj) as T & { stringData?: Record<string, string>; data?: Record<string, string> };
  if (copy.metadata?.managedFields) delete copy.metadata.managedFields;
  if (copy.kind === "Secret" && (copy.apiVersion ?? "v1") === "v1" && copy.stringData) {
    copy.data = { ...(copy.data ?? {}) };
    for (const [k, v] of Object.entries(copy.stringData)) copy.data[k] = Buffer.from(v, "utf8").toString("base64");
    delete copy.stringData;
  }
  return copy;
}

function toHeader(ref: ObjectRef | KubernetesObject): KubernetesObject & { metadata: { name: string; namespace?: string } } {
  if ("name" in ref && typeof ref.name === "string") {
    const r = ref as ObjectRef;
    return { apiVersion: r.apiVersion, kind: r.kind, metadata: { name: r.name, ...(r.namespace ? { namespace: r.namespace } : {}) } };
  }
  const o = ref as KubernetesObject;
  const ns = o.metadata?.namespace;
  return { apiVersion: o.apiVersion ?? "v1", kind: o.kind ?? "", metadata: { name: o.metadata?.name ?? "", ...(ns ? { namespace: ns } : {}) } };
}

function describe(obj: KubernetesObject): string {
  const ns = obj.metadata?.namespace;
  return `${obj.kind ?? "?"} ${ns ? `${ns}/` : ""}${obj.metadata?.name ?? "?"}`;
}
