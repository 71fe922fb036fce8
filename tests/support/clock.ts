import type { Clock } from "../../packages/kube-runtime/src/clock.js";

/**
 * A clock tests move by hand: `now()` only changes on `advance()`, and a `sleep` resolves when the clock
 * has been advanced past its deadline (or its signal aborts). Lets a test cross a gate timeout of 30
 * minutes in a millisecond, without fake timers leaking into git or HTTP.
 */
export class ManualClock implements Clock {
  private t: number;
  private sleepers: Array<{ until: number; resolve(): void }> = [];

  constructor(start = new Date("2026-11-24T12:00:00Z")) {
    this.t = start.getTime();
  }

  now(): Date {
    return new Date(this.t);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const sleeper = { until: this.t + ms, resolve };
      this.sleepers.push(sleeper);
      signal?.addEventListener(
        "abort",
        () => {
          this.sleepers = this.sleepers.filter((s) => s !== sleeper);
          resolve();
        },
        { once: true },
      );
    });
  }

  advance(ms: number): void {
    this.t += ms;
    const due = this.sleepers.filter((s) => s.until <= this.t);
    this.sleepers = this.sleepers.filter((s) => s.until > this.t);
    for (const s of due) s.resolve();
  }
}
