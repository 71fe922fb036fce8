/**
 * Pull-request mode (issue 38, docs/pull-requests.md): how long review's machinery takes, apart from the reviewer.
 * Prints figures; asserts nothing. Run (after `npm test` has built the cluster's components and Gitea):
 *
 *   npm run bench -- review
 *   BENCH_REVIEW_SAMPLES=20 BENCH_REVIEW_CONCURRENT=20 npm run bench -- review
 *
 * One platform as tests/gitea/flux-review.test.ts builds it: the fleet repository on a real Gitea (built from its Go
 * module), real Flux 2.9 on a real apiserver with every GitRepository polling every 10 minutes, Berth's API in
 * pull-request mode and its controller, ASO played; Gitea's push webhook goes to Receiver berth-teams-forge
 * (infra/flux/pull-requests/forge-receiver.yaml). Sequentially, BENCH_REVIEW_SAMPLES times:
 *   - POST /v1/teams → 202 with the open pull request (render, commit on the team's branch, push, open it);
 *   - Gitea's test of the pull request against main (until it is mergeable), and the merge request;
 *   - merge → the team's namespace on the cluster (webhook → Receiver → fetch → artifacts → apply);
 *   - merge → the team Ready in its status (GET /v1/teams/{name}/status, as `berth status --watch` polls it).
 * Then BENCH_REVIEW_CONCURRENT onboardings at once: the wall time until every one has its open pull request.
 * With the machine's load before and after.
 */
import { cpus, totalmem } from "node:os";
import { performance } from "node:perf_hooks";
import { statusResponse } from "@berth/api-contract";
import { DEV_TOKEN } from "../support/berth.js";
import { startReviewPlatform } from "../support/review-platform.js";
import { load, ms, OWNER } from "./fleet-seed.js";
import { percentile } from "./stats.js";

const SAMPLES = Number(process.env.BENCH_REVIEW_SAMPLES ?? 10);
const CONCURRENT = Number(process.env.BENCH_REVIEW_CONCURRENT ?? 20);

async function main() {
  const loadBefore = load();
  const { gitea, repo, platform, stop } = await startReviewPlatform({ apiEnv: { BERTH_LOG_LEVEL: "warn" } });
  try {
    const propose = async (name: string) => {
      const res = await fetch(`${platform.berth.url}/v1/teams`, {
        method: "POST",
        headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ name, owners: [OWNER], environments: ["dev"] }),
      });
      if (res.status !== 202) throw new Error(`${name}: HTTP ${res.status} ${await res.text()}`);
      return ((await res.json()) as { pullRequest: { number: number } }).pullRequest.number;
    };
    const until = async <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 300_000): Promise<T> => {
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        const value = await probe();
        if (value !== undefined) return value;
        if (performance.now() > deadline) throw new Error(`timed out: ${what}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const ready = async (name: string) => {
      const res = await fetch(`${platform.berth.url}/v1/teams/${name}/status`, {
        headers: { authorization: `Bearer ${DEV_TOKEN}` },
      });
      return res.status === 200 && statusResponse.parse(await res.json()).ready ? true : undefined;
    };

    const toPullRequest: number[] = [];
    const toMergeable: number[] = [];
    const toNamespace: number[] = [];
    const toReady: number[] = [];
    for (let i = 0; i <= SAMPLES; i++) {
      const name = `bench-${String(i).padStart(3, "0")}`;
      const posted = performance.now();
      const number = await propose(name);
      const opened = performance.now();
      await gitea.merge(repo, number);
      const merged = performance.now();
      await until(`namespace ${name}`, () => platform.admin.get("v1", "Namespace", undefined, name));
      const applied = performance.now();
      await until(`${name} Ready`, () => ready(name));
      const done = performance.now();
      if (i === 0) continue; // warm-up: first clone, JIT, Flux's first reconcile of the slice
      toPullRequest.push(opened - posted);
      toMergeable.push(merged - opened);
      toNamespace.push(applied - merged);
      toReady.push(done - merged);
    }

    const started = performance.now();
    await Promise.all(Array.from({ length: CONCURRENT }, (_, i) => propose(`burst-${String(i).padStart(3, "0")}`)));
    const burst = performance.now() - started;

    const row = (what: string, samples: number[]) =>
      `| ${what} | ${ms(percentile(samples, 50))} | ${ms(percentile(samples, 99))} | ${ms(Math.max(...samples))} |`;
    console.log(
      [
        `Pull-request mode on Gitea with real Flux (${SAMPLES} sequential onboardings after one warm-up; ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB)`,
        "",
        "| step | p50 | p99 | max |",
        "|---|---|---|---|",
        row("POST → 202 with the open pull request", toPullRequest),
        row("open → merged (Gitea tests it against main, then merges)", toMergeable),
        row("merge → namespace on the cluster (webhook → Receiver → Flux)", toNamespace),
        row("merge → team Ready in its status", toReady),
        "",
        `${CONCURRENT} onboardings at once → ${CONCURRENT} open pull requests: ${ms(burst)} wall`,
        `load average (1, 5, 15 min): before ${loadBefore}; after ${load()}`,
      ].join("\n"),
    );
  } finally {
    await stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
