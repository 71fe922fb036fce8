/**
 * Records core/v1 Events about objects, as `kubectl describe` shows them. Like client-go's
 * EventCorrelator, an event identical to one recorded within the window (same object, type,
 * reason, message) bumps that Event's `count` and `lastTimestamp` instead of creating another, so a
 * reconcile failing in a loop leaves one Event, not thousands. Best effort: never throws, logs.
 */
import { randomBytes } from "node:crypto";
import { LRUCache } from "lru-cache";
import { clientFor, CONTENT_TYPE, type KubeClient } from "./client.js";
import { KubeApiError } from "./errors.js";
import type { KubeConfigLike } from "./kubeconfig.js";
import { silentLogger, type Logger } from "@berth/logging";
import type { ObjectRef } from "./object.js";

/** The object an Event is about. */
export type EventRef = ObjectRef;

export interface EventRecorderOptions {
  /** `source.component` / `reportingComponent`, e.g. "berth-controller". */
  component: string;
  /** `source.host` / `reportingInstance`: which replica, e.g. the pod name. */
  instance?: string;
  /** Alias of `instance`. */
  host?: string;
  logger?: Logger;
  /** Identical events within this window are merged. Default 600 000 ms (10 min). */
  dedupeWindowMs?: number;
  /** Remembered distinct events (LRU). Default 4096. */
  maxCached?: number;
  /** Per-request timeout. Default 10 000 ms. */
  timeoutMs?: number;
}

interface Recorded {
  namespace: string;
  name: string;
  count: number;
  firstSeen: number;
  lastSeen: number;
}

export class EventRecorder {
  private readonly client: KubeClient;
  private readonly timeoutMs: number;
  private readonly log: Logger;
  private readonly component: string;
  private readonly instance: string;
  private readonly windowMs: number;
  /** Distinct events recorded lately, the least recently recorded evicted first (and any after the window). */
  private readonly recorded: LRUCache<string, Recorded>;
  /** One write at a time per distinct event, so concurrent duplicates bump one Event. */
  private readonly chains = new Map<string, Promise<void>>();

  constructor(kc: KubeConfigLike, opts: EventRecorderOptions) {
    this.client = clientFor(kc);
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.component = opts.component;
    this.instance = opts.instance ?? opts.host ?? "";
    this.log = (opts.logger ?? silentLogger).child({ component: "events" });
    this.windowMs = opts.dedupeWindowMs ?? 600_000;
    // The TTL only frees memory early; whether a repeat merges is decided on lastSeen (write()).
    this.recorded = new LRUCache<string, Recorded>({
      max: opts.maxCached ?? 4096,
      ...(this.windowMs > 0 ? { ttl: this.windowMs } : {}),
    });
  }

  warning(ref: EventRef, reason: string, message: string): Promise<void> {
    return this.record(ref, "Warning", reason, message);
  }

  normal(ref: EventRef, reason: string, message: string): Promise<void> {
    return this.record(ref, "Normal", reason, message);
  }

  private record(ref: EventRef, type: "Normal" | "Warning", reason: string, message: string): Promise<void> {
    // The apiserver caps an Event message at 1 KiB of text in practice; keep them readable.
    const msg = message.length > 1024 ? `${message.slice(0, 1021)}...` : message;
    const key = JSON.stringify([
      ref.apiVersion,
      ref.kind,
      ref.namespace ?? "",
      ref.name,
      ref.uid ?? "",
      type,
      reason,
      msg,
    ]);
    const prev = this.chains.get(key) ?? Promise.resolve();
    const next = prev.then(() => this.write(key, ref, type, reason, msg));
    this.chains.set(key, next);
    return next.finally(() => {
      if (this.chains.get(key) === next) this.chains.delete(key);
    });
  }

  private async write(
    key: string,
    ref: EventRef,
    type: "Normal" | "Warning",
    reason: string,
    message: string,
  ): Promise<void> {
    const now = Date.now();
    const seen = this.recorded.get(key);
    try {
      if (seen && now - seen.lastSeen <= this.windowMs) {
        const count = seen.count + 1;
        try {
          await this.client.request(`/api/v1/namespaces/${seen.namespace}/events/${seen.name}`, {
            method: "PATCH",
            body: { count, lastTimestamp: new Date(now).toISOString() },
            contentType: CONTENT_TYPE.merge,
            timeoutMs: this.timeoutMs,
          });
          seen.count = count;
          seen.lastSeen = now;
          this.recorded.set(key, seen);
          return;
        } catch (err) {
          // Gone (expired by the apiserver's event TTL, or deleted): record a fresh one below.
          if (KubeApiError.from(err).kind !== "not-found") throw err;
        }
      }
      const namespace = ref.namespace || "default";
      const name = `${ref.name.slice(0, 200)}.${Date.now().toString(16)}${randomBytes(4).toString("hex")}`;
      const t = new Date(now).toISOString();
      const body = {
        apiVersion: "v1",
        kind: "Event",
        metadata: { name, namespace },
        involvedObject: {
          apiVersion: ref.apiVersion,
          kind: ref.kind,
          name: ref.name,
          ...(ref.namespace ? { namespace: ref.namespace } : {}),
          ...(ref.uid ? { uid: ref.uid } : {}),
        },
        type,
        reason,
        message,
        count: 1,
        firstTimestamp: t,
        lastTimestamp: t,
        source: { component: this.component, ...(this.instance ? { host: this.instance } : {}) },
        reportingComponent: this.component,
        reportingInstance: this.instance,
      };
      await this.client.request(`/api/v1/namespaces/${namespace}/events`, {
        method: "POST",
        body,
        timeoutMs: this.timeoutMs,
      });
      this.recorded.set(key, { namespace, name, count: 1, firstSeen: now, lastSeen: now });
    } catch (err) {
      const e = KubeApiError.from(
        err,
        `record event ${reason} for ${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ""}${ref.name}`,
      );
      this.log.warn({ err: e, kind: e.kind }, "cannot record event");
    }
  }
}
