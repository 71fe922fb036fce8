/**
 * How the runtime talks to the apiserver: JSON over HTTPS through ONE keep-alive agent per KubeConfig.
 * client-node 1.x builds a new https.Agent for every request, so every call paid a TCP + TLS handshake on
 * both sides (most of the controller's and a good part of the apiserver's CPU per write); its model
 * (de)serializers cost the rest. Here a request is: auth headers, JSON.stringify, one pooled socket,
 * JSON.parse. Every request has a timeout and can be aborted with a signal.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest, type RequestOptions } from "node:https";
import { KubeApiError } from "./errors.js";
import type { KubeConfigLike } from "./kubeconfig.js";
import type { KubernetesObject } from "./object.js";

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export const CONTENT_TYPE = {
  json: "application/json",
  merge: "application/merge-patch+json",
  apply: "application/apply-patch+yaml",
} as const;

export interface RequestInit {
  method?: Method;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  /** Default 30 s. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

const TLS_KEYS = ["ca", "cert", "key", "pfx", "passphrase", "rejectUnauthorized", "servername"] as const;

/** One apiserver, one connection pool. */
export class KubeClient {
  readonly server: URL;
  private agent: HttpAgent | undefined;
  private agentFor: string | undefined;

  constructor(private readonly kc: KubeConfigLike) {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error("KubeConfig has no current cluster");
    this.server = new URL(cluster.server.replace(/\/$/, ""));
  }

  /** A JSON request; resolves with the parsed body, rejects with a KubeApiError. */
  async request<T = unknown>(path: string, init: RequestInit = {}): Promise<T> {
    const method = init.method ?? "GET";
    const res = await this.send(path, init, false);
    const body = await readBody(res);
    const code = res.statusCode ?? 0;
    if (code < 200 || code > 299) throw KubeApiError.fromResponse(code, body, `${method} ${path}`);
    try {
      return (body ? JSON.parse(body) : undefined) as T;
    } catch (err) {
      throw new KubeApiError({
        status: code,
        reason: "BadResponse",
        kind: "other",
        message: `${method} ${path}: response is not JSON`,
        cause: err,
      });
    }
  }

  /**
   * A watch: one JSON event per line, delivered to `onEvent` in order. Resolves when the server closes the
   * stream, rejects (KubeApiError) on an HTTP error or a broken connection, and ends quietly on `signal`.
   */
  async watch(
    path: string,
    query: RequestInit["query"],
    onEvent: (type: string, object: unknown) => void,
    signal: AbortSignal,
  ): Promise<void> {
    const res = await this.send(path, { query: { ...query, watch: true }, signal, timeoutMs: 0 }, true);
    const code = res.statusCode ?? 0;
    if (code < 200 || code > 299) throw KubeApiError.fromResponse(code, await readBody(res), `watch ${path}`);
    await new Promise<void>((resolve, reject) => {
      let buffered = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        buffered += chunk;
        let nl: number;
        while ((nl = buffered.indexOf("\n")) >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          if (!line.trim()) continue;
          let event: { type?: string; object?: unknown };
          try {
            event = JSON.parse(line) as { type?: string; object?: unknown };
          } catch (err) {
            res.destroy(
              new KubeApiError({
                status: code,
                reason: "BadResponse",
                kind: "other",
                message: `watch ${path}: event is not JSON`,
                cause: err,
              }),
            );
            return;
          }
          onEvent(event.type ?? "", event.object);
        }
      });
      res.on("end", () => resolve());
      res.on("error", (err) => (signal.aborted ? resolve() : reject(KubeApiError.from(err, `watch ${path}`))));
      res.on("close", () => resolve());
    });
  }

  private async send(path: string, init: RequestInit, stream: boolean): Promise<IncomingMessage> {
    const url = new URL(this.server.pathname.replace(/\/$/, "") + path, this.server);
    for (const [k, v] of Object.entries(init.query ?? {}))
      if (v !== undefined && v !== "") url.searchParams.set(k, String(v));
    const opts: RequestOptions = { method: init.method ?? "GET", headers: { Accept: CONTENT_TYPE.json } };
    await this.kc.applyToHTTPSOptions(opts);
    const payload =
      init.body === undefined ? undefined : typeof init.body === "string" ? init.body : JSON.stringify(init.body);
    const headers: Record<string, string | number> = { ...(opts.headers as Record<string, string>) };
    if (payload !== undefined) {
      headers["Content-Type"] = init.contentType ?? CONTENT_TYPE.json;
      headers["Content-Length"] = Buffer.byteLength(payload);
    }
    const tls = Object.fromEntries(TLS_KEYS.filter((k) => opts[k] !== undefined).map((k) => [k, opts[k]]));
    const agent = this.kc.getCurrentCluster()?.proxyUrl ? opts.agent : this.pooledAgent(url.protocol, tls);
    const send = url.protocol === "http:" ? httpRequest : httpsRequest;
    const timeoutMs = init.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const context = `${opts.method} ${path}`;
    return new Promise<IncomingMessage>((resolve, reject) => {
      if (init.signal?.aborted) return reject(abortError(context, init.signal));
      const req = send(url, { method: opts.method, headers, ...(agent ? { agent } : {}), ...tls });
      let timer: NodeJS.Timeout | undefined;
      const { signal } = init;
      const onAbort = () => {
        if (signal) req.destroy(abortError(context, signal)); // (only ever listens to signal)
      };
      const cleanup = () => {
        if (timer) clearTimeout(timer);
        init.signal?.removeEventListener("abort", onAbort);
      };
      init.signal?.addEventListener("abort", onAbort, { once: true });
      // For a request: the whole exchange; for a watch (0): no limit (its own watchdog ends it).
      if (timeoutMs > 0)
        timer = setTimeout(
          () =>
            req.destroy(
              Object.assign(new Error(`${context} timed out after ${timeoutMs} ms`), { name: "TimeoutError" }),
            ),
          timeoutMs,
        );
      req.on("response", (res) => {
        if (stream) {
          // A watch lives on past the response: stop listening for abort only when it ends.
          if (timer) clearTimeout(timer);
          res.once("close", cleanup);
        } else res.once("end", cleanup).once("close", cleanup);
        resolve(res);
      });
      req.on("error", (err) => {
        cleanup();
        reject(KubeApiError.from(err, context));
      });
      req.end(payload);
    });
  }

  /** One keep-alive agent, rebuilt only when the TLS material changes (a rotated client certificate). */
  private pooledAgent(protocol: string, tls: Record<string, unknown>): HttpAgent {
    const fingerprint = JSON.stringify(tls);
    if (this.agent && this.agentFor === fingerprint) return this.agent;
    this.agent?.destroy();
    this.agentFor = fingerprint;
    // Bounded: a burst (a thousand Events at a cold start) queues for a pooled connection instead of opening
    // a thousand, each a TLS handshake on both sides. Watches hold one each for their lifetime.
    const options = {
      keepAlive: true,
      keepAliveMsecs: 30_000,
      maxSockets: 64,
      maxFreeSockets: 64,
      scheduling: "lifo" as const,
    };
    this.agent = protocol === "http:" ? new HttpAgent(options) : new HttpsAgent({ ...options, ...tls });
    return this.agent;
  }

  /** Closes idle pooled connections (tests; a process that exits need not). */
  close(): void {
    this.agent?.destroy();
    this.agent = undefined;
  }
}

function abortError(context: string, signal: AbortSignal): Error {
  const reason = signal.reason as { name?: string; message?: string } | undefined;
  return Object.assign(new Error(`${context}: ${reason?.message ?? "aborted"}`), {
    name: reason?.name === "TimeoutError" ? "TimeoutError" : "AbortError",
  });
}

function readBody(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on("data", (c: Buffer) => chunks.push(c));
    res.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    res.on("error", reject);
  });
}

const clients = new WeakMap<KubeConfigLike, KubeClient>();

/** The client (and connection pool) of `kc`; one per KubeConfig object. */
export function clientFor(kc: KubeConfigLike): KubeClient {
  let c = clients.get(kc);
  if (!c) clients.set(kc, (c = new KubeClient(kc)));
  return c;
}

export interface RawList<T> {
  items: T[];
  metadata?: { resourceVersion?: string };
}

/**
 * Lists a collection path (the same path an informer watches), following `continue` tokens. Objects come
 * back exactly as watch events carry them.
 */
export async function listPath<T extends KubernetesObject>(
  kc: KubeConfigLike,
  path: string,
  opts: {
    labelSelector?: string;
    fieldSelector?: string;
    pageSize?: number;
    timeoutMs?: number;
    signal?: AbortSignal;
  } = {},
): Promise<RawList<T>> {
  const items: T[] = [];
  let cont: string | undefined;
  let resourceVersion: string | undefined;
  do {
    const page = await clientFor(kc).request<RawList<T> & { metadata?: { continue?: string } }>(path, {
      query: {
        labelSelector: opts.labelSelector,
        fieldSelector: opts.fieldSelector,
        limit: opts.pageSize ?? 500,
        continue: cont,
      },
      ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    for (const item of page.items ?? []) items.push(item);
    resourceVersion = page.metadata?.resourceVersion;
    cont = page.metadata?.continue || undefined;
  } while (cont);
  return { items, metadata: resourceVersion === undefined ? {} : { resourceVersion } };
}

/** GET `path` as JSON. */
export function getJson(kc: KubeConfigLike, path: string, timeoutMs = DEFAULT_REQUEST_TIMEOUT_MS): Promise<unknown> {
  return clientFor(kc).request(path, { timeoutMs });
}
