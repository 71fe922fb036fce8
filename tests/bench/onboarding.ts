/**
 * Benchmark harness for the request path. Prints figures; asserts nothing (targets are read by people,
 * not enforced by timed tests). Run: `npm run bench` (add `-- --http` to use the smart-HTTP remote).
 *
 * 1. One onboarding, HTTP request → commit pushed, sequentially: p50 / p99.
 * 2. The same files written by a raw `git add && git commit && git push` in a clone of the same remote.
 * 3. Wall time of 100 concurrent onboardings.
 */
import { percentile } from "./stats.js";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { DEV_TOKEN, startBerth } from "../support/berth.js";
import { startGitHttpServer } from "../support/git-http-server.js";
import { basicAuthEnv, createBareRepo, git, makeTempDir } from "../support/git-remotes.js";

const SEQUENTIAL = Number(process.env.BENCH_SEQUENTIAL ?? 40);
const CONCURRENT = Number(process.env.BENCH_CONCURRENT ?? 100);
const useHttp = process.argv.includes("--http");
const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";

const ms = (n: number) => `${n.toFixed(1)} ms`;

async function main() {
  const root = await makeTempDir("berth-bench-");
  const bare = await createBareRepo(join(root, "flux.git"));
  const USER = "bench";
  const PASS = "bench-token-123456";
  const server = useHttp ? await startGitHttpServer({ root, username: USER, password: PASS }) : undefined;
  const url = server ? server.repoUrl("flux.git") : bare.url;
  const gitEnv = server ? basicAuthEnv(USER, PASS) : {};
  const berth = await startBerth({
    remoteUrl: url,
    listen: true,
    env: { BERTH_LOG_LEVEL: "warn", ...(server ? { BERTH_GIT_TOKEN: PASS, BERTH_GIT_USERNAME: USER } : {}) },
  });
  const onboard = async (name: string) => {
    const res = await fetch(`${berth.url}/v1/teams`, {
      method: "POST",
      headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({
        name,
        owners: [OWNER],
        environments: ["dev", "prod"],
        roleAssignments: [{ role: "rg-contributor" }],
      }),
    });
    if (res.status !== 201) throw new Error(`${name}: HTTP ${res.status} ${await res.text()}`);
    return (await res.json()) as { files: Array<{ path: string }> };
  };

  // Warm-up: first clone, JIT.
  await onboard("warmup");

  const viaBerth: number[] = [];
  const renders: Array<Map<string, string>> = [];
  for (let i = 0; i < SEQUENTIAL; i++) {
    const start = performance.now();
    await onboard(`seq-${i}`);
    viaBerth.push(performance.now() - start);
  }
  // The same files, for raw git: read them back from Berth's own view of the remote.
  const tree = await berth.repo.snapshot(0);
  for (let i = 0; i < SEQUENTIAL; i++) {
    const files = new Map<string, string>();
    for (const path of await tree.list(`teams/seq-${i}`))
      files.set(path.replace(`seq-${i}`, `raw-${i}`), (await tree.read(path))!.replaceAll(`seq-${i}`, `raw-${i}`));
    renders.push(files);
  }

  const clone = join(root, "raw-clone");
  await git(["clone", "--quiet", url, clone], { env: gitEnv });
  const raw: number[] = [];
  for (const files of renders) {
    const start = performance.now();
    for (const [path, content] of files) {
      await mkdir(dirname(join(clone, path)), { recursive: true });
      await writeFile(join(clone, path), content);
    }
    await git(["add", "-A"], { cwd: clone });
    await git(["-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "--quiet", "-m", "raw"], {
      cwd: clone,
    });
    await git(["pull", "--quiet", "--rebase"], { cwd: clone, env: gitEnv });
    await git(["push", "--quiet", "origin", "HEAD:main"], { cwd: clone, env: gitEnv });
    raw.push(performance.now() - start);
  }

  const wallStart = performance.now();
  const results = await Promise.allSettled(Array.from({ length: CONCURRENT }, (_, i) => onboard(`par-${i}`)));
  const wall = performance.now() - wallStart;
  const failed = results.filter((r) => r.status === "rejected");

  const rows = [
    ["", "p50", "p99", "n"],
    [
      "Berth: POST /v1/teams → pushed",
      ms(percentile(viaBerth, 50)),
      ms(percentile(viaBerth, 99)),
      String(viaBerth.length),
    ],
    ["raw: write + git commit + git push", ms(percentile(raw, 50)), ms(percentile(raw, 99)), String(raw.length)],
  ];
  const width = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  process.stdout.write(
    `\nremote: ${useHttp ? "smart HTTP (git http-backend, Basic auth)" : "file://"} on 127.0.0.1; ${renders[0]!.size} files per team\n`,
  );
  for (const row of rows) process.stdout.write(`${row.map((cell, c) => cell.padEnd(width[c]!)).join("  ")}\n`);
  process.stdout.write(
    `${CONCURRENT} concurrent onboardings: ${ms(wall)} wall, ${failed.length} failed${failed.length ? `: ${(failed[0] as PromiseRejectedResult).reason}` : ""}\n`,
  );
  process.stdout.write(`writer: ${JSON.stringify(berth.repo.stats())}\n`);

  await berth.stop();
  await server?.stop();
  await rm(root, { recursive: true, force: true });
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${(err as Error).stack}\n`);
  process.exit(1);
});
