import { createHmac } from "node:crypto";
import { readFile } from "node:fs/promises";
import pRetry from "p-retry";
import type pino from "pino";

/** A cluster's Receiver (api.fluxReceivers): its webhook URL and the file holding its HMAC key. */
export interface ReceiverTarget {
  url: string;
  tokenFile: string;
}

export interface FluxNotifyOptions {
  attempts: number;
  minDelayMs: number;
  maxDelayMs: number;
  timeoutMs: number;
}

/** What the notifier reports, per cluster (ApiMetrics turns it into counters). */
export interface NotifyObserver {
  delivered(cluster: string, sincePushMs: number): void;
  /** One attempt the cluster did not take (it is retried, up to the attempts). */
  failed(cluster: string): void;
  gaveUp(cluster: string): void;
}

/**
 * What of a push each cluster's Flux reads: by cluster, the shards of the teams it touched there, or undefined for
 * every shard (core's fluxReadsOf). A Receiver whose filter reads them wakes only those shards' slices (ADR 0036).
 */
export type FluxReads = ReadonlyMap<string, readonly string[] | undefined>;

interface Lane {
  /**
   * The newest pushed revision not yet delivered, when the oldest undelivered push was, and the shards of every
   * undelivered push (undefined: every shard).
   */
  pending?: { revision: string; pushedAt: number; shards: Set<string> | undefined };
  running?: Promise<void>;
}

/**
 * Tells each cluster's Flux to fetch now after a push (ADR 0020): a POST to the cluster's Receiver (notification-
 * controller, type generic-hmac), signed with its key (`X-Signature: sha256=<HMAC of the body>`), as Flux documents
 * it. Best effort: `notify` never waits and never throws, so a cluster that does not answer costs the write nothing;
 * a refused or failed attempt (a redirect too: never followed) is retried with exponential backoff and jitter, then
 * given up (the GitRepository's poll interval is the safety net). One lane per cluster: a push while a notification
 * is on its way or waiting for its retry is carried by the next attempt, so a burst of pushes sends one request, not
 * one per push.
 */
export class FluxNotifier {
  private readonly lanes = new Map<string, Lane>();
  /** Pushes whose clusters are still being worked out. */
  private readonly resolving = new Set<Promise<void>>();
  private readonly stopping = new AbortController();

  constructor(
    private readonly receivers: Readonly<Record<string, ReceiverTarget>>,
    private readonly opts: FluxNotifyOptions & {
      observer?: NotifyObserver;
      logger?: Pick<pino.Logger, "warn" | "debug">;
    },
  ) {}

  /** The clusters that have a Receiver configured. */
  get clusters(): string[] {
    return Object.keys(this.receivers);
  }

  /** Every cluster with a Receiver, every shard: for a push whose reads are unknown. */
  get everything(): FluxReads {
    return new Map(this.clusters.map((cluster) => [cluster, undefined]));
  }

  /**
   * Asks each cluster of `reads` (those with a Receiver) to fetch `revision` or later, naming the shards it touched
   * there. Returns at once; the reads may still be worked out (a promise), and every cluster with a Receiver is told,
   * for every shard, when that fails.
   */
  notify(reads: FluxReads | Promise<FluxReads>, revision: string): void {
    if (this.stopping.signal.aborted) return;
    if (reads instanceof Promise) {
      const resolving = reads
        .catch((err: unknown) => {
          this.opts.logger?.warn(
            { revision, reason: (err as Error).message },
            "flux notify: cannot tell which clusters a push concerns; telling every one",
          );
          return this.everything;
        })
        .then((found) => this.notify(found, revision))
        .finally(() => this.resolving.delete(resolving));
      this.resolving.add(resolving);
      return;
    }
    const pushedAt = Date.now();
    for (const [cluster, shards] of reads) {
      if (!this.receivers[cluster]) continue;
      let lane = this.lanes.get(cluster);
      if (!lane) this.lanes.set(cluster, (lane = {}));
      // An older pending push keeps its time (the delay measured is the oldest undelivered push's) and its shards.
      const before = lane.pending;
      lane.pending = {
        revision,
        pushedAt: before?.pushedAt ?? pushedAt,
        shards: shards && (!before || before.shards) ? new Set([...(before?.shards ?? []), ...shards]) : undefined,
      };
      lane.running ??= this.drain(cluster, lane);
    }
  }

  /** Resolves once nothing is pending or on its way (tests; shutdown). */
  async idle(): Promise<void> {
    for (;;) {
      const running = [...this.resolving, ...[...this.lanes.values()].flatMap((l) => (l.running ? [l.running] : []))];
      if (running.length === 0) return;
      await Promise.all(running);
    }
  }

  /** Stops retrying: waits end at once, nothing new is sent. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.idle();
  }

  private async drain(cluster: string, lane: Lane): Promise<void> {
    try {
      while (lane.pending && !this.stopping.signal.aborted) {
        const { revision, pushedAt, shards } = lane.pending;
        lane.pending = undefined;
        const ok = await this.deliver(cluster, revision, shards);
        if (ok) this.opts.observer?.delivered(cluster, Date.now() - pushedAt);
      }
    } finally {
      lane.running = undefined;
    }
  }

  /** One notification with its retries; false once given up. */
  private async deliver(cluster: string, revision: string, shards: Set<string> | undefined): Promise<boolean> {
    const { attempts, minDelayMs, maxDelayMs, observer, logger } = this.opts;
    // Receiver berth-teams's filter wakes a slice's GitRepository only for its shards; without them, every one.
    const body = JSON.stringify({ source: "berth", revision, ...(shards ? { shards: [...shards].sort() } : {}) });
    try {
      await pRetry(() => this.send(cluster, body), {
        retries: attempts - 1,
        factor: 2,
        minTimeout: minDelayMs,
        maxTimeout: maxDelayMs,
        randomize: true,
        signal: this.stopping.signal,
        onFailedAttempt: ({ error, attemptNumber, retriesLeft }) => {
          observer?.failed(cluster);
          logger?.debug?.(
            { cluster, attempt: attemptNumber, retriesLeft, reason: error.message },
            "flux notify: attempt failed",
          );
        },
      });
      return true;
    } catch (err) {
      if (this.stopping.signal.aborted) return false;
      observer?.gaveUp(cluster);
      // The cluster and why, never the URL (its path is derived from the key) or the key.
      logger?.warn(
        { cluster, attempts, reason: (err as Error).message },
        "flux notify: gave up; the cluster fetches at its next poll",
      );
      return false;
    }
  }

  private async send(cluster: string, body: string): Promise<void> {
    const target = this.receivers[cluster];
    // `notify` only queues clusters that have a Receiver, and the receivers never change.
    if (!target) throw new Error(`no Receiver is configured for cluster ${cluster}`);
    let key: string;
    try {
      key = (await readFile(target.tokenFile, "utf8")).trim();
    } catch (err) {
      throw new Error(`cannot read the Receiver key file: ${(err as NodeJS.ErrnoException).code ?? "error"}`, {
        cause: err,
      });
    }
    if (!key) throw new Error("the Receiver key file is empty");
    const signature = `sha256=${createHmac("sha256", key).update(body).digest("hex")}`;
    let res: Response;
    try {
      res = await fetch(target.url, {
        method: "POST",
        headers: { "content-type": "application/json", "x-signature": signature },
        body,
        // A redirect is a failed attempt, never followed: the signed body goes to the configured Receiver only.
        redirect: "manual",
        signal: AbortSignal.any([this.stopping.signal, AbortSignal.timeout(this.opts.timeoutMs)]),
      });
    } catch (err) {
      // fetch names the whole URL when it cannot use it (userinfo, a bad port): only a redacted message goes on.
      const { cause, message } = err as Error;
      // eslint-disable-next-line preserve-caught-error -- the caught error names the URL; no logger may reach it
      throw new Error(`no answer: ${redactUrls(cause instanceof Error ? cause.message : message)}`);
    }
    await res.body?.cancel();
    if (!res.ok) throw new Error(`the Receiver answered HTTP ${res.status}`);
  }
}

/** `message` with each URL in it cut to its scheme and host: a Receiver's path derives from its key. */
function redactUrls(message: string): string {
  return message.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi, (found) => {
    if (!URL.canParse(found)) return "[redacted URL]";
    const url = new URL(found);
    return url.pathname === "/" && !url.search && !url.hash ? url.origin : `${url.origin}/[redacted]`;
  });
}
