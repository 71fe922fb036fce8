import { ApiException, KubernetesObjectApi, PatchStrategy, type KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import { apiClient, applyObject, applyStatus, deleteObject, KubeApiError, listPath } from "./runtime/index.js";
import { ASO_KINDS, FIELD_MANAGER } from "./names.js";
import type { KubeObject, ObjectRef, SecretLike } from "./reconcile/objects.js";

/**
 * Every write the reconcilers make, behind one small interface (so they read as decisions, and a test
 * can record the writes). Server-side applies go through the runtime under field manager berth-controller.
 */
export interface ClusterWriter {
  apply(obj: KubeObject): Promise<void>;
  applyStatus(obj: KubeObject): Promise<void>;
  delete(ref: ObjectRef): Promise<void>;
  /** The object as the server has it now (not the cache), or undefined when it does not exist. */
  read(ref: ObjectRef): Promise<KubeObject | undefined>;
  /** Sets the finalizers to `finalizers` if the object is still at `resourceVersion` (else a conflict). */
  setFinalizers(ref: ObjectRef, finalizers: string[], resourceVersion: string | undefined): Promise<void>;
  /** Replaces the Secret's data wholesale (removes keys someone else added; SSA cannot remove others' fields). */
  replaceSecretData(current: SecretLike, data: Record<string, string>): Promise<void>;
  /** `Kind/name` of every ASO resource in `namespace`, over the ASO kinds whose CRDs are installed. */
  listAsoResources(namespace: string): Promise<string[]>;
}

export class KubeClusterWriter implements ClusterWriter {
  private readonly objects: KubernetesObjectApi;

  constructor(private readonly kc: KubeConfig) {
    this.objects = apiClient(kc, KubernetesObjectApi);
  }

  async apply(obj: KubeObject): Promise<void> {
    // force: the controller is the only rightful writer of these fields; a hand edit must not block it.
    await applyObject(this.kc, obj as never, { fieldManager: FIELD_MANAGER, force: true });
  }

  async applyStatus(obj: KubeObject): Promise<void> {
    await applyStatus(this.kc, obj as never, { fieldManager: FIELD_MANAGER, force: true });
  }

  async delete(ref: ObjectRef): Promise<void> {
    await deleteObject(this.kc, ref); // already gone is fine
  }

  async read(ref: ObjectRef): Promise<KubeObject | undefined> {
    try {
      return (await this.objects.read({ apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.name, ...(ref.namespace ? { namespace: ref.namespace } : {}) } })) as KubeObject;
    } catch (err) {
      const e = KubeApiError.from(err, `read ${ref.kind} ${ref.namespace ?? ""}/${ref.name}`);
      if (e.kind === "not-found") return undefined;
      throw e;
    }
  }

  async setFinalizers(ref: ObjectRef, finalizers: string[], resourceVersion: string | undefined): Promise<void> {
    const patch: KubernetesObject = {
      apiVersion: ref.apiVersion,
      kind: ref.kind,
      metadata: { name: ref.name, ...(ref.namespace ? { namespace: ref.namespace } : {}), finalizers, ...(resourceVersion ? { resourceVersion } : {}) },
    };
    try {
      await this.objects.patch(patch, undefined, undefined, FIELD_MANAGER, undefined, PatchStrategy.MergePatch);
    } catch (err) {
      const e = KubeApiError.from(err, `remove finalizer of ${ref.kind} ${ref.namespace ?? ""}/${ref.name}`);
      if (e.kind !== "not-found") throw e;
    }
  }

  async replaceSecretData(current: SecretLike, data: Record<string, string>): Promise<void> {
    const { managedFields: _drop, ...metadata } = current.metadata ?? {};
    try {
      await this.objects.replace({ apiVersion: "v1", kind: "Secret", metadata, type: current.type ?? "Opaque", data } as KubernetesObject, undefined, undefined, FIELD_MANAGER);
    } catch (err) {
      throw KubeApiError.from(err, `replace Secret ${metadata.namespace}/${metadata.name}`);
    }
  }

  async listAsoResources(namespace: string): Promise<string[]> {
    const found: string[] = [];
    for (const k of ASO_KINDS) {
      try {
        const list = await listPath(this.kc, `/apis/${k.group}/${k.version}/namespaces/${namespace}/${k.plural}`);
        for (const item of list.items ?? []) found.push(`${k.kind}/${item.metadata?.name ?? "?"}`);
      } catch (raw) {
        const err = KubeApiError.from(raw, `list ${k.plural} in ${namespace}`);
        // 404: that kind's CRD is not installed on this cluster, so no such resource can remain.
        if (err.kind === "not-found") continue;
        throw err;
      }
    }
    return found.sort();
  }
}

/** The closed set of API errors the reconcilers act on (undefined for anything that is not an API error). */
export function errorKind(err: unknown): KubeApiError["kind"] | undefined {
  if (err instanceof KubeApiError) return err.kind;
  if (err instanceof ApiException) return KubeApiError.from(err).kind;
  return undefined;
}
