/**
 * The one cache every Azure read goes through.
 *
 * - Per-entry TTL chosen by the loader (long for facts that rarely change, short for negative answers).
 * - Concurrent reads of one key share one in-flight load (coalescing).
 * - Stale-while-error: when a refresh fails, the last good value is served for up to `maxStaleMs` after it
 *   expired, and the entry is not retried for `retryStaleAfterMs` (so a failing dependency is not asked again
 *   on every read). With no usable value the error propagates.
 * - Bounded: at most `maxEntries` keys; the least recently written are dropped first.
 *
 * Time comes from an injected clock, so tests and the benchmark can run a simulated hour in milliseconds.
 */

export type CacheResult = "hit" | "miss" | "coalesced" | "stale";

export interface Loaded<T> {
  value: T;
  ttlMs: number;
}

interface Entry {
  value: unknown;
  fetchedAt: number;
  expiresAt: number;
  /** The last moment this value may be served stale (original expiry + maxStaleMs). */
  staleUntil: number;
}

export interface TtlCacheOptions {
  now: () => number;
  maxEntries: number;
  maxStaleMs: number;
  retryStaleAfterMs: number;
  onResult?: (kind: string, result: CacheResult | "error") => void;
  onStale?: (kind: string, key: string, err: unknown) => void;
}

export class TtlCache {
  private readonly entries = new Map<string, Entry>();
  private readonly inflight = new Map<string, Promise<{ value: unknown; result: CacheResult }>>();

  constructor(private readonly opts: TtlCacheOptions) {}

  get size(): number {
    return this.entries.size;
  }

  /** The value for `key`, loading it when absent or expired. `kind` is only a metric label. */
  async get<T>(kind: string, key: string, load: () => Promise<Loaded<T>>): Promise<T> {
    const now = this.opts.now();
    const entry = this.entries.get(key);
    if (entry && now < entry.expiresAt) {
      this.opts.onResult?.(kind, "hit");
      return entry.value as T;
    }
    const pending = this.inflight.get(key);
    if (pending) {
      this.opts.onResult?.(kind, "coalesced");
      return (await pending).value as T;
    }
    const p = this.load(kind, key, load);
    this.inflight.set(key, p);
    try {
      const { value, result } = await p;
      this.opts.onResult?.(kind, result);
      return value as T;
    } catch (err) {
      this.opts.onResult?.(kind, "error");
      throw err;
    } finally {
      this.inflight.delete(key);
    }
  }

  private async load<T>(
    kind: string,
    key: string,
    load: () => Promise<Loaded<T>>,
  ): Promise<{ value: unknown; result: CacheResult }> {
    try {
      const { value, ttlMs } = await load();
      const at = this.opts.now();
      this.set(key, { value, fetchedAt: at, expiresAt: at + ttlMs, staleUntil: at + ttlMs + this.opts.maxStaleMs });
      return { value, result: "miss" };
    } catch (err) {
      const at = this.opts.now();
      const last = this.entries.get(key);
      if (last && at <= last.staleUntil) {
        // Keep serving the last good value; try again after a short pause, not on every read.
        last.expiresAt = Math.max(at + 1, Math.min(at + this.opts.retryStaleAfterMs, last.staleUntil));
        this.opts.onStale?.(kind, key, err);
        return { value: last.value, result: "stale" };
      }
      throw err;
    }
  }

  private set(key: string, entry: Entry): void {
    this.entries.delete(key); // re-insert: Map order is write order
    this.entries.set(key, entry);
    while (this.entries.size > this.opts.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  /** Drop entries (all, or those whose key starts with `prefix`), e.g. after Berth itself changed the resource. */
  invalidate(prefix?: string): void {
    if (prefix === undefined) this.entries.clear();
    else for (const k of [...this.entries.keys()]) if (k.startsWith(prefix)) this.entries.delete(k);
  }
}
