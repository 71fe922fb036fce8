export { applyObject, applyStatus, deleteObject, type ApplyOptions, type DeleteOptions, type ObjectRef } from "./apply.js";
export { backoffDelay, type BackoffPolicy } from "./backoff.js";
export { apiClient, getJson, listPath, DEFAULT_REQUEST_TIMEOUT_MS, type RawList } from "./client.js";
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
export { objectKey, parseKey } from "./keys.js";
export { LeaderElector, type LeaderElectorOptions } from "./leader.js";
export { silentLogger, type LogFn, type Logger } from "./logger.js";
export { createControllerMetrics, errorReason, type ControllerMetrics } from "./metrics.js";
export { WorkQueue, type QueueHandler, type ReconcileResult, type WorkQueueOptions } from "./queue.js";
export { startHealthServer, type HealthServer, type HealthServerOptions } from "./server.js";
