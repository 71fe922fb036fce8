/**
 * The controller's Prometheus metrics, registered on the app's own Registry (never the global one,
 * so tests and several apps in one process do not collide). Names follow controller-runtime's
 * (reconcile_total, reconcile_errors_total, workqueue_depth, ...) under a `berth_controller_` prefix.
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

export interface ControllerMetrics {
  readonly registry: Registry;
  /** Reconciles finished, by controller and result (success | error | requeue). */
  reconcileTotal: Counter<"controller" | "result">;
  /** Failed reconciles, by controller and a low-cardinality reason (KubeApiError kind, error kind or name). */
  reconcileErrors: Counter<"controller" | "reason">;
  /** Reconcile duration in seconds, by controller. */
  reconcileDuration: Histogram<"controller">;
  /** Keys ready to be processed (not delayed, not in flight), by queue. */
  queueDepth: Gauge<"queue">;
  /** Unplanned informer restarts (watch errors, watchdog, expired resourceVersion, failed lists), by informer. */
  watchRestarts: Counter<"informer">;
  /** 1 while this instance holds the leader Lease. */
  isLeader: Gauge;
}

const byRegistry = new WeakMap<Registry, ControllerMetrics>();

/** Idempotent per registry: a second call returns the same metrics instead of failing on duplicate names. */
export function createControllerMetrics(registry: Registry, opts: { prefix?: string } = {}): ControllerMetrics {
  const existing = byRegistry.get(registry);
  if (existing) return existing;
  const p = opts.prefix ?? "berth_controller_";
  const registers = [registry];
  const metrics: ControllerMetrics = {
    registry,
    reconcileTotal: new Counter({
      name: `${p}reconcile_total`,
      help: "Reconciles finished, by controller and result (success, error, requeue).",
      labelNames: ["controller", "result"] as const,
      registers,
    }),
    reconcileErrors: new Counter({
      name: `${p}reconcile_errors_total`,
      help: "Reconciles that failed, by controller and reason.",
      labelNames: ["controller", "reason"] as const,
      registers,
    }),
    reconcileDuration: new Histogram({
      name: `${p}reconcile_duration_seconds`,
      help: "Time spent in one reconcile, in seconds.",
      labelNames: ["controller"] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    }),
    queueDepth: new Gauge({
      name: `${p}workqueue_depth`,
      help: "Keys waiting to be processed (ready, not delayed, not in flight), by queue.",
      labelNames: ["queue"] as const,
      registers,
    }),
    watchRestarts: new Counter({
      name: `${p}watch_restarts_total`,
      help: "Unplanned informer restarts (watch error, silent watch, expired resourceVersion, failed list), by informer.",
      labelNames: ["informer"] as const,
      registers,
    }),
    isLeader: new Gauge({
      name: `${p}is_leader`,
      help: "1 while this instance holds the leader Lease, else 0.",
      registers,
    }),
  };
  metrics.isLeader.set(0);
  byRegistry.set(registry, metrics);
  return metrics;
}

/** A bounded label for a failure: the KubeApiError/GitOpsError-style `kind`, else the error's name. */
export function errorReason(err: unknown): string {
  const e = err as { kind?: unknown; name?: unknown } | null;
  if (e && typeof e.kind === "string" && e.kind.length <= 40) return e.kind;
  if (e && typeof e.name === "string" && e.name.length <= 40) return e.name;
  return "unknown";
}
