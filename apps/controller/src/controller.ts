import type { ControllerConfig } from "@berth/config";
import type { Cluster, ClusterFacts, PlatformValuesProvider } from "@berth/core";
import { Registry } from "prom-client";
import { Caches } from "./caches.js";
import { watchOf, watchSpecs, type Store, type WatchName } from "./watches.js";
import { KubeClusterWriter, type ClusterWriter } from "./kube.js";
import { createBerthControllerMetrics, type BerthControllerMetrics } from "./metrics.js";
import { LEASE_NAME, parseKey, PLATFORM_KEY, teamKey } from "./names.js";
import { PlatformReconciler } from "./reconcile/platform-reconciler.js";
import type { Events } from "./reconcile/deps.js";
import { TeamReconciler } from "./reconcile/team/reconciler.js";
import {
  EventRecorder,
  LeaderElector,
  startInformer,
  WorkQueue,
  type Informer,
  type KubeConfigLike,
} from "@berth/kube-runtime";
import { silentLogger, type Logger } from "@berth/logging";
import type { KubeObject } from "./reconcile/objects.js";

export interface ControllerTimings {
  /** Periodic re-check of a healthy key. Default 5 min. */
  resyncMs: number;
  /** Re-check while waiting for something the watches do not see (namespace, RoleBinding, provider). Default 15 s. */
  retryMs: number;
  /** Re-check while the offboarding finalizer holds. Default 5 s. */
  offboardingPollMs: number;
  /** Lease timings (client-go defaults 15/10/2 s). */
  leaseDurationSec: number;
  renewDeadlineSec: number;
  retryPeriodSec: number;
  /** Informer watchdog, and the resync period (a replay of the cache, not a relist). */
  watchdogMs: number;
  informerResyncMs: number;
  /** Longest one reconcile may take: its requests are aborted then and it is retried. Default 60 s. */
  reconcileTimeoutMs: number;
  /**
   * How often the platform reconciler asks the provider for the cluster's facts again while healthy (at most
   * resyncMs). main.ts sets it to live discovery's cluster cache TTL, so each pass after the TTL reads Azure
   * once and a changed OIDC issuer reaches platform-vars within about one TTL. Default: resyncMs.
   */
  factsRefreshMs?: number;
}

export const DEFAULT_TIMINGS: ControllerTimings = {
  resyncMs: 300_000,
  retryMs: 15_000,
  offboardingPollMs: 5_000,
  leaseDurationSec: 15,
  renewDeadlineSec: 10,
  retryPeriodSec: 2,
  watchdogMs: 300_000,
  informerResyncMs: 600_000,
  reconcileTimeoutMs: 60_000,
};

export interface ControllerOptions {
  /** A client-node KubeConfig, or what `loadKubeConfig()` (kube-runtime) returns. */
  kubeConfig: KubeConfigLike;
  config: ControllerConfig;
  provider: PlatformValuesProvider;
  logger?: Logger;
  registry?: Registry;
  timings?: Partial<ControllerTimings>;
  /** Team reconciles running at once. Default 4. (The platform has its own queue, one at a time.) */
  concurrency?: number;
}

/**
 * The controller wired up: informers (on every replica, so a new leader starts with warm caches) that
 * only enqueue keys, and — on the leader only — a work queue per reconciler ("platform", "team"). Each
 * leadership term has an AbortSignal: when the Lease is lost, every reconcile in flight is aborted before
 * its next write, and no Event is recorded. main.ts adds process concerns; tests start it in-process
 * against a real apiserver.
 */
export class Controller {
  readonly metrics: BerthControllerMetrics;
  readonly registry: Registry;
  private readonly log: Logger;
  private readonly timings: ControllerTimings;
  private readonly informers = new Map<WatchName, Informer<KubeObject>>();
  private readonly caches: Caches;
  private readonly platformReconciler: PlatformReconciler;
  private readonly teamReconciler: TeamReconciler;
  private readonly elector: LeaderElector | undefined;
  private queues: { platform: WorkQueue; team: WorkQueue } | undefined;
  /** The current leadership term's signal: writes (and Events) stop when it aborts. */
  private term: AbortSignal | undefined;
  /** Without leader election this replica leads until stop(). */
  private readonly standalone = new AbortController();
  private started = false;
  private stopped = false;

  constructor(private readonly opts: ControllerOptions) {
    const { config, kubeConfig } = opts;
    this.log = opts.logger ?? silentLogger;
    this.timings = { ...DEFAULT_TIMINGS, ...opts.timings };
    this.registry = opts.registry ?? new Registry();
    this.metrics = createBerthControllerMetrics(this.registry);

    const specs = watchSpecs(config.platform);
    const stores = {} as Record<WatchName, Store<KubeObject>>;
    // Bound lazily: the informers start in start(); the caches only read them after that.
    for (const name of Object.keys(specs) as WatchName[]) {
      stores[name] = {
        get: (ns, n) => this.informers.get(name)?.get(ns, n),
        list: () => this.informers.get(name)?.list() ?? [],
        byIndex: (index, value) => this.informers.get(name)?.byIndex(index, value) ?? [],
      };
    }
    this.caches = new Caches(config.platform, stores);

    const recorder = new EventRecorder(kubeConfig, {
      component: "berth-controller",
      host: config.identity,
      logger: this.log,
    });
    // Events are best effort, and written only by a leader whose term has not ended, as every other write.
    const leading = () => this.term !== undefined && !this.term.aborted;
    const events: Events = {
      warning: (ref, reason, message) => void (leading() && recorder.warning(ref, reason, message)),
      normal: (ref, reason, message) => void (leading() && recorder.normal(ref, reason, message)),
    };
    // What a write returns goes into the cache at once: the next pass sees it, and the watch echo of our
    // own write wakes nobody.
    const writer: ClusterWriter = new KubeClusterWriter(kubeConfig, {
      observe: (obj) => {
        const watch = watchOf(config.platform, obj);
        if (watch) this.informers.get(watch)?.observe(obj);
      },
    });
    const provider = observeFacts(opts.provider, (before, after) => {
      // E.g. a new OIDC issuer: platform-vars must change, and every team's federated credentials be checked
      // again; or the provider stopped (or started again) answering: every team's status says so.
      this.log.info(
        { before, after: after ?? "unavailable" },
        "cluster facts changed: reconciling the platform and every team",
      );
      this.enqueue(PLATFORM_KEY);
      for (const team of this.caches.teamNames()) this.enqueue(teamKey(team));
    });
    const common = {
      platform: config.platform,
      cluster: config.cluster,
      provider,
      caches: this.caches,
      writer,
      events,
    };
    this.platformReconciler = new PlatformReconciler({
      ...common,
      onFreshness: (ok) => this.metrics.platformValuesFresh.set(ok ? 1 : 0),
      onFindings: (n) => this.metrics.platformFindings.set(n),
      logger: this.log.child({ reconciler: "platform" }),
      resyncMs: Math.min(this.timings.resyncMs, this.timings.factsRefreshMs ?? Infinity),
      retryMs: this.timings.retryMs,
    });
    this.teamReconciler = new TeamReconciler({
      ...common,
      logger: this.log.child({ reconciler: "team" }),
      resyncMs: this.timings.resyncMs,
      retryMs: this.timings.retryMs,
      offboardingPollMs: this.timings.offboardingPollMs,
    });

    if (config.leaderElection) {
      this.elector = new LeaderElector(kubeConfig, {
        namespace: config.namespace,
        name: LEASE_NAME,
        identity: config.identity,
        leaseDurationSec: this.timings.leaseDurationSec,
        renewDeadlineSec: this.timings.renewDeadlineSec,
        retryPeriodSec: this.timings.retryPeriodSec,
        logger: this.log,
        metrics: this.metrics,
        onStartedLeading: (signal: AbortSignal) => this.lead(signal),
        onStoppedLeading: () => void this.follow("stopped leading"),
      });
    }
  }

  /** Starts the informers, waits for their first list, then campaigns (or leads at once without election). */
  async start(): Promise<void> {
    if (this.started) throw new Error("controller already started");
    this.started = true;
    const { kubeConfig, config } = this.opts;
    const specs = watchSpecs(config.platform);
    for (const [name, spec] of Object.entries(specs) as Array<[WatchName, (typeof specs)[WatchName]]>) {
      const informer = startInformer<KubeObject>(
        kubeConfig,
        {
          name: spec.name,
          path: spec.path,
          ...(spec.labelSelector ? { labelSelector: spec.labelSelector } : {}),
          ...(spec.fieldSelector ? { fieldSelector: spec.fieldSelector } : {}),
          transform: spec.keep,
          ...(spec.indexers ? { indexers: spec.indexers } : {}),
        },
        ({ object }) => {
          for (const key of spec.keys(object)) this.enqueue(key);
        },
        {
          // The informer binds its own name: one key per log line.
          logger: this.log,
          metrics: this.metrics,
          watchdogMs: this.timings.watchdogMs,
          resyncMs: this.timings.informerResyncMs,
        },
      );
      this.informers.set(name, informer);
    }
    await Promise.all([...this.informers.values()].map((i) => i.synced));
    this.log.info({ informers: this.informers.size }, "caches synced");
    if (this.stopped) return;
    if (this.elector) this.elector.start();
    else void this.lead(this.standalone.signal);
  }

  /** Caches synced: the readiness probe. (Followers are ready too: they are hot standbys.) */
  ready(): boolean {
    return this.started && !this.stopped && [...this.informers.values()].every((i) => i.hasSynced());
  }

  isLeader(): boolean {
    return this.queues !== undefined;
  }

  /** Stops reconciling, releases the Lease (so a standby takes over at once) and stops the informers. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    // The elector aborts the leader's work, waits for the queue to drain, then releases the Lease.
    if (this.elector) await this.elector.stop();
    else this.standalone.abort();
    await this.follow("stopping");
    for (const informer of this.informers.values()) informer.stop();
  }

  private enqueue(key: string): void {
    const q = this.queues;
    if (!q) return;
    if (key === PLATFORM_KEY) q.platform.add(key);
    else q.team.add(key);
  }

  /** Leader-only work: the queues run until `signal` aborts; the returned promise ends when they have drained. */
  private async lead(signal: AbortSignal): Promise<void> {
    if (this.stopped || this.queues || signal.aborted) return;
    this.log.info("leading: starting reconciles");
    this.metrics.isLeader.set(1);
    this.term = signal;
    const common = { metrics: this.metrics, logger: this.log, timeoutMs: this.timings.reconcileTimeoutMs };
    const queues = {
      platform: new WorkQueue({ name: "platform", concurrency: 1, ...common }),
      team: new WorkQueue({ name: "team", concurrency: this.opts.concurrency ?? 4, ...common }),
    };
    this.queues = queues;
    // Each handler's signal aborts on the queue's shutdown or its own time limit; the term's too.
    queues.platform.start((_key, s) => this.platformReconciler.reconcile(AbortSignal.any([s, signal])));
    queues.team.start(async (key, s) => {
      const parsed = parseKey(key);
      if (parsed?.kind !== "team") return;
      return this.teamReconciler.reconcile(parsed.team, AbortSignal.any([s, signal]));
    });
    queues.platform.add(PLATFORM_KEY);
    for (const team of this.caches.teamNames()) queues.team.add(teamKey(team));
    await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
    await this.follow("leadership ended");
  }

  private async follow(why: string): Promise<void> {
    const queues = this.queues;
    if (!queues) return;
    this.queues = undefined;
    this.metrics.isLeader.set(0);
    this.log.info({ why }, "not leading: stopping reconciles");
    // The term's signal has aborted: reconciles in flight stop before their next write.
    await Promise.all([
      queues.platform.shutdown({ abort: true, reason: why }),
      queues.team.shutdown({ abort: true, reason: why }),
    ]);
  }
}

/**
 * The provider as the reconcilers see it: `onChange` runs when the cluster's facts differ from the last
 * answer, or when the provider stops or starts answering (whichever reconciler asked), so a change
 * discovered by one pass reaches every key at once — a team's status says whether the values are fresh.
 */
export function observeFacts(
  provider: PlatformValuesProvider,
  onChange: (before: ClusterFacts | undefined, after: ClusterFacts | undefined) => void,
): PlatformValuesProvider {
  let last: ClusterFacts | undefined;
  let answering: boolean | undefined;
  const same = (a: ClusterFacts, b: ClusterFacts) =>
    a.tenantId === b.tenantId &&
    a.subscriptionId === b.subscriptionId &&
    a.oidcIssuerUrl === b.oidcIssuerUrl &&
    a.location === b.location;
  const { teamIdentity, roleDefinitionId, resourceProviderState } = provider; // the optional ones, called on provider
  return {
    clusterFacts: async (cluster) => {
      let facts: ClusterFacts;
      try {
        facts = await provider.clusterFacts(cluster);
      } catch (err) {
        if (answering !== false) {
          answering = false;
          if (last) onChange(last, undefined);
        }
        throw err;
      }
      const before = last;
      const wasAnswering = answering;
      last = facts;
      answering = true;
      if ((before && !same(before, facts)) || wasAnswering === false) onChange(before, facts);
      return facts;
    },
    platformCredential: (cluster) => provider.platformCredential(cluster),
    ...(teamIdentity
      ? { teamIdentity: (team: string, cluster: Cluster) => teamIdentity.call(provider, team, cluster) }
      : {}),
    ...(roleDefinitionId
      ? { roleDefinitionId: (cluster: Cluster, roleName: string) => roleDefinitionId.call(provider, cluster, roleName) }
      : {}),
    ...(resourceProviderState
      ? {
          resourceProviderState: (cluster: Cluster, namespace: string) =>
            resourceProviderState.call(provider, cluster, namespace),
        }
      : {}),
  };
}
