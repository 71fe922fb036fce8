/** Capped exponential backoff with ±20 % jitter, shared by the work queue and the informer. */
export interface BackoffPolicy {
  baseMs: number;
  maxMs: number;
}

/** Delay before retry number `attempt` (1 = first retry): base·2^(attempt-1), jittered, capped at max. */
export function backoffDelay(policy: BackoffPolicy, attempt: number, random: () => number = Math.random): number {
  if (attempt <= 0) return 0;
  const exp = policy.baseMs * 2 ** Math.min(attempt - 1, 52);
  const jittered = exp * (0.8 + 0.4 * random());
  return Math.max(0, Math.min(policy.maxMs, Math.round(jittered)));
}

/** A sleep that `wake()` ends early. */
export class Sleeper {
  private timer: NodeJS.Timeout | undefined;
  private resolve: (() => void) | undefined;

  sleep(ms: number): Promise<void> {
    this.wake();
    return new Promise((res) => {
      this.resolve = res;
      this.timer = setTimeout(() => this.wake(), Math.max(0, ms));
    });
  }

  wake(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const r = this.resolve;
    this.resolve = undefined;
    r?.();
  }
}
