/**
 * Time for the rollout engine (and the status page's sessions): what time it is and how to wait. Injected, so
 * tests drive gate timeouts, polling and session expiry without waiting for real time (see tests/support/clock.ts).
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
