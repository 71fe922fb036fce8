/**
 * Benchmark of the read path: GET /v1/teams and GET /v1/teams/{name} over HTTP with a fleet of teams.
 * Prints figures; asserts nothing. Run: `npm run bench -- reads` (BENCH_TEAMS, default 1000).
 * Targets (issue 8): GET /v1/teams with 1,000 teams p50 ≤ 50 ms, GET /v1/teams/{name} ≤ 10 ms (issue 39: the same at
 * 5,000). The readers are fetch's, which ask for gzip; one row reads the whole list uncompressed too.
 *
 * The fleet is rendered by the real Onboarding and committed in one commit with plain git (onboarding
 * 1,000 teams through the API would measure the writer, not the reads).
 */
import { percentile } from "./stats.js";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { loadConfig, loadTemplateSet } from "@berth/config";
import { Onboarding, type RepoTree } from "@berth/core";
import { DEV_TOKEN, REPO_ROOT, startBerth, type RunningBerth } from "../support/berth.js";
import { createBareRepo, git, makeTempDir } from "../support/git-remotes.js";

const TEAMS = Number(process.env.BENCH_TEAMS ?? 1000);
const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const auth = { authorization: `Bearer ${DEV_TOKEN}` };

const ms = (n: number) => `${n.toFixed(1)} ms`;

/** The files of a fleet, in memory, as a RepoTree the domain can plan on. */
class FleetTree implements RepoTree {
  readonly revision = "bench";
  readonly files = new Map<string, string>();
  async read(path: string) {
    return this.files.get(path);
  }
  async list(dir: string) {
    return [...this.files.keys()].filter((p) => p.startsWith(`${dir}/`)).sort();
  }
  async hasContent(path: string, content: string) {
    return this.files.get(path) === content;
  }
  /** No history in memory: no commit holds any trailer. */
  async findCommit() {
    return undefined;
  }
}

async function fleet(teams: number): Promise<Map<string, string>> {
  const config = loadConfig(
    {
      BERTH_CONFIG_FILE: join(REPO_ROOT, "infra", "local", "berth.yaml"),
      BERTH_AUTH_MODE: "dev",
      BERTH_DEV_TOKEN: DEV_TOKEN,
    },
    REPO_ROOT,
  );
  const onboarding = new Onboarding(
    config.platform,
    await loadTemplateSet(config.templatesDir, config.platform.templateVersion),
  );
  const tree = new FleetTree();
  for (let i = 0; i < teams; i++) {
    const { change } = await onboarding.planCreate(tree, {
      name: `team-${String(i).padStart(4, "0")}`,
      description: `Team ${i}`,
      owners: [OWNER],
      environments: i % 3 === 0 ? ["dev", "prod"] : ["dev"],
      roleAssignments: i % 2 ? [{ role: "rg-contributor" }] : [],
      labels: { "cost-center": `cc-${i % 97}` },
    });
    for (const [path, content] of change.files) {
      if (content === null) tree.files.delete(path);
      else tree.files.set(path, content);
    }
  }
  return tree.files;
}

async function timed(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ ms: number; status: number; etag: string | null }> {
  const start = performance.now();
  const res = await fetch(url, { headers: { ...auth, ...headers } });
  await res.arrayBuffer();
  return { ms: performance.now() - start, status: res.status, etag: res.headers.get("etag") };
}

async function series(
  n: number,
  f: (i: number) => Promise<{ ms: number; status: number }>,
  expected = 200,
): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const r = await f(i);
    if (r.status !== expected) throw new Error(`HTTP ${r.status}`);
    out.push(r.ms);
  }
  return out;
}

/** 20 readers at once, each making 10 requests in turn: every request's time. */
async function concurrently(f: (reader: number, i: number) => Promise<{ ms: number; status: number }>) {
  const perReader = await Promise.all(Array.from({ length: 20 }, (_, reader) => series(10, (i) => f(reader, i))));
  return perReader.flat();
}

async function main() {
  const root = await makeTempDir("berth-bench-reads-");
  const remote = await createBareRepo(join(root, "flux.git"));
  const started = performance.now();
  const files = await fleet(TEAMS);
  const work = join(root, "work");
  await git(["init", "--quiet", "--initial-branch=main", work]);
  for (const [path, content] of files) {
    await mkdir(dirname(join(work, path)), { recursive: true });
    await writeFile(join(work, path), content);
  }
  await git(["add", "-A"], { cwd: work });
  await git(
    ["-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "--quiet", "-m", `fleet of ${TEAMS}`],
    { cwd: work },
  );
  await git(["push", "--quiet", remote.url, "HEAD:main"], { cwd: work });
  process.stdout.write(
    `fleet: ${TEAMS} teams, ${files.size} files, rendered and pushed in ${ms(performance.now() - started)}\n`,
  );

  let berth: RunningBerth = await startBerth({ remoteUrl: remote.url, listen: true, env: { BERTH_LOG_LEVEL: "warn" } });
  const list = `${berth.url}/v1/teams`;
  const cold = await timed(list);
  const rows: string[][] = [["", "p50", "p99", "n"]];
  const row = (label: string, samples: number[]) =>
    rows.push([label, ms(percentile(samples, 50)), ms(percentile(samples, 99)), String(samples.length)]);
  rows.push([`GET /v1/teams, first after start (parses ${TEAMS})`, ms(cold.ms), "", "1"]);

  row(`GET /v1/teams (${TEAMS} teams), one reader`, await series(50, () => timed(list)));
  row(`GET /v1/teams (${TEAMS} teams), 20 concurrent readers`, await concurrently(() => timed(list)));
  // fetch asks for gzip; a reader that does not (curl without --compressed) gets the JSON as is.
  const identity = { "accept-encoding": "identity" };
  row(
    `GET /v1/teams (${TEAMS} teams), 20 concurrent readers, not gzipped`,
    await concurrently(() => timed(list, identity)),
  );
  row("GET /v1/teams?limit=100", await series(50, () => timed(`${list}?limit=100`)));
  const sizes = await Promise.all(
    ["gzip", "identity"].map(async (coding) => {
      const res = await fetch(list, { headers: { ...auth, "accept-encoding": coding } });
      await res.arrayBuffer();
      return `${coding} ${res.headers.get("content-length")} bytes`;
    }),
  );
  process.stdout.write(`whole list on the wire: ${sizes.join(", ")}\n`);
  const { etag } = await timed(list);
  row("GET /v1/teams, If-None-Match → 304", await series(50, () => timed(list, { "if-none-match": etag! }), 304));
  row(
    "GET /v1/teams/{name}",
    await series(200, (i) => timed(`${list}/team-${String((i * 7) % TEAMS).padStart(4, "0")}`)),
  );
  row(
    "GET /v1/teams/{name}, 20 concurrent readers",
    await concurrently((reader, i) => timed(`${list}/team-${String((reader * 10 + i) % TEAMS).padStart(4, "0")}`)),
  );

  // After a write: the list is rebuilt, re-reading only the team that changed.
  const afterWrite: number[] = [];
  for (let i = 0; i < 10; i++) {
    const res = await fetch(`${list}/team-0001`, {
      method: "PUT",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ description: `changed ${i}`, owners: [OWNER], environments: ["dev"] }),
    });
    if (res.status !== 200) throw new Error(`PUT: HTTP ${res.status}`);
    afterWrite.push((await timed(list)).ms);
  }
  row("GET /v1/teams right after a write (one team re-read)", afterWrite);
  await berth.stop();

  // A restarted replica: nothing cached.
  berth = await startBerth({ remoteUrl: remote.url, listen: true, env: { BERTH_LOG_LEVEL: "warn" } });
  const restarted = await timed(`${berth.url}/v1/teams`);
  rows.push(["GET /v1/teams, first after a restart", ms(restarted.ms), "", "1"]);
  await berth.stop();

  const width = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? "").length)));
  process.stdout.write(
    `\nberth read benchmark over HTTP on 127.0.0.1 (load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")})\n`,
  );
  for (const r of rows) process.stdout.write(`${r.map((cell, c) => (cell ?? "").padEnd(width[c]!)).join("  ")}\n`);
  await rm(root, { recursive: true, force: true });
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${(err as Error).stack}\n`);
  process.exit(1);
});
