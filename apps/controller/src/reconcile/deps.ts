import type { Cluster, Platform, PlatformValuesProvider } from "@berth/core";
import type { Logger } from "@berth/logging";
import type { Caches } from "../caches.js";
import type { ClusterWriter } from "../kube.js";
import type { ObjectRef } from "./objects.js";

/** Where the reconcilers report what they did (the runtime's EventRecorder). */
export interface Events {
  warning(ref: ObjectRef, reason: string, message: string): void;
  normal(ref: ObjectRef, reason: string, message: string): void;
}

/** What both reconcilers are given. */
export interface ReconcilerDeps {
  platform: Platform;
  cluster: Cluster;
  provider: PlatformValuesProvider;
  caches: Caches;
  writer: ClusterWriter;
  events: Events;
  logger: Logger;
  /** Periodic re-check when all is well. */
  resyncMs: number;
  /** Re-check while waiting for something outside the watches (namespace, RoleBinding, provider). */
  retryMs: number;
}
