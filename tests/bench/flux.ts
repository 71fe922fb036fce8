/**
 * Flux at fleet scale (issue 20, ADR 0019, 0020 and 0022). Prints figures; asserts nothing. Run:
 *
 *   npm run bench -- flux                                  # 100 and 1,000 teams, before and slices
 *   BENCH_FLUX_TEAMS=100,1000,5000 BENCH_FLUX_SAMPLES=5 npm run bench -- flux
 *   BENCH_FLUX_LAYOUTS=ExternalArtifact,Slices,HashSlices,HashSlicesPerSlice npm run bench -- flux
 *   BENCH_FLUX_SLICES=64 BENCH_FLUX_LAYOUTS=HashSlicesPerSlice npm run bench -- flux   # the hash slices' count
 *   BENCH_FLUX_API_QPS=0 npm run bench -- flux             # kustomize-controller and source-watcher at Flux's rate limit
 *   BENCH_FLUX_TMP=disk npm run bench -- flux              # every Flux controller's /tmp on disk, not in memory
 *   BENCH_FLUX_COLD_MINUTES=120 npm run bench -- flux      # how long the cold apply may take (default: an hour, N / 50 minutes from 3,000)
 *   BENCH_FLUX_POLL=1h npm run bench -- flux               # the GitRepositories' poll (flux-system, berth-teams, the slices); default 10m
 *   BENCH_FLUX_PROFILE=/tmp/profiles npm run bench -- flux # kustomize-controller's CPU profiles, idle and per onboarding
 *
 * For each size N and each layout, a whole platform as docs/install.md builds it (tests/support/flux-platform.ts:
 * kube-apiserver 1.35, real Flux 2.9.4 built from its Go modules, Berth's controller and API, ASO played), on one
 * cluster, whose fleet repository holds N teams (in dev; their template versions: TEMPLATES) before Flux starts:
 *   - GitRepository ("before"): the install before ADR 0019 (tests/fixtures/flux-install-before-0019): berth-teams
 *     and every team Kustomization read GitRepository flux-system. No Receiver there: right after each push the
 *     benchmark asks for the fetch itself (what a Receiver does: reconcile.fluxcd.io/requestedAt), so the figures
 *     show the queue, not the poll; without it, add up to one poll interval.
 *   - ExternalArtifact ("artifacts"): ADR 0019's install (infra/flux/upgrades/0019): one generator cuts each
 *     team's artifact, Kustomization berth-teams applies every team's Flux file; the API's Receiver notification
 *     makes Flux fetch.
 *   - Slices ("slices"): flux/ as it is (ADR 0022): the same per team, in 26 slices by first letter.
 *   - HashSlices ("hash"): 16 slices (BENCH_FLUX_SLICES) by the SHA-256 of the name (ADR 0034, platform.layout.slices),
 *     team folders in their shard's, as `berth cluster slices` leaves a cluster.
 *   - HashSlicesPerSlice ("per-slice"): the same slices, each fetching only its shards' folders with a GitRepository of
 *     its own (ADR 0036, platform.layout.slices.fetch), woken by the real Receiver only for the shards a push touched.
 * Every GitRepository polls every 10 minutes (BENCH_FLUX_POLL). kustomize-controller runs with the settings Flux
 * gives for the size: its vertical scaling guide's `--concurrent=10 --requeue-dependency=5s` for hundreds of applications, and
 * flux-benchmark's `--concurrent=20` from 1,000 on, where it and source-watcher also get operations.md's client rate
 * limit (`--kube-api-qps=500 --kube-api-burst=1000`). Every controller's /tmp is in memory (the test cluster's
 * folder is on /dev/shm), as the guide mounts it for kustomize-controller's builds; it matters as much to
 * source-controller, which checks out each fetch there (about 14 files per team on v1, 6 on v5), and to source-watcher, which
 * unpacks it. The other controllers run with Flux's defaults. New teams are named to sort last (the worst case for
 * source-watcher, which cuts the teams' artifacts in name order).
 *
 * Figures, all from Flux's own status and metrics and /proc:
 *   - cold apply: the first team Kustomization created → the last one Ready (their creationTimestamp and Ready
 *     lastTransitionTime), kustomize-controller CPU and peak RSS for it;
 *   - per onboarding (POST of one more team; BENCH_FLUX_SAMPLES of them): POST → its namespace exists, POST → its
 *     Kustomization Ready at the commit; the Kustomization reconciliations the commit caused (Σ of kustomize-
 *     controller's gotk_reconcile_duration_seconds_count{kind="Kustomization"}, and which objects), where the wait
 *     went (when the fetch, the artifacts, the team's Kustomization and its namespace appeared), how many
 *     Kustomizations attempted a new revision (status.lastAttemptedRevision), CPU seconds of each Flux controller,
 *     of kube-apiserver and etcd, kustomize-controller's peak RSS during it, and the requests the apiserver served
 *     (its apiserver_request_total and _duration_seconds_sum by verb, resource and dry run; the heaviest printed);
 *   - the same for a rollout commit that moves 10 % of the teams to a new template version (one commit), until all
 *     of them are Ready;
 *   - what the same processes burn while Flux is idle (20 s without a reconcile, right before each onboarding), so that
 *     each onboarding's CPU is also given above idle: its window runs 15 s past its last reconcile, and at thousands
 *     of teams the watches, informers and polls cost something whatever happens (BENCH_FLUX_PROFILE=<folder> also saves
 *     kustomize-controller's CPU profile of each idle window and each onboarding, for `go tool pprof`);
 *   - what the templates' 10-minute interval costs: untouched teams reconciled on request, CPU per reconcile (its
 *     phase waits for these teams' reconciles only: the rollout's teams reconcile every 10 minutes afterwards).
 * The seeded teams reconcile every 24 hours, not every 10 minutes (withoutIntervalReconciles), so that every
 * reconcile of a phase is one its commit caused; the last figure prices the interval apart.
 * A phase ends when kustomize-controller's log has named no Kustomization for 15 s (the before layout also waits until
 * every Kustomization attempted the commit); its metrics are read only at a phase's two ends, outside the CPU
 * readings, as a scrape costs it CPU that grows with N (ReconcileLog). With the machine's load before and after each
 * block (the machine is shared).
 */
import { processUsage } from "../support/process-usage.js";
import { samples } from "../support/prometheus.js";
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readSync,
  rmSync,
  statfsSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { parseAllDocuments } from "yaml";
import { sliceHolding } from "@berth/core";
import type { Obj } from "../controller/helpers.js";
import { REPO_ROOT } from "../support/berth.js";
import { renderFleet } from "../support/fleet-seed.js";
import { kustomizationReconciles, type FluxController } from "../support/flux.js";
import {
  ASO_NAMESPACE,
  requestReconcile,
  startFluxPlatform,
  type FluxPlatform,
  type TeamSource,
} from "../support/flux-platform.js";
import { load, ms, OWNER } from "./fleet-seed.js";
import { percentile } from "./stats.js";

const SIZES = (process.env.BENCH_FLUX_TEAMS ?? "100,1000").split(",").map(Number);
/** The layouts a run can compare: before ADR 0019, ADR 0019's team artifacts, ADR 0022's slices (flux/). */
type Layout = TeamSource | "Slices" | "HashSlices" | "HashSlicesPerSlice";
const LAYOUTS = (process.env.BENCH_FLUX_LAYOUTS ?? "GitRepository,Slices").split(",") as Layout[];
const SAMPLES = Number(process.env.BENCH_FLUX_SAMPLES ?? 5);
/**
 * The GitRepositories' poll (BENCH_FLUX_POLL): flux-system's, berth-teams's and so every slice's. 10 minutes is
 * `flux bootstrap`'s and flux/'s; install.md advises an hour for slices fetched per slice once the Receiver is in place.
 */
const POLL = process.env.BENCH_FLUX_POLL ?? "10m";
/**
 * The hash slices' count (BENCH_FLUX_SLICES): 16 by default, what install.md advises from about 1,000 teams (one slice
 * per leading hex digit).
 */
type SliceCount = 16 | 32 | 64 | 128 | 256;
const SLICE_COUNTS = (process.env.BENCH_FLUX_SLICES ?? "16").split(",").map(Number) as SliceCount[];
/** One count for every size, or one per size in BENCH_FLUX_TEAMS's order ("32,128": as install.md grows them). */
const hashSlices = (teams: number): SliceCount => {
  if (SLICE_COUNTS.length === 1) return SLICE_COUNTS[0]!;
  const count = SLICE_COUNTS[SIZES.indexOf(teams)];
  if (count === undefined) throw new Error("BENCH_FLUX_SLICES: one count, or one per size of BENCH_FLUX_TEAMS");
  return count;
};
/** BENCH_FLUX_ROLLOUT=off: no rollout phase (about 10 minutes at 5,000), so that two sizes fit in one run. */
const ROLLOUT = process.env.BENCH_FLUX_ROLLOUT !== "off";
const hashLayout = (layout: Layout) => layout === "HashSlices" || layout === "HashSlicesPerSlice";
/** The before layout reconciles every team at every commit: fewer onboardings there, each takes minutes at 1,000. */
const SAMPLES_BEFORE = Number(process.env.BENCH_FLUX_SAMPLES_BEFORE ?? 2);
const QUIET_MS = 15_000;
/**
 * How long the cold apply may take (BENCH_FLUX_COLD_MINUTES): an hour, and a minute per 50 teams above 3,000. At 5,000
 * teams in 64 per-slice slices 4,663 were Ready after an hour on 2 cores at load 5–10 (2026-12-06).
 */
const coldApplyLimitMinutes = (teams: number) =>
  Number(process.env.BENCH_FLUX_COLD_MINUTES ?? Math.max(60, Math.ceil(teams / 50)));
/** Untouched teams reconciled on request to price the templates' interval. */
const INTERVAL_SAMPLE = 20;
const KUSTOMIZE_ARGS = ["--requeue-dependency=5s"];
/**
 * The Kubernetes client's rate limit of kustomize-controller and source-watcher (--kube-api-qps, burst twice that).
 * Flux's default is 50 requests/s with a burst of 300: a reconcile that applies 1,001 objects, or a generator that
 * writes 1,001 artifacts (two writes each), waits on it. From 1,000 teams the benchmark runs what operations.md
 * gives for that size, 500; BENCH_FLUX_API_QPS sets it for every size (0: Flux's default).
 */
const apiQps = (teams: number) =>
  process.env.BENCH_FLUX_API_QPS !== undefined ? Number(process.env.BENCH_FLUX_API_QPS) : teams >= 1000 ? 500 : 0;
const clientArgs = (teams: number) =>
  apiQps(teams) > 0 ? [`--kube-api-qps=${apiQps(teams)}`, `--kube-api-burst=${2 * apiQps(teams)}`] : [];
/** Flux's vertical scaling guide: 10 workers for hundreds of applications; flux-benchmark runs 1,000 and more with 20. */
const kustomizeConcurrent = (teams: number) => (teams >= 1000 ? 20 : 10);
/**
 * source-controller's --concurrent when every slice is a GitRepository (per-slice fetch): Flux's default, 2, lets
 * two slices' polls hold the slice an onboarding woke (5,000 teams, 64 slices: fetched 26 s after the POST).
 * BENCH_FLUX_SOURCE_CONCURRENT sets it (0: Flux's default).
 */
const sourceConcurrent = (layout: Layout) =>
  layout !== "HashSlicesPerSlice" ? 0 : Number(process.env.BENCH_FLUX_SOURCE_CONCURRENT ?? 4);
const sourceArgs = (layout: Layout) =>
  sourceConcurrent(layout) > 0 ? [`--concurrent=${sourceConcurrent(layout)}`] : [];
/** BENCH_FLUX_TMP=disk: the controllers' TMPDIR in the OS temp folder (a disk here), to price an in-memory /tmp. */
const TMP_ON_DISK = process.env.BENCH_FLUX_TMP === "disk";
const TMPFS_MAGIC = 0x01021994;
const filesystemOf = (dir: string) => (statfsSync(dir).type === TMPFS_MAGIC ? "tmpfs" : "disk");
const nameOf = (layout: Layout, teams: number) =>
  ({
    GitRepository: "before (GitRepository)",
    ExternalArtifact: "artifacts (ADR 0019)",
    Slices: "slices (ADR 0022)",
    HashSlices: `hash slices (ADR 0034, ${hashSlices(teams)})`,
    HashSlicesPerSlice: `hash slices fetched per slice (ADR 0036, ${hashSlices(teams)})`,
  })[layout];
const SHORT = {
  GitRepository: "before",
  ExternalArtifact: "artifacts",
  Slices: "slices",
  HashSlices: "hash",
  HashSlicesPerSlice: "per-slice",
} as const;
/**
 * The template versions of each layout's fleet: `fleet` for most teams and new ones, `behind` for the 10 % the rollout
 * moves to `target`. Before: templates v1 as they were (one file per object, about 14 files a team), 10 % to v3.
 * The new layouts: templates v5 (one file of resources per folder, 6 files a team, ADR 0024) with 10 % still on v4,
 * which the rollout moves to v5.
 */
const TEMPLATES = {
  GitRepository: { fleet: "v1", behind: "v1", target: "v3" },
  ExternalArtifact: { fleet: "v5", behind: "v4", target: "v5" },
  Slices: { fleet: "v5", behind: "v4", target: "v5" },
  HashSlices: { fleet: "v5", behind: "v4", target: "v5" },
  HashSlicesPerSlice: { fleet: "v5", behind: "v4", target: "v5" },
} as const satisfies Record<Layout, { fleet: string; behind: string; target: string }>;

type Ks = Obj & {
  status?: {
    lastAttemptedRevision?: string;
    lastAppliedRevision?: string;
    lastAppliedOriginRevision?: string;
    conditions?: Array<{ type: string; status: string; lastTransitionTime?: string }>;
  };
};

/** What one phase cost, from Flux's metrics and status and /proc. */
interface PhaseCost {
  reconciles: number;
  /** Kustomizations by how many times they reconciled in the phase. */
  reconciled: Map<string, number>;
  attempted: number;
  cpu: Record<string, number>;
  /** How long the phase's window was open (its CPU was read over it), in seconds. */
  seconds: number;
  kustomizePeakRssMiB: number;
  /** What the apiserver served in the phase, by request kind: where its CPU goes (issue 39, point 3). */
  requests: Map<string, RequestTally>;
}

/** Requests of one kind the apiserver served, and the seconds it took answering them (wall, not CPU). */
interface RequestTally {
  count: number;
  seconds: number;
}

/**
 * The apiserver's own apiserver_request_total and apiserver_request_duration_seconds_sum, by verb, resource,
 * subresource and whether it was a dry run ("PATCH kustomizations/status", "PATCH namespaces dry-run"); watches
 * apart (their duration is how long they stayed open).
 */
async function apiserverRequests(platform: FluxPlatform): Promise<Map<string, RequestTally>> {
  const text = (await platform.admin.req("GET", "/metrics")).body;
  const out = new Map<string, RequestTally>();
  for (const [metric, field] of [
    ["apiserver_request_total", "count"],
    ["apiserver_request_duration_seconds_sum", "seconds"],
  ] as const) {
    for (const { labels, value } of samples(text, metric)) {
      if (labels.verb === "WATCH") continue;
      const kind = `${labels.verb} ${labels.resource ?? ""}${labels.subresource ? `/${labels.subresource}` : ""}${labels.dry_run ? " dry-run" : ""}`;
      const tally = out.get(kind) ?? { count: 0, seconds: 0 };
      tally[field] += value;
      out.set(kind, tally);
    }
  }
  // What it sent to watchers (every controller's informers): their fan-out is apiserver CPU no request shows.
  for (const { labels, value } of samples(text, "apiserver_watch_events_total")) {
    const kind = `${WATCH_EVENTS}${labels.resource ?? labels.kind ?? ""}`;
    out.set(kind, { count: (out.get(kind)?.count ?? 0) + value, seconds: 0 });
  }
  return out;
}

const WATCH_EVENTS = "watch events ";
const isWatchEvents = (kind: string) => kind.startsWith(WATCH_EVENTS);

/** The resources whose changes the apiserver sent to watchers most often: "kustomizations 120". */
function mostWatchEvents(requests: Map<string, RequestTally>, top = 8): string {
  return [...requests]
    .filter(([kind]) => isWatchEvents(kind))
    .sort(([, a], [, b]) => b.count - a.count)
    .slice(0, top)
    .map(([kind, t]) => `${kind.slice(WATCH_EVENTS.length)} ${t.count}`)
    .join(", ");
}

function requestsBetween(
  before: Map<string, RequestTally>,
  after: Map<string, RequestTally>,
): Map<string, RequestTally> {
  const out = new Map<string, RequestTally>();
  for (const [kind, a] of after) {
    const b = before.get(kind) ?? { count: 0, seconds: 0 };
    if (a.count > b.count) out.set(kind, { count: a.count - b.count, seconds: a.seconds - b.seconds });
  }
  return out;
}

/** The request kinds that took the apiserver longest, most first: "PATCH kustomizations/status 12 (0.31 s)". */
function heaviestRequests(requests: Map<string, RequestTally>, top = 8): string {
  return [...requests]
    .filter(([kind]) => !isWatchEvents(kind))
    .sort(([, a], [, b]) => b.seconds - a.seconds)
    .slice(0, top)
    .map(([kind, t]) => `${kind} ${t.count} (${t.seconds.toFixed(2)} s)`)
    .join(", ");
}

interface Onboarding {
  toNamespaceMs: number;
  toReadyMs: number;
  cost: PhaseCost;
  /** The processes' CPU s per second while Flux was idle just before it (idleRates). */
  idle: Record<string, number>;
}

/** Every process the CPU goal counts: the Flux controllers, kube-apiserver and etcd. */
const CPU_GOAL = [
  "kustomize-controller",
  "source-controller",
  "source-watcher",
  "notification-controller",
  "kube-apiserver",
  "etcd",
] as const satisfies ReadonlyArray<FluxController | "kube-apiserver" | "etcd">;
const sumOf = (cpu: Record<string, number>) => CPU_GOAL.reduce((sum, p) => sum + (cpu[p] ?? 0), 0);
/** What a phase cost above idle: its CPU less what the same processes burn idle over as long a window. */
const aboveIdle = (cost: PhaseCost, idle: Record<string, number>) =>
  Object.fromEntries(Object.entries(cost.cpu).map(([p, s]) => [p, s - (idle[p] ?? 0) * cost.seconds]));
/** Total CPU s of an onboarding (the goal's processes), and the same above idle. */
const onboardingCpu = (o: Onboarding) => sumOf(o.cost.cpu);
const onboardingCpuAboveIdle = (o: Onboarding) => sumOf(aboveIdle(o.cost, o.idle));

interface Result {
  layout: Layout;
  teams: number;
  loadBefore: string;
  loadAfter: string;
  startMs: number;
  coldApplyMs: number;
  coldCpu: Record<string, number>;
  coldKustomizePeakRssMiB: number;
  onboardings: Onboarding[];
  /** Undefined when the run had no rollout (BENCH_FLUX_ROLLOUT=off). */
  rollout: { teams: number; toAllReadyMs: number; cost: PhaseCost } | undefined;
  /** kustomize-controller CPU s of one reconcile of an untouched team (what its interval costs). */
  intervalCpuPerReconcile: number;
}

/** Seeded names start with every letter in turn, as a real fleet's do (source-watcher's cut may go by name). */
const teamNames = (n: number) =>
  Array.from({ length: n }, (_, i) => `${"abcdefghijklmnopqrstuvwxyz"[i % 26]}${String(i).padStart(5, "0")}`);
const cpuOf = (pid: number) => {
  const usage = processUsage(pid);
  if (!usage) throw new Error(`process ${pid} is gone`);
  return usage.cpuSeconds;
};
/** Each process's CPU seconds so far. */
const cpuNow = (pids: Record<string, number>) =>
  Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuOf(pid)]));
/** Each process's CPU seconds since `before` (cpuNow). */
const cpuSince = (pids: Record<string, number>, before: Record<string, number>) =>
  Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuOf(pid) - before[k]!]));
const mib = (bytes: number) => Math.round(bytes / 1024 / 1024);
const rev = (sha: string) => `main@sha1:${sha}`;
const readyOf = (k: Ks) => k.status?.conditions?.find((c) => c.type === "Ready");
const applied = (k: Ks) => k.status?.lastAppliedOriginRevision ?? k.status?.lastAppliedRevision;
/** Whether `k` applied main-branch commit `sha` (a slice branch's commit stands for one: ADR 0036). */
const appliedCommit = (platform: FluxPlatform, k: Ks, sha: string) => platform.fleetRevisions.is(applied(k), sha);

/**
 * The seeded teams' Kustomizations reconcile every SEEDED_INTERVAL instead of the templates' 10 minutes. At 1,000
 * teams, 10-minute intervals alone start a reconcile every 0.6 s, so Flux is never quiet and a commit's reconciles
 * cannot be told from the interval's; with this, every reconcile in a phase is one the commit caused. The interval's
 * own cost is measured apart (untouched teams reconciled on request: intervalShareOfCore).
 */
const SEEDED_INTERVAL = "24h";
function withoutIntervalReconciles(files: Map<string, string>): Map<string, string> {
  for (const [path, content] of files) {
    if (!path.endsWith(".yaml")) continue;
    const docs = parseAllDocuments(content);
    let changed = false;
    for (const doc of docs) {
      const obj = doc.toJS() as Ks | null;
      if (obj?.kind !== "Kustomization" || !String(obj.apiVersion).startsWith("kustomize.toolkit.fluxcd.io/")) continue;
      if (!obj.metadata.name.startsWith("team-")) continue;
      doc.setIn(["spec", "interval"], SEEDED_INTERVAL);
      changed = true;
    }
    if (changed) files.set(path, docs.map((d) => d.toString()).join(""));
  }
  return files;
}

/** The templates' interval of a team's Kustomization (10 minutes), in seconds. */
const TEMPLATE_INTERVAL_S = 600;
/** The share of one core (%) kustomize-controller spends on `teams` teams' interval reconciles alone. */
const intervalShareOfCore = (teams: number, cpuPerReconcile: number) =>
  ((100 * teams * cpuPerReconcile) / TEMPLATE_INTERVAL_S).toFixed(0);

/** Per Kustomization, how many reconciles kustomize-controller has recorded (its own histogram's _count). */
const reconcileCounts = (platform: FluxPlatform) => kustomizationReconciles(platform.flux);

function processes(platform: FluxPlatform): Record<string, number> {
  const pids: Record<string, number> = {};
  for (const [controller, p] of platform.flux.processes) pids[controller] = p.pid;
  pids["kube-apiserver"] = platform.cluster.pids.kubeApiserver;
  pids.etcd = platform.cluster.pids.etcd;
  return pids;
}

async function kustomizations(platform: FluxPlatform, namespace = ASO_NAMESPACE): Promise<Ks[]> {
  return (await platform.admin.list("kustomize.toolkit.fluxcd.io/v1", "Kustomization", namespace)) as Ks[];
}

/**
 * kustomize-controller's own log, read as it grows: which Kustomizations it worked on (every line of a reconcile names
 * its Kustomization), at no cost to the controller. Its /metrics cost it much more: at 1,000 teams each scrape
 * encodes and gzips every Kustomization's histograms, and scraping every second to see when Flux is quiet took 44–46 %
 * of its CPU in an onboarding's window (its CPU profile, 2026-12-07 05:00), and grows with N.
 */
class ReconcileLog {
  private offset: number;
  private rest = "";
  /** Reconciles finished (or failed) per Kustomization (`namespace/name`) since the log was opened. */
  readonly finished = new Map<string, number>();

  constructor(private readonly file: string) {
    this.offset = statSync(file).size;
  }

  /** kustomize-controller's log, from now on. */
  static of(platform: FluxPlatform): ReconcileLog {
    return new ReconcileLog(platform.flux.processes.get("kustomize-controller")!.log);
  }

  /** The Kustomizations named by the lines written since the last read. */
  read(): Set<string> {
    const named = new Set<string>();
    const size = statSync(this.file).size;
    if (size <= this.offset) return named;
    const buffer = Buffer.alloc(size - this.offset);
    const fd = openSync(this.file, "r");
    try {
      readSync(fd, buffer, 0, buffer.length, this.offset);
    } finally {
      closeSync(fd);
    }
    this.offset = size;
    const lines = (this.rest + buffer.toString("utf8")).split("\n");
    this.rest = lines.pop() ?? "";
    for (const line of lines) {
      let entry: { msg?: string; Kustomization?: { name?: string; namespace?: string } };
      try {
        entry = JSON.parse(line) as typeof entry;
      } catch {
        continue;
      }
      const k = entry.Kustomization;
      if (!k?.name || !k.namespace) continue;
      const key = `${k.namespace}/${k.name}`;
      named.add(key);
      if (/^Reconciliation (finished|failed)/.test(entry.msg ?? ""))
        this.finished.set(key, (this.finished.get(key) ?? 0) + 1);
    }
    return named;
  }
}

interface PhaseEnd {
  /**
   * Also wait for this before ending (the before layout: every Kustomization attempted the commit), given the phase's
   * log, read up to now.
   */
  settled?: (log: ReconcileLog) => boolean | Promise<boolean>;
  /**
   * Which Kustomizations' reconciles must stop for the phase to end (default: all). A phase that causes a known set
   * of reconciles waits only for those: the rollout's teams reconcile every 10 minutes afterwards, and 256 slices
   * every hour start one every 14 s, so a fleet of 5,000 is never quiet for 15 s as a whole.
   */
  quietOn?: (kustomization: string) => boolean;
}

/** Starts measuring a phase; `end()` waits until Flux is quiet (and `settled()` holds) and returns what it cost. */
async function phase(platform: FluxPlatform): Promise<{ end(options?: PhaseEnd): Promise<PhaseCost> }> {
  const pids = processes(platform);
  // The Kustomization LISTs (thousands of objects, here and in end()) cost kube-apiserver and etcd CPU and show in
  // the request counters: they run outside the measured window, before the first reading and after the last.
  const attempted0 = new Map(
    [...(await kustomizations(platform)), ...(await kustomizations(platform, "flux-system"))].map((k) => [
      `${k.metadata.namespace}/${k.metadata.name}`,
      k.status?.lastAttemptedRevision,
    ]),
  );
  // The metrics scrapes first: encoding every Kustomization's histograms costs kustomize-controller CPU that grows
  // with N (about 0.1 CPU s at 5,000 teams), and it is the benchmark's, not the phase's.
  const counts0 = await reconcileCounts(platform);
  const requests0 = await apiserverRequests(platform);
  platform.flux.resetPeakRss("kustomize-controller");
  const log = ReconcileLog.of(platform);
  const cpu0 = cpuNow(pids);
  const t0 = performance.now();
  return {
    async end({ settled, quietOn = () => true } = {}) {
      // Quiet: no log line of a Kustomization that counts for 15 s. Its metrics are read only at both ends, outside
      // the CPU readings.
      let quietSince = Date.now();
      for (;;) {
        if ([...log.read()].some(quietOn)) quietSince = Date.now();
        else if (Date.now() - quietSince >= QUIET_MS && (!settled || (await settled(log)))) break;
        await sleep(1_000);
      }
      const cpu = cpuSince(pids, cpu0);
      const seconds = (performance.now() - t0) / 1000;
      const counts = await reconcileCounts(platform);
      const reconciled = new Map<string, number>();
      for (const [k, n] of counts) if (n - (counts0.get(k) ?? 0) > 0) reconciled.set(k, n - (counts0.get(k) ?? 0));
      const kustomizePeakRssMiB = mib(platform.flux.peakRssBytes("kustomize-controller"));
      const requests = requestsBetween(requests0, await apiserverRequests(platform));
      // Only now, the window closed: these LISTs are not the phase's cost.
      const all = [...(await kustomizations(platform)), ...(await kustomizations(platform, "flux-system"))];
      return {
        reconciles: [...reconciled.values()].reduce((a, b) => a + b, 0),
        reconciled,
        attempted: all.filter(
          (k) => k.status?.lastAttemptedRevision !== attempted0.get(`${k.metadata.namespace}/${k.metadata.name}`),
        ).length,
        cpu,
        seconds,
        kustomizePeakRssMiB,
        requests,
      };
    },
  };
}

/** How long Flux must stay idle to price idle, and how many windows to try before taking one with reconciles in it. */
const IDLE_MS = 20_000;
const IDLE_TRIES = 4;

/**
 * Each process's CPU s per second while no Kustomization reconciles (watches, informers, the slices' polls, the
 * controller's drift checks): what any window costs at this size whatever happens in it. An onboarding's window
 * runs 15 s past its last reconcile, so its CPU less this rate over as long is what the onboarding itself cost.
 */
async function idleRates(
  platform: FluxPlatform,
): Promise<{ rates: Record<string, number>; reconciles: number; requests: Map<string, RequestTally> }> {
  const pids = processes(platform);
  let reconciles = 0;
  let rates: Record<string, number> = {};
  let requests = new Map<string, RequestTally>();
  for (let attempt = 0; attempt < IDLE_TRIES; attempt++) {
    const requests0 = await apiserverRequests(platform);
    // Reconciles seen in kustomize-controller's log, as a phase sees them: no metrics scrape of its own to idle through.
    const log = ReconcileLog.of(platform);
    const cpu0 = cpuNow(pids);
    const t0 = performance.now();
    await sleep(IDLE_MS);
    const used = cpuSince(pids, cpu0);
    const seconds = (performance.now() - t0) / 1000;
    rates = Object.fromEntries(Object.entries(used).map(([k, cpu]) => [k, cpu / seconds]));
    log.read();
    reconciles = [...log.finished.values()].reduce((a, b) => a + b, 0);
    requests = requestsBetween(requests0, await apiserverRequests(platform));
    if (reconciles === 0) break;
  }
  return { rates, reconciles, requests };
}

/**
 * BENCH_FLUX_PROFILE=<folder>: a CPU profile of kustomize-controller (its own /debug/pprof on the metrics port) over
 * each idle window and each onboarding, for `go tool pprof`. Off by default: the profiler costs CPU of its own.
 */
const PROFILE_DIR = process.env.BENCH_FLUX_PROFILE;
const PROFILE_SECONDS = 30;
function profile(platform: FluxPlatform, file: string, seconds = PROFILE_SECONDS): Promise<void> {
  if (!PROFILE_DIR) return Promise.resolve();
  const url = platform.flux.processes.get("kustomize-controller")!.metricsUrl.replace(/\/metrics$/, "");
  return fetch(`${url}/debug/pprof/profile?seconds=${seconds}`)
    .then(async (res) => {
      if (!res.ok) throw new Error(`${res.status}`);
      writeFileSync(join(PROFILE_DIR, file), Buffer.from(await res.arrayBuffer()));
    })
    .catch((error: unknown) => console.log(`    profile ${file}: ${String(error)}`));
}

const perMinute = (rates: Record<string, number>) =>
  describeCpu(Object.fromEntries(Object.entries(rates).map(([p, rate]) => [p, 60 * rate])));

/** Until every Kustomization of `teams` is Ready at `revision` (for an artifact: the commit it was cut from). */
async function untilReady(
  platform: FluxPlatform,
  teams: readonly string[],
  revision: string,
  timeoutMs: number,
): Promise<void> {
  const want = new Set(teams.map((t) => `team-${t}`));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const candidates = (await kustomizations(platform)).filter(
      (k) => want.has(k.metadata.name) && readyOf(k)?.status === "True",
    );
    const applies = await Promise.all(candidates.map((k) => appliedCommit(platform, k, revision)));
    const ready = applies.filter(Boolean).length;
    if (ready === want.size) return;
    if (Date.now() > deadline)
      throw new Error(
        `${want.size - ready} of ${want.size} Kustomizations not Ready at ${revision.slice(0, 7)} after ${ms(timeoutMs)}`,
      );
    await sleep(1_000);
  }
}

/**
 * Where an onboarding's wait went: when each object on the way to the team's namespace was made or last changed,
 * from their own timestamps (whole seconds), counted from the POST.
 */
async function timeline(
  platform: FluxPlatform,
  layout: Layout,
  teams: number,
  team: string,
  postedAt: number,
): Promise<string> {
  const at = (iso: unknown) => (typeof iso === "string" ? `${Math.round((Date.parse(iso) - postedAt) / 1000)} s` : "–");
  const artifactTime = (o: Obj | undefined) =>
    (o?.status as { artifact?: { lastUpdateTime?: string } } | undefined)?.artifact?.lastUpdateTime;
  const source = "source.toolkit.fluxcd.io/v1";
  const { namespace, name } = platform.teamsSource;
  // Per-slice fetch: the team's slice's own GitRepository fetches (ADR 0036), cut by nothing.
  const perSlice = layout === "HashSlicesPerSlice";
  const count = hashSlices(teams);
  const fetchedBy = perSlice ? `berth-teams-${sliceHolding({ by: "hash", count }, team).id}` : name;
  const steps: Array<[string, unknown]> = [
    ["fetched", artifactTime(await platform.admin.get(source, "GitRepository", namespace, fetchedBy))],
  ];
  if (layout === "ExternalArtifact") {
    const index = await platform.admin.get(source, "ExternalArtifact", "flux-system", "berth-teams");
    const artifact = await platform.admin.get(source, "ExternalArtifact", ASO_NAMESPACE, `team-${team}`);
    steps.push(["index artifact", artifactTime(index)], ["team artifact", artifact?.metadata.creationTimestamp]);
  }
  if (layout === "Slices" || layout === "HashSlices") {
    const sliceId = sliceHolding(layout === "Slices" ? { by: "first-letter" } : { by: "hash", count }, team).id;
    const slice = await platform.admin.get(source, "ExternalArtifact", ASO_NAMESPACE, `berth-team-slice-${sliceId}`);
    steps.push(["slice artifact", artifactTime(slice)]);
  }
  if (layout === "Slices" || hashLayout(layout)) {
    const artifact = await platform.admin.get(source, "ExternalArtifact", ASO_NAMESPACE, `team-files-${team}`);
    steps.push(["team artifact", artifact?.metadata.creationTimestamp]);
  }
  steps.push(
    ["Kustomization", (await platform.kustomization(ASO_NAMESPACE, `team-${team}`))?.metadata.creationTimestamp],
    ["namespace", (await platform.admin.get("v1", "Namespace", undefined, team))?.metadata.creationTimestamp],
  );
  return steps.map(([what, when]) => `${what} ${at(when)}`).join(", ");
}

/** The before layout: every Kustomization must have attempted the commit before its cost is complete. */
const allAttempted = (platform: FluxPlatform, revision: string) => async () =>
  (await kustomizations(platform)).every((k) => k.status?.lastAttemptedRevision === rev(revision));

/** A rollout commit that moves 10 % of the teams (`selected`) to the target templates (one commit), until all are Ready. */
async function rolloutPhase(
  platform: FluxPlatform,
  layout: Layout,
  selected: string[],
  templates: (typeof TEMPLATES)[Layout],
): Promise<Result["rollout"]> {
  const p = await phase(platform);
  const t0 = performance.now();
  const res = await platform.request("POST", "/v1/rollouts", {
    description: `10 % to ${templates.target}`,
    target: { templateVersion: templates.target },
    selector: { names: selected },
  });
  if (res.statusCode !== 201) throw new Error(`POST /v1/rollouts: ${res.statusCode} ${res.body}`);
  const revision = res.json.revision as string;
  if (layout === "GitRepository") void platform.reconcileSource().catch(() => undefined);
  await untilReady(platform, selected, revision, 60 * 60_000);
  const toAllReadyMs = performance.now() - t0;
  const cost = await p.end(layout === "GitRepository" ? { settled: allAttempted(platform, revision) } : {});
  console.log(
    `  rollout of ${selected.length} teams from ${templates.behind} to ${templates.target} (${revision.slice(0, 7)}): POST → all ${selected.length} Ready ${ms(toAllReadyMs)}; ${describe(cost)}`,
  );
  return { teams: selected.length, toAllReadyMs, cost };
}

async function run(layout: Layout, n: number): Promise<Result> {
  const loadBefore = load();
  console.log(
    `\n== ${nameOf(layout, n)}, ${n} teams, kustomize-controller --concurrent=${kustomizeConcurrent(n)} ${clientArgs(n).join(" ")}, source-watcher ${clientArgs(n).join(" ") || "with Flux's rate limit"}, source-controller --concurrent=${sourceConcurrent(layout) || 2}; load before: ${loadBefore}`,
  );
  const names = teamNames(n);
  const templates = TEMPLATES[layout];
  // The teams the rollout moves: every tenth.
  const selected = names.filter((_, i) => i % 10 === 0);
  const behind = new Set(selected);
  const started = performance.now();
  const fluxTmp = TMP_ON_DISK ? mkdtempSync(join(tmpdir(), "berth-bench-flux-tmp-")) : undefined;
  const platform = await startFluxPlatform({
    teamSource: layout === "GitRepository" ? "GitRepository" : "ExternalArtifact",
    install0019: layout === "ExternalArtifact",
    ...(hashLayout(layout)
      ? { hashSlices: hashSlices(n), sliceFetch: layout === "HashSlicesPerSlice" ? "per-slice" : "whole" }
      : {}),
    platform: (p) => (p.templateVersion = templates.fleet),
    pollInterval: POLL,
    asoIntervalMs: 2_000,
    flux: {
      kustomizeConcurrent: kustomizeConcurrent(n),
      extraArgs: {
        "kustomize-controller": [...KUSTOMIZE_ARGS, ...clientArgs(n)],
        "source-watcher": clientArgs(n),
        "source-controller": sourceArgs(layout),
      },
      ...(fluxTmp ? { tmpDir: fluxTmp } : {}),
    },
    berthConfig: (raw) => (raw.logLevel = "warn"),
    seed: async (p) =>
      withoutIntervalReconciles(
        await renderFleet(
          names.map((name) => ({
            name,
            description: `Team ${name}`,
            owners: [OWNER],
            environments: ["dev"],
            roleAssignments: [{ role: "rg-contributor" }],
          })),
          {
            platform: p,
            templatesDir: join(REPO_ROOT, "templates"),
            templateVersion: (team) => (behind.has(team) ? templates.behind : templates.fleet),
          },
        ),
      ),
  });
  try {
    const startMs = performance.now() - started;
    console.log(`  platform up (cluster, Flux, Berth's controller and API): ${ms(startMs)}`);
    console.log(`  Flux's /tmp: ${platform.flux.tmpDir} (${filesystemOf(platform.flux.tmpDir)})`);

    // Cold apply: Flux applies all N from the seeded repository.
    const head = await platform.head();
    const coldDeadline = Date.now() + coldApplyLimitMinutes(n) * 60_000;
    // When each team first became Ready. Not "all Ready at once": any later reconcile turns Ready Unknown while it runs.
    let teamKs: Ks[] = [];
    const firstReady = new Map<string, number>();
    for (;;) {
      teamKs = (await kustomizations(platform)).filter((k) => k.metadata.name.startsWith("team-"));
      for (const k of teamKs) {
        const ready = readyOf(k);
        if (ready?.status === "True" && !firstReady.has(k.metadata.name))
          firstReady.set(k.metadata.name, Date.parse(ready.lastTransitionTime!));
      }
      if (teamKs.length === n && firstReady.size === n) break;
      if (Date.now() > coldDeadline)
        throw new Error(`cold apply: ${firstReady.size}/${n} Ready after ${coldApplyLimitMinutes(n)} minutes`);
      // The times come from each Kustomization's Ready transition, not from this loop, whose every pass lists all N
      // with their status (about 2 KB each): at thousands of teams, seldom, so that the harness does not load the
      // apiserver it measures.
      await sleep(n >= 1000 ? 30_000 : 5_000);
    }
    const first = Math.min(...teamKs.map((k) => Date.parse(k.metadata.creationTimestamp as string)));
    const last = Math.max(...firstReady.values());
    const coldCpu: Record<string, number> = {};
    for (const [controller, p] of platform.flux.processes) coldCpu[controller] = cpuOf(p.pid);
    const coldKustomizePeakRssMiB = mib(platform.flux.peakRssBytes("kustomize-controller"));
    console.log(
      `  cold apply of ${n} teams at ${head.slice(0, 7)}: ${ms(last - first)} (first Kustomization created → last Ready); kustomize-controller ${coldCpu["kustomize-controller"]!.toFixed(1)} CPU s, peak RSS ${coldKustomizePeakRssMiB} MiB since its start`,
    );
    // Let the cold apply's tail (health checks, Berth's controller) settle before the first commit.
    await (await phase(platform)).end();

    const onboardings: Onboarding[] = [];
    const samples = layout === "GitRepository" ? SAMPLES_BEFORE : SAMPLES;
    for (let i = 0; i < samples; i++) {
      // Named to come last: source-watcher cuts the teams' artifacts in name order, so a new team's is the last one.
      const team = `z-new${String(i).padStart(2, "0")}`;
      const idleProfile = profile(platform, `${n}-idle-${i + 1}.pprof`, IDLE_MS / 1000);
      const idle = await idleRates(platform);
      await idleProfile;
      console.log(
        `  idle before onboarding ${i + 1} (${IDLE_MS / 1000} s, ${idle.reconciles} reconciles in it), CPU s per minute: ${perMinute(idle.rates)}; all ${(60 * sumOf(idle.rates)).toFixed(2)}`,
      );
      console.log(
        `    idle, apiserver requests: ${heaviestRequests(idle.requests)}; watch events sent: ${mostWatchEvents(idle.requests)}`,
      );
      const p = await phase(platform);
      const onboardingProfile = profile(platform, `${n}-onboarding-${i + 1}.pprof`);
      const postedAt = Date.now();
      const t0 = performance.now();
      const res = await platform.request("POST", "/v1/teams", {
        name: team,
        description: `Team ${team}`,
        owners: [OWNER],
        environments: ["dev"],
        roleAssignments: [{ role: "rg-contributor" }],
      });
      if (res.statusCode !== 201) throw new Error(`POST /v1/teams: ${res.statusCode} ${res.body}`);
      const revision = res.json.revision as string;
      if (layout === "GitRepository") void platform.reconcileSource().catch(() => undefined);
      let toNamespaceMs = 0;
      for (;;) {
        if (!toNamespaceMs && (await platform.admin.get("v1", "Namespace", undefined, team)))
          toNamespaceMs = performance.now() - t0;
        const k = (await platform.kustomization(ASO_NAMESPACE, `team-${team}`)) as Ks | undefined;
        if (toNamespaceMs && k && readyOf(k)?.status === "True" && (await appliedCommit(platform, k, revision))) break;
        if (performance.now() - t0 > 30 * 60_000) throw new Error(`onboarding ${team}: not Ready after 30 min`);
        await sleep(100);
      }
      const toReadyMs = performance.now() - t0;
      const cost = await p.end(layout === "GitRepository" ? { settled: allAttempted(platform, revision) } : {});
      await onboardingProfile;
      const onboarding = { toNamespaceMs, toReadyMs, cost, idle: idle.rates };
      onboardings.push(onboarding);
      console.log(
        `  onboarding ${i + 1}/${samples} (${revision.slice(0, 7)}): POST → namespace ${ms(toNamespaceMs)}, → Kustomization Ready ${ms(toReadyMs)}; ${describe(cost)}`,
      );
      console.log(
        `    its window ${cost.seconds.toFixed(1)} s; CPU s of the goal's processes ${onboardingCpu(onboarding).toFixed(2)}, above idle ${onboardingCpuAboveIdle(onboarding).toFixed(2)} (${describeCpu(aboveIdle(cost, idle.rates))})`,
      );
      console.log(`    after the POST: ${await timeline(platform, layout, n, team, postedAt)}`);
      console.log(`    apiserver, heaviest requests: ${heaviestRequests(cost.requests)}`);
      console.log(`    apiserver, watch events sent: ${mostWatchEvents(cost.requests)}`);
    }

    // A rollout commit that changes 10 % of the teams (one commit).
    const rollout = ROLLOUT ? await rolloutPhase(platform, layout, selected, templates) : undefined;

    // What the templates' 10-minute interval costs on its own: untouched teams reconciled on request, as an interval
    // would, at their unchanged revision.
    const untouched = names.filter((_, i) => i % 10 === 5).slice(0, INTERVAL_SAMPLE);
    const q = await phase(platform);
    const sampled = new Set(untouched.map((t) => `${ASO_NAMESPACE}/team-${t}`));
    await Promise.all(
      untouched.map((t) =>
        requestReconcile(platform.admin, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", ASO_NAMESPACE, `team-${t}`),
      ),
    );
    // Waits for the sampled teams only; the window's other reconciles (the rollout's 500 teams every 10 minutes, the
    // slices every hour) are interval reconciles at an unchanged revision too, so they count in the price per reconcile.
    const intervalCost = await q.end({
      quietOn: (k) => sampled.has(k),
      settled: (log) => [...sampled].every((k) => (log.finished.get(k) ?? 0) > 0),
    });
    const cpuPerReconcile = intervalCost.cpu["kustomize-controller"]! / Math.max(1, intervalCost.reconciles);
    console.log(
      `  ${untouched.length} untouched teams reconciled on request: ${describe(intervalCost)}; with the templates' 10-minute interval, ${n} teams cost kustomize-controller about ${intervalShareOfCore(n, cpuPerReconcile)} % of a core all the time`,
    );

    const loadAfter = load();
    console.log(`  load after: ${loadAfter}`);
    return {
      layout,
      teams: n,
      loadBefore,
      loadAfter,
      startMs,
      coldApplyMs: last - first,
      coldCpu,
      coldKustomizePeakRssMiB,
      onboardings,
      rollout,
      intervalCpuPerReconcile: cpuPerReconcile,
    };
  } finally {
    await platform.stop();
    if (fluxTmp) rmSync(fluxTmp, { recursive: true, force: true });
  }
}

function describe(cost: PhaseCost): string {
  const seeded = ([k]: [string, number]) => /^[^/]+\/team-[a-z]\d{5}$/.test(k);
  const named = [...cost.reconciled].filter((e) => !seeded(e));
  const fleet = [...cost.reconciled].filter(seeded);
  const who = [
    ...named.map(([k, c]) => `${k.split("/")[1]}${c > 1 ? ` ×${c}` : ""}`),
    ...(fleet.length ? [`${fleet.length} seeded teams`] : []),
  ].join(", ");
  return `${cost.reconciles} Kustomization reconciliations (${who}); ${cost.attempted} attempted a new revision; CPU s: ${describeCpu(cost.cpu)}; kustomize-controller peak RSS ${cost.kustomizePeakRssMiB} MiB`;
}

const describeCpu = (cpu: Record<string, number>) =>
  CPU_GOAL.filter((c) => cpu[c] !== undefined)
    .map((c) => `${c} ${cpu[c]!.toFixed(2)}`)
    .join(", ");

function summary(results: Result[]): void {
  console.log("\n== summary (machine load in each block above)");
  const row = (label: string, f: (r: Result) => string) =>
    console.log(`  ${label.padEnd(58)} ${results.map((r) => f(r).padEnd(22)).join(" ")}`);
  row("", (r) => `${r.teams} ${SHORT[r.layout]}`);
  row("cold apply (flux-benchmark, 1,000: 4m13s)", (r) => ms(r.coldApplyMs));
  row(
    "cold apply: kustomize-controller CPU s / peak RSS MiB",
    (r) => `${r.coldCpu["kustomize-controller"]!.toFixed(0)} / ${r.coldKustomizePeakRssMiB}`,
  );
  const med = (r: Result, f: (o: Onboarding) => number) => percentile(r.onboardings.map(f), 50);
  row(
    "onboarding: POST → namespace, p50 (max)",
    (r) => `${ms(med(r, (o) => o.toNamespaceMs))} (${ms(Math.max(...r.onboardings.map((o) => o.toNamespaceMs)))})`,
  );
  row("onboarding: POST → Kustomization Ready, p50", (r) => ms(med(r, (o) => o.toReadyMs)));
  row(
    "onboarding: Kustomization reconciliations, p50 (max)",
    (r) => `${med(r, (o) => o.cost.reconciles)} (${Math.max(...r.onboardings.map((o) => o.cost.reconciles))})`,
  );
  row("onboarding: kustomize-controller CPU s, p50", (r) =>
    med(r, (o) => o.cost.cpu["kustomize-controller"]!).toFixed(2),
  );
  row("onboarding: source-controller + source-watcher CPU s, p50", (r) =>
    med(r, (o) => (o.cost.cpu["source-controller"] ?? 0) + (o.cost.cpu["source-watcher"] ?? 0)).toFixed(2),
  );
  row("onboarding: kube-apiserver + etcd CPU s, p50", (r) =>
    med(r, (o) => o.cost.cpu["kube-apiserver"]! + o.cost.cpu.etcd!).toFixed(2),
  );
  row("onboarding: CPU s of Flux + kube-apiserver + etcd, p50", (r) => med(r, onboardingCpu).toFixed(2));
  row("onboarding: the same above idle, p50", (r) => med(r, onboardingCpuAboveIdle).toFixed(2));
  row("idle: CPU s per minute of the same, p50", (r) => (60 * med(r, (o) => sumOf(o.idle))).toFixed(2));
  row("idle: kustomize-controller CPU s per minute, p50", (r) =>
    (60 * med(r, (o) => o.idle["kustomize-controller"] ?? 0)).toFixed(2),
  );
  const requestCount = (o: Onboarding) =>
    [...o.cost.requests].reduce((sum, [kind, t]) => sum + (isWatchEvents(kind) ? 0 : t.count), 0);
  const watchEvents = (o: Onboarding) =>
    [...o.cost.requests].reduce((sum, [kind, t]) => sum + (isWatchEvents(kind) ? t.count : 0), 0);
  row("onboarding: apiserver requests (watches apart), p50", (r) => String(med(r, requestCount)));
  row("onboarding: apiserver watch events sent, p50", (r) => String(med(r, watchEvents)));
  row("onboarding: kustomize-controller peak RSS MiB, max", (r) =>
    String(Math.max(...r.onboardings.map((o) => o.cost.kustomizePeakRssMiB))),
  );
  if (results.some((r) => r.rollout)) {
    const ofRollout = (f: (o: NonNullable<Result["rollout"]>) => string) => (r: Result) =>
      r.rollout ? f(r.rollout) : "–";
    row(
      "10 % rollout: teams changed",
      ofRollout((o) => String(o.teams)),
    );
    row(
      "10 % rollout: POST → all Ready",
      ofRollout((o) => ms(o.toAllReadyMs)),
    );
    row(
      "10 % rollout: Kustomization reconciliations",
      ofRollout((o) => String(o.cost.reconciles)),
    );
    row(
      "10 % rollout: kustomize-controller CPU s / peak RSS MiB",
      ofRollout((o) => `${o.cost.cpu["kustomize-controller"]!.toFixed(1)} / ${o.cost.kustomizePeakRssMiB}`),
    );
  }
  row(
    "10-minute intervals: kustomize-controller CPU s per reconcile / % of a core",
    (r) => `${r.intervalCpuPerReconcile.toFixed(2)} / ${intervalShareOfCore(r.teams, r.intervalCpuPerReconcile)} %`,
  );
  // The goal: an onboarding costs no more at the largest size than at the smallest, in the same run.
  const bySize = results.filter((r) => r.layout !== "GitRepository").sort((a, b) => a.teams - b.teams);
  const [smallest, largest] = [bySize[0], bySize.at(-1)];
  if (smallest && largest && largest.teams > smallest.teams && largest.layout === smallest.layout) {
    console.log(
      `  CPU per onboarding, ${largest.teams} / ${smallest.teams} teams: ${(med(largest, onboardingCpu) / med(smallest, onboardingCpu)).toFixed(2)}; above idle ${(med(largest, onboardingCpuAboveIdle) / med(smallest, onboardingCpuAboveIdle)).toFixed(2)}`,
    );
  }
  for (const n of SIZES) {
    const before = results.find((r) => r.teams === n && r.layout === "GitRepository");
    const cpu = (r: Result) =>
      percentile(
        r.onboardings.map((o) => o.cost.cpu["kustomize-controller"]!),
        50,
      );
    for (const after of results.filter((r) => r.teams === n && r.layout !== "GitRepository")) {
      if (!before) continue;
      console.log(
        `  ${n} teams: kustomize-controller CPU for one onboarding, ${SHORT[after.layout]} / before = ${((100 * cpu(after)) / cpu(before)).toFixed(2)} %`,
      );
    }
  }
}

async function main(): Promise<void> {
  if (PROFILE_DIR) mkdirSync(PROFILE_DIR, { recursive: true });
  console.log(
    `Flux at fleet scale: sizes ${SIZES.join(", ")}; layouts ${LAYOUTS.join(", ")}; onboardings per run: ${SAMPLES} (before: ${SAMPLES_BEFORE}); GitRepositories poll every ${POLL}; kustomize-controller ${KUSTOMIZE_ARGS.join(" ")}; load: ${load()}`,
  );
  const results: Result[] = [];
  for (const n of SIZES) for (const layout of LAYOUTS) results.push(await run(layout, n));
  summary(results);
}

await main();
process.exit(0);
