import { setTimeout as sleep } from "node:timers/promises";

/**
 * Polls `fn` every 100 ms until it returns a truthy value and returns it; fails naming `what` and the last value or
 * error after `ms`, or at once when `stopIf` gives a reason (a process the wait depends on has died, say). Plain
 * timers, not vitest's, so benchmarks (run by tsx, outside vitest) share the harness.
 */
export async function eventually<T>(
  what: string,
  fn: () => Promise<T | undefined | false | null>,
  ms = 15_000,
  stopIf?: () => string | undefined,
): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    const reason = stopIf?.();
    if (reason !== undefined) throw new Error(`gave up waiting for ${what}: ${reason}`);
    last = undefined;
    const v = await fn().catch((err: unknown) => {
      last = err;
      return undefined;
    });
    if (v) return v;
    last ??= v;
    if (Date.now() >= deadline) break;
    await sleep(Math.min(100, Math.max(0, deadline - Date.now())));
  }
  throw new Error(
    `timed out after ${ms} ms waiting for ${what}; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`,
  );
}
