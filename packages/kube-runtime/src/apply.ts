/**
 * Server-side apply, reads, merge patches, replaces and deletes for any kind (core, namespaced,
 * cluster-scoped, custom). apiVersion/kind map to a path through discovery (one GET per group/version,
 * cached per KubeConfig). Failures come back as KubeApiError.
 */
import { clientFor, CONTENT_TYPE, type KubeClient } from "./client.js";
import { KubeApiError } from "./errors.js";
import type { KubeConfigLike } from "./kubeconfig.js";
import type { KubernetesObject, ObjectRef } from "./object.js";

export { KubeApiError, isKubeApiError, type KubeApiErrorKind } from "./errors.js";

export interface WriteOptions {
  /** Ends the request (KubeApiError kind "aborted"): e.g. the reconcile's leadership ended. */
  signal?: AbortSignal;
  /** Validate and compute the result server-side without persisting it. */
  dryRun?: boolean;
}

export interface ApplyOptions extends WriteOptions {
  /** SSA field manager; every field in `obj` becomes owned by it. */
  fieldManager: string;
  /** Take fields another manager owns instead of failing with a conflict. Default false (the API default). */
  force?: boolean;
}

export interface DeleteOptions extends WriteOptions {
  propagationPolicy?: "Foreground" | "Background" | "Orphan";
}

interface Resource {
  plural: string;
  namespaced: boolean;
}

/** How long "this kind is not served" is believed before discovery asks again (a CRD may be installed meanwhile). */
const NEGATIVE_DISCOVERY_MS = 30_000;

const discovered = new WeakMap<KubeClient, Map<string, { at: number; kinds: Map<string, Resource> | undefined }>>();

async function resourceOf(
  client: KubeClient,
  apiVersion: string,
  kind: string,
  signal?: AbortSignal,
): Promise<Resource> {
  let byGroupVersion = discovered.get(client);
  if (!byGroupVersion) discovered.set(client, (byGroupVersion = new Map()));
  const cached = byGroupVersion.get(apiVersion);
  const found = cached?.kinds?.get(kind);
  if (found) return found;
  if (!cached || Date.now() - cached.at > NEGATIVE_DISCOVERY_MS) {
    const path = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    let kinds: Map<string, Resource> | undefined;
    try {
      const list = await client.request<{ resources?: Array<{ name: string; kind: string; namespaced: boolean }> }>(
        path,
        signal ? { signal } : {},
      );
      kinds = new Map(
        (list.resources ?? [])
          .filter((r) => !r.name.includes("/"))
          .map((r) => [r.kind, { plural: r.name, namespaced: r.namespaced }]),
      );
    } catch (err) {
      if (!(err instanceof KubeApiError) || err.kind !== "not-found") throw err;
    }
    byGroupVersion.set(apiVersion, { at: Date.now(), kinds });
    const r = kinds?.get(kind);
    if (r) return r;
  }
  throw new KubeApiError({
    status: 404,
    reason: "NotFound",
    kind: "not-found",
    message: `${apiVersion} ${kind} is not served by the apiserver (CRD not installed?)`,
  });
}

/** The object's path (`…/namespaces/<ns>/<plural>/<name>`), or its collection's without a name. */
export async function objectPath(
  kc: KubeConfigLike,
  ref: { apiVersion: string; kind: string; namespace?: string | undefined; name?: string | undefined },
  signal?: AbortSignal,
): Promise<string> {
  const r = await resourceOf(clientFor(kc), ref.apiVersion, ref.kind, signal);
  const prefix = ref.apiVersion.includes("/") ? `/apis/${ref.apiVersion}` : `/api/${ref.apiVersion}`;
  const ns = r.namespaced ? `/namespaces/${encodeURIComponent(ref.namespace || "default")}` : "";
  return `${prefix}${ns}/${r.plural}${ref.name ? `/${encodeURIComponent(ref.name)}` : ""}`;
}

const refOf = (obj: KubernetesObject): ObjectRef => ({
  apiVersion: obj.apiVersion ?? "v1",
  kind: obj.kind ?? "",
  name: obj.metadata?.name ?? "",
  ...(obj.metadata?.namespace ? { namespace: obj.metadata.namespace } : {}),
});

/** Server-side apply of `obj` (its full desired state for the fields this manager owns); resolves with the object as stored. */
export async function applyObject<T extends KubernetesObject>(
  kc: KubeConfigLike,
  obj: T,
  opts: ApplyOptions,
): Promise<T> {
  return apply(kc, obj, prepareForApply(obj), opts, "", "apply");
}

/**
 * Server-side apply to the status subresource. Only apiVersion, kind, name, namespace and `status` are
 * sent: anything else in the body would be recorded as owned by this manager (the server ignores its
 * value), muddling ownership of spec.
 *
 * On apiservers before 1.22, managedFields do not tell a subresource apply from a main-resource one: with
 * one field manager for both, every spec apply drops its status ownership and every status apply its spec
 * ownership, so each pair bumps resourceVersion. Use a distinct manager for status there when the same
 * process applies both.
 */
export async function applyStatus<T extends KubernetesObject>(
  kc: KubeConfigLike,
  obj: T,
  opts: ApplyOptions,
): Promise<T> {
  const { apiVersion, kind, metadata } = obj;
  const body = {
    apiVersion,
    kind,
    metadata: { name: metadata?.name, ...(metadata?.namespace ? { namespace: metadata.namespace } : {}) },
    status: (obj as { status?: unknown }).status ?? {},
  };
  return apply(kc, obj, body, opts, "/status", "apply status");
}

async function apply<T extends KubernetesObject>(
  kc: KubeConfigLike,
  obj: T,
  body: unknown,
  opts: ApplyOptions,
  sub: string,
  verb: string,
): Promise<T> {
  const ref = refOf(obj);
  try {
    const path = (await objectPath(kc, ref, opts.signal)) + sub;
    return await clientFor(kc).request<T>(path, {
      method: "PATCH",
      // JSON is YAML: the apply content type takes it as it is.
      body,
      contentType: CONTENT_TYPE.apply,
      query: {
        fieldManager: opts.fieldManager,
        force: opts.force ? true : undefined,
        dryRun: opts.dryRun ? "All" : undefined,
      },
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
  } catch (err) {
    throw rewrap(err, `${verb} ${describe(ref)}`);
  }
}

/** The object as the server has it now, or undefined (404). */
export async function getObject<T extends KubernetesObject>(
  kc: KubeConfigLike,
  ref: ObjectRef,
  opts: { signal?: AbortSignal } = {},
): Promise<T | undefined> {
  try {
    return await clientFor(kc).request<T>(
      await objectPath(kc, ref, opts.signal),
      opts.signal ? { signal: opts.signal } : {},
    );
  } catch (err) {
    const e = rewrap(err, `get ${describe(ref)}`);
    if (e.kind === "not-found") return undefined;
    throw e;
  }
}

/** A JSON merge patch (e.g. finalizers with a resourceVersion precondition); resolves with the object as stored. */
export async function mergePatchObject<T extends KubernetesObject>(
  kc: KubeConfigLike,
  ref: ObjectRef,
  patch: unknown,
  opts: WriteOptions & { fieldManager?: string } = {},
): Promise<T> {
  try {
    return await clientFor(kc).request<T>(await objectPath(kc, ref, opts.signal), {
      method: "PATCH",
      body: patch,
      contentType: CONTENT_TYPE.merge,
      query: { fieldManager: opts.fieldManager, dryRun: opts.dryRun ? "All" : undefined },
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
  } catch (err) {
    throw rewrap(err, `patch ${describe(ref)}`);
  }
}

/** PUT of the whole object (optimistic concurrency through its metadata.resourceVersion). */
export async function replaceObject<T extends KubernetesObject>(
  kc: KubeConfigLike,
  obj: T,
  opts: WriteOptions & { fieldManager?: string } = {},
): Promise<T> {
  const ref = refOf(obj);
  try {
    return await clientFor(kc).request<T>(await objectPath(kc, ref, opts.signal), {
      method: "PUT",
      body: prepareForApply(obj),
      query: { fieldManager: opts.fieldManager, dryRun: opts.dryRun ? "All" : undefined },
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
  } catch (err) {
    throw rewrap(err, `replace ${describe(ref)}`);
  }
}

/**
 * Deletes the object; resolves false when it was already gone (404), true otherwise.
 * Accepts a reference (`{apiVersion, kind, name, namespace}`) or an object with metadata.
 */
export async function deleteObject(
  kc: KubeConfigLike,
  ref: ObjectRef | KubernetesObject,
  opts: DeleteOptions = {},
): Promise<boolean> {
  const r = "name" in ref && typeof ref.name === "string" ? (ref as ObjectRef) : refOf(ref as KubernetesObject);
  try {
    await clientFor(kc).request(await objectPath(kc, r, opts.signal), {
      method: "DELETE",
      query: { dryRun: opts.dryRun ? "All" : undefined, propagationPolicy: opts.propagationPolicy },
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    return true;
  } catch (err) {
    const e = rewrap(err, `delete ${describe(r)}`);
    if (e.kind === "not-found") return false;
    throw e;
  }
}

/**
 * A copy fit for SSA: no managedFields (the server rejects them in an apply), and for Secrets
 * `stringData` folded into base64 `data`. stringData is write-only (the server moves it into `data`), so a
 * manager applying it owns `stringData.*` fields that never exist: it does not own the `data` keys, cannot
 * prune a key it stops applying, and sees no conflict when someone else edits them. Shallow: the caller's
 * object is never changed.
 */
function prepareForApply<T extends KubernetesObject>(obj: T): T {
  const o = obj as T & { stringData?: Record<string, string>; data?: Record<string, string> };
  let copy = o;
  if (o.metadata?.managedFields) {
    const { managedFields: _drop, ...metadata } = o.metadata;
    copy = { ...copy, metadata };
  }
  if (o.kind === "Secret" && (o.apiVersion ?? "v1") === "v1" && o.stringData) {
    const { stringData, ...rest } = copy;
    const data = { ...(o.data ?? {}) };
    for (const [k, v] of Object.entries(stringData ?? {})) data[k] = Buffer.from(v, "utf8").toString("base64");
    copy = { ...rest, data } as typeof o;
  }
  return copy;
}

function rewrap(err: unknown, context: string): KubeApiError {
  const e = KubeApiError.from(err);
  return e.message.startsWith(context)
    ? e
    : new KubeApiError({
        status: e.status,
        reason: e.reason,
        kind: e.kind,
        message: `${context}: ${e.message}`,
        ...(e.details ? { details: e.details } : {}),
        cause: err,
      });
}

function describe(ref: ObjectRef): string {
  return `${ref.kind || "?"} ${ref.namespace ? `${ref.namespace}/` : ""}${ref.name || "?"}`;
}
