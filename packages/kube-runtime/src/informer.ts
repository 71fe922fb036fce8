/**
 * A list+watch cache for one collection, written on client-node's bare `Watch` (not `makeInformer`,
 * whose ListWatch stops for good on any error but 410, turns a throwing handler into an unhandled
 * rejection and has no inactivity timeout). The loop:
 *
 *   list → emit ADDED/MODIFIED/DELETED against the cache → watch from the list's resourceVersion
 *     ├ server closes a healthy watch (its timeoutSeconds)      → watch again from the last resourceVersion
 *     ├ 410 Gone / ERROR event with code 410                    → relist at once
 *     ├ any other error, a short-lived close, or the watchdog   → relist after capped exponential backoff
 *     └ stop()                                                  → end
 *
 *   resync timer (jittered), beside the loop → every cached object re-emitted as MODIFIED
 *
 * A relist emits a synthetic DELETED (carrying the last cached state) for every cached object the
 * list no longer contains: deletions missed while the watch was down are never lost. A resync replays
 * the cache, as client-go's does: no request, the watch keeps running. The watch keeps the cache
 * current, and a periodic LIST of every watched kind by every replica does not scale (5,000 teams).
 * The handler runs one event at a time; its exceptions are caught and logged.
 *
 * What is cached is what `transform` returns (client-go's SetTransform): an informer whose readers need a
 * few fields keeps only those (no managedFields, no unused data), which is most of a controller's memory.
 * `indexers` keep secondary indexes (client-go's Indexers) so a reader finds "the objects labelled X"
 * without scanning the cache.
 */
import { LRUCache } from "lru-cache";
import { backoffDelay, Sleeper, type BackoffPolicy } from "./backoff.js";
import { clientFor, listPath, type KubeClient } from "./client.js";
import { KubeApiError } from "./errors.js";
import type { KubeConfigLike } from "./kubeconfig.js";
import { cacheKey, type KubernetesObject } from "./object.js";
import { silentLogger, type Logger } from "@berth/logging";
import type { ControllerMetrics } from "./metrics.js";

export type InformerEventType = "ADDED" | "MODIFIED" | "DELETED";
export interface InformerEvent<T> {
  type: InformerEventType;
  object: T;
}

export interface InformerSpec<T extends KubernetesObject, Raw extends KubernetesObject = KubernetesObject> {
  /** For logs and the watch_restarts metric. */
  name: string;
  /** Collection path watched, e.g. "/api/v1/namespaces/flux-config/configmaps" or "/apis/berth.dev/v1alpha1/teams". */
  path: string;
  /** Sent with the list and the watch. */
  labelSelector?: string;
  /**
   * Sent with the list and the watch, e.g. `metadata.name=<name>` (which RBAC authorizes against
   * `resourceNames`, the apiserver treating the request as one for that name).
   */
  fieldSelector?: string;
  /**
   * Lists the collection; its resourceVersion is where the watch starts. Default: `listPath` of `path` with
   * both selectors. A custom list must apply the same selectors.
   */
  list?: () => Promise<{ items: Raw[]; metadata?: { resourceVersion?: string } }>;
  /**
   * What to keep of each object (from lists and watch events), before it is cached and handed to the
   * handler. Must keep metadata.name, namespace and resourceVersion. Default: the object as received.
   */
  transform?: (raw: Raw) => T;
  /** Secondary indexes: index name → the index values of an object (e.g. its team label). */
  indexers?: Record<string, (obj: T) => string[]>;
}

export type InformerErrorKind = "list" | "watch" | "watchdog" | "expired" | "handler" | "stopped";

/** What went wrong in an informer; passed to `onError` and logged. The informer itself never throws. */
export class InformerError extends Error {
  override readonly name = "InformerError";
  constructor(
    readonly informer: string,
    readonly kind: InformerErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`informer ${informer}: ${message}`, options);
  }
}

export interface InformerOptions {
  /** Restart the watch when nothing (not even a bookmark) arrived for this long. Default 300 000 ms. */
  watchdogMs?: number;
  /**
   * Periodic resync, jittered ±10 %: every cached object is re-emitted as MODIFIED from the cache, without a
   * request to the apiserver and without touching the watch. Default 600 000 ms; 0 disables.
   */
  resyncMs?: number;
  /** Backoff between restarts after errors. Default 250 ms doubling, capped at 30 s (client-go's reflector: 800 ms / 30 s). */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  logger?: Logger;
  metrics?: ControllerMetrics;
  /** Every error, typed; called after logging. Must not throw (it is guarded anyway). */
  onError?: (err: InformerError) => void;
}

export interface Informer<T> {
  get(namespace: string | undefined, name: string): T | undefined;
  list(): T[];
  /** Objects whose index `index` has `value` (see InformerSpec.indexers). */
  byIndex(index: string, value: string): T[];
  /**
   * The server's answer to this process's own write (read-your-writes): cached at once, so the next
   * reconcile does not act on the state from before the write. When the watch later delivers that same
   * resourceVersion, no event is emitted: a controller's own write does not wake it again. An answer
   * older than what the watch already cached, or than the object's deletion, is ignored.
   */
  observe(raw: KubernetesObject): void;
  /** Resolves after the first list has been emitted; rejects (InformerError kind "stopped") if stopped before. */
  readonly synced: Promise<void>;
  hasSynced(): boolean;
  stop(): void;
}

/** A watch that lasted this long, or delivered an event, counts as healthy: its end resets the backoff. */
const HEALTHY_WATCH_MS = 5_000;

type WatchEnd =
  | { kind: "closed" | "watchdog" | "interrupted"; events: number; ms: number }
  | { kind: "expired" | "error"; err: unknown; events: number; ms: number };

export function startInformer<T extends KubernetesObject, Raw extends KubernetesObject = KubernetesObject>(
  kc: KubeConfigLike,
  spec: InformerSpec<T, Raw>,
  handler: (event: InformerEvent<T>) => void,
  opts: InformerOptions = {},
): Informer<T> {
  const informer = new ListWatchInformer<T, Raw>(kc, spec, handler, opts);
  informer.run();
  return informer;
}

class ListWatchInformer<T extends KubernetesObject, Raw extends KubernetesObject> implements Informer<T> {
  readonly synced: Promise<void>;
  private resolveSynced!: () => void;
  private rejectSynced!: (err: unknown) => void;
  private isSynced = false;
  private stopped = false;
  private readonly cache = new Map<string, T>();
  /**
   * Recently deleted keys and the resourceVersion they were deleted at: a write's answer arriving after the
   * watch's DELETED (the write that removed the last finalizer, say) must not bring the object back.
   */
  private readonly tombstones = new LRUCache<string, string>({ max: 4096 });
  /** index → its indexer (spec.indexers) and value → cache keys. */
  private readonly indexes = new Map<
    string,
    { valuesOf: (obj: T) => string[]; keysByValue: Map<string, Set<string>> }
  >();
  private resourceVersion = "";
  private readonly client: KubeClient;
  private readonly listCollection: () => Promise<{ items: Raw[]; metadata?: { resourceVersion?: string } }>;
  private readonly transform: (raw: Raw) => T;
  private readonly log: Logger;
  private readonly watchdogMs: number;
  private readonly resyncMs: number;
  private readonly backoff: BackoffPolicy;
  private readonly sleeper = new Sleeper();
  /** Ends the current watch session (stop). */
  private interrupt: (() => void) | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;

  constructor(
    kc: KubeConfigLike,
    private readonly spec: InformerSpec<T, Raw>,
    private readonly handler: (event: InformerEvent<T>) => void,
    private readonly opts: InformerOptions,
  ) {
    this.client = clientFor(kc);
    const selectors = {
      ...(spec.labelSelector ? { labelSelector: spec.labelSelector } : {}),
      ...(spec.fieldSelector ? { fieldSelector: spec.fieldSelector } : {}),
    };
    this.listCollection = spec.list ?? (() => listPath<Raw>(kc, spec.path, selectors));
    // Without a transform the informer caches the objects as listed: the caller's T is then Raw (the default).
    this.transform = spec.transform ?? ((raw: Raw) => raw as unknown as T);
    for (const [name, valuesOf] of Object.entries(spec.indexers ?? {}))
      this.indexes.set(name, { valuesOf, keysByValue: new Map() });
    this.log = (opts.logger ?? silentLogger).child({ informer: spec.name });
    this.watchdogMs = Math.max(10, opts.watchdogMs ?? 300_000);
    this.resyncMs = opts.resyncMs ?? 600_000;
    this.backoff = { baseMs: opts.backoffBaseMs ?? 250, maxMs: opts.backoffMaxMs ?? 30_000 };
    this.synced = new Promise<void>((res, rej) => {
      this.resolveSynced = res;
      this.rejectSynced = rej;
    });
    // Nobody may await `synced`: a rejection on stop must not become an unhandled rejection.
    this.synced.catch(() => {});
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.cache.get(`${namespace ?? ""}/${name}`);
  }

  list(): T[] {
    return [...this.cache.values()];
  }

  byIndex(index: string, value: string): T[] {
    const keys = this.indexes.get(index)?.keysByValue.get(value);
    if (!keys) return [];
    const out: T[] = [];
    for (const k of keys) {
      const o = this.cache.get(k);
      if (o) out.push(o);
    }
    return out;
  }

  observe(raw: KubernetesObject): void {
    if (this.stopped || !raw?.metadata?.name) return;
    const obj = this.transform(raw as Raw);
    const key = cacheKey(obj);
    const old = this.cache.get(key);
    const rv = obj.metadata?.resourceVersion;
    if (old?.metadata?.resourceVersion === rv) return;
    // A write's answer can arrive after the watch already delivered a newer change (someone wrote right
    // after us), or the object's deletion: caching the answer then would hide that change, or resurrect the
    // object, until its next change or the next relist (a resync replays the cache, it does not repair it).
    // resourceVersions are etcd revisions, integers that only grow (client-go's mutation cache relies on the
    // same).
    if (isNewer(old?.metadata?.resourceVersion, rv)) return;
    const deletedAt = old ? undefined : this.tombstones.get(key);
    if (deletedAt !== undefined && !isNewer(rv, deletedAt)) return;
    this.store(key, obj, old);
  }

  /**
   * Sets the cache entry and keeps the indexes in step. A deletion leaves a tombstone at `deletedAt` (the
   * deleted object's last resourceVersion, or the list's for a deletion found by a relist).
   */
  private store(key: string, obj: T | undefined, old: T | undefined, deletedAt?: string): void {
    if (obj) {
      this.cache.set(key, obj);
      this.tombstones.delete(key);
    } else {
      this.cache.delete(key);
      if (deletedAt) this.tombstones.set(key, deletedAt);
    }
    for (const { valuesOf, keysByValue } of this.indexes.values()) {
      const before = old ? valuesOf(old) : [];
      const after = obj ? valuesOf(obj) : [];
      for (const v of before)
        if (!after.includes(v)) {
          const set = keysByValue.get(v);
          set?.delete(key);
          if (set?.size === 0) keysByValue.delete(v);
        }
      for (const v of after) {
        let set = keysByValue.get(v);
        if (!set) keysByValue.set(v, (set = new Set()));
        set.add(key);
      }
    }
  }

  hasSynced(): boolean {
    return this.isSynced;
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.resyncTimer) clearTimeout(this.resyncTimer);
    this.interrupt?.();
    this.sleeper.wake();
    if (!this.isSynced)
      this.rejectSynced(new InformerError(this.spec.name, "stopped", "stopped before the first list"));
    this.log.debug("informer stopped");
  }

  run(): void {
    this.loop().catch((err: unknown) => {
      // Unreachable by design (every step catches); kept so nothing can become an unhandled rejection.
      this.log.error({ err }, "informer loop crashed");
    });
  }

  private async loop(): Promise<void> {
    let needList = true;
    let failures = 0;
    while (!this.stopped) {
      if (needList) {
        try {
          await this.relist();
        } catch (err) {
          if (this.stopped) break;
          failures++;
          const cause = KubeApiError.from(err, `list ${this.spec.path}`);
          this.report(new InformerError(this.spec.name, "list", `list failed: ${cause.message}`, { cause }), true);
          await this.sleeper.sleep(backoffDelay(this.backoff, failures));
          continue;
        }
        if (this.stopped) break;
        needList = false;
        if (!this.isSynced) {
          this.isSynced = true;
          this.resolveSynced();
          this.log.info({ objects: this.cache.size }, "informer synced");
        }
        if (!this.resyncTimer) this.scheduleResync();
      }

      const end = await this.watchOnce();
      if (this.stopped) break;
      const healthy = end.ms >= HEALTHY_WATCH_MS || end.events > 0;
      if (end.kind === "interrupted") continue; // only stop() interrupts a watch
      if (end.kind === "closed" && healthy) {
        // The apiserver ended the watch at its timeoutSeconds: resume where we were.
        failures = 0;
        continue;
      }
      needList = true;
      if (end.kind === "expired" && healthy) {
        failures = 0;
        this.report(
          new InformerError(this.spec.name, "expired", "resourceVersion expired (410); relisting"),
          true,
          "info",
        );
        continue;
      }
      failures = healthy ? 1 : failures + 1;
      const delay = backoffDelay(this.backoff, failures);
      if (end.kind === "watchdog") {
        this.report(
          new InformerError(
            this.spec.name,
            "watchdog",
            `no event for ${this.watchdogMs} ms; restarting in ${delay} ms`,
          ),
          true,
        );
      } else if (end.kind === "closed") {
        this.report(
          new InformerError(
            this.spec.name,
            "watch",
            `watch closed after ${Math.round(end.ms)} ms; restarting in ${delay} ms`,
          ),
          true,
        );
      } else if (end.kind === "expired" || end.kind === "error") {
        const kind = end.kind === "expired" ? "expired" : "watch";
        this.report(
          new InformerError(this.spec.name, kind, `watch failed: ${messageOf(end.err)}; restarting in ${delay} ms`, {
            cause: end.err,
          }),
          true,
        );
      }
      await this.sleeper.sleep(delay);
    }
  }

  /** Replaces the cache with a fresh list, emitting the differences. */
  private async relist(): Promise<void> {
    const list = await this.listCollection();
    if (this.stopped) return;
    const fresh = new Map<string, T>();
    for (const raw of list.items ?? []) {
      const obj = this.transform(raw);
      fresh.set(cacheKey(obj), obj);
    }
    for (const [key, old] of this.cache) {
      if (!fresh.has(key)) {
        this.store(key, undefined, old, list.metadata?.resourceVersion);
        this.emit("DELETED", old); // synthetic: it vanished while we were not watching
      }
    }
    for (const [key, obj] of fresh) {
      const old = this.cache.get(key);
      this.store(key, obj, old);
      if (!old) this.emit("ADDED", obj);
      else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) this.emit("MODIFIED", obj);
    }
    this.resourceVersion = list.metadata?.resourceVersion ?? "";
    this.log.debug({ objects: fresh.size, resourceVersion: this.resourceVersion }, "listed");
  }

  /**
   * The resync: every cached object again as MODIFIED, so a handler gets another look at objects whose
   * outside state (what no watch sees) may have changed. The cache is what the watch keeps current, so
   * nothing is asked of the apiserver, and the watch is not disturbed. Runs between two watch events
   * (one thread), so it never interleaves with them.
   */
  private replay(): void {
    if (this.stopped) return;
    // A snapshot: a handler's observe() must not add to this pass.
    const objects = [...this.cache.values()];
    for (const obj of objects) this.emit("MODIFIED", obj);
    this.log.debug({ objects: objects.length }, "resynced from the cache");
  }

  private watchOnce(): Promise<WatchEnd> {
    return new Promise<WatchEnd>((resolve) => {
      const t0 = performance.now();
      let events = 0;
      let settled = false;
      const controller = new AbortController();
      let dog: NodeJS.Timeout | undefined;
      const arm = () => {
        if (dog) clearTimeout(dog);
        dog = setTimeout(() => finish({ kind: "watchdog" }), this.watchdogMs);
      };
      const finish = (
        end: { kind: "closed" | "watchdog" | "interrupted" } | { kind: "expired" | "error"; err: unknown },
      ) => {
        if (settled) return;
        settled = true;
        if (dog) clearTimeout(dog);
        this.interrupt = undefined;
        controller.abort();
        resolve({ ...end, events, ms: performance.now() - t0 } as WatchEnd);
      };
      this.interrupt = () => finish({ kind: "interrupted" });
      arm();

      // The server closes the watch cleanly before the watchdog would fire, so a quiet but healthy
      // watch is resumed (no relist) and only a truly silent connection trips the watchdog.
      const timeoutSeconds = Math.max(1, Math.floor((this.watchdogMs / 1000) * (0.6 + 0.3 * Math.random())));
      const query: Record<string, string | number | boolean | undefined> = {
        allowWatchBookmarks: true,
        timeoutSeconds,
        resourceVersion: this.resourceVersion || undefined,
        labelSelector: this.spec.labelSelector || undefined,
        fieldSelector: this.spec.fieldSelector || undefined,
      };
      const onEvent = (phase: string, obj: unknown) => {
        if (settled || this.stopped) return;
        arm();
        if (phase === "ERROR") {
          const status = obj as { code?: number; reason?: string; message?: string } | undefined;
          const err = KubeApiError.fromResponse(status?.code ?? 0, status, `watch ${this.spec.path}`);
          finish(status?.code === 410 ? { kind: "expired", err } : { kind: "error", err });
          return;
        }
        events++;
        const raw = obj as Raw;
        const rv = raw?.metadata?.resourceVersion;
        if (rv) this.resourceVersion = rv;
        if (phase === "BOOKMARK") return; // only the resourceVersion moves
        const o = this.transform(raw);
        const key = cacheKey(o);
        const old = this.cache.get(key);
        if (phase === "ADDED" || phase === "MODIFIED") {
          this.store(key, o, old);
          // Same resourceVersion: this process's own write, already cached by observe().
          if (!old) this.emit("ADDED", o);
          else if (old.metadata?.resourceVersion !== rv) this.emit("MODIFIED", o);
        } else if (phase === "DELETED") {
          this.store(key, undefined, old, rv);
          this.emit("DELETED", o);
        }
      };
      this.client.watch(this.spec.path, query, onEvent, controller.signal).then(
        () => finish({ kind: "closed" }),
        (err: unknown) => {
          const e = KubeApiError.from(err, `watch ${this.spec.path}`);
          finish({ kind: e.status === 410 ? "expired" : "error", err: e });
        },
      );
    });
  }

  private emit(type: InformerEventType, object: T): void {
    if (this.stopped) return;
    try {
      const r = this.handler({ type, object }) as unknown;
      // An async handler's rejection must not escape as an unhandled rejection.
      if (r && typeof (r as Promise<unknown>).then === "function") {
        (r as Promise<unknown>).then(undefined, (err: unknown) => this.handlerFailed(err, type, object));
      }
    } catch (err) {
      this.handlerFailed(err, type, object);
    }
  }

  private handlerFailed(err: unknown, type: InformerEventType, object: T): void {
    this.report(
      new InformerError(this.spec.name, "handler", `handler failed on ${type} ${cacheKey(object)}: ${messageOf(err)}`, {
        cause: err,
      }),
      false,
    );
  }

  private scheduleResync(): void {
    if (this.resyncMs <= 0 || this.stopped) return;
    const delay = Math.round(this.resyncMs * (0.9 + 0.2 * Math.random()));
    this.resyncTimer = setTimeout(() => {
      this.resyncTimer = undefined;
      this.replay();
      this.scheduleResync();
    }, delay);
  }

  private report(err: InformerError, restart: boolean, level: "warn" | "info" = "warn"): void {
    if (restart) this.opts.metrics?.watchRestarts.inc({ informer: this.spec.name });
    const cause = (err as { cause?: unknown }).cause;
    if (level === "info") this.log.info({ kind: err.kind }, err.message);
    else if (err.kind === "handler") this.log.error({ kind: err.kind, err: cause }, err.message);
    else this.log.warn({ kind: err.kind, err: cause }, err.message);
    try {
      this.opts.onError?.(err);
    } catch (e) {
      this.log.error({ err: e }, "informer onError callback threw");
    }
  }
}

/** True when resourceVersion `a` is known to be newer than `b` (both decimal integers). */
function isNewer(a: string | undefined, b: string | undefined): boolean {
  if (!a || !b || !/^\d+$/.test(a) || !/^\d+$/.test(b)) return false;
  return BigInt(a) > BigInt(b);
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
