/**
 * Real Flux on a test cluster: source-controller and kustomize-controller (and, when asked for,
 * notification-controller and source-watcher) of the Flux release infra/test-cluster/go names, built from their
 * Go modules, run as processes against the test kube-apiserver the way `flux install` runs them in a cluster:
 * all namespaces watched, JSON logs, RUNTIME_NAMESPACE flux-system, Flux's default feature gates (strict
 * post-build substitution is on by default in kustomize-controller 1.9). Outside a cluster they differ only
 * where they must: leader election off (one replica), metrics, health and artifact storage on free ports of
 * 127.0.0.1, credentials from a kubeconfig (cluster-admin, as Flux's own service accounts have).
 *
 *   const flux = await startFlux(cluster);                       // ~2 s; the CRDs are the cluster's defaults
 *   await bootstrapFlux(cluster, flux, { url, path: "./clusters/aks-dev-weu", auth });  // what `flux bootstrap` leaves
 *   await flux.stop();
 *
 * A missing binary is an error naming infra/test-cluster/ensure-binaries.sh: a test that needs Flux never skips.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, mkdirSync, openSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { KubeCluster } from "./kube-cluster.js";
import { kubeRequest } from "./kube-http.js";
import { freePort, listeningPorts, retryOnPortRace } from "./ports.js";
import { processUsage, type ProcessUsage } from "./process-usage.js";
import { programPath, type Component } from "./test-cluster-binaries.js";
import { logTail, startWatchdog } from "./watchdog.js";

export type FluxController =
  "source-controller" | "kustomize-controller" | "notification-controller" | "source-watcher";

export interface FluxOptions {
  /** Default: source-controller and kustomize-controller. */
  controllers?: FluxController[];
  /** RUNTIME_NAMESPACE, where Flux's own objects live. Default flux-system. */
  namespace?: string;
  /** kustomize-controller's --concurrent (Flux's default is 4). */
  kustomizeConcurrent?: number;
  /** --feature-gates per controller, e.g. { "kustomize-controller": ["ExternalArtifact=true"] }. */
  featureGates?: Partial<Record<FluxController, string[]>>;
  /** More flags per controller. */
  extraArgs?: Partial<Record<FluxController, string[]>>;
  /**
   * The controllers' TMPDIR, where source-controller checks out each fetch and source-watcher unpacks it. Default:
   * the cluster's folder, on tmpfs when /dev/shm has room (as Flux's vertical scaling guide mounts /tmp in memory).
   */
  tmpDir?: string;
}

export interface FluxProcess {
  controller: FluxController;
  pid: number;
  metricsUrl: string;
  healthUrl: string;
  log: string;
}

export interface RunningFlux {
  namespace: string;
  processes: Map<FluxController, FluxProcess>;
  /** The controllers' TMPDIR (FluxOptions.tmpDir, or the cluster's folder). */
  tmpDir: string;
  /** source-controller's artifact server (http://127.0.0.1:<port>), when it runs. */
  storageUrl: string | undefined;
  /** notification-controller's receiver server (http://127.0.0.1:<port>), when it runs. */
  receiverUrl: string | undefined;
  /** A controller's Prometheus text. */
  metrics(controller: FluxController): Promise<string>;
  /** User + system CPU seconds a controller has used so far (/proc). */
  cpuSeconds(controller: FluxController): number;
  /** A controller's peak resident memory so far, in bytes (VmHWM). */
  peakRssBytes(controller: FluxController): number;
  /** Starts a controller's peak resident memory over from its current size (Linux clear_refs), to measure one phase. */
  resetPeakRss(controller: FluxController): void;
  /** Stops one controller (a test of Flux partly down); the others keep running. */
  stopController(controller: FluxController): Promise<void>;
  /** The last lines of a controller's log, for failure messages. */
  logTail(controller: FluxController, lines?: number): Promise<string>;
  /**
   * Each controller that has exited without being stopped, with its exit code and the end of its log; undefined
   * while all run. A wait on Flux gives up at once on it (`eventually`'s `stopIf`), rather than time out blind.
   */
  exits(): string | undefined;
  stop(): Promise<void>;
}

const COMPONENT: Record<FluxController, Component> = {
  "source-controller": "source-controller",
  "kustomize-controller": "kustomize-controller",
  "notification-controller": "notification-controller",
  "source-watcher": "source-watcher",
};

export async function startFlux(cluster: KubeCluster, opts: FluxOptions = {}): Promise<RunningFlux> {
  const namespace = opts.namespace ?? "flux-system";
  const controllers = opts.controllers ?? ["source-controller", "kustomize-controller"];
  const binaries = new Map(controllers.map((c) => [c, programPath(COMPONENT[c], c)] as const));
  // A second Flux on one cluster (another RUNTIME_NAMESPACE) keeps its logs and artifacts apart.
  const dir = join(cluster.dir, namespace === "flux-system" ? "flux" : `flux-${namespace}`);
  mkdirSync(dir, { recursive: true });
  const tmpDir = opts.tmpDir ?? dir;
  if (opts.tmpDir) mkdirSync(opts.tmpDir, { recursive: true });
  const kubeconfig = await cluster.writeKubeconfigFile("admin");
  const ns = await kubeRequest(cluster.kubeConfig(), {
    method: "POST",
    path: "/api/v1/namespaces",
    body: { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } },
  });
  if (ns.status !== 201 && ns.status !== 409)
    throw new Error(`creating namespace ${namespace}: HTTP ${ns.status} ${ns.body}`);

  const children = new Map<FluxController, ChildProcess>();
  const processes = new Map<FluxController, FluxProcess>();
  let storageUrl: string | undefined;
  let receiverUrl: string | undefined;
  const kill = (child: ChildProcess) =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once("exit", () => resolve());
      child.kill("SIGKILL");
    });
  /** Controllers stopped on purpose (stopController, stop): their exit is not news. */
  const stopped = new Set<FluxController>();
  const stop = async () => {
    for (const controller of children.keys()) stopped.add(controller);
    await Promise.all([...children.values()].map(kill));
  };

  // A controller that lost its port to another process: start all of them again, on new ports.
  await retryOnPortRace(startControllers, async () => {
    await stop();
    children.clear();
    processes.clear();
    stopped.clear();
  });

  async function startControllers(): Promise<void> {
    const portsOf = new Map<FluxController, number[]>();
    for (const controller of controllers) {
      const [metricsPort, healthPort] = [await freePort(), await freePort()];
      const ports = [metricsPort, healthPort];
      portsOf.set(controller, ports);
      const args = [
        "--watch-all-namespaces=true",
        "--log-level=info",
        "--log-encoding=json",
        "--enable-leader-election=false",
        `--metrics-addr=127.0.0.1:${metricsPort}`,
        `--health-addr=127.0.0.1:${healthPort}`,
      ];
      if (controller === "source-controller") {
        const storagePort = await freePort();
        ports.push(storagePort);
        storageUrl = `http://127.0.0.1:${storagePort}`;
        mkdirSync(join(dir, "artifacts"), { recursive: true });
        args.push(
          `--storage-path=${join(dir, "artifacts")}`,
          `--storage-addr=127.0.0.1:${storagePort}`,
          `--storage-adv-addr=127.0.0.1:${storagePort}`,
        );
      }
      if (controller === "kustomize-controller" && opts.kustomizeConcurrent)
        args.push(`--concurrent=${opts.kustomizeConcurrent}`);
      if (controller === "notification-controller") {
        const [receiverPort, eventsPort] = [await freePort(), await freePort()];
        ports.push(receiverPort, eventsPort);
        receiverUrl = `http://127.0.0.1:${receiverPort}`;
        args.push(`--receiverAddr=127.0.0.1:${receiverPort}`, `--events-addr=127.0.0.1:${eventsPort}`);
      }
      if (controller === "source-watcher") {
        const storagePort = await freePort();
        ports.push(storagePort);
        mkdirSync(join(dir, "watcher-artifacts"), { recursive: true });
        args.push(
          `--storage-path=${join(dir, "watcher-artifacts")}`,
          `--storage-addr=127.0.0.1:${storagePort}`,
          `--storage-adv-addr=127.0.0.1:${storagePort}`,
        );
      }
      const gates = opts.featureGates?.[controller];
      if (gates?.length) args.push(`--feature-gates=${gates.join(",")}`);
      args.push(...(opts.extraArgs?.[controller] ?? []));

      const log = join(dir, `${controller}.log`);
      const fd = openSync(log, "a");
      const child = spawn(binaries.get(controller)!, args, {
        env: {
          PATH: process.env.PATH ?? "/usr/bin:/bin",
          HOME: dir,
          TMPDIR: tmpDir,
          KUBECONFIG: kubeconfig,
          RUNTIME_NAMESPACE: namespace,
        },
        stdio: ["ignore", fd, fd],
      });
      closeSync(fd);
      children.set(controller, child);
      startWatchdog("berth-flux-watchdog", [child.pid]);
      processes.set(controller, {
        controller,
        pid: child.pid!,
        metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
        healthUrl: `http://127.0.0.1:${healthPort}`,
        log,
      });
    }
    // Ready when every controller's readiness probe answers (its caches synced, its controllers started) and it
    // listens on every port it was given: a readiness probe can answer before a lost port makes the process exit
    // (CI once saw source-controller gone that way, and Kustomizations waiting 240 s for an artifact).
    const deadline = Date.now() + 60_000;
    for (const [controller, p] of processes) {
      for (;;) {
        const child = children.get(controller)!;
        if (child.exitCode !== null || child.signalCode !== null)
          throw new Error(`${controller} exited (${child.exitCode ?? child.signalCode}):\n${logTail(p.log)}`);
        const ok = await fetch(`${p.healthUrl}/readyz`).then(
          (r) => r.ok,
          () => false,
        );
        const missing = ok ? portsMissing(p.pid, portsOf.get(controller)!) : [];
        if (ok && missing.length === 0) break;
        if (Date.now() > deadline)
          throw new Error(
            `${controller} not ready within 60 s${missing.length ? ` (not listening on ${missing.join(", ")})` : ""}:\n${logTail(p.log)}`,
          );
        await sleep(100);
      }
    }
  }

  const proc = (controller: FluxController): FluxProcess => {
    const p = processes.get(controller);
    if (!p) throw new Error(`${controller} is not running in this test`);
    return p;
  };
  const usageOf = (controller: FluxController): ProcessUsage => {
    const usage = processUsage(proc(controller).pid);
    if (!usage) throw new Error(`${controller} has exited`);
    return usage;
  };
  return {
    namespace,
    processes,
    tmpDir,
    storageUrl,
    receiverUrl,
    metrics: async (controller) => (await fetch(proc(controller).metricsUrl)).text(),
    cpuSeconds: (controller) => usageOf(controller).cpuSeconds,
    peakRssBytes: (controller) => usageOf(controller).peakRssBytes,
    stopController: async (controller) => {
      proc(controller);
      stopped.add(controller);
      await kill(children.get(controller)!);
    },
    resetPeakRss: (controller) => writeFileSync(`/proc/${proc(controller).pid}/clear_refs`, "5"),
    logTail: async (controller, lines = 30) => logTail(proc(controller).log, lines),
    exits: () => {
      const exited = [...children].filter(
        ([controller, child]) => !stopped.has(controller) && (child.exitCode !== null || child.signalCode !== null),
      );
      if (exited.length === 0) return undefined;
      return exited
        .map(
          ([controller, child]) =>
            `${controller} exited (${child.exitCode ?? child.signalCode}):\n${logTail(proc(controller).log)}`,
        )
        .join("\n");
    },
    stop,
  };
}

/** Which of `ports` process `pid` does not listen on (all of them when it is gone: the caller reads its exit next). */
function portsMissing(pid: number, ports: number[]): number[] {
  try {
    const listening = listeningPorts(pid);
    return ports.filter((port) => !listening.has(port));
  } catch {
    return ports;
  }
}

export interface BootstrapOptions {
  /** The Flux repo's URL (smart HTTP on 127.0.0.1). */
  url: string;
  branch?: string;
  /** The cluster's folder in the repo, e.g. ./clusters/aks-dev-weu. */
  path: string;
  /** HTTP Basic credentials for the repo, kept in Secret flux-system. */
  auth?: { username: string; password: string };
  /** The GitRepository's poll interval. Default 1m (what `flux bootstrap` writes). */
  interval?: string;
}

/**
 * The objects `flux bootstrap git --path <path>` commits to clusters/<cluster>/flux-system/gotk-sync.yaml and applies:
 * GitRepository and Kustomization `flux-system`, the root of everything Flux applies on the cluster.
 */
export function bootstrapObjects(namespace: string, opts: BootstrapOptions): Array<Record<string, unknown>> {
  return [
    {
      apiVersion: "source.toolkit.fluxcd.io/v1",
      kind: "GitRepository",
      metadata: { name: "flux-system", namespace },
      spec: {
        interval: opts.interval ?? "1m0s",
        ref: { branch: opts.branch ?? "main" },
        url: opts.url,
        ...(opts.auth ? { secretRef: { name: "flux-system" } } : {}),
      },
    },
    {
      apiVersion: "kustomize.toolkit.fluxcd.io/v1",
      kind: "Kustomization",
      metadata: { name: "flux-system", namespace },
      spec: {
        interval: "10m0s",
        path: opts.path,
        prune: true,
        sourceRef: { kind: "GitRepository", name: "flux-system" },
      },
    },
  ];
}

/** Every API group of Flux's kinds: what Flux's install grants the built-in roles on. */
const FLUX_GROUPS = [
  "source.toolkit.fluxcd.io",
  "source.extensions.fluxcd.io",
  "kustomize.toolkit.fluxcd.io",
  "helm.toolkit.fluxcd.io",
  "notification.toolkit.fluxcd.io",
  "image.toolkit.fluxcd.io",
];

/**
 * The ClusterRoles Flux's install (gotk-components.yaml) adds to the built-in `admin`, `edit` and `view` roles:
 * flux-edit-<ns> and flux-view-<ns>, aggregated by label. So whoever is `admin` of a namespace (a team's owners)
 * may create Kustomizations, HelmReleases and sources in it, as on a cluster Flux was bootstrapped on.
 */
function fluxAggregatedRoles(namespace: string): Array<Record<string, unknown>> {
  const role = (name: string, aggregateTo: string[], verbs: string[]) => ({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: {
      name: `${name}-${namespace}`,
      labels: Object.fromEntries(aggregateTo.map((r) => [`rbac.authorization.k8s.io/aggregate-to-${r}`, "true"])),
    },
    rules: [{ apiGroups: FLUX_GROUPS, resources: ["*"], verbs }],
  });
  return [
    role("flux-edit", ["admin", "edit"], ["create", "delete", "deletecollection", "patch", "update"]),
    role("flux-view", ["admin", "edit", "view"], ["get", "list", "watch"]),
  ];
}

/**
 * What `flux bootstrap` leaves on a cluster, minus the controllers' own manifests (they run as processes here):
 * the repository's credentials in Secret flux-system, the objects of `bootstrapObjects`, and the ClusterRoles its
 * install aggregates into `admin`, `edit` and `view` (fluxAggregatedRoles).
 */
export async function bootstrapFlux(cluster: KubeCluster, flux: RunningFlux, opts: BootstrapOptions): Promise<void> {
  const kc = cluster.kubeConfig();
  const ns = flux.namespace;
  const objects: Array<Record<string, unknown>> = [];
  if (opts.auth)
    objects.push({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "flux-system", namespace: ns },
      stringData: opts.auth,
    });
  objects.push(...bootstrapObjects(ns, opts), ...fluxAggregatedRoles(ns));
  const paths: Record<string, string> = {
    ClusterRole: "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    Secret: `/api/v1/namespaces/${ns}/secrets`,
    GitRepository: `/apis/source.toolkit.fluxcd.io/v1/namespaces/${ns}/gitrepositories`,
    Kustomization: `/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/${ns}/kustomizations`,
  };
  for (const o of objects) {
    const path = paths[o.kind as string]!;
    const r = await kubeRequest(kc, { method: "POST", path, body: o });
    if (r.status !== 201) throw new Error(`bootstrap: POST ${path}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
  }
}

/**
 * kustomize-controller's own count of reconciles per Kustomization (`namespace/name` → the _count of its
 * gotk_reconcile_duration_seconds histogram): how often Flux reconciled each, whatever asked for it.
 */
export async function kustomizationReconciles(flux: RunningFlux): Promise<Map<string, number>> {
  const text = await flux.metrics("kustomize-controller");
  const counts = new Map<string, number>();
  for (const m of text.matchAll(/^gotk_reconcile_duration_seconds_count\{([^}]*)\} (\d+)/gm)) {
    const labels = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (labels.kind === "Kustomization") counts.set(`${labels.namespace}/${labels.name}`, Number(m[2]));
  }
  return counts;
}

/** The Kustomizations (`namespace/name`, sorted) kustomize-controller reconciled since `before` was counted. */
export async function reconciledSince(flux: RunningFlux, before: ReadonlyMap<string, number>): Promise<string[]> {
  return [...(await kustomizationReconciles(flux))]
    .filter(([k, n]) => n !== (before.get(k) ?? 0))
    .map(([k]) => k)
    .sort();
}
