/**
 * The few object shapes the reconcilers read, structurally typed so they accept both the typed models of
 * @kubernetes/client-node (dates as Date) and raw JSON from custom resources (dates as strings).
 */
import type { ObjectRef } from "../runtime/index.js";

export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  fieldsV1?: unknown;
}

export interface Meta {
  name?: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  deletionTimestamp?: Date | string;
  managedFields?: ManagedFieldsEntry[];
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: Meta;
}

export interface ConfigMapLike extends KubeObject {
  data?: Record<string, string>;
}

export interface SecretLike extends KubeObject {
  data?: Record<string, string>;
  type?: string;
}

/** A condition as Flux and ASO write them (ASO adds severity). */
export interface ConditionLike {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
  severity?: string;
  observedGeneration?: number;
  lastTransitionTime?: Date | string;
}

export interface WithConditions extends KubeObject {
  status?: { conditions?: ConditionLike[]; [key: string]: unknown };
}

export interface KustomizationLike extends WithConditions {
  status?: { conditions?: ConditionLike[]; lastAppliedRevision?: string; lastAttemptedRevision?: string };
}

export interface TeamObject extends KubeObject {
  spec?: { roleAssignments?: Array<{ role: string }>; [key: string]: unknown };
  status?: { conditions?: ConditionLike[]; [key: string]: unknown };
}

export const isDeleting = (o: KubeObject | undefined): boolean => Boolean(o?.metadata?.deletionTimestamp);

export const b64 = (value: string) => Buffer.from(value, "utf8").toString("base64");
export const unb64 = (value: string | undefined) => (value === undefined ? undefined : Buffer.from(value, "base64").toString("utf8"));

/** Reference to an object, for Events and deletes: the runtime's. */
export type { ObjectRef };

export function refOf(o: KubeObject, fallback: Omit<ObjectRef, "uid">): ObjectRef {
  return {
    apiVersion: o.apiVersion ?? fallback.apiVersion,
    kind: o.kind ?? fallback.kind,
    name: o.metadata?.name ?? fallback.name,
    ...(fallback.namespace ? { namespace: o.metadata?.namespace ?? fallback.namespace } : {}),
    ...(o.metadata?.uid ? { uid: o.metadata.uid } : {}),
  };
}
