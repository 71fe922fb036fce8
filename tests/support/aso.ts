/**
 * Azure Service Operator v2 (the release infra/test-cluster/go/aso names, built from its Go module) on a test
 * cluster, run as its Helm chart runs it (docs/install.md), as one process on 127.0.0.1, against the fake Azure:
 *
 *   - installed as ASO's release installs it: its CRDs (generated from the module) labelled as the release labels
 *     them (ASO only manages CRDs labelled app.kubernetes.io/name=azure-service-operator), their conversion and
 *     ASO's mutating and validating webhooks pointed at the process (`clientConfig.url` on 127.0.0.1, a serving
 *     certificate from the cluster's CA), the ServiceAccount azureserviceoperator-default, and Secret
 *     aso-controller-settings, whose keys reach the process as the chart's Deployment maps them (env);
 *   - one replica in ASO's default mode, watchers-and-webhooks (the conversion webhook is what lets ASO read its
 *     own objects: ADR 0018), CRD management off (the harness installed them), leader election off, metrics
 *     (plain HTTP) and health on free ports of 127.0.0.1, the webhook server on a free port;
 *   - workload identity as the kubelet gives it: a token for the ServiceAccount from the apiserver's TokenRequest
 *     API (audience api://AzureADTokenExchange, 1 h, refreshed at 80 % of its life), at the path ASO reads it from,
 *     /var/run/secrets/tokens/azure-identity (a constant in ASO's code): the process runs in its own mount
 *     namespace (`unshare`, as a container would) with the token folder bound there;
 *   - Azure: the fake's address as the documented AZURE_RESOURCE_MANAGER_ENDPOINT and AZURE_AUTHORITY_HOST, its
 *     CA through SSL_CERT_FILE, and HTTPS_PROXY = the fake's CONNECT proxy, because the MSAL library ASO uses
 *     validates any authority host it does not know with login.microsoftonline.com's instance discovery.
 *
 * Only ASO's own Kubernetes access differs from a pod: it uses the admin kubeconfig (its ClusterRole reads and
 * writes every ASO kind, Secrets and ConfigMaps cluster-wide), as Flux's controllers do here.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { request as httpsRequest, type RequestOptions } from "node:https";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseAllDocuments } from "yaml";
import type { FakeAzure } from "../fake-azure/index.js";
import { readCrds, type KubeCluster } from "./kube-cluster.js";
import { kubeRequest } from "./kube-http.js";
import { freePorts } from "./ports.js";
import { componentDir, componentVersion, programPath } from "./test-cluster-binaries.js";
import { processUsage } from "./process-usage.js";
import { logTail, startWatchdog } from "./watchdog.js";
import { requireNeed } from "./needs.js";

export const ASO_SYSTEM_NAMESPACE = "azureserviceoperator-system";
export const ASO_SERVICE_ACCOUNT = "azureserviceoperator-default";
/** The subject of ASO's tokens: what the federated credentials Berth renders (subjectMode aso-controller) trust. */
export const ASO_SUBJECT = `system:serviceaccount:${ASO_SYSTEM_NAMESPACE}:${ASO_SERVICE_ACCOUNT}`;
export const TOKEN_EXCHANGE_AUDIENCE = "api://AzureADTokenExchange";
/** internal/identity FederatedTokenFilePath's folder: ASO reads its token there, whatever the environment says. */
const POD_TOKEN_DIR = "/var/run/secrets/tokens";
const TOKEN_FILE = "azure-identity";
const TOKEN_SECONDS = 3600;

/** The keys of aso-controller-settings the chart's Deployment passes to the process as environment variables. */
const SETTINGS_ENV = [
  "AZURE_CLIENT_ID",
  "AZURE_CLIENT_SECRET",
  "AZURE_TENANT_ID",
  "AZURE_ADDITIONAL_TENANTS",
  "AZURE_SUBSCRIPTION_ID",
  "AZURE_USER_ASSIGNED_IDENTITY_CREDENTIALS",
  "AZURE_CLIENT_CERTIFICATE",
  "AZURE_CLIENT_CERTIFICATE_PASSWORD",
  "AZURE_AUTHORITY_HOST",
  "AZURE_RESOURCE_MANAGER_ENDPOINT",
  "AZURE_RESOURCE_MANAGER_AUDIENCE",
  "AZURE_TARGET_NAMESPACES",
  "AZURE_OPERATOR_MODE",
  "AZURE_SYNC_PERIOD",
  "USE_WORKLOAD_IDENTITY_AUTH",
  "AZURE_USER_AGENT_SUFFIX",
  "MAX_CONCURRENT_RECONCILES",
  "RATE_LIMIT_MODE",
  "RATE_LIMIT_QPS",
  "RATE_LIMIT_BUCKET_SIZE",
  "DEFAULT_RECONCILE_POLICY",
  "ALLOW_MULTI_ENV_MANAGEMENT",
] as const;
export type AsoSetting = (typeof SETTINGS_ENV)[number];

export interface AsoOptions {
  /**
   * aso-controller-settings besides the cloud endpoints. Default: what docs/install.md's `helm install` writes (no
   * global credential: ASO uses the namespaces' aso-credential Secrets, which Berth's controller writes) and
   * MAX_CONCURRENT_RECONCILES 4 (the chart's value).
   */
  settings?: Partial<Record<AsoSetting, string>>;
}

export interface RunningAso {
  pid(): number;
  healthUrl: string;
  metricsUrl: string;
  /** The webhook server's base URL (https://127.0.0.1:<port>). */
  webhookUrl: string;
  log: string;
  /** The last lines of ASO's log, for failure messages. */
  logTail(lines?: number): Promise<string>;
  /** Prometheus text from ASO's metrics endpoint. */
  metrics(): Promise<string>;
  /** User + system CPU seconds and peak resident memory (VmHWM) of the process so far. */
  usage(): { cpuSeconds: number; peakRssBytes: number };
  /** Changes keys of aso-controller-settings and restarts the process (as `helm upgrade` rolls the pod). */
  updateSettings(settings: Partial<Record<AsoSetting, string>>): Promise<void>;
  stop(): Promise<void>;
}

// The pod's mount namespace: /run is private (a tmpfs), the token folder is bound where ASO looks for it.
const POD_SCRIPT = `mount -t tmpfs tmpfs /run && mkdir -p ${POD_TOKEN_DIR} && mount --bind "$1" ${POD_TOKEN_DIR} && shift && exec "$@"`;

/** The fake Entra trusts the cluster's service-account issuer with the keys the apiserver publishes (/openid/v1/jwks). */
export async function trustClusterIssuer(cluster: KubeCluster, azure: FakeAzure): Promise<void> {
  const kc = cluster.kubeConfig();
  const opts: RequestOptions = { method: "GET", headers: { Accept: "application/jwk-set+json" } };
  await kc.applyToHTTPSOptions(opts);
  const jwks = await new Promise<string>((resolve, reject) => {
    const req = httpsRequest(new URL("/openid/v1/jwks", cluster.server), opts, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        res.statusCode === 200
          ? resolve(Buffer.concat(chunks).toString("utf8"))
          : reject(new Error(`GET /openid/v1/jwks: HTTP ${res.statusCode}`)),
      );
    });
    req.on("error", reject);
    req.end();
  });
  azure.entra.trustIssuer(
    cluster.serviceAccountIssuer,
    JSON.parse(jwks) as Parameters<FakeAzure["entra"]["trustIssuer"]>[1],
  );
}

export async function startAso(cluster: KubeCluster, azure: FakeAzure, opts: AsoOptions = {}): Promise<RunningAso> {
  if (!azure.proxyUrl)
    throw new Error("startAso: start the fake Azure with { proxy: true } (ASO's MSAL asks login.microsoftonline.com)");
  requireNeed("aso");
  const binary = programPath("aso", "aso-controller");
  const kc = cluster.kubeConfig();
  const dir = join(cluster.dir, "aso");
  const tokenDir = join(dir, "tokens");
  const certDir = join(dir, "serving-certs");
  mkdirSync(tokenDir, { recursive: true });
  mkdirSync(certDir, { recursive: true });
  const log = join(dir, "aso-controller.log");
  const [healthPort, metricsPort, webhookPort] = await freePorts(3);
  const webhookUrl = `https://127.0.0.1:${webhookPort}`;
  const serving = cluster.ca.issue({
    commonName: "azureserviceoperator-webhook-service",
    hosts: ["127.0.0.1"],
    usage: "server",
  });
  writeFileSync(join(certDir, "tls.crt"), serving.certPem);
  writeFileSync(join(certDir, "tls.key"), serving.keyPem, { mode: 0o600 });
  const kubeconfig = await cluster.writeKubeconfigFile("admin");
  await trustClusterIssuer(cluster, azure);

  // What the chart installs besides the Deployment.
  await ensure(kc, "/api/v1/namespaces", {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: ASO_SYSTEM_NAMESPACE },
  });
  await ensure(kc, `/api/v1/namespaces/${ASO_SYSTEM_NAMESPACE}/serviceaccounts`, {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: ASO_SERVICE_ACCOUNT, namespace: ASO_SYSTEM_NAMESPACE },
  });
  const settings: Record<string, string> = {
    AZURE_RESOURCE_MANAGER_ENDPOINT: azure.url,
    AZURE_AUTHORITY_HOST: `${azure.url}/`,
    MAX_CONCURRENT_RECONCILES: "4",
    ...opts.settings,
  };
  await writeSettings(kc, settings);

  // The kubelet's projected token, refreshed at 80 % of its life; written by rename, as the kubelet swaps it.
  const writeToken = async () => {
    const r = await kubeRequest(kc, {
      method: "POST",
      path: `/api/v1/namespaces/${ASO_SYSTEM_NAMESPACE}/serviceaccounts/${ASO_SERVICE_ACCOUNT}/token`,
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: { audiences: [TOKEN_EXCHANGE_AUDIENCE], expirationSeconds: TOKEN_SECONDS },
      },
    });
    if (r.status !== 201) throw new Error(`TokenRequest for ${ASO_SUBJECT}: HTTP ${r.status} ${r.body.slice(0, 200)}`);
    writeFileSync(join(tokenDir, `.${TOKEN_FILE}.tmp`), (r.json as { status: { token: string } }).status.token);
    renameSync(join(tokenDir, `.${TOKEN_FILE}.tmp`), join(tokenDir, TOKEN_FILE));
  };
  await writeToken();
  const refresh = setInterval(() => void writeToken().catch(() => undefined), TOKEN_SECONDS * 800);
  refresh.unref();

  let child: ChildProcess | undefined;
  const start = async () => {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: dir,
      TMPDIR: dir,
      KUBECONFIG: kubeconfig,
      POD_NAMESPACE: ASO_SYSTEM_NAMESPACE,
      SSL_CERT_FILE: azure.caFile,
      HTTPS_PROXY: azure.proxyUrl!,
      NO_PROXY: "",
      ...(await readSettingsEnv(kc)),
    };
    const args = [
      `--metrics-addr=127.0.0.1:${metricsPort}`,
      "--secure-metrics=false",
      `--health-addr=127.0.0.1:${healthPort}`,
      `--webhook-port=${webhookPort}`,
      `--webhook-cert-dir=${certDir}`,
      "--crd-management=none",
      "--v=2",
    ];
    const fd = openSync(log, "a");
    child = spawn(
      "unshare",
      ["--user", "--map-root-user", "--mount", "sh", "-c", POD_SCRIPT, "aso-pod", tokenDir, binary, ...args],
      { env, stdio: ["ignore", fd, fd] },
    );
    closeSync(fd);
    startWatchdog("berth-aso-watchdog", [child.pid]);
    const started = child;
    const deadline = Date.now() + 90_000;
    for (;;) {
      if (started.exitCode !== null || started.signalCode !== null)
        throw new Error(`ASO exited (${started.exitCode ?? started.signalCode}):\n${logTail(log, 40)}`);
      const healthy = await fetch(`http://127.0.0.1:${healthPort}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (healthy && (await webhookServing(webhookUrl, cluster.ca.certPem))) break;
      if (Date.now() > deadline) throw new Error(`ASO not ready within 90 s:\n${logTail(log, 40)}`);
      await sleep(200);
    }
  };
  const kill = async () => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      c.once("exit", () => resolve());
      c.kill("SIGKILL");
    });
  };

  try {
    // First: ASO manages only the kinds whose CRDs carry its labels when it starts.
    await installCrdsAndWebhooks(kc, webhookUrl, cluster.ca.certPem);
    await start();
  } catch (err) {
    clearInterval(refresh);
    await kill();
    throw err;
  }

  return {
    pid: () => child?.pid ?? -1,
    healthUrl: `http://127.0.0.1:${healthPort}`,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    webhookUrl,
    log,
    logTail: async (lines = 40) => logTail(log, lines),
    metrics: async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text(),
    usage: () => {
      const usage = processUsage(child?.pid ?? -1);
      return { cpuSeconds: usage?.cpuSeconds ?? 0, peakRssBytes: usage?.peakRssBytes ?? 0 };
    },
    async updateSettings(changed) {
      const current = await readSettingsData(kc);
      await writeSettings(kc, { ...current, ...changed });
      await kill();
      await start();
    },
    async stop() {
      clearInterval(refresh);
      await kill();
    },
  };
}

/**
 * ASO's writes to a team's identity and its federated credentials, as the fake Azure answered them, seconds after
 * `since` (ms): "+13.8s PUT workload 201". For timelines in tests and benchmarks.
 */
export function identityWrites(azure: FakeAzure, team: string, since: number): string[] {
  return azure.stats.requests
    .filter((r) => r.at >= since && r.path.includes(`id-${team}--`) && r.method !== "GET")
    .map((r) => `+${((r.at - since) / 1000).toFixed(1)}s ${r.method} ${r.path.split("/").pop()} ${r.status}`);
}

async function ensure(
  kc: ReturnType<KubeCluster["kubeConfig"]>,
  path: string,
  body: Record<string, unknown>,
): Promise<void> {
  const r = await kubeRequest(kc, { method: "POST", path, body });
  if (r.status !== 201 && r.status !== 409) throw new Error(`POST ${path}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
}

const SETTINGS_PATH = `/api/v1/namespaces/${ASO_SYSTEM_NAMESPACE}/secrets/aso-controller-settings`;

async function writeSettings(kc: ReturnType<KubeCluster["kubeConfig"]>, data: Record<string, string>): Promise<void> {
  const body = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "aso-controller-settings", namespace: ASO_SYSTEM_NAMESPACE },
    type: "Opaque",
    stringData: data,
  };
  const r = await kubeRequest(kc, { method: "PUT", path: SETTINGS_PATH, body });
  if (r.status === 404) return ensure(kc, `/api/v1/namespaces/${ASO_SYSTEM_NAMESPACE}/secrets`, body);
  if (r.status !== 200) throw new Error(`PUT aso-controller-settings: HTTP ${r.status} ${r.body.slice(0, 300)}`);
}

async function readSettingsData(kc: ReturnType<KubeCluster["kubeConfig"]>): Promise<Record<string, string>> {
  const r = await kubeRequest(kc, { method: "GET", path: SETTINGS_PATH });
  if (r.status !== 200) throw new Error(`GET aso-controller-settings: HTTP ${r.status} ${r.body.slice(0, 300)}`);
  const data = ((r.json as { data?: Record<string, string> }).data ?? {}) as Record<string, string>;
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]));
}

/** The environment the chart's `env` (secretKeyRef, optional) builds from aso-controller-settings. */
async function readSettingsEnv(kc: ReturnType<KubeCluster["kubeConfig"]>): Promise<Record<string, string>> {
  const data = await readSettingsData(kc);
  return Object.fromEntries(SETTINGS_ENV.filter((k) => data[k] !== undefined).map((k) => [k, data[k]!]));
}

/** Any TLS answer from the webhook server (it has no health path of its own). */
function webhookServing(url: string, ca: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = httpsRequest(`${url}/convert`, { method: "GET", ca, timeout: 2_000 }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on("error", () => resolve(false));
    req.on("timeout", () => req.destroy());
    req.end();
  });
}

/**
 * ASO's CRDs as its release ships them: labelled (app.kubernetes.io/name, app.kubernetes.io/version), conversion
 * by ASO's webhook (`/convert`); and its mutating and validating webhook configurations. Both point at the process.
 */
async function installCrdsAndWebhooks(
  kc: ReturnType<KubeCluster["kubeConfig"]>,
  webhookUrl: string,
  caPem: string,
): Promise<void> {
  const caBundle = Buffer.from(caPem).toString("base64");
  const version = componentVersion("aso");
  for (const crd of await readCrds([join(componentDir("aso"), "crds")])) {
    const name = crd.metadata!.name!;
    const patch = {
      metadata: {
        labels: { "app.kubernetes.io/name": "azure-service-operator", "app.kubernetes.io/version": version },
      },
      spec: {
        conversion: {
          strategy: "Webhook",
          webhook: { conversionReviewVersions: ["v1"], clientConfig: { url: `${webhookUrl}/convert`, caBundle } },
        },
      },
    };
    const r = await kubeRequest(kc, {
      method: "PATCH",
      path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`,
      body: patch,
      contentType: "application/merge-patch+json",
    });
    if (r.status !== 200)
      throw new Error(
        `CRD ${name}: HTTP ${r.status} ${r.body.slice(0, 300)} (are ASO's CRDs installed on the cluster?)`,
      );
  }
  const manifests = readFileSync(join(componentDir("aso"), "webhooks", "manifests.yaml"), "utf8");
  for (const doc of parseAllDocuments(manifests)) {
    const config = doc.toJS() as {
      kind: string;
      metadata: { name: string };
      webhooks: Array<{ clientConfig: { service?: { path?: string }; url?: string; caBundle?: string } }>;
    } | null;
    if (!config) continue;
    config.metadata.name = `azureserviceoperator-${config.metadata.name}`;
    for (const w of config.webhooks)
      w.clientConfig = { url: `${webhookUrl}${w.clientConfig.service?.path ?? ""}`, caBundle };
    const plural =
      config.kind === "MutatingWebhookConfiguration"
        ? "mutatingwebhookconfigurations"
        : "validatingwebhookconfigurations";
    const base = `/apis/admissionregistration.k8s.io/v1/${plural}`;
    await kubeRequest(kc, { method: "DELETE", path: `${base}/${config.metadata.name}` });
    const r = await kubeRequest(kc, { method: "POST", path: base, body: config });
    if (r.status !== 201)
      throw new Error(`${config.kind} ${config.metadata.name}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
  }
}
