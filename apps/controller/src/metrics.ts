/**
 * Every metric the controller itself reports, on the app's own Registry: kube-runtime's reconcile, queue,
 * watch and leader metrics (`berth_controller_` prefix), and the platform's own gauges. The Azure provider
 * registers its call metrics on the same Registry (packages/azure). docs/controller.md lists them all.
 */
import { createControllerMetrics, type ControllerMetrics } from "@berth/kube-runtime";
import { Gauge, type Registry } from "prom-client";

export interface BerthControllerMetrics extends ControllerMetrics {
  /** 1 while the platform values provider answers, 0 while the controller stands on the last known values. */
  platformValuesFresh: Gauge;
  /** Problems the last platform check in Azure found. */
  platformFindings: Gauge;
}

const byRegistry = new WeakMap<Registry, BerthControllerMetrics>();

/** Idempotent per registry, as kube-runtime's: a second controller on one registry shares the metrics. */
export function createBerthControllerMetrics(registry: Registry): BerthControllerMetrics {
  const existing = byRegistry.get(registry);
  if (existing) return existing;
  const registers = [registry];
  const metrics: BerthControllerMetrics = {
    ...createControllerMetrics(registry),
    platformValuesFresh: new Gauge({
      name: "berth_controller_platform_values_fresh",
      help: "1 while the platform values provider answers, 0 while the controller stands on the last known values (or none).",
      registers,
    }),
    platformFindings: new Gauge({
      name: "berth_controller_platform_findings",
      help: "Problems the last platform check in Azure found (role catalog ids that do not match their names, unregistered resource providers); see the Warning Events on platform-vars.",
      registers,
    }),
  };
  byRegistry.set(registry, metrics);
  return metrics;
}
