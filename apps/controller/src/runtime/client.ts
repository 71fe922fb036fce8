/**
 * How the runtime talks to the apiserver: client-node API classes built with a per-request timeout
 * (client-node sets none, so a hung connection would block a reconcile or a lease renewal forever),
 * and a raw JSON GET for lists whose objects must look exactly like watch events.
 */
import { request as httpRequest } from "node:http";
import { request as httpsRequest, type RequestOptions } from "node:https";
import {
  createConfiguration,
  ServerConfiguration,
  type Configuration,
  type KubeConfig,
  type KubernetesObject,
  type RequestContext,
  type ResponseContext,
} from "@kubernetes/client-node";
import { KubeApiError } from "./errors.js";

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

type ApiClass<T> = new (configuration: Configuration) => T;

const clients = new WeakMap<KubeConfig, Map<ApiClass<unknown>, Map<number, unknown>>>();

/**
 * An API client (CoreV1Api, CoordinationV1Api, KubernetesObjectApi, ...) for `kc` whose every request
 * aborts after `timeoutMs`. Cached per KubeConfig, class and timeout: KubernetesObjectApi caches
 * discovery, so reusing it saves a GET per apply.
 */
export function apiClient<T>(kc: KubeConfig, Api: ApiClass<T>, timeoutMs = DEFAULT_REQUEST_TIMEOUT_MS): T {
  let byClass = clients.get(kc);
  if (!byClass) clients.set(kc, (byClass = new Map()));
  let byTimeout = byClass.get(Api);
  if (!byTimeout) byClass.set(Api, (byTimeout = new Map()));
  const cached = byTimeout.get(timeoutMs) as T | undefined;
  if (cached) return cached;
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("KubeConfig has no current cluster");
  const config = createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: kc },
    promiseMiddleware: [
      {
        pre: async (ctx: RequestContext) => {
          ctx.setSignal(AbortSignal.timeout(timeoutMs));
          return ctx;
        },
        post: async (rsp: ResponseContext) => rsp,
      },
    ],
  });
  const client = new Api(config);
  byTimeout.set(timeoutMs, client);
  return client;
}

export interface RawList<T> {
  items: T[];
  metadata?: { resourceVersion?: string };
}

/**
 * Lists a collection path (the same path an informer watches) as raw JSON, following `continue`
 * tokens. Objects come back exactly as watch events carry them (strings for times, unknown fields
 * kept), unlike the typed list calls, which turn times into Dates and drop fields their models lack.
 */
export async function listPath<T extends KubernetesObject>(
  kc: KubeConfig,
  path: string,
  opts: { labelSelector?: string; fieldSelector?: string; pageSize?: number; timeoutMs?: number } = {},
): Promise<RawList<T>> {
  const items: T[] = [];
  let cont: string | undefined;
  let resourceVersion: string | undefined;
  do {
    const q = new URLSearchParams();
    if (opts.labelSelector) q.set("labelSelector", opts.labelSelector);
    if (opts.fieldSelector) q.set("fieldSelector", opts.fieldSelector);
    q.set("limit", String(opts.pageSize ?? 500));
    if (cont) q.set("continue", cont);
    const page = (await getJson(kc, `${path}?${q}`, opts.timeoutMs)) as RawList<T> & { metadata?: { continue?: string } };
    items.push(...(page.items ?? []));
    resourceVersion = page.metadata?.resourceVersion;
    cont = page.metadata?.continue || undefined;
  } while (cont);
  return { items, metadata: resourceVersion === undefined ? {} : { resourceVersion } };
}

/** GET `path` and parse JSON; any non-2xx or network failure becomes a KubeApiError. */
export async function getJson(kc: KubeConfig, path: string, timeoutMs = DEFAULT_REQUEST_TIMEOUT_MS): Promise<unknown> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new KubeApiError({ status: 0, reason: "NoCluster", kind: "other", message: "KubeConfig has no current cluster" });
  const url = new URL(cluster.server.replace(/\/$/, "") + path);
  const opts: RequestOptions = { method: "GET", headers: { Accept: "application/json" } };
  await kc.applyToHTTPSOptions(opts);
  const send = url.protocol === "http:" ? httpRequest : httpsRequest;
  return new Promise((resolve, reject) => {
    const req = send(url, { ...opts, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", (err) => reject(KubeApiError.from(err, `GET ${url.pathname}`)));
      res.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        const code = res.statusCode ?? 0;
        if (code < 200 || code > 299) {
          reject(KubeApiError.fromResponse(code, body, `GET ${url.pathname}`));
          return;
        }
        try {
          resolve(JSON.parse(body));
        } catch (err) {
          reject(new KubeApiError({ status: code, reason: "BadResponse", kind: "other", message: `GET ${url.pathname}: response is not JSON`, cause: err }));
        }
      });
    });
    req.on("timeout", () => req.destroy(Object.assign(new Error(`GET ${url.pathname} timed out`), { name: "TimeoutError" })));
    req.on("error", (err) => reject(KubeApiError.from(err, `GET ${url.pathname}`)));
    req.end();
  });
}
