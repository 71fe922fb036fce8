import {
  applyObject,
  applyStatus,
  deleteObject,
  getObject,
  KubeApiError,
  listPath,
  mergePatchObject,
  replaceObject,
  type KubeConfigLike,
} from "@berth/kube-runtime";
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
  /** Sets these annotations on an existing object (a merge patch); one that is gone is left gone. */
  annotate(ref: ObjectRef, annotations: Record<string, string>): Promise<void>;
  /** Replaces the Secret's data wholesale (removes keys someone else added; SSA cannot remove others' fields). */
  replaceSecretData(current: SecretLike, data: Record<string, string>): Promise<void>;
  /** `Kind/name` of every ASO resource in `namespace`, over the ASO kinds whose CRDs are installed. */
  listAsoResources(namespace: string): Promise<string[]>;
  /**
   * The same writer, bound to one reconcile: every request carries `signal`, so a reconcile whose
   * leadership ended (or whose time ran out) makes no further write.
   */
  withSignal?(signal: AbortSignal): ClusterWriter;
}

export interface KubeClusterWriterOptions {
  /** Gets every object the server returned for a write (its new state): the controller caches it at once. */
  observe?: (obj: KubeObject) => void;
  signal?: AbortSignal;
}

export class KubeClusterWriter implements ClusterWriter {
  constructor(
    private readonly kc: KubeConfigLike,
    private readonly opts: KubeClusterWriterOptions = {},
  ) {}

  withSignal(signal: AbortSignal): ClusterWriter {
    return new KubeClusterWriter(this.kc, { ...this.opts, signal });
  }

  private get signal(): { signal?: AbortSignal } {
    return this.opts.signal ? { signal: this.opts.signal } : {};
  }

  private stored(obj: KubeObject): void {
    this.opts.observe?.(obj);
  }

  async apply(obj: KubeObject): Promise<void> {
    // force: the controller is the only rightful writer of these fields; a hand edit must not block it.
    this.stored(await applyObject(this.kc, obj, { fieldManager: FIELD_MANAGER, force: true, ...this.signal }));
  }

  async applyStatus(obj: KubeObject): Promise<void> {
    this.stored(await applyStatus(this.kc, obj, { fieldManager: FIELD_MANAGER, force: true, ...this.signal }));
  }

  async delete(ref: ObjectRef): Promise<void> {
    await deleteObject(this.kc, ref, this.signal); // already gone is fine
  }

  async read(ref: ObjectRef): Promise<KubeObject | undefined> {
    return getObject(this.kc, ref, this.signal);
  }

  async setFinalizers(ref: ObjectRef, finalizers: string[], resourceVersion: string | undefined): Promise<void> {
    try {
      await mergePatchObject(
        this.kc,
        ref,
        { metadata: { finalizers, ...(resourceVersion ? { resourceVersion } : {}) } },
        { fieldManager: FIELD_MANAGER, ...this.signal },
      );
    } catch (err) {
      if (!(err instanceof KubeApiError) || err.kind !== "not-found") throw err;
    }
  }

  async annotate(ref: ObjectRef, annotations: Record<string, string>): Promise<void> {
    try {
      this.stored(
        await mergePatchObject(
          this.kc,
          ref,
          { metadata: { annotations } },
          { fieldManager: FIELD_MANAGER, ...this.signal },
        ),
      );
    } catch (err) {
      if (!(err instanceof KubeApiError) || err.kind !== "not-found") throw err;
    }
  }

  async replaceSecretData(current: SecretLike, data: Record<string, string>): Promise<void> {
    const { managedFields: _drop, ...metadata } = current.metadata ?? {};
    this.stored(
      await replaceObject(
        this.kc,
        { apiVersion: "v1", kind: "Secret", metadata, type: current.type ?? "Opaque", data } as KubeObject,
        { fieldManager: FIELD_MANAGER, ...this.signal },
      ),
    );
  }

  async listAsoResources(namespace: string): Promise<string[]> {
    const found: string[] = [];
    for (const k of ASO_KINDS) {
      try {
        const list = await listPath(
          this.kc,
          `/apis/${k.group}/${k.version}/namespaces/${namespace}/${k.plural}`,
          this.signal,
        );
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
  return err instanceof KubeApiError ? err.kind : undefined;
}
