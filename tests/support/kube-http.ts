/**
 * Raw HTTP against the apiserver with the credentials of a @kubernetes/client-node KubeConfig.
 *
 * The typed clients of @kubernetes/client-node (and KubernetesObjectApi) serialize through their
 * models, which silently drop fields the models do not know (e.g. an unknown `metadata.foo`).
 * Tests that must see exactly what the server receives and returns use this instead.
 */
import { request as httpsRequest, type RequestOptions } from "node:https";
import type { KubeConfig } from "@kubernetes/client-node";

export interface KubeResponse {
  status: number;
  body: string;
  /** `body` parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
}

export interface KubeRequest {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** Path with optional query string, e.g. `/api/v1/namespaces?limit=1`. */
  path: string;
  /** An object is sent as JSON; a string is sent as is. */
  body?: unknown;
  contentType?: string;
  timeoutMs?: number;
}

export async function kubeRequest(kc: KubeConfig, req: KubeRequest): Promise<KubeResponse> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("kubeRequest: the KubeConfig has no current cluster");
  const url = new URL(req.path, cluster.server);
  const opts: RequestOptions = { method: req.method, headers: { Accept: "application/json" } };
  await kc.applyToHTTPSOptions(opts);
  const payload =
    req.body === undefined ? undefined : typeof req.body === "string" ? req.body : JSON.stringify(req.body);
  const headers: Record<string, string | number> = {
    ...(opts.headers as Record<string, string>),
  };
  if (payload !== undefined) {
    headers["Content-Type"] = req.contentType ?? "application/json";
    headers["Content-Length"] = Buffer.byteLength(payload);
  }
  return new Promise<KubeResponse>((resolve, reject) => {
    const r = httpsRequest(url, { ...opts, headers, timeout: req.timeoutMs ?? 30_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", reject);
      res.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        let json: unknown;
        try {
          json = body ? JSON.parse(body) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, body, json });
      });
    });
    r.on("timeout", () => r.destroy(new Error(`${req.method} ${url.pathname}: timed out`)));
    r.on("error", reject);
    if (payload !== undefined) r.write(payload);
    r.end();
  });
}

// ---- discovery ----------------------------------------------------------------------------------

export interface ResourceInfo {
  /** Plural resource name, e.g. `kustomizations`. */
  name: string;
  namespaced: boolean;
}

const discoveryCache = new WeakMap<KubeConfig, Map<string, Map<string, ResourceInfo>>>();

/** Finds the resource (plural name, scope) serving `kind` in `apiVersion`, via API discovery. */
export async function resolveResource(kc: KubeConfig, apiVersion: string, kind: string): Promise<ResourceInfo> {
  let perKc = discoveryCache.get(kc);
  if (!perKc) discoveryCache.set(kc, (perKc = new Map()));
  let kinds = perKc.get(apiVersion);
  if (!kinds) {
    const path = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    const res = await kubeRequest(kc, { method: "GET", path });
    if (res.status !== 200) {
      throw new Error(`discovery of ${apiVersion} failed: HTTP ${res.status} ${res.body.slice(0, 300)}`);
    }
    const list = res.json as { resources?: Array<{ name: string; kind: string; namespaced: boolean }> };
    kinds = new Map();
    for (const r of list.resources ?? []) {
      if (!r.name.includes("/")) kinds.set(r.kind, { name: r.name, namespaced: r.namespaced });
    }
    perKc.set(apiVersion, kinds);
  }
  const info = kinds.get(kind);
  if (!info) throw new Error(`the server does not serve kind ${kind} in ${apiVersion}`);
  return info;
}

/** The URL path of one object (`name` given) or of its collection. */
export function objectPath(
  apiVersion: string,
  info: ResourceInfo,
  namespace: string | undefined,
  name?: string,
): string {
  const base = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  const ns = info.namespaced ? `/namespaces/${encodeURIComponent(namespace ?? "default")}` : "";
  return `${base}${ns}/${info.name}${name ? `/${encodeURIComponent(name)}` : ""}`;
}

/** Creates a CRD and waits until it is Established; the server's refusal is returned, not thrown. */
export async function installCrd(kc: KubeConfig, crd: Record<string, unknown>): Promise<string | undefined> {
  const res = await kubeRequest(kc, {
    method: "POST",
    path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    body: crd,
  });
  if (res.status !== 201)
    return `HTTP ${res.status}: ${(res.json as { message?: string } | undefined)?.message ?? res.body.slice(0, 500)}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const r = await kubeRequest(kc, {
      method: "GET",
      path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${(crd.metadata as { name: string }).name}`,
    });
    const conds =
      (r.json as { status?: { conditions?: Array<{ type: string; status: string }> } } | undefined)?.status
        ?.conditions ?? [];
    if (conds.some((c) => c.type === "Established" && c.status === "True")) return undefined;
    if (Date.now() > deadline) return `not Established after 30 s: ${JSON.stringify(conds)}`;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A ServiceAccount token from the TokenRequest API, as the kubelet projects one into a pod
 * (/var/run/secrets/kubernetes.io/serviceaccount/token): signed by the apiserver, authenticated as
 * system:serviceaccount:<namespace>:<name>, authorized by that account's RBAC.
 */
export async function requestServiceAccountToken(
  kc: KubeConfig,
  namespace: string,
  name: string,
  expirationSeconds = 3600,
): Promise<string> {
  const res = await kubeRequest(kc, {
    method: "POST",
    path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(name)}/token`,
    body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds } },
  });
  const token = (res.json as { status?: { token?: string } } | undefined)?.status?.token;
  if (res.status !== 201 || !token)
    throw new Error(`TokenRequest for ${namespace}/${name}: HTTP ${res.status} ${res.body.slice(0, 300)}`);
  return token;
}

/** Server-side apply of one object (force: the test plays the object's only writer); rejects on refusal. */
export async function applyObject(
  kc: KubeConfig,
  obj: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string }; [k: string]: unknown },
  fieldManager: string,
): Promise<unknown> {
  const path = objectPath(
    obj.apiVersion,
    await resolveResource(kc, obj.apiVersion, obj.kind),
    obj.metadata.namespace,
    obj.metadata.name,
  );
  const res = await kubeRequest(kc, {
    method: "PATCH",
    path: `${path}?fieldManager=${encodeURIComponent(fieldManager)}&force=true`,
    body: obj,
    contentType: "application/apply-patch+yaml",
  });
  if (res.status < 200 || res.status > 299)
    throw new Error(
      `applying ${obj.kind} ${obj.metadata.namespace ?? ""}/${obj.metadata.name}: HTTP ${res.status} ${res.body.slice(0, 400)}`,
    );
  return res.json;
}
