export {
  applyObject,
  applyStatus,
  deleteObject,
  getObject,
  mergePatchObject,
  objectPath,
  replaceObject,
  type ApplyOptions,
  type DeleteOptions,
  type WriteOptions,
} from "./apply.js";
export { backoffDelay, type BackoffPolicy } from "./backoff.js";
export { systemClock, type Clock } from "./clock.js";
export {
  clientFor,
  getJson,
  listPath,
  KubeClient,
  CONTENT_TYPE,
  DEFAULT_REQUEST_TIMEOUT_MS,
  type RawList,
  type RequestInit,
} from "./client.js";
export { KubeApiError, isKubeApiError, parseStatus, type KubeApiErrorKind, type KubeStatus } from "./errors.js";
export { EventRecorder, type EventRecorderOptions, type EventRef } from "./events.js";
export {
  startInformer,
  InformerError,
  type Informer,
  type InformerErrorKind,
  type InformerEvent,
  type InformerEventType,
  type InformerOptions,
  type InformerSpec,
} from "./informer.js";
export { loadKubeConfig, type KubeConfigLike } from "./kubeconfig.js";
export { LeaderElector, microTime, type LeaderElectorOptions } from "./leader.js";
export { createControllerMetrics, errorReason, type ControllerMetrics } from "./metrics.js";
export { cacheKey, type KubernetesObject, type ManagedFieldsEntry, type ObjectMeta, type ObjectRef } from "./object.js";
export { WorkQueue, type QueueHandler, type ReconcileResult, type WorkQueueOptions } from "./queue.js";
export { startHealthServer, type HealthServer, type HealthServerOptions } from "./server.js";
