import type { FluxRepoBatch } from "@berth/gitops";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { NotifyObserver } from "./adapters/flux-notifier.js";
import type { StatusCacheStats } from "./adapters/team-status.js";

/**
 * The API's Prometheus metrics (docs/operations.md, "Metrics"), on the app's own Registry: never the global
 * one, so tests and several apps in one process do not collide. HTTP requests (count and latency by route
 * and status) are fastify-metrics' histogram on the same registry (app.ts); the rest is recorded here by the
 * services that know it: the Flux-repo writer, the rollout engine, idempotency, problems, the status cache.
 * Labels stay low-cardinality: route templates, problem types, phases, the platform's clusters; never a team or a
 * request.
 */
export class ApiMetrics {
  readonly registry = new Registry();
  private readonly registers = [this.registry];

  readonly problems = new Counter({
    name: "berth_api_problems_total",
    help: 'Problem answers (RFC 9457), by route template and problem type (adoption refusals: route=~".*/adopt.*").',
    labelNames: ["route", "type"] as const,
    registers: this.registers,
  });

  readonly idempotentReplays = new Counter({
    name: "berth_api_idempotent_replays_total",
    help: "Writes answered from the commit of an earlier request with the same Idempotency-Key, by route template.",
    labelNames: ["route"] as const,
    registers: this.registers,
  });

  readonly batches = new Counter({
    name: "berth_api_git_batches_total",
    help: "Group commits of the Flux-repo writer, by result (pushed, unchanged, failed).",
    labelNames: ["result"] as const,
    registers: this.registers,
  });

  readonly batchSize = new Histogram({
    name: "berth_api_git_batch_transactions",
    help: "Transactions (requests and engine steps) per group commit.",
    buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000],
    registers: this.registers,
  });

  readonly commitDuration = new Histogram({
    name: "berth_api_git_commit_duration_seconds",
    help: "One group commit from planning to the accepted push, retries included, by result.",
    labelNames: ["result"] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 60],
    registers: this.registers,
  });

  readonly pushDuration = new Histogram({
    name: "berth_api_git_push_duration_seconds",
    help: "The accepted push of a group commit (its last attempt).",
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: this.registers,
  });

  readonly pushRetries = new Counter({
    name: "berth_api_git_push_retries_total",
    help: "Pushes rejected because the remote moved, each retried on the new head.",
    registers: this.registers,
  });

  readonly rollouts = new Gauge({
    name: "berth_api_rollouts",
    help: "Rollouts in the Flux repo by phase, as the rollout engine last read them.",
    labelNames: ["phase"] as const,
    registers: this.registers,
  });

  readonly gateEvaluations = new Counter({
    name: "berth_api_rollout_gate_evaluations_total",
    help: "Gate evaluations of a rollout's current wave, by verdict (pass, wait, halt).",
    labelNames: ["verdict"] as const,
    registers: this.registers,
  });

  readonly gateDuration = new Histogram({
    name: "berth_api_rollout_gate_evaluation_duration_seconds",
    help: "One gate evaluation: every team of the wave on every cluster it lands on.",
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
    registers: this.registers,
  });

  readonly fluxNotifications = new Counter({
    name: "berth_api_flux_notifications_total",
    help: "Requests asking a cluster's Flux to fetch after a push (its Receiver), by cluster and result: delivered, failed (an attempt the cluster did not take; retried), gave_up (it fetches at its next poll).",
    labelNames: ["cluster", "result"] as const,
    registers: this.registers,
  });

  readonly fluxNotificationDelay = new Histogram({
    name: "berth_api_flux_notification_delay_seconds",
    help: "From a push to its delivery to a cluster's Receiver, retries included.",
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 60, 300],
    registers: this.registers,
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: "berth_api_" });
  }

  /** The Flux notifier's outcomes (flux-notifier.ts). Cluster names are the platform's few, from its config. */
  readonly notifyObserver: NotifyObserver = {
    delivered: (cluster, sincePushMs) => {
      this.fluxNotifications.inc({ cluster, result: "delivered" });
      this.fluxNotificationDelay.observe(sincePushMs / 1000);
    },
    failed: (cluster) => this.fluxNotifications.inc({ cluster, result: "failed" }),
    gaveUp: (cluster) => this.fluxNotifications.inc({ cluster, result: "gave_up" }),
  };

  /** The writer's outcome of one group commit (FluxRepoConfig.onBatch). */
  readonly observeBatch = (batch: FluxRepoBatch): void => {
    this.batches.inc({ result: batch.result });
    this.batchSize.observe(batch.transactions);
    this.commitDuration.observe({ result: batch.result }, batch.ms / 1000);
    if (batch.result === "pushed") this.pushDuration.observe(batch.pushMs / 1000);
    if (batch.rejectedPushes > 0) this.pushRetries.inc(batch.rejectedPushes);
  };

  /** Status-cache reads by how they were answered, read from the cache's own counters at each scrape. */
  watchStatusCache(stats: () => StatusCacheStats): void {
    new Counter({
      name: "berth_api_status_cache_reads_total",
      help: "Team status reads per cluster by how the shared cache answered: hit (a fresh listing), stale (the last listing while the next one is read), miss (waited for the cluster).",
      labelNames: ["result"] as const,
      registers: this.registers,
      collect() {
        const { hits, stale, misses } = stats();
        this.reset();
        this.inc({ result: "hit" }, hits);
        this.inc({ result: "stale" }, stale);
        this.inc({ result: "miss" }, misses);
      },
    });
    new Counter({
      name: "berth_api_status_cache_requests_total",
      help: "Requests the status cache sent to clusters: list (a listing, one LIST per page), get (one team, where listing is forbidden).",
      labelNames: ["verb"] as const,
      registers: this.registers,
      collect() {
        const { lists, gets } = stats();
        this.reset();
        this.inc({ verb: "list" }, lists);
        this.inc({ verb: "get" }, gets);
      },
    });
  }
}
