/**
 * Time, injected: what time it is and how to wait. The work queue's delays and backoff, the API's rollout
 * gates and the status page's sessions all read it, so tests move time by hand (tests/support/clock.ts)
 * instead of waiting for it or faking timers that would leak into git or HTTP.
 */
export interface Clock {
  now(): Date;
  /** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => new Date(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener("abort", done, { once: true });
    }),
};
