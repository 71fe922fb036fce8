/**
 * The object shapes the runtime handles: plain JSON as the apiserver sends it. The runtime does not use
 * @kubernetes/client-node's models (their import alone costs ~80 MiB of RSS and a second of start-up, and
 * their (de)serializers most of the CPU of a write); any object with apiVersion, kind and metadata will do.
 */

export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  subresource?: string;
  fieldsV1?: object;
}

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  deletionTimestamp?: string | Date;
  creationTimestamp?: string | Date;
  managedFields?: ManagedFieldsEntry[];
}

export interface KubernetesObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
}

/** A reference to one object: for Events, deletes and reads. `uid` pins Events to one incarnation. */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  name: string;
  /** Absent for cluster-scoped objects (their Events go to namespace "default"). */
  namespace?: string;
  uid?: string;
}

/** "namespace/name", or "/name" for cluster-scoped objects: the informer cache's key. */
export function cacheKey(obj: KubernetesObject): string {
  return `${obj.metadata?.namespace ?? ""}/${obj.metadata?.name ?? ""}`;
}
