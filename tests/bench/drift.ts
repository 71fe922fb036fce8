/**
 * Drift benchmark (issue 37, M4/N2). Prints figures; asserts nothing. Run:
 *
 *   npm run bench -- drift                    # 5,000 drifted teams
 *   BENCH_DRIFT_TEAMS=1000 npm run bench -- drift
 *
 * A local bare remote is seeded with N teams whose team file says v1 while their other files hold v3's render
 * (every team drifted, as after a template change deployed without a rollout). Berth's API (real wiring, on
 * HTTP) then answers, while a worker thread asks /healthz every 20 ms:
 *   - the first read after start (the worker renders the whole fleet), and the first read after a commit
 *     (it renders the one team the commit touched), with diffs and without;
 *   - every page read in turn (diffs, default limit), p50 / p99, the largest page and all pages' bytes;
 *   - six readers walking every page at once: read p50 / p99;
 * with /healthz p50 / max over each phase, the main thread's event-loop delay, the process's RSS peak (the
 * API, its drift worker and the bench's client threads share the process; the seed runs in a child process)
 * and the machine's load average.
 */
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { Worker } from "node:worker_threads";
import { DEV_TOKEN, startBerth } from "../support/berth.js";
import { createBareRepo } from "../support/git-remotes.js";
import { load, ms, OWNER, seedInChild } from "./fleet-seed.js";
import { percentile } from "./stats.js";

const TEAMS = Number(process.env.BENCH_DRIFT_TEAMS ?? 5000);
const READERS = 6;

/** Runs `code` (CommonJS) in a worker thread; answers the one message it posts (after `stop` when asked). */
function inWorker<T>(code: string, workerData: unknown): { result: Promise<T>; stop: () => void } {
  const worker = new Worker(code, { eval: true, workerData });
  const result = new Promise<T>((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
    worker.once("exit", (c) => reject(new Error(`bench worker exited with ${c}`)));
  }).finally(() => void worker.terminate());
  return { result, stop: () => worker.postMessage("stop") };
}

/** GETs /healthz every 20 ms from a worker thread until stopped; answers each answer's time. */
function pollHealth(base: string) {
  return inWorker<number[]>(
    `
    const http = require("node:http");
    const { parentPort, workerData: { base } } = require("node:worker_threads");
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    let stopped = false;
    parentPort.on("message", () => { stopped = true; });
    const times = [];
    const once = () => new Promise((resolve, reject) => {
      const start = performance.now();
      http.get(base + "/healthz", { agent }, (res) => { res.resume(); res.on("end", () => resolve(performance.now() - start)); }).on("error", reject);
    });
    (async () => {
      while (!stopped) { times.push(await once()); await new Promise((r) => setTimeout(r, 20)); }
      agent.destroy();
      parentPort.postMessage(times);
    })();
  `,
    { base },
  );
}

interface Walk {
  times: number[];
  bytes: number[];
}
/** `readers` clients each reading every page of `path` in turn (following `continue`), from a worker thread. */
function walkPages(base: string, path: string, readers: number, maxPages = Infinity) {
  return inWorker<Walk>(
    `
    const http = require("node:http");
    const { parentPort, workerData: { base, path, token, readers, maxPages } } = require("node:worker_threads");
    const agent = new http.Agent({ keepAlive: true, maxSockets: readers });
    const get = (url) => new Promise((resolve, reject) => {
      const start = performance.now();
      http.get(url, { agent, headers: { authorization: "Bearer " + token } }, (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8");
          if (res.statusCode !== 200) return reject(new Error("GET " + url + ": HTTP " + res.statusCode + " " + body.slice(0, 300)));
          resolve({ ms: performance.now() - start, bytes: Buffer.byteLength(body), next: JSON.parse(body).continue });
        });
      }).on("error", reject);
    });
    const times = [], bytes = [];
    const reader = async () => {
      let next, pages = 0;
      do {
        const sep = path.includes("?") ? "&" : "?";
        const r = await get(base + path + (next ? sep + "continue=" + next : ""));
        times.push(r.ms); bytes.push(r.bytes); next = r.next; pages += 1;
      } while (next && pages < (maxPages ?? Infinity));
    };
    Promise.all(Array.from({ length: readers }, reader)).then(() => { agent.destroy(); parentPort.postMessage({ times, bytes }); }, (err) => { throw err; });
  `,
    { base, path, token: DEV_TOKEN, readers, maxPages: Number.isFinite(maxPages) ? maxPages : null },
  );
}

async function main() {
  const loadBefore = load();
  const started = performance.now();
  const remote = await createBareRepo();
  const seedStart = performance.now();
  const files = await seedInChild(remote.url, TEAMS, { filesFrom: "v3" });
  const seedMs = performance.now() - seedStart;
  const berth = await startBerth({ remoteUrl: remote.url, listen: true, env: { BERTH_LOG_LEVEL: "warn" } });
  let rssPeak = 0;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 50);
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const rows: Array<[string, string]> = [];
  /** Runs `fn` while /healthz is polled; the caller's row goes first, then /healthz's during it. */
  let healthRow: [string, string] | undefined;
  const health = async <T>(fn: () => Promise<T>): Promise<T> => {
    const poll = pollHealth(berth.url);
    const out = await fn();
    poll.stop();
    const times = await poll.result;
    healthRow = [
      "  /healthz meanwhile",
      `p50 ${ms(percentile(times, 50))}, max ${ms(Math.max(...times))} (${times.length} probes)`,
    ];
    return out;
  };
  const row = (k: string, v: string) => {
    rows.push([k, v]);
    if (healthRow) rows.push(healthRow);
    healthRow = undefined;
  };
  const one = async (path: string) => {
    const w = await walkPages(berth.url, path, 1, 1).result;
    return { ms: w.times[0] ?? Number.NaN, bytes: w.bytes[0] ?? 0 };
  };

  const first = await health(() => one("/v1/fleet/drift"));
  row(`first read after start (renders ${TEAMS} teams)`, `${ms(first.ms)}, ${(first.bytes / 1e6).toFixed(2)} MB`);
  const commit = async (name: string) => {
    const res = await fetch(`${berth.url}/v1/teams`, {
      method: "POST",
      headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ name, owners: [OWNER], environments: ["dev", "prod"] }),
    });
    if (res.status !== 201) throw new Error(`onboarding ${name}: HTTP ${res.status}`);
  };
  await commit("bench-drift-a");
  const afterCommit = await health(() => one("/v1/fleet/drift"));
  row(
    "first read after a commit (diffs)",
    `${ms(afterCommit.ms)} (${berth.services.drift.stats().lastUpdate?.rendered} team rendered)`,
  );
  await commit("bench-drift-b");
  const afterCommitNoDiffs = await health(() => one("/v1/fleet/drift?diffs=false"));
  row("first read after a commit (diffs=false)", ms(afterCommitNoDiffs.ms));

  const walk = await health(() => walkPages(berth.url, "/v1/fleet/drift", 1).result);
  row(
    "every page in turn (diffs, limit 50)",
    `${walk.times.length} pages: p50 ${ms(percentile(walk.times, 50))}, p99 ${ms(percentile(walk.times, 99))}; largest ${(Math.max(...walk.bytes) / 1e6).toFixed(2)} MB, all ${(walk.bytes.reduce((a, b) => a + b, 0) / 1e6).toFixed(1)} MB`,
  );
  const summaries = await walkPages(berth.url, "/v1/fleet/drift?diffs=false&limit=100", 1).result;
  row(
    "every page (diffs=false, limit 100)",
    `${summaries.times.length} pages: p50 ${ms(percentile(summaries.times, 50))}, p99 ${ms(percentile(summaries.times, 99))}; largest ${(Math.max(...summaries.bytes) / 1e3).toFixed(0)} kB`,
  );
  await commit("bench-drift-c");
  const concurrent = await health(() => walkPages(berth.url, "/v1/fleet/drift", READERS).result);
  row(
    `${READERS} concurrent readers, every page (diffs), from a commit`,
    `${concurrent.times.length} reads: p50 ${ms(percentile(concurrent.times, 50))}, p99 ${ms(percentile(concurrent.times, 99))}`,
  );

  clearInterval(sampler);
  loop.disable();
  rows.push(["main event loop delay", `p99 ${ms(loop.percentile(99) / 1e6)}, max ${ms(loop.max / 1e6)}`]);
  rows.push(["RSS peak (process: API + drift worker + clients)", `${(rssPeak / 2 ** 20).toFixed(0)} MiB`]);
  rows.push(["seed", `${ms(seedMs)} (${files} files)`]);
  rows.push(["load (1/5/15 min)", `${loadBefore} → ${load()}`]);
  rows.push(["wall time", ms(performance.now() - started)]);
  process.stdout.write(`\n${TEAMS} drifted teams:\n${rows.map(([k, v]) => `  ${k.padEnd(48)} ${v}`).join("\n")}\n`);
  process.stdout.write(`\nload average is the machine's, shared; 2 cores. Remote: file:// on 127.0.0.1.\n`);
  await berth.stop();
  await remote.remove();
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${(err as Error).stack}\n`);
  process.exit(1);
});
