/**
 * A work queue with controller-runtime (client-go workqueue) semantics:
 *
 * - a key waiting to be processed is held once (adding it again is a no-op);
 * - one key is never processed by two workers at once: a key added while it is in flight is marked
 *   dirty and processed again after the current pass finishes;
 * - a handler that throws re-adds its key after a per-key exponential backoff with jitter; success
 *   (or an explicit requeueAfterMs) forgets the key's failures;
 * - `requeueAfterMs` schedules another pass; of several delayed adds of one key the earliest wins;
 * - at most `concurrency` handlers run at once;
 * - each handler gets an AbortSignal that aborts when its `timeoutMs` passes or the queue shuts down (e.g.
 *   leadership was lost): a handler passes it to every request it makes, so it stops before its next write;
 * - delays (backoff, requeueAfter, addAfter) run on an injected Clock, so a test moves them by hand.
 *
 * Reconcilers are level-triggered: the queue carries keys only, never events or objects.
 */
import { backoffDelay, type BackoffPolicy } from "./backoff.js";
import { systemClock, type Clock } from "./clock.js";
import { silentLogger, type Logger } from "@berth/logging";
import { errorReason, type ControllerMetrics } from "./metrics.js";

export type ReconcileResult = { requeueAfterMs?: number } | void;
export type QueueHandler = (key: string, signal: AbortSignal) => Promise<ReconcileResult>;

export interface WorkQueueOptions {
  name: string;
  /** Handlers running at once. Default 4. */
  concurrency?: number;
  /** First retry delay after a failure. Default 5 ms (controller-runtime's). */
  baseDelayMs?: number;
  /** Retry delay cap. Default 300 000 ms (5 min; controller-runtime caps at 1000 s). */
  maxDelayMs?: number;
  /** One handler's time limit: its signal aborts then, and the failure counts as reason "timeout". Default 60 000 ms. */
  timeoutMs?: number;
  metrics?: ControllerMetrics;
  logger?: Logger;
  /** What delays wait on. Default the system clock. */
  clock?: Clock;
}

export class WorkQueue {
  readonly name: string;
  private readonly concurrency: number;
  private readonly backoff: BackoffPolicy;
  private readonly metrics: ControllerMetrics | undefined;
  private readonly log: Logger;
  private readonly clock: Clock;

  /** Ready keys in FIFO order. Each is also in `dirty`. */
  private readonly ready: string[] = [];
  /** Keys that need a pass: queued in `ready`, or added while in flight. */
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  /** Delayed adds by key: when each is due, and how to cancel its wait. */
  private readonly delayed = new Map<string, { at: number; cancel: AbortController }>();
  private readonly failures = new Map<string, number>();
  private handler: QueueHandler | undefined;
  private stopping = false;
  private readonly timeoutMs: number;
  /** Aborted by shutdown(): every in-flight handler's signal follows it. */
  private readonly lifetime = new AbortController();
  private idleWaiters: Array<() => void> = [];

  constructor(opts: WorkQueueOptions) {
    this.name = opts.name;
    this.concurrency = Math.max(1, Math.floor(opts.concurrency ?? 4));
    this.backoff = { baseMs: opts.baseDelayMs ?? 5, maxMs: opts.maxDelayMs ?? 300_000 };
    this.timeoutMs = opts.timeoutMs ?? 60_000;
    this.metrics = opts.metrics;
    this.log = (opts.logger ?? silentLogger).child({ queue: opts.name });
    this.clock = opts.clock ?? systemClock;
    this.updateDepth();
  }

  /** Keys ready to be processed: not delayed and not in flight (client-go's Len()). */
  get depth(): number {
    return this.ready.length;
  }

  /** Keys whose handler is running. */
  get inFlight(): number {
    return this.processing.size;
  }

  /** Keys waiting for a delayed add (backoff or requeueAfter). */
  get delayedCount(): number {
    return this.delayed.size;
  }

  /** Failures since the key last succeeded (what its next backoff is based on). */
  retries(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  add(key: string): void {
    if (this.stopping || this.dirty.has(key)) return;
    this.dirty.add(key);
    // In flight: it is queued again when the running pass ends.
    if (this.processing.has(key)) return;
    this.ready.push(key);
    this.updateDepth();
    this.pump();
  }

  addAfter(key: string, delayMs: number): void {
    if (this.stopping) return;
    if (!(delayMs > 0)) {
      this.add(key);
      return;
    }
    const at = this.clock.now().getTime() + delayMs;
    const existing = this.delayed.get(key);
    if (existing && existing.at <= at) return;
    existing?.cancel.abort();
    const cancel = new AbortController();
    this.delayed.set(key, { at, cancel });
    void this.clock.sleep(delayMs, cancel.signal).then(() => {
      if (cancel.signal.aborted) return;
      this.delayed.delete(key);
      this.add(key);
    });
  }

  start(handler: QueueHandler): void {
    if (this.handler) throw new Error(`work queue ${this.name}: already started`);
    if (this.stopping) throw new Error(`work queue ${this.name}: shut down`);
    this.handler = handler;
    this.pump();
  }

  /**
   * Stops taking keys (queued and delayed ones are dropped) and resolves when in-flight handlers have
   * finished. With `abort`, their signals abort first (leadership lost: no further write may go out);
   * without, they run to the end (a graceful stop while the Lease is still held).
   */
  async shutdown(opts: { abort?: boolean; reason?: string } = {}): Promise<void> {
    this.stopping = true;
    if (opts.abort)
      this.lifetime.abort(
        Object.assign(new Error(opts.reason ?? `work queue ${this.name} shut down`), { name: "AbortError" }),
      );
    for (const { cancel } of this.delayed.values()) cancel.abort();
    this.delayed.clear();
    this.ready.length = 0;
    this.dirty.clear();
    this.updateDepth();
    if (this.processing.size === 0) return;
    await new Promise<void>((res) => this.idleWaiters.push(res));
  }

  private pump(): void {
    const handler = this.handler;
    if (!handler) return;
    while (!this.stopping && this.processing.size < this.concurrency && this.ready.length > 0) {
      const key = this.ready.shift() as string;
      this.dirty.delete(key);
      this.processing.add(key);
      void this.process(handler, key);
    }
    this.updateDepth();
  }

  private async process(handler: QueueHandler, key: string): Promise<void> {
    const started = performance.now();
    let result: "success" | "error" | "requeue" = "success";
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const signal = AbortSignal.any([this.lifetime.signal, timeout]);
    try {
      // Promise.resolve().then: a handler that throws synchronously is caught like a rejection.
      const r = await Promise.resolve().then(() => handler(key, signal));
      this.failures.delete(key);
      const after = r && typeof r === "object" ? r.requeueAfterMs : undefined;
      if (typeof after === "number" && Number.isFinite(after)) {
        result = "requeue";
        this.addAfter(key, after);
      }
    } catch (err) {
      result = "error";
      const attempt = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, attempt);
      const delay = backoffDelay(this.backoff, attempt);
      const reason = timeout.aborted ? "timeout" : this.lifetime.signal.aborted ? "aborted" : errorReason(err);
      this.metrics?.reconcileErrors.inc({ controller: this.name, reason });
      if (this.stopping) this.log.info({ key, reason }, "reconcile ended by shutdown");
      else this.log.warn({ err, key, attempt, retryInMs: delay, reason }, "reconcile failed; retrying with backoff");
      this.addAfter(key, delay);
    } finally {
      this.processing.delete(key);
      this.metrics?.reconcileTotal.inc({ controller: this.name, result });
      this.metrics?.reconcileDuration.observe({ controller: this.name }, (performance.now() - started) / 1000);
      if (this.stopping) {
        this.failures.delete(key);
        if (this.processing.size === 0) this.notifyIdle();
      } else {
        if (this.dirty.has(key)) this.ready.push(key);
        this.pump();
      }
    }
  }

  private notifyIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  private updateDepth(): void {
    this.metrics?.queueDepth.set({ queue: this.name }, this.ready.length);
  }
}
