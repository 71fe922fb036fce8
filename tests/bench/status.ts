/**
 * Status at fleet scale (issue 24, item 8). Prints figures; asserts nothing. Run:
 *
 *   ETCD_BIN=... KUBE_APISERVER_BIN=... npm run bench -- status          # 5,000 teams
 *   BENCH_STATUS_TEAMS=1000 npm run bench -- status
 *
 * A real kube-apiserver holds N Team objects (Berth's CRD), each with the status a controller writes (the
 * whole chain, Ready); a local remote holds the same N teams (v1, on dev and prod: three clusters each).
 * Berth's API (real wiring, the status cache on its default 5 s TTL, every platform cluster read from that
 * apiserver, so each cluster's listing holds N objects) then measures
 *   - GET /v1/teams/{name}/status, one after another for 15 s (so listings expire and refresh meanwhile):
 *     p50 / p99 / max;
 *   - GET /v1/status (every team on every cluster): median of 5;
 *   - a staged rollout whose first wave holds 1,000 teams: the engine's first step (the wave's commit and
 *     its first gate evaluation), then one gate evaluation of the 1,000 teams × 3 clusters on its own,
 *     after the listings expired;
 * with the machine's load average before and after (it is shared: quote both with a figure).
 */
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { Admin, INFRA, readManifests } from "../controller/helpers.js";
import { DEV_TOKEN, startBerth } from "../support/berth.js";
import { createBareRepo, inspectRemote } from "../support/git-remotes.js";
import { startKubeCluster } from "../support/kube-cluster.js";
import { load, ms, OWNER, seed, teamName } from "./fleet-seed.js";
import { percentile } from "./stats.js";

const N = Number(process.env.BENCH_STATUS_TEAMS ?? 5000);
const WAVE = Math.min(1000, N);
const CHAIN = [
  "Rendered",
  "KustomizationReady",
  "ResourceGroupReady",
  "IdentityReady",
  "FederatedCredentialsReady",
  "FederationMatchesIssuer",
  "RoleAssignmentsReady",
  "PlatformValuesFresh",
  "CredentialWritten",
  "Ready",
];
const auth = { authorization: `Bearer ${DEV_TOKEN}` };

async function mapLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

async function main(): Promise<void> {
  console.log(`status at fleet scale: ${N} teams; load before: ${load()}`);
  const cluster = await startKubeCluster({
    crdDirs: false,
    crds: readManifests(join(INFRA, "crds")),
    startTimeoutMs: 240_000,
  });
  const remote = await createBareRepo();
  try {
    let started = performance.now();
    await seed(remote.url, N);
    const revision = (await inspectRemote(remote.url)).head;
    console.log(`  seeded the remote: ${ms(performance.now() - started)}`);

    started = performance.now();
    const admin = new Admin(cluster.kubeConfig());
    const at = new Date().toISOString();
    const status = {
      observedGeneration: 1,
      revision: `main@sha1:${revision}`,
      identity: { clientId: "44444444-4444-4444-8444-444444444444" },
      conditions: CHAIN.map((type) => ({
        type,
        status: "True",
        reason: "Succeeded",
        message: `${type} is true`,
        lastTransitionTime: at,
      })),
    };
    await mapLimit(
      Array.from({ length: N }, (_, i) => teamName(i)),
      16,
      async (name) => {
        await admin.create({
          apiVersion: "berth.dev/v1alpha1",
          kind: "Team",
          metadata: { name },
          spec: { description: "", owners: [OWNER], environments: ["dev", "prod"] },
          status,
        });
      },
    );
    console.log(`  created ${N} Team objects with status: ${ms(performance.now() - started)}`);

    const kubeconfig = await cluster.writeKubeconfigFile("admin");
    const berth = await startBerth({
      remoteUrl: remote.url,
      listen: true,
      startEngine: false,
      env: { BERTH_LOG_LEVEL: "warn" },
      config: (raw) => {
        const clusters = (raw.platform.environments as Array<{ clusters: Array<{ name: string }> }>).flatMap((e) =>
          e.clusters.map((c) => c.name),
        );
        raw.api.clusters = Object.fromEntries(clusters.map((c) => [c, { kubeconfig }]));
      },
    });
    try {
      const get = async (url: string) => {
        const t = performance.now();
        const res = await fetch(`${berth.url}${url}`, { headers: auth });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`GET ${url}: HTTP ${res.status}`);
        return performance.now() - t;
      };
      await get(`/v1/teams/${teamName(0)}/status`); // the first listing of each cluster

      const times: number[] = [];
      const until = performance.now() + 15_000;
      for (let i = 0; performance.now() < until; i++) {
        times.push(await get(`/v1/teams/${teamName((i * 7919) % N)}/status`));
        await sleep(20);
      }
      console.log(
        `  GET /v1/teams/{name}/status × ${times.length} over 15 s: p50 ${ms(percentile(times, 50))}, p99 ${ms(percentile(times, 99))}, max ${ms(Math.max(...times))} (load ${load()})`,
      );

      const fleet: number[] = [];
      for (let i = 0; i < 5; i++) fleet.push(await get("/v1/status"));
      console.log(
        `  GET /v1/status (${N} teams × 3 clusters): median of 5 ${ms(percentile(fleet, 50))} (load ${load()})`,
      );

      const names = Array.from({ length: WAVE }, (_, i) => teamName(i));
      const created = await fetch(`${berth.url}/v1/rollouts`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({
          description: "bench",
          target: { templateVersion: "v3" },
          waves: [{ name: "first", selector: { names } }, { name: "rest" }],
          gate: { timeoutSeconds: 3600 },
        }),
      });
      if (created.status !== 201) throw new Error(`POST /v1/rollouts: HTTP ${created.status} ${await created.text()}`);
      const id = ((await created.json()) as { rollout: { metadata: { name: string } } }).rollout.metadata.name;
      const { engine } = berth.services;
      started = performance.now();
      await engine.tick();
      const first = engine.progress(id);
      console.log(
        `  engine step 1 (commit ${WAVE} teams, then the first gate evaluation): ${ms(performance.now() - started)}; verdict ${first?.verdict} (${first?.waiting} waiting) (load ${load()})`,
      );
      await sleep(5_500); // every listing has expired: the evaluation below refreshes them
      started = performance.now();
      await engine.tick();
      console.log(
        `  gate evaluation of ${WAVE} teams × 3 clusters: ${ms(performance.now() - started)}; verdict ${engine.progress(id)?.verdict} (load ${load()})`,
      );
    } finally {
      await berth.stop();
    }
  } finally {
    await cluster.stop();
    await remote.remove();
  }
  console.log(`load after: ${load()}`);
}

await main();
