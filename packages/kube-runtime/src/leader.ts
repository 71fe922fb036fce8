/**
 * Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics:
 *
 * - every `retryPeriod` a candidate reads the Lease; it takes it when it is missing, released
 *   (empty holder) or expired — expiry is judged by how long *this* process has seen the same
 *   record (resourceVersion) unchanged, never by comparing the holder's clock with ours;
 * - every write carries the resourceVersion read (optimistic concurrency), so of two candidates
 *   racing for one Lease exactly one wins (the other gets 409 Conflict);
 * - the leader renews every `retryPeriod`; when no renewal has succeeded for `renewDeadline`
 *   (measured from when the last successful renewal was *sent*), it steps down: the signal given
 *   to onStartedLeading aborts and onStoppedLeading runs. Because leaseDuration > renewDeadline,
 *   it has stopped before any other candidate can consider the Lease expired;
 * - after stepping down it stays a candidate (onStartedLeading runs again, with a new signal, if
 *   it wins again); stop() ends candidacy and releases a held Lease (holder cleared) so a
 *   successor takes over on its next retry instead of waiting out the lease.
 */
import { Sleeper } from "./backoff.js";
import { clientFor, type KubeClient } from "./client.js";
import { KubeApiError } from "./errors.js";
import type { KubeConfigLike } from "./kubeconfig.js";
import { silentLogger, type Logger } from "@berth/logging";
import type { ControllerMetrics } from "./metrics.js";

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; [key: string]: unknown };
  spec?: LeaseSpec;
}

/**
 * A MicroTime as the apiserver wants it: RFC 3339 with exactly 6 fractional digits (the apiserver refuses
 * the 3 that Date#toISOString writes).
 */
export function microTime(ms: number = Date.now()): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

/** The Lease's three calls, raw JSON. */
class LeaseApi {
  constructor(
    private readonly client: KubeClient,
    private readonly timeoutMs: number,
  ) {}

  private path(namespace: string, name?: string): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases${name ? `/${name}` : ""}`;
  }

  read(namespace: string, name: string): Promise<Lease> {
    return this.client.request<Lease>(this.path(namespace, name), { timeoutMs: this.timeoutMs });
  }

  create(namespace: string, body: Lease): Promise<Lease> {
    return this.client.request<Lease>(this.path(namespace), { method: "POST", body, timeoutMs: this.timeoutMs });
  }

  /** PUT with the resourceVersion read: of two racers exactly one wins (409 for the other). */
  replace(namespace: string, name: string, body: Lease): Promise<Lease> {
    return this.client.request<Lease>(this.path(namespace, name), { method: "PUT", body, timeoutMs: this.timeoutMs });
  }
}

export interface LeaderElectorOptions {
  namespace: string;
  name: string;
  /** Unique per process (pod name + random suffix). */
  identity: string;
  /** How long others wait after the last observed renewal before taking over. Integer seconds. Default 15. */
  leaseDurationSec?: number;
  /** A leader that has not renewed for this long steps down. Default 10; must be < leaseDurationSec. */
  renewDeadlineSec?: number;
  /** Between attempts to acquire or renew. Default 2; must be < renewDeadlineSec / 1.2. */
  retryPeriodSec?: number;
  logger?: Logger;
  metrics?: ControllerMetrics;
  /** Called on becoming leader; stop leader-only work when `signal` aborts. A returned promise is awaited (bounded) by stop() before the Lease is released. */
  onStartedLeading: (signal: AbortSignal) => void | Promise<void>;
  /** Called after the signal aborted: on losing the Lease, failing to renew, or stop(). */
  onStoppedLeading: () => void;
}

export class LeaderElector {
  private readonly api: LeaseApi;
  private readonly log: Logger;
  private readonly leaseDurationSec: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly sleeper = new Sleeper();
  private running: Promise<void> | undefined;
  private stopped = false;
  private leading = false;
  private abort: AbortController | undefined;
  /** The current (or last) term's onStartedLeading, settled or not; a new term starts after it. */
  private leadingWork: Promise<void> = Promise.resolve();
  private deadlineTimer: NodeJS.Timeout | undefined;
  /** The record last seen (resourceVersion) and when we first saw it, for expiry by local time. */
  private observedVersion: string | undefined;
  private observedAt = 0;
  private observedHolder: string | undefined;

  constructor(
    kc: KubeConfigLike,
    private readonly opts: LeaderElectorOptions,
  ) {
    this.leaseDurationSec = Math.ceil(opts.leaseDurationSec ?? 15);
    this.renewDeadlineMs = (opts.renewDeadlineSec ?? 10) * 1000;
    this.retryPeriodMs = (opts.retryPeriodSec ?? 2) * 1000;
    if (!(this.leaseDurationSec * 1000 > this.renewDeadlineMs))
      throw new Error("leader election: leaseDurationSec must exceed renewDeadlineSec");
    if (!(this.renewDeadlineMs > this.retryPeriodMs * 1.2))
      throw new Error("leader election: renewDeadlineSec must exceed 1.2 × retryPeriodSec");
    if (!opts.identity) throw new Error("leader election: identity is required");
    // A request may not outlive the renew deadline: a hung renewal must not hold the loop.
    this.api = new LeaseApi(clientFor(kc), Math.max(1000, this.renewDeadlineMs));
    // Only the lease: the app's logger already names this replica (one key per line).
    this.log = (opts.logger ?? silentLogger).child({ lease: `${opts.namespace}/${opts.name}` });
  }

  start(): void {
    if (this.running || this.stopped) return;
    this.running = this.loop().catch((err: unknown) => this.log.error({ err }, "leader election loop crashed"));
  }

  isLeader(): boolean {
    return this.leading;
  }

  /** Ends candidacy; if leading, stops the leader's work, then releases the Lease. Idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.sleeper.wake();
    await this.running;
    if (this.leading) {
      await this.stepDown("stopping");
      await this.release();
    }
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      const sentAt = performance.now();
      const held = await this.tryAcquireOrRenew();
      if (this.stopped) break;
      if (held) {
        this.armDeadline(sentAt);
        if (!this.leading) this.becomeLeader();
      } else if (this.leading && this.observedHolder !== this.opts.identity && this.observedHolder !== undefined) {
        // Someone else holds the Lease now (we lost it): stop at once.
        await this.stepDown(`lease taken by ${this.observedHolder}`);
      }
      const wait = this.leading ? this.retryPeriodMs : this.retryPeriodMs * (1 + 0.2 * Math.random());
      await this.sleeper.sleep(wait);
    }
  }

  /** One attempt; true when we hold the Lease afterwards. Never throws. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity } = this.opts;
    const now = () => microTime();
    let lease: Lease;
    try {
      lease = await this.api.read(namespace, name);
    } catch (err) {
      const e = KubeApiError.from(err, "read lease");
      if (e.kind !== "not-found") {
        this.log.warn({ err: e, kind: e.kind }, "cannot read the lease");
        return false;
      }
      try {
        const t = now();
        await this.api.create(namespace, {
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: { name, namespace },
          spec: {
            holderIdentity: identity,
            leaseDurationSeconds: this.leaseDurationSec,
            acquireTime: t,
            renewTime: t,
            leaseTransitions: 0,
          },
        });
        this.observedHolder = identity;
        return true;
      } catch (err2) {
        const e2 = KubeApiError.from(err2, "create lease");
        if (e2.kind !== "conflict") this.log.warn({ err: e2, kind: e2.kind }, "cannot create the lease");
        return false;
      }
    }

    const spec: LeaseSpec = lease.spec ?? {};
    const holder = spec.holderIdentity || undefined;
    const version = lease.metadata?.resourceVersion;
    if (version !== this.observedVersion) {
      this.observedVersion = version;
      this.observedAt = performance.now();
    }
    this.observedHolder = holder;
    if (holder && holder !== identity) {
      const durationMs = (spec.leaseDurationSeconds ?? this.leaseDurationSec) * 1000;
      if (performance.now() - this.observedAt < durationMs) return false; // held by a live leader
      this.log.info({ previous: holder }, "lease expired; taking over");
    }

    const t = now();
    const mine = holder === identity;
    const next: LeaseSpec = {
      holderIdentity: identity,
      leaseDurationSeconds: this.leaseDurationSec,
      acquireTime: mine && spec.acquireTime ? spec.acquireTime : t,
      renewTime: t,
      leaseTransitions: mine ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
    };
    try {
      const updated = await this.api.replace(namespace, name, { ...lease, spec: next });
      this.observedVersion = updated.metadata?.resourceVersion;
      this.observedAt = performance.now();
      this.observedHolder = identity;
      return true;
    } catch (err) {
      const e = KubeApiError.from(err, "update lease");
      // conflict: another candidate (or the holder) wrote first; we re-read on the next attempt.
      if (e.kind !== "conflict")
        this.log.warn({ err: e, kind: e.kind }, mine ? "cannot renew the lease" : "cannot acquire the lease");
      return false;
    }
  }

  private becomeLeader(): void {
    this.leading = true;
    this.opts.metrics?.isLeader.set(1);
    this.log.info("became leader");
    const abort = new AbortController();
    this.abort = abort;
    // After a step-down the previous term's work may still be draining: never run two terms at once.
    this.leadingWork = this.leadingWork
      .then(() => (abort.signal.aborted ? undefined : this.opts.onStartedLeading(abort.signal)))
      .catch((err: unknown) => this.log.error({ err }, "onStartedLeading failed"));
  }

  /** Steps down when renewals have failed for renewDeadline since the last successful one was sent. */
  private armDeadline(sentAt: number): void {
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    const remaining = sentAt + this.renewDeadlineMs - performance.now();
    this.deadlineTimer = setTimeout(
      () => {
        this.deadlineTimer = undefined;
        void this.stepDown(`no renewal for ${this.renewDeadlineMs} ms`);
      },
      Math.max(0, remaining),
    );
  }

  private async stepDown(why: string): Promise<void> {
    if (!this.leading) return;
    this.leading = false;
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = undefined;
    this.opts.metrics?.isLeader.set(0);
    this.log.warn({ reason: why }, "stepping down");
    this.abort?.abort(new Error(`leadership lost: ${why}`));
    this.abort = undefined;
    // Only on a planned stop do we wait for the leader's work: we still hold a valid Lease then.
    if (this.stopped) {
      await Promise.race([this.leadingWork, new Promise((r) => setTimeout(r, this.renewDeadlineMs).unref())]);
    }
    try {
      this.opts.onStoppedLeading();
    } catch (err) {
      this.log.error({ err }, "onStoppedLeading failed");
    }
  }

  /** Clears the holder if it is still us, so a successor need not wait for the lease to expire. */
  private async release(): Promise<void> {
    const { namespace, name, identity } = this.opts;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const lease = await this.api.read(namespace, name);
        if (lease.spec?.holderIdentity !== identity) return;
        const t = microTime();
        await this.api.replace(namespace, name, {
          ...lease,
          spec: {
            leaseDurationSeconds: 1,
            acquireTime: t,
            renewTime: t,
            leaseTransitions: lease.spec?.leaseTransitions ?? 0,
          },
        });
        this.log.info("released the lease");
        return;
      } catch (err) {
        const e = KubeApiError.from(err, "release lease");
        if (e.kind === "not-found") return;
        if (e.kind !== "conflict") {
          this.log.warn({ err: e, kind: e.kind }, "cannot release the lease; successors wait for it to expire");
          return;
        }
      }
    }
  }
}
