import { vi } from "vitest";

/**
 * vi.waitFor for a value: polls `fn` every 100 ms until it returns a truthy value and returns it; fails
 * naming `what` and the last value or error after `ms`.
 */
export async function eventually<T>(what: string, fn: () => Promise<T | undefined | false | null>, ms = 15_000): Promise<T> {
  let last: unknown;
  try {
    return await vi.waitFor(
      async () => {
        last = undefined;
        const v = await fn().catch((err: unknown) => {
          last = err;
          return undefined;
        });
        if (!v) {
          last ??= v;
          throw new Error(`waiting for ${what}`);
        }
        return v;
      },
      { timeout: ms, interval: 100 },
    );
  } catch {
    throw new Error(`timed out after ${ms} ms waiting for ${what}; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`);
  }
}
