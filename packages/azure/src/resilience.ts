import {
  BrokenCircuitError,
  CircuitState,
  ConsecutiveBreaker,
  ExponentialBackoff,
  circuitBreaker,
  handleWhen,
  noJitterGenerator,
  retry,
  type CircuitBreakerPolicy,
  type IBackoff,
} from "cockatiel";
import PQueue from "p-queue";
import { classify, ThrottledLocallyError } from "./errors.js";
import type { DiscoveryMetrics } from "./metrics.js";

/**
 * Every ARM read runs as: circuit breaker (per operation) → retries (per read, within budgets) →
 * throttle gate (per subscription) → concurrency limiter (all ARM calls) → one HTTP attempt with a timeout.
 * The SDK's own retries are off, so the numbers below are the whole story.
 */

export interface RetrySettings {
  /** Attempts per read, the first included (default 4: 1 + 3 retries). */
  maxAttempts: number;
  /** First backoff for 5xx / 408 / connection errors / timeouts; doubles per retry (default 500 ms). */
  baseDelayMs: number;
  /** Cap of one backoff for 5xx etc. (default 8 s). */
  maxDelayMs: number;
  /** First backoff after a bare 429 (no Retry-After); doubles per retry, capped by `maxDelayMs` × 4 (default 2 s). */
  throttleBaseDelayMs: number;
  /** Longest a single read may spend waiting (backoffs + throttle windows), default 30 s. A Retry-After beyond it is not waited for: the read fails at once (stale value or ValueUnavailableError) and the throttle window still holds every other call back. */
  maxWaitMs: number;
  /** Retry budget: retries in the last `budgetWindowMs` may not exceed `budgetMinRetries` + `budgetRatio` × first attempts (default 10 + 20 % per 60 s). */
  budgetRatio: number;
  budgetMinRetries: number;
  budgetWindowMs: number;
}

export interface BreakerSettings {
  /** Consecutive failed reads of one operation that open its circuit (default 5). */
  consecutiveFailures: number;
  /** Open → half-open after this long (default 30 s), doubling while probes keep failing ... */
  halfOpenAfterMs: number;
  /** ... up to this (default 5 min). */
  maxHalfOpenAfterMs: number;
}

export const DEFAULT_RETRY: RetrySettings = {
  maxAttempts: 4,
  baseDelayMs: 500,
  maxDelayMs: 8_000,
  throttleBaseDelayMs: 2_000,
  maxWaitMs: 30_000,
  budgetRatio: 0.2,
  budgetMinRetries: 10,
  budgetWindowMs: 60_000,
};

export const DEFAULT_BREAKER: BreakerSettings = {
  consecutiveFailures: 5,
  halfOpenAfterMs: 30_000,
  maxHalfOpenAfterMs: 300_000,
};

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Retries may be at most `min + ratio × requests` within a sliding window (after Finagle's RetryBudget). */
export class RetryBudget {
  private readonly requests: number[] = [];
  private readonly retries: number[] = [];

  constructor(private readonly s: Pick<RetrySettings, "budgetRatio" | "budgetMinRetries" | "budgetWindowMs">) {}

  private prune(now: number): void {
    const from = now - this.s.budgetWindowMs;
    while ((this.requests[0] ?? from) < from) this.requests.shift();
    while ((this.retries[0] ?? from) < from) this.retries.shift();
  }

  recordRequest(now = Date.now()): void {
    this.prune(now);
    this.requests.push(now);
  }

  canRetry(now = Date.now()): boolean {
    this.prune(now);
    return this.retries.length < this.s.budgetMinRetries + this.s.budgetRatio * this.requests.length;
  }

  recordRetry(now = Date.now()): void {
    this.retries.push(now);
  }
}

/** After a 429, every call to the same subscription holds back until the throttle window has passed. */
export class ThrottleGate {
  private readonly until = new Map<string, number>();

  block(scope: string, ms: number): void {
    const t = Date.now() + ms;
    if ((this.until.get(scope) ?? 0) < t) this.until.set(scope, t);
  }

  remainingMs(scope: string): number {
    const u = this.until.get(scope);
    if (u === undefined) return 0;
    const left = u - Date.now();
    if (left <= 0) this.until.delete(scope);
    return Math.max(0, left);
  }

  /** Wait out the window; throw ThrottledLocallyError when it is longer than `maxMs`. Returns the time waited. */
  async wait(scope: string, maxMs: number): Promise<number> {
    const left = this.remainingMs(scope);
    if (left <= 0) return 0;
    if (left > maxMs)
      throw new ThrottledLocallyError(
        `ARM throttled subscription ${scope}; next call allowed in ${Math.ceil(left / 1000)} s`,
      );
    await sleep(left);
    return left;
  }
}

export type CircuitName = "closed" | "open" | "half-open" | "isolated";
const CIRCUIT_NAMES: Record<CircuitState, CircuitName> = {
  [CircuitState.Closed]: "closed",
  [CircuitState.Open]: "open",
  [CircuitState.HalfOpen]: "half-open",
  [CircuitState.Isolated]: "isolated",
};

export interface ResilienceOptions {
  retry: RetrySettings;
  breaker: BreakerSettings;
  maxConcurrency: number;
  callTimeoutMs: number;
  metrics: DiscoveryMetrics;
}

export class Resilience {
  readonly gate = new ThrottleGate();
  readonly budget: RetryBudget;
  private readonly queue: PQueue;
  private readonly breakers = new Map<string, CircuitBreakerPolicy>();

  constructor(private readonly o: ResilienceOptions) {
    this.budget = new RetryBudget(o.retry);
    this.queue = new PQueue({ concurrency: o.maxConcurrency });
  }

  circuits(): Record<string, CircuitName> {
    return Object.fromEntries([...this.breakers].map(([op, b]) => [op, CIRCUIT_NAMES[b.state]]));
  }

  private breaker(operation: string): CircuitBreakerPolicy {
    let b = this.breakers.get(operation);
    if (!b) {
      const s = this.o.breaker;
      // A read that waited for a throttle window it could not afford never reached ARM: not a failure.
      b = circuitBreaker(
        handleWhen((err) => !(err instanceof ThrottledLocallyError)),
        {
          halfOpenAfter: new ExponentialBackoff({
            initialDelay: s.halfOpenAfterMs,
            maxDelay: s.maxHalfOpenAfterMs,
            generator: noJitterGenerator,
          }),
          breaker: new ConsecutiveBreaker(s.consecutiveFailures),
        },
      );
      b.onStateChange((state) => this.o.metrics.circuit.set({ operation }, state));
      this.o.metrics.circuit.set({ operation }, CircuitState.Closed);
      this.breakers.set(operation, b);
    }
    return b;
  }

  private transientDelay(retryIndex: number): number {
    const d = Math.min(this.o.retry.maxDelayMs, this.o.retry.baseDelayMs * 2 ** retryIndex);
    return Math.round(d / 2 + Math.random() * (d / 2)); // "equal jitter": at least half the step
  }

  private throttleDelay(retryIndex: number): number {
    return Math.min(this.o.retry.maxDelayMs * 4, this.o.retry.throttleBaseDelayMs * 2 ** retryIndex);
  }

  /**
   * Run one ARM read. `scope` is the subscription (the unit ARM throttles). `fn` gets an abort signal that
   * fires after `callTimeoutMs`; it must turn a 404 into a value itself (a 404 is an answer, not a failure).
   */
  async call<T>(operation: string, scope: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    // A throttle window longer than this read may wait: fail before the breaker (which would count a
    // half-open probe that never reached ARM as a success).
    const left = this.gate.remainingMs(scope);
    if (left > this.o.retry.maxWaitMs)
      throw new ThrottledLocallyError(
        `ARM throttled subscription ${scope}; next call allowed in ${Math.ceil(left / 1000)} s`,
      );
    try {
      return await this.breaker(operation).execute(() => this.withRetries(operation, scope, fn));
    } catch (err) {
      if (err instanceof BrokenCircuitError) {
        throw new BrokenCircuitError(
          `circuit open for ${operation}: Azure calls paused after ${this.o.breaker.consecutiveFailures} failed reads`,
        );
      }
      throw err;
    }
  }

  private async withRetries<T>(operation: string, scope: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const s = this.o.retry;
    let attempts = 0;
    let waited = 0;
    let nextDelay = 0;
    let reason = "";
    const backoff: IBackoff<unknown> = {
      get duration() {
        return nextDelay;
      },
      next: () => backoff,
    };
    // The filter decides per failure whether to retry (and how long to wait first).
    const policy = retry(
      handleWhen((err) => {
        const c = classify(err);
        if (c.kind === "throttled") {
          nextDelay = c.retryAfterMs ?? this.throttleDelay(attempts - 1);
          this.gate.block(scope, nextDelay);
          reason = "throttled";
        } else if (c.kind === "transient") {
          nextDelay = Math.max(this.transientDelay(attempts - 1), c.retryAfterMs ?? 0);
          reason = "transient";
        } else {
          return false;
        }
        if (attempts >= s.maxAttempts) return false; // the read's last attempt: no retry to budget for
        if (waited + nextDelay > s.maxWaitMs) return false;
        if (this.budget.canRetry()) return true;
        // Counted: a failure the budget refused is what an operator looks for when reads fail in a storm.
        this.o.metrics.retryBudgetExhausted.inc({ operation, reason });
        return false;
      }),
      { maxAttempts: s.maxAttempts - 1, backoff: { next: () => backoff } },
    );
    policy.onRetry(({ delay }) => {
      waited += delay;
      this.budget.recordRetry();
      this.o.metrics.retries.inc({ operation, reason });
    });
    return policy.execute(async () => {
      attempts++;
      if (attempts === 1) this.budget.recordRequest();
      waited += await this.gate.wait(scope, s.maxWaitMs - waited);
      return this.queue.add(() => fn(AbortSignal.timeout(this.o.callTimeoutMs)));
    });
  }
}

export { BrokenCircuitError };
