/**
 * Where the runtime gets the apiserver's address and credentials. Anything shaped like
 * @kubernetes/client-node's `KubeConfig` will do (tests pass one); `loadKubeConfig()` reads the two
 * configurations a controller meets — in-cluster (ServiceAccount token, CA) and a kubeconfig file with
 * certificates or a token — without importing client-node, and falls back to client-node's loader (lazily
 * imported) for what it does not cover (exec plugins, auth providers, proxies, basic auth).
 */
import { readFileSync } from "node:fs";
import type { RequestOptions } from "node:https";
import { homedir } from "node:os";
import { resolve as resolvePath, dirname } from "node:path";
import { parse } from "yaml";

/** The part of client-node's KubeConfig the runtime uses (structurally: a KubeConfig is one). */
export interface KubeConfigLike {
  getCurrentCluster(): { server: string; proxyUrl?: string } | null;
  /** Sets TLS material (ca, cert, key, rejectUnauthorized, servername) and auth headers on `opts`. */
  applyToHTTPSOptions(opts: RequestOptions): Promise<void>;
}

const SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** In-cluster when KUBERNETES_SERVICE_HOST is set and KUBECONFIG is not; else $KUBECONFIG (first path) or ~/.kube/config. */
export async function loadKubeConfig(env: NodeJS.ProcessEnv = process.env): Promise<KubeConfigLike> {
  if (!env.KUBECONFIG && env.KUBERNETES_SERVICE_HOST) return inCluster(env.KUBERNETES_SERVICE_HOST, env);
  const file = (env.KUBECONFIG ?? "").split(":").find(Boolean) ?? resolvePath(homedir(), ".kube", "config");
  return (await fromFile(file)) ?? clientNodeKubeConfig(env);
}

function inCluster(host: string, env: NodeJS.ProcessEnv): KubeConfigLike {
  const server = `https://${host.includes(":") ? `[${host}]` : host}:${env.KUBERNETES_SERVICE_PORT ?? "443"}`;
  const ca = readFileSync(`${SA_DIR}/ca.crt`, "utf8");
  return tokenFileAccess(server, ca, `${SA_DIR}/token`);
}

/** A bound ServiceAccount token rotates (kubelet refreshes the file): re-read it, at most once a minute. */
function tokenFileAccess(
  server: string,
  ca: string | undefined,
  tokenFile: string,
  rejectUnauthorized = true,
): KubeConfigLike {
  let token = "";
  let readAt = 0;
  return {
    getCurrentCluster: () => ({ server }),
    async applyToHTTPSOptions(opts) {
      if (Date.now() - readAt > 60_000) {
        token = readFileSync(tokenFile, "utf8").trim();
        readAt = Date.now();
      }
      if (ca) opts.ca = ca;
      opts.rejectUnauthorized = rejectUnauthorized;
      opts.headers = { ...opts.headers, Authorization: `Bearer ${token}` };
    },
  };
}

interface RawKubeconfig {
  "current-context"?: string;
  contexts?: Array<{ name: string; context?: { cluster?: string; user?: string } }>;
  clusters?: Array<{ name: string; cluster?: Record<string, unknown> }>;
  users?: Array<{ name: string; user?: Record<string, unknown> }>;
}

const SIMPLE_USER_KEYS = new Set([
  "token",
  "tokenFile",
  "client-certificate",
  "client-certificate-data",
  "client-key",
  "client-key-data",
]);
const SIMPLE_CLUSTER_KEYS = new Set([
  "server",
  "certificate-authority",
  "certificate-authority-data",
  "insecure-skip-tls-verify",
  "tls-server-name",
  "extensions",
]);

/** A kubeconfig with certificates or a static token; undefined when it needs more than that (client-node then loads it). */
async function fromFile(file: string): Promise<KubeConfigLike | undefined> {
  const doc = parse(readFileSync(file, "utf8")) as RawKubeconfig;
  const ctxName = doc["current-context"];
  const ctx = doc.contexts?.find((c) => c.name === ctxName)?.context;
  const cluster = doc.clusters?.find((c) => c.name === ctx?.cluster)?.cluster;
  const user = doc.users?.find((u) => u.name === ctx?.user)?.user ?? {};
  if (!cluster || typeof cluster.server !== "string") return undefined;
  if (
    Object.keys(user).some((k) => !SIMPLE_USER_KEYS.has(k)) ||
    Object.keys(cluster).some((k) => !SIMPLE_CLUSTER_KEYS.has(k))
  )
    return undefined;
  const base = dirname(resolvePath(file));
  const material = (data: unknown, path: unknown): string | undefined => {
    if (typeof data === "string") return Buffer.from(data, "base64").toString("utf8");
    if (typeof path === "string") return readFileSync(resolvePath(base, path), "utf8");
    return undefined;
  };
  const ca = material(cluster["certificate-authority-data"], cluster["certificate-authority"]);
  const rejectUnauthorized = cluster["insecure-skip-tls-verify"] !== true;
  if (typeof user.tokenFile === "string")
    return tokenFileAccess(cluster.server, ca, resolvePath(base, user.tokenFile), rejectUnauthorized);
  const cert = material(user["client-certificate-data"], user["client-certificate"]);
  const key = material(user["client-key-data"], user["client-key"]);
  const token = typeof user.token === "string" ? user.token : undefined;
  const servername = typeof cluster["tls-server-name"] === "string" ? cluster["tls-server-name"] : undefined;
  const server = cluster.server;
  return {
    getCurrentCluster: () => ({ server }),
    async applyToHTTPSOptions(opts) {
      if (ca) opts.ca = ca;
      if (cert) opts.cert = cert;
      if (key) opts.key = key;
      if (servername) opts.servername = servername;
      opts.rejectUnauthorized = rejectUnauthorized;
      if (token) opts.headers = { ...opts.headers, Authorization: `Bearer ${token}` };
    },
  };
}

/** client-node's KubeConfig (exec plugins, auth providers, proxies...), imported only when needed. */
async function clientNodeKubeConfig(env: NodeJS.ProcessEnv): Promise<KubeConfigLike> {
  const { KubeConfig } = await import("@kubernetes/client-node");
  const kc = new KubeConfig();
  if (env.KUBECONFIG || !env.KUBERNETES_SERVICE_HOST) kc.loadFromDefault();
  else kc.loadFromCluster();
  return kc;
}
