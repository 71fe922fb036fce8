/**
 * Benchmark harness for the controller (apps/controller) on a REAL kube-apiserver + etcd (tests/support/kube-cluster.ts)
 * (tests/support/kube-cluster.ts), running as a child process under its own RBAC (infra/controller/).
 * Prints figures; asserts nothing. Run: `npm run bench -- controller` or `pnpm exec tsx tests/bench/controller.ts`.
 *
 * Per scale point (BENCH_SCALES, default "1000,5000"; each on a fresh apiserver + etcd):
 * (a) Cold start: N teams exist (Team, namespace, ServiceAccount `workload`, RoleBinding `berth-controller`,
 *     `<team>-identity` ConfigMap with a clientId), no credential yet. Time from spawning the controller to
 *     every team's aso-credential carrying the right client id; the controller's CPU for it, per team, side
 *     by side with the kube-apiserver's and etcd's CPU in the same window and the writes the apiserver
 *     served (its own apiserver_request_total).
 * (b) At the first scale point: clientId appears → credential written: M more teams, onboarded without
 *     identity and reconciled (IdentityPending); then, one at a time, the identity ConfigMap is written and
 *     the time until a watch sees the team's Secret with that client id is taken. p50 / p99.
 * (c) At the first scale point: steady state, nothing changing, for BENCH_STEADY_SECONDS (default 330 s,
 *     so one periodic re-check of every team — 5 min — falls inside): controller CPU as % of a core and the
 *     writes the apiserver served (Lease renewals shown apart).
 * (e) Restart: the controller stopped and started again with every team in place (a new pod after an upgrade or
 *     a drain): time from spawn until every team has had a pass (its own metrics: team reconciles ≥ teams, the
 *     team queue empty), the CPU and the writes the apiserver served meanwhile (none expected: all in place).
 * (d) Memory: peak RSS (VmHWM of /proc/<pid>/status), RSS after each phase, and the same process started
 *     against an unreachable apiserver (nothing cached), with the static and the azure provider.
 *
 * The controller runs as the image runs it: `node apps/controller/dist/main.js`, built first (turbo,
 * resolved through its package), with the Deployment's NODE_OPTIONS. BENCH_TSX=1 runs the sources under
 * tsx instead, as the e2e tests do.
 *
 * Env: BENCH_SCALES ("1000,5000"), BENCH_LATENCY_TEAMS (100), BENCH_STEADY_SECONDS (330),
 * BENCH_CREATE_CONCURRENCY (16), BENCH_TSX, BENCH_NODE_ARGS (e.g. --cpu-prof), BENCH_NODE_OPTIONS (default: the Deployment's, from
 * infra/controller/deployment.yaml, so the heap is capped as in production; "none" runs uncapped).
 */
import { percentile } from "./stats.js";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { freePort } from "../support/ports.js";
import { processUsage } from "../support/process-usage.js";
import { metricSum, sample } from "../support/prometheus.js";
import { createRequire } from "node:module";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { Watch, type KubeConfig } from "@kubernetes/client-node";
import { REPO_ROOT, startKubeCluster, type KubeCluster } from "../support/kube-cluster.js";
import {
  Admin,
  ASO_NS,
  CONTROLLER_GROUPS,
  CONTROLLER_USER,
  INFRA,
  onboardTeam,
  readManifests,
} from "../controller/helpers.js";

const SCALES = (process.env.BENCH_SCALES ?? process.env.BENCH_TEAMS ?? "1000,5000")
  .split(",")
  .map(Number)
  .filter((n) => n > 0);
const STEADY_SECONDS = Number(process.env.BENCH_STEADY_SECONDS ?? 330);
const LATENCY_TEAMS = Number(process.env.BENCH_LATENCY_TEAMS ?? 100);
const CREATE_CONCURRENCY = Number(process.env.BENCH_CREATE_CONCURRENCY ?? 16);
const USE_TSX = Boolean(process.env.BENCH_TSX) && process.env.BENCH_TSX !== "0";

/** The controller container's NODE_OPTIONS and memory limit, as infra/controller/deployment.yaml sets them. */
function deploymentMemory(): { nodeOptions: string; limit: string } {
  const d = readManifests(INFRA, (f) => f === "deployment.yaml").find((o) => o.kind === "Deployment") as
    | {
        spec: {
          template: {
            spec: {
              containers: Array<{
                env?: Array<{ name: string; value?: string }>;
                resources?: { limits?: { memory?: string } };
              }>;
            };
          };
        };
      }
    | undefined;
  const c = d?.spec.template.spec.containers[0];
  return {
    nodeOptions: c?.env?.find((e) => e.name === "NODE_OPTIONS")?.value ?? "",
    limit: c?.resources?.limits?.memory ?? "?",
  };
}
const DEPLOYMENT = deploymentMemory();
const NODE_OPTIONS =
  process.env.BENCH_NODE_OPTIONS === "none" ? "" : (process.env.BENCH_NODE_OPTIONS ?? DEPLOYMENT.nodeOptions);
/** Extra node arguments for the controller, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" (not allowed in NODE_OPTIONS). */
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean);

const TENANT = "11111111-1111-4111-8111-111111111111";
const SUBSCRIPTION = "22222222-2222-4222-8222-222222222222";
const clientId = (n: number) => `${n.toString(16).padStart(8, "0")}-aaaa-4aaa-8aaa-aaaaaaaaaaaa`;
const V1 = "v1";

const CONFIG_YAML = `
platform:
  asoNamespace: ${ASO_NS}
  environments:
    - name: dev
      clusters:
        - name: aks-dev-weu
          vars:
            TENANT_ID: "${TENANT}"
            SUBSCRIPTION_ID: "${SUBSCRIPTION}"
            CLUSTER_OIDC_ISSUER_URL: "https://westeurope.oic.prod-aks.azure.com/tenant/cluster/"
            AZURE_LOCATION: westeurope
            PLATFORM_CLIENT_ID: "33333333-3333-4333-8333-333333333333"
`;

// ---- small helpers ---------------------------------------------------------------------------------

const fmtMs = (n: number) => (n >= 10_000 ? `${(n / 1000).toFixed(1)} s` : `${n.toFixed(n < 100 ? 1 : 0)} ms`);
const fmtMiB = (kib: number) => `${(kib / 1024).toFixed(0)} MiB`;

/** Runs `fn` over `items`, at most `n` at once. */
async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, ms: number, everyMs = 100): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** `promise`, or a rejection after `ms` (the timer is cleared either way, so nothing outlives the bench). */
async function within<T>(promise: Promise<T>, ms: number, message: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error(message())), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** VmRSS / VmHWM (KiB) and CPU seconds of a process. */
function procStats(pid: number): { rssKiB: number; hwmKiB: number; cpuSec: number } | undefined {
  const usage = processUsage(pid);
  return usage && { rssKiB: usage.rssBytes / 1024, hwmKiB: usage.peakRssBytes / 1024, cpuSec: usage.cpuSeconds };
}

/** The 1-minute load average, sampled every second while the bench runs. */
class LoadSampler {
  readonly samples: number[] = [];
  private readonly timer = setInterval(() => this.samples.push(loadavg()[0]!), 1_000);
  stop() {
    clearInterval(this.timer);
  }
}

// ---- the controller process ------------------------------------------------------------------------

/** How to start the controller: as the image does (the built dist/main.js), or its sources under tsx. */
function controllerCommand(): string[] {
  if (USE_TSX) return ["--import", "tsx", "apps/controller/src/main.ts"];
  // turbo through its package (pnpm does not hoist binaries: node_modules/.bin may not have it).
  const turbo = createRequire(import.meta.url).resolve("turbo/bin/turbo");
  const r = spawnSync(
    process.execPath,
    [turbo, "run", "build", "--filter=@berth/controller...", "--output-logs=errors-only"],
    {
      cwd: REPO_ROOT,
      encoding: "utf8",
      env: { ...process.env, TURBO_TELEMETRY_DISABLED: "1" },
    },
  );
  if (r.status !== 0) throw new Error(`building the controller failed: ${r.stdout}${r.stderr}`);
  return [join(REPO_ROOT, "apps/controller/dist/main.js")];
}

class ControllerProcess {
  readonly child: ChildProcess;
  readonly startedAt = performance.now();
  output = "";
  peakRssKiB = 0;
  private readonly sampler: NodeJS.Timeout;
  readonly exited: Promise<number | null>;
  /** Rejects if the process exits before stop(): race it against anything that waits on the controller. */
  readonly died: Promise<never>;
  private stopping = false;

  constructor(
    command: string[],
    env: Record<string, string>,
    readonly metricsPort: number,
  ) {
    this.child = spawn(process.execPath, [...NODE_ARGS, ...command], {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        TSX_TSCONFIG_PATH: "apps/controller/tsconfig.json",
        BERTH_METRICS_PORT: String(metricsPort),
        BERTH_LOG_LEVEL: "warn",
        ...(NODE_OPTIONS ? { NODE_OPTIONS } : {}),
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const keep = (c: Buffer) => {
      this.output = (this.output + String(c)).slice(-20_000);
    };
    this.child.stdout!.on("data", keep);
    this.child.stderr!.on("data", keep);
    this.exited = new Promise((res) => this.child.on("exit", (code) => res(code)));
    this.died = this.exited.then((code) => {
      if (!this.stopping) throw new Error(`controller exited (${code}):\n${this.output.slice(-4_000)}`);
      return new Promise<never>(() => {});
    });
    this.died.catch(() => {}); // observed where it is raced
    this.sampler = setInterval(() => {
      const s = this.stats();
      if (s) this.peakRssKiB = Math.max(this.peakRssKiB, s.rssKiB);
    }, 100);
  }

  stats() {
    return this.child.pid ? procStats(this.child.pid) : undefined;
  }

  async ready(ms: number): Promise<number> {
    await until(
      "controller /readyz",
      async () => {
        if (this.child.exitCode !== null)
          throw new Error(`controller exited (${this.child.exitCode}):\n${this.output}`);
        return (await fetch(`http://127.0.0.1:${this.metricsPort}/readyz`).catch(() => undefined))?.status === 200;
      },
      ms,
      50,
    );
    return performance.now() - this.startedAt;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.sampler);
    if (this.child.exitCode !== null) return;
    this.child.kill("SIGTERM");
    const done = await Promise.race([this.exited.then(() => true), sleep(20_000).then(() => false)]);
    if (!done) this.child.kill("SIGKILL");
  }
}

// ---- detection: a watch on the teams' credentials ----------------------------------------------------

/** Records when each team namespace's aso-credential first carries the expected client id (watch-based). */
class CredentialWatch {
  private readonly expected = new Map<string, string>();
  private readonly seenAt = new Map<string, number>();
  private readonly waiters = new Map<string, () => void>();
  private resourceVersion = "";
  private abort: AbortController | undefined;
  private stopped = false;
  restarts = 0;

  constructor(
    private readonly kc: KubeConfig,
    private readonly admin: Admin,
  ) {}

  expect(namespace: string, id: string): Promise<void> {
    this.expected.set(namespace, id);
    if (this.seenAt.has(namespace)) return Promise.resolve();
    return new Promise((res) => this.waiters.set(namespace, res));
  }

  seen(namespace: string): number | undefined {
    return this.seenAt.get(namespace);
  }

  get count(): number {
    return this.seenAt.size;
  }

  async start(): Promise<void> {
    const r = await this.admin.req("GET", "/api/v1/secrets?labelSelector=berth.dev%2Fteam&limit=1");
    this.resourceVersion = (r.json as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    await this.watch();
  }

  private async watch(): Promise<void> {
    if (this.stopped) return;
    const query = {
      labelSelector: "berth.dev/team",
      resourceVersion: this.resourceVersion,
      allowWatchBookmarks: true,
      timeoutSeconds: 3600,
    };
    this.abort = await new Watch(this.kc).watch(
      "/api/v1/secrets",
      query,
      (
        phase,
        obj: {
          metadata?: { name?: string; namespace?: string; resourceVersion?: string };
          data?: Record<string, string>;
        },
      ) => {
        const now = performance.now();
        if (obj?.metadata?.resourceVersion) this.resourceVersion = obj.metadata.resourceVersion;
        if ((phase !== "ADDED" && phase !== "MODIFIED") || obj.metadata?.name !== "aso-credential") return;
        const ns = obj.metadata.namespace ?? "";
        const id = Buffer.from(obj.data?.AZURE_CLIENT_ID ?? "", "base64").toString("utf8");
        if (this.seenAt.has(ns) || this.expected.get(ns) !== id) return;
        this.seenAt.set(ns, now);
        this.waiters.get(ns)?.();
        this.waiters.delete(ns);
      },
      () => {
        // Closed or failed: resume from the last resourceVersion seen.
        if (this.stopped) return;
        this.restarts++;
        setTimeout(() => void this.watch().catch(() => undefined), 100);
      },
    );
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
  }
}

// ---- the bench ----

/** Write requests the apiserver served, by `VERB resource` (its own apiserver_request_total; reads and watches left out). */
async function apiserverWrites(admin: Admin): Promise<Map<string, number>> {
  const r = await admin.req("GET", "/metrics");
  const out = new Map<string, number>();
  for (const m of r.body.matchAll(/^apiserver_request_total\{([^}]*)\} (\S+)$/gm)) {
    const labels = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (!["POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"].includes(labels.verb ?? "")) continue;
    const key = `${labels.verb} ${labels.resource}${labels.subresource ? `/${labels.subresource}` : ""}`;
    out.set(key, (out.get(key) ?? 0) + Number(m[2]));
  }
  return out;
}

function writesBetween(
  before: Map<string, number>,
  after: Map<string, number>,
): { total: number; leases: number; byKind: string } {
  let total = 0;
  let leases = 0;
  const parts: string[] = [];
  for (const [k, v] of [...after].sort(([a], [b]) => a.localeCompare(b))) {
    const d = v - (before.get(k) ?? 0);
    if (d <= 0) continue;
    if (k.endsWith(" leases")) leases += d;
    else {
      total += d;
      parts.push(`${k} ${d}`);
    }
  }
  return { total, leases, byKind: parts.join(", ") || "none" };
}

interface CpuSnapshot {
  controller: number;
  apiserver: number;
  etcd: number;
  at: number;
}

function cpuNow(controllerPid: number | undefined, cluster: KubeCluster): CpuSnapshot {
  return {
    controller: controllerPid ? (procStats(controllerPid)?.cpuSec ?? NaN) : NaN,
    apiserver: procStats(cluster.pids.kubeApiserver)?.cpuSec ?? NaN,
    etcd: procStats(cluster.pids.etcd)?.cpuSec ?? NaN,
    at: performance.now(),
  };
}

const msPer = (sec: number, n: number) => `${((sec * 1000) / n).toFixed(1)} ms`;

interface ScaleResult {
  teams: number;
  rows: Array<[string, string]>;
  coldMs: number;
  controllerCpuSec: number;
  rssAfterColdKiB: number;
  peakKiB: number;
}

async function scalePoint(teamsCount: number, first: boolean, command: string[]): Promise<ScaleResult> {
  const rows: Array<[string, string]> = [];
  const cluster = await startKubeCluster({ crds: readManifests(join(INFRA, "crds")) });
  const dir = mkdtempSync(join(tmpdir(), "berth-bench-controller-"));
  const controllers: ControllerProcess[] = [];
  const credentials = new CredentialWatch(cluster.kubeConfig(), new Admin(cluster.kubeConfig()));
  const label = `[${teamsCount}]`;
  try {
    const admin = new Admin(cluster.kubeConfig());
    await admin.create({ apiVersion: V1, kind: "Namespace", metadata: { name: ASO_NS } });
    for (const obj of readManifests(INFRA, (f) => f === "namespace.yaml" || f.startsWith("rbac-")))
      await admin.create(obj);
    const configFile = join(dir, "berth.yaml");
    writeFileSync(configFile, CONFIG_YAML);
    const kubeconfig = await cluster.writeKubeconfigFile(CONTROLLER_USER, CONTROLLER_GROUPS);
    const controllerEnv = {
      KUBECONFIG: kubeconfig,
      BERTH_CONFIG_FILE: configFile,
      BERTH_CLUSTER_NAME: "aks-dev-weu",
      BERTH_POD_NAME: "bench",
    };
    /** Spawns a controller with the apiserver's writes and the cluster's CPU taken just before, and waits for /readyz. */
    const spawnMeasured = async () => {
      await sleep(2_000); // let the apiserver settle after what came before, so the CPU windows start quiet
      const writes0 = await apiserverWrites(admin);
      const controller = new ControllerProcess(command, controllerEnv, await freePort());
      controllers.push(controller);
      const cpu0 = cpuNow(undefined, cluster);
      const readyMs = await controller.ready(300_000);
      return { controller, writes0, cpu0, readyMs };
    };
    process.stdout.write(`${label} cluster up in ${fmtMs(cluster.startupMs)}\n`);

    if (first) {
      // (d) floor: the same process against an apiserver that is not there (modules, nothing cached), per provider.
      const floorKubeconfig = join(dir, "unreachable.kubeconfig");
      writeFileSync(
        floorKubeconfig,
        readFileSync(kubeconfig, "utf8").replace(/https:\/\/127\.0\.0\.1:\d+/, "https://127.0.0.1:1"),
      );
      const azureConfig = join(dir, "berth-azure.yaml");
      writeFileSync(
        azureConfig,
        `${CONFIG_YAML}          azure:\n            subscriptionId: "${SUBSCRIPTION}"\n            resourceGroup: rg-aks\n            managedClusterName: aks-dev-weu\n            platformIdentity: { resourceGroup: rg-platform, name: id-berth-aso }\n`,
      );
      for (const [provider, extra] of [
        ["static", {}],
        [
          "azure",
          {
            BERTH_PROVIDER: "azure",
            BERTH_CONFIG_FILE: azureConfig,
            AZURE_TENANT_ID: TENANT,
            AZURE_CLIENT_ID: TENANT,
            AZURE_FEDERATED_TOKEN_FILE: "/nonexistent",
          },
        ],
      ] as const) {
        const floor = new ControllerProcess(
          command,
          { ...controllerEnv, KUBECONFIG: floorKubeconfig, ...extra },
          await freePort(),
        );
        await until(
          "floor controller's health server",
          async () =>
            (await fetch(`http://127.0.0.1:${floor.metricsPort}/healthz`).catch(() => undefined))?.status === 200,
          60_000,
        );
        await sleep(3_000);
        const stats = floor.stats();
        await floor.stop();
        rows.push([`(d) floor: apiserver unreachable, provider ${provider} (RSS)`, stats ? fmtMiB(stats.rssKiB) : "?"]);
      }
    }

    // What Flux and ASO would have written for each team.
    const onboard = async (team: string, identity: string | undefined) => {
      await onboardTeam(admin, team);
      if (identity) await writeIdentity(team, identity);
    };
    const writeIdentity = (team: string, id: string) =>
      admin.create({
        apiVersion: V1,
        kind: "ConfigMap",
        metadata: { name: `${team}-identity`, namespace: ASO_NS },
        data: { clientId: id, principalId: "99999999-9999-4999-8999-999999999999", tenantId: TENANT },
      });

    // ---- (a) cold start ----
    const teams = Array.from({ length: teamsCount }, (_, i) => ({
      name: `cold-${String(i).padStart(5, "0")}`,
      id: clientId(i + 1),
    }));
    const tCreate = performance.now();
    await pool(teams, CREATE_CONCURRENCY, (t) => onboard(t.name, t.id));
    const createMs = performance.now() - tCreate;
    process.stdout.write(
      `${label} pre-created ${teamsCount} teams (${teamsCount * 5} objects) in ${fmtMs(createMs)}\n`,
    );
    rows.push([
      `(a) pre-create ${teamsCount} teams × 5 objects, ${CREATE_CONCURRENCY} at once`,
      `${fmtMs(createMs)} (${((teamsCount * 5) / (createMs / 1000)).toFixed(0)} objects/s)`,
    ]);

    await credentials.start();
    const allCold = Promise.all(teams.map((t) => credentials.expect(t.name, t.id)));
    const { controller, writes0, cpu0, readyMs } = await spawnMeasured();
    const leadMs = await until(
      "the controller to hold the Lease",
      async () => {
        const lease = await admin.get("coordination.k8s.io/v1", "Lease", "berth-system", "berth-controller");
        return (
          (lease?.spec as { holderIdentity?: string } | undefined)?.holderIdentity === "bench" &&
          performance.now() - controller.startedAt
        );
      },
      120_000,
      50,
    );
    await within(
      Promise.race([allCold, controller.died]),
      30 * 60_000,
      () => `cold start: only ${credentials.count}/${teamsCount} credentials after 30 min`,
    );
    const cpu1 = cpuNow(controller.child.pid, cluster);
    const perTeam = teams.map((t) => credentials.seen(t.name)! - controller.startedAt);
    const coldMs = Math.max(...perTeam);
    const writes1 = await apiserverWrites(admin);
    // ...and until the controller has gone quiet (status and Events of the last teams, the echoes of its writes).
    let cpuQuiet = cpu1;
    for (let prev = cpu1; ; prev = cpuQuiet) {
      await sleep(2_000);
      cpuQuiet = cpuNow(controller.child.pid, cluster);
      if (cpuQuiet.controller - prev.controller < 0.02 || cpuQuiet.at - cpu1.at > 120_000) break;
    }
    const writesQuiet = await apiserverWrites(admin);
    const afterCold = controller.stats();
    const loadAfterCold = loadavg();
    process.stdout.write(`${label} cold start: all ${teamsCount} credentials after ${fmtMs(coldMs)}\n`);
    const coldWrites = writesBetween(writes0, writes1);
    const quietWrites = writesBetween(writes0, writesQuiet);
    const ctl = cpu1.controller; // the process started at cpu0.at: all its CPU is the cold start's
    const api = cpu1.apiserver - cpu0.apiserver;
    const etcd = cpu1.etcd - cpu0.etcd;
    rows.push(
      ["(a) spawn → /readyz (informers synced)", fmtMs(readyMs)],
      ["(a) spawn → holds the Lease", fmtMs(leadMs)],
      ["(a) spawn → first credential", fmtMs(Math.min(...perTeam))],
      ["(a) spawn → half the credentials", fmtMs(percentile(perTeam, 50))],
      [`(a) spawn → all ${teamsCount} credentials (right client id)`, fmtMs(coldMs)],
      ["(a) reconcile throughput after leading", `${(teamsCount / ((coldMs - leadMs) / 1000)).toFixed(0)} teams/s`],
      ["(a) CPU spawn → all credentials: controller", `${ctl.toFixed(1)} s = ${msPer(ctl, teamsCount)} per team`],
      ["(a)   kube-apiserver, same window", `${api.toFixed(1)} s = ${msPer(api, teamsCount)} per team`],
      ["(a)   etcd, same window", `${etcd.toFixed(1)} s = ${msPer(etcd, teamsCount)} per team`],
      [
        "(a)   writes the apiserver served (Lease apart)",
        `${coldWrites.total} = ${(coldWrites.total / teamsCount).toFixed(2)} per team (${coldWrites.byKind}); leases ${coldWrites.leases}`,
      ],
      [
        "(a) CPU until quiet: controller / apiserver / etcd",
        `${cpuQuiet.controller.toFixed(1)} / ${(cpuQuiet.apiserver - cpu0.apiserver).toFixed(1)} / ${(cpuQuiet.etcd - cpu0.etcd).toFixed(1)} s (${fmtMs(cpuQuiet.at - cpu0.at)} after spawn); writes ${quietWrites.total} (${quietWrites.byKind})`,
      ],
      ["(a) load avg after cold start", loadAfterCold.map((l) => l.toFixed(2)).join(" / ")],
    );

    if (first) {
      // ---- (b) clientId → credential ----
      const fresh = Array.from({ length: LATENCY_TEAMS }, (_, i) => ({
        name: `late-${String(i).padStart(3, "0")}`,
        id: clientId(0x10000 + i),
      }));
      await pool(fresh, CREATE_CONCURRENCY, (t) => onboard(t.name, undefined));
      // Wait until the controller has reconciled them (CredentialWritten=False IdentityPending) and gone quiet.
      await until(
        "the new teams to report IdentityPending",
        async () => {
          const r = await admin.req("GET", `/apis/berth.dev/v1alpha1/teams`);
          const items = (
            r.json as {
              items: Array<{
                metadata: { name: string };
                status?: { conditions?: Array<{ type: string; reason: string }> };
              }>;
            }
          ).items;
          const pending = items.filter(
            (t) =>
              t.metadata.name.startsWith("late-") &&
              t.status?.conditions?.some((c) => c.type === "CredentialWritten" && c.reason === "IdentityPending"),
          );
          return pending.length === LATENCY_TEAMS;
        },
        300_000,
        500,
      );
      await sleep(2_000);
      const latencies: number[] = [];
      for (const t of fresh) {
        const seen = credentials.expect(t.name, t.id);
        const t0 = performance.now();
        await writeIdentity(t.name, t.id);
        await within(Promise.race([seen, controller.died]), 60_000, () => `no credential for ${t.name} within 60 s`);
        latencies.push(credentials.seen(t.name)! - t0);
        await sleep(50);
      }
      rows.push(
        [`(b) clientId written → Secret seen, n=${latencies.length}: p50`, fmtMs(percentile(latencies, 50))],
        ["(b) p90", fmtMs(percentile(latencies, 90))],
        ["(b) p99", fmtMs(percentile(latencies, 99))],
        ["(b) min / max", `${fmtMs(Math.min(...latencies))} / ${fmtMs(Math.max(...latencies))}`],
        [
          "(b) load avg after the latency samples",
          loadavg()
            .map((l) => l.toFixed(2))
            .join(" / "),
        ],
      );

      // ---- (c) steady state ----
      if (STEADY_SECONDS > 0) {
        await sleep(10_000);
        const s0 = cpuNow(controller.child.pid, cluster);
        const w0 = await apiserverWrites(admin);
        const loadBefore = loadavg();
        process.stdout.write(`${label} steady state: watching for ${STEADY_SECONDS} s\n`);
        await within(
          Promise.race([sleep(STEADY_SECONDS * 1000), controller.died]),
          STEADY_SECONDS * 1000 + 60_000,
          () => "steady state window",
        );
        const s1 = cpuNow(controller.child.pid, cluster);
        const w = writesBetween(w0, await apiserverWrites(admin));
        const secs = (s1.at - s0.at) / 1000;
        const pct = (d: number) => `${((d / secs) * 100).toFixed(2)} % of a core`;
        rows.push(
          [
            `(c) steady state, ${teamsCount + LATENCY_TEAMS} teams, ${secs.toFixed(0)} s: controller CPU`,
            `${(s1.controller - s0.controller).toFixed(2)} s = ${pct(s1.controller - s0.controller)}`,
          ],
          [
            "(c)   kube-apiserver / etcd CPU, same window",
            `${pct(s1.apiserver - s0.apiserver)} / ${pct(s1.etcd - s0.etcd)}`,
          ],
          ["(c)   writes (Lease renewals apart)", `${w.total} (${w.byKind}); lease renewals ${w.leases}`],
          [
            "(c) load avg before / after",
            `${loadBefore.map((l) => l.toFixed(2)).join(" / ")} → ${loadavg()
              .map((l) => l.toFixed(2))
              .join(" / ")}`,
          ],
        );
      }
    }

    const end = controller.stats();
    await controller.stop();
    rows.push(
      ["(d) peak RSS, VmHWM (whole run)", end ? fmtMiB(end.hwmKiB) : "?"],
      [
        "(d) RSS after cold start / at end",
        `${afterCold ? fmtMiB(afterCold.rssKiB) : "?"} / ${end ? fmtMiB(end.rssKiB) : "?"}`,
      ],
      ["watch restarts (detection)", String(credentials.restarts)],
    );

    // ---- (e) restart: every team in place (a new pod after an upgrade or a drain) ----
    const inPlace = teamsCount + (first ? LATENCY_TEAMS : 0);
    const { controller: restarted, writes0: restartWrites0, cpu0: r0, readyMs: restartReadyMs } = await spawnMeasured();
    // Every team checked once: the team queue has finished a pass per team and holds nothing.
    const checkedMs = await within(
      Promise.race([
        until(
          "every team checked after the restart",
          async () => {
            const m = await (await fetch(`http://127.0.0.1:${restarted.metricsPort}/metrics`)).text();
            const passes = metricSum(m, "berth_controller_reconcile_total", { controller: "team" });
            const depth = sample(m, "berth_controller_workqueue_depth", { queue: "team" });
            return passes >= inPlace && depth === 0 && performance.now() - restarted.startedAt;
          },
          30 * 60_000,
          200,
        ),
        restarted.died,
      ]),
      30 * 60_000 + 1_000,
      () => "restart: not every team checked after 30 min",
    );
    const r1 = cpuNow(restarted.child.pid, cluster);
    const restartWrites = writesBetween(restartWrites0, await apiserverWrites(admin));
    rows.push(
      [`(e) restart, ${inPlace} teams in place: spawn → /readyz`, fmtMs(restartReadyMs)],
      ["(e) spawn → every team checked (a pass each, queue empty)", fmtMs(checkedMs)],
      [
        "(e) CPU: controller / apiserver / etcd",
        `${r1.controller.toFixed(1)} / ${(r1.apiserver - r0.apiserver).toFixed(1)} / ${(r1.etcd - r0.etcd).toFixed(1)} s`,
      ],
      [
        "(e) writes the apiserver served (Lease apart)",
        `${restartWrites.total} (${restartWrites.byKind}); leases ${restartWrites.leases}`,
      ],
    );
    await restarted.stop();
    return {
      teams: teamsCount,
      rows,
      coldMs,
      controllerCpuSec: ctl,
      rssAfterColdKiB: afterCold?.rssKiB ?? NaN,
      peakKiB: end?.hwmKiB ?? NaN,
    };
  } catch (err) {
    for (const c of controllers)
      if (c.output) process.stderr.write(`--- controller output ---\n${c.output.slice(-4_000)}\n`);
    throw err;
  } finally {
    credentials.stop();
    for (const c of controllers) await c.stop();
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const load = new LoadSampler();
  const loadAtStart = loadavg();
  const tSetup = performance.now();
  const command = controllerCommand();
  const results: ScaleResult[] = [];
  try {
    for (const [i, n] of SCALES.entries()) results.push(await scalePoint(n, i === 0, command));
  } finally {
    load.stop();
  }
  const cpu = cpus()[0]?.model ?? "?";
  const rows: Array<[string, string]> = [
    ["machine", `${availableParallelism()} CPUs (${cpu}), Node ${process.versions.node}`],
    ["load avg (1/5/15 min) at start", loadAtStart.map((l) => l.toFixed(2)).join(" / ")],
    [
      "load avg at end",
      loadavg()
        .map((l) => l.toFixed(2))
        .join(" / "),
    ],
    [
      "1-min load during the run (min–max)",
      `${Math.min(...load.samples).toFixed(2)}–${Math.max(...load.samples).toFixed(2)}`,
    ],
    [
      "(d) Deployment (infra/controller): memory limit, NODE_OPTIONS",
      `${DEPLOYMENT.limit}, ${DEPLOYMENT.nodeOptions || "(none)"}`,
    ],
  ];
  const width = Math.max(...[...rows, ...results.flatMap((r) => r.rows)].map(([k]) => k.length));
  const print = (rs: Array<[string, string]>) => {
    for (const [k, v] of rs) process.stdout.write(`${k.padEnd(width)}  ${v}\n`);
  };
  process.stdout.write(
    `\nberth controller benchmark: ${SCALES.join(" and ")} teams cold, ${LATENCY_TEAMS} latency samples; controller: node ${USE_TSX ? "--import tsx (sources)" : "apps/controller/dist/main.js"}${NODE_OPTIONS ? ` ${NODE_OPTIONS}` : " (heap uncapped)"}, provider static\n`,
  );
  print(rows);
  for (const r of results) {
    process.stdout.write(`\n--- ${r.teams} teams ---\n`);
    print(r.rows);
  }
  if (results.length > 1) {
    const [base, ...rest] = results;
    process.stdout.write(`\n--- growth from ${base!.teams} teams ---\n`);
    for (const r of rest) {
      const f = r.teams / base!.teams;
      print([
        [
          `${r.teams} teams (×${f.toFixed(1)}): cold start`,
          `${fmtMs(r.coldMs)} (×${(r.coldMs / base!.coldMs).toFixed(2)})`,
        ],
        [
          "  controller CPU per team",
          `${msPer(r.controllerCpuSec, r.teams)} vs ${msPer(base!.controllerCpuSec, base!.teams)} (×${(r.controllerCpuSec / r.teams / (base!.controllerCpuSec / base!.teams)).toFixed(2)})`,
        ],
        [
          "  RSS after cold start / peak",
          `${fmtMiB(r.rssAfterColdKiB)} / ${fmtMiB(r.peakKiB)} vs ${fmtMiB(base!.rssAfterColdKiB)} / ${fmtMiB(base!.peakKiB)} (+${fmtMiB(r.rssAfterColdKiB - base!.rssAfterColdKiB)} for ${r.teams - base!.teams} more teams)`,
        ],
      ]);
    }
  }
  process.stdout.write(`total bench time ${fmtMs(performance.now() - tSetup)}\n`);
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${(err as Error).stack}\n`);
  process.exit(1);
});
