/**
 * The few object shapes the reconcilers read, structurally typed so they accept both the typed models of
 * @kubernetes/client-node (dates as Date) and raw JSON from custom resources (dates as strings).
 */
import type { KubernetesObject, ManagedFieldsEntry, ObjectMeta, ObjectRef } from "@berth/kube-runtime";

export type { ManagedFieldsEntry, ObjectRef };
export type Meta = ObjectMeta;

export type KubeObject = KubernetesObject;

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
  spec?: { sourceRef?: { kind?: string; name?: string; namespace?: string } };
  status?: {
    conditions?: ConditionLike[];
    lastAppliedRevision?: string;
    lastAttemptedRevision?: string;
    /** For a Kustomization that reads an ExternalArtifact: the commit its applied artifact was cut from. */
    lastAppliedOriginRevision?: string;
  };
}

export interface TeamObject extends KubeObject {
  spec?: { roleAssignments?: Array<{ role: string }>; [key: string]: unknown };
  status?: { conditions?: ConditionLike[]; [key: string]: unknown };
}

export const isDeleting = (o: KubeObject | undefined): boolean => Boolean(o?.metadata?.deletionTimestamp);

export const b64 = (value: string) => Buffer.from(value, "utf8").toString("base64");
export const unb64 = (value: string | undefined) =>
  value === undefined ? undefined : Buffer.from(value, "base64").toString("utf8");
