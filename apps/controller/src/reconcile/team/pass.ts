import type { Caches } from "../../caches.js";
import type { ClusterWriter } from "../../kube.js";
import { teamNames } from "@berth/core";
import type { ReconcilerDeps } from "../deps.js";
import type { ObjectRef, SecretLike } from "../objects.js";

export interface TeamReconcilerDeps extends ReconcilerDeps {
  /** Re-check while the finalizer holds for remaining ASO resources. */
  offboardingPollMs: number;
  now?: () => Date;
}

/**
 * One pass over one team, as every step sees it: the reconciler's dependencies, the caches as this pass reads
 * them (a recording view: the memo's key), and the writer (bound to the pass's AbortSignal, counting writes).
 */
export interface TeamPass {
  team: string;
  deps: TeamReconcilerDeps;
  caches: Caches;
  writer: ClusterWriter;
}

/** The writer, and whether anything was written through it (reads do not count). */
export function trackWrites(inner: ClusterWriter): { writer: ClusterWriter; wrote(): boolean } {
  let wrote = false;
  const write =
    <A extends unknown[]>(f: (...a: A) => Promise<void>) =>
    (...a: A) => {
      wrote = true;
      return f(...a);
    };
  const writer: ClusterWriter = {
    apply: write((o) => inner.apply(o)),
    applyStatus: write((o) => inner.applyStatus(o)),
    delete: write((r) => inner.delete(r)),
    setFinalizers: write((r, f, v) => inner.setFinalizers(r, f, v)),
    replaceSecretData: write((c, d) => inner.replaceSecretData(c, d)),
    annotate: write((r, a) => inner.annotate(r, a)),
    read: (r) => inner.read(r),
    listAsoResources: (ns) => inner.listAsoResources(ns),
  };
  return { writer, wrote: () => wrote };
}

/** The team's aso-credential Secret as the steps name it in writes and Events (with its uid when it exists). */
export function credentialRef(team: string, secret?: SecretLike): ObjectRef {
  const names = teamNames(team);
  return {
    apiVersion: "v1",
    kind: "Secret",
    name: names.asoCredentialSecret,
    namespace: names.namespace,
    ...(secret?.metadata?.uid ? { uid: secret.metadata.uid } : {}),
  };
}
