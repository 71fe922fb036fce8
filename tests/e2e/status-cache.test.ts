/**
 * The API's per-cluster status cache against a real kube-apiserver: however many readers ask (status
 * API calls, CLI watchers, open status pages), a cluster is listed once per TTL; concurrent readers share
 * one request; a cluster that grants only `get` is read with one cached GET per team; an unreachable or
 * silent cluster answers "unreachable" fast. Requests are counted on the Kubernetes client itself.
 */
// needs: cluster
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { statusResponse } from "@berth/api-contract";
import type { Cluster } from "@berth/core";
import { KubeClient, type RequestInit } from "@berth/kube-runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KubeTeamStatusReader } from "../../apps/api/src/adapters/team-status.js";
import { Admin, INFRA, readManifests } from "../controller/helpers.js";
import { DEV_TOKEN, startBerth } from "../support/berth.js";
import { readAnswer } from "../support/contract.js";
import { createBareRepo } from "../support/git-remotes.js";
import { startKubeCluster, type KubeCluster } from "../support/kube-cluster.js";
import { sample } from "../support/prometheus.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const DEV: Cluster = { name: "aks-dev-weu", environment: "dev", vars: {} } as Cluster;

/** The Team objects' collection: a request to it lists, a request below it gets one. */
const TEAMS = "/apis/berth.dev/v1alpha1/teams";

/** A client whose list/get requests are counted before they go to the cluster. */
class CountingClient extends KubeClient {
  readonly calls = { list: 0, get: 0 };
  /** Set: LIST requests never answer (a cluster that stopped answering). */
  hang = false;
  override request<T = unknown>(path: string, init?: RequestInit): Promise<T> {
    const list = path === TEAMS;
    if (list) this.calls.list += 1;
    else if (path.startsWith(`${TEAMS}/`)) this.calls.get += 1;
    if (list && this.hang) return new Promise(() => {});
    return super.request<T>(path, init);
  }
}

function countingClient(kc: KubeConfig) {
  const client = new CountingClient(kc);
  return { client, calls: client.calls };
}

describe("the per-cluster status cache", () => {
  let cluster: KubeCluster;
  let admin: Admin;

  beforeAll(async () => {
    cluster = await startKubeCluster({
      crdDirs: false,
      crds: readManifests(join(INFRA, "crds")),
      startTimeoutMs: 240_000,
    });
    admin = new Admin(cluster.kubeConfig());
    for (const [name, verbs] of [
      ["lister", ["get", "list"]],
      ["getter", ["get"]],
    ] as const) {
      await admin.create({
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRole",
        metadata: { name: `teams-${name}` },
        rules: [{ apiGroups: ["berth.dev"], resources: ["teams"], verbs: [...verbs] }],
      });
      await admin.create({
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: `teams-${name}` },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: `teams-${name}` },
        subjects: [{ kind: "User", name, apiGroup: "rbac.authorization.k8s.io" }],
      });
    }
    for (const name of ["alpha", "bravo", "charlie"]) {
      const team = await admin.create({
        apiVersion: "berth.dev/v1alpha1",
        kind: "Team",
        metadata: { name },
        spec: { description: "", owners: [OWNER], environments: ["dev"] },
      });
      if (name !== "charlie") {
        await admin.setStatus(team, {
          conditions: [
            {
              type: "Ready",
              status: "True",
              reason: "Ready",
              message: "ok",
              lastTransitionTime: new Date().toISOString(),
            },
          ],
          observedGeneration: 1,
        });
      }
    }
  }, 300_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it("lists a cluster once per TTL however many readers ask, and shares the request in flight", async () => {
    const { client, calls } = countingClient(cluster.kubeConfigFor("lister"));
    let now = 1_000_000;
    const reader = new KubeTeamStatusReader(new Map([["aks-dev-weu", client]]), { ttlMs: 5_000, now: () => now });
    const teams = ["alpha", "bravo", "charlie", "delta"];
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => reader.read(teams[i % 4]!, [DEV])));
    expect(calls).toEqual({ list: 1, get: 0 });
    expect(answers.slice(0, 4).map(([s]) => `${s!.state}/${s!.ready}`)).toEqual([
      "reported/true",
      "reported/true",
      "pending/false",
      "absent/false",
    ]);

    now += 4_999;
    await reader.read("alpha", [DEV]);
    expect(calls.list).toBe(1);
    now += 1;
    // Expired: the next listing starts, and meanwhile the last one answers at once (stale by at most TTL + timeout).
    await Promise.all([reader.read("alpha", [DEV]), reader.read("bravo", [DEV])]);
    expect(calls.list).toBe(2);
    expect(reader.stats()).toEqual({ lists: 2, gets: 0, hits: 1, stale: 2, misses: 40 });
  });

  it("answers from the last listing while the next one is read, so a slow cluster never holds a reader", async () => {
    const { client: slow } = countingClient(cluster.kubeConfigFor("lister"));
    let now = 1_000_000;
    const reader = new KubeTeamStatusReader(new Map([["aks-dev-weu", slow]]), {
      ttlMs: 5_000,
      timeoutMs: 2_000,
      now: () => now,
    });
    expect((await reader.read("alpha", [DEV]))[0]!.state).toBe("reported");
    slow.hang = true; // a cluster that stopped answering
    now += 5_000;
    // The listing expired and the next one hangs: the last one answers at once, not after the timeout.
    const [stale] = await reader.read("alpha", [DEV]);
    expect(stale).toMatchObject({ state: "reported", ready: true });
    expect(reader.stats()).toMatchObject({ lists: 2, stale: 1 });
    // Past TTL + timeout the last listing is too old to stand in: the reader waits for the cluster (unreachable).
    now += 2_000;
    expect((await reader.read("alpha", [DEV]))[0]!.state).toBe("unreachable");
  });

  it("reads a large cluster in pages, every Team object once", async () => {
    const { client, calls } = countingClient(cluster.kubeConfigFor("lister"));
    const reader = new KubeTeamStatusReader(new Map([["aks-dev-weu", client]]), { ttlMs: 60_000, pageSize: 2 });
    const states = await Promise.all(
      ["alpha", "bravo", "charlie", "delta"].map(async (team) => (await reader.read(team, [DEV]))[0]!.state),
    );
    expect(states).toEqual(["reported", "reported", "pending", "absent"]);
    // Three Team objects, two per page: one listing of two LIST requests.
    expect(calls.list).toBe(2);
    expect(reader.stats().lists).toBe(1);
  });

  it("reads with one cached GET per team where it may not list", async () => {
    const { client, calls } = countingClient(cluster.kubeConfigFor("getter"));
    const reader = new KubeTeamStatusReader(new Map([["aks-dev-weu", client]]), { ttlMs: 60_000 });
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => reader.read(i % 2 ? "alpha" : "charlie", [DEV])),
    );
    expect(answers.slice(0, 2).map(([s]) => s!.state)).toEqual(["pending", "reported"]);
    // One forbidden list, then never again; one GET per team.
    expect(calls).toEqual({ list: 1, get: 2 });
    await reader.read("alpha", [DEV]);
    expect(calls).toEqual({ list: 1, get: 2 });
  });

  it("answers unreachable fast for a cluster that refuses or never answers, and remembers it for the TTL", async () => {
    const silent: Server = createServer((socket: Socket) => socket.on("error", () => undefined)); // accepts, never answers
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const port = (silent.address() as { port: number }).port;
    try {
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: "silent", server: `https://127.0.0.1:${port}`, skipTLSVerify: true }],
        users: [{ name: "u", token: "t" }],
        contexts: [{ name: "c", cluster: "silent", user: "u" }],
        currentContext: "c",
      });
      const { client, calls } = countingClient(kc);
      const reader = new KubeTeamStatusReader(new Map([["aks-dev-weu", client]]), { ttlMs: 60_000, timeoutMs: 500 });
      const started = performance.now();
      const [status] = await reader.read("alpha", [DEV]);
      expect(status!.state).toBe("unreachable");
      expect(performance.now() - started).toBeLessThan(10_000);
      await reader.read("bravo", [DEV]);
      expect(calls.list).toBe(1);
    } finally {
      silent.close();
    }
  });

  it("serves the status API, the fleet and every viewer from one listing per cluster", async () => {
    const remote = await createBareRepo();
    const berth = await startBerth({
      remoteUrl: remote.url,
      env: {
        BERTH_STATUS_KUBECONFIGS: `aks-dev-weu=${await cluster.writeKubeconfigFile("lister")}`,
        BERTH_STATUS_CACHE_SECONDS: "60",
      },
    });
    try {
      const headers = { authorization: `Bearer ${DEV_TOKEN}` };
      for (const name of ["alpha", "bravo"]) {
        expect(
          (
            await berth.server.inject({
              method: "POST",
              url: "/v1/teams",
              headers,
              payload: { name, owners: [OWNER], environments: ["dev"] },
            })
          ).statusCode,
        ).toBe(201);
      }
      const replies = await Promise.all([
        ...Array.from({ length: 15 }, () => berth.server.inject({ url: "/v1/teams/alpha/status", headers })),
        ...Array.from({ length: 15 }, () => berth.server.inject({ url: "/v1/status", headers })),
      ]);
      expect(replies.every((r) => r.statusCode === 200)).toBe(true);
      expect(readAnswer(replies[0]!, statusResponse)).toMatchObject({
        team: "alpha",
        ready: true,
        clusters: [{ cluster: "aks-dev-weu", state: "reported" }],
      });
      const reader = berth.statusReader;
      if (!(reader instanceof KubeTeamStatusReader))
        throw new Error("startBerth without a statusReader option uses the configured KubeTeamStatusReader");
      expect(reader.stats()).toMatchObject({ lists: 1, gets: 0 });
      expect((await berth.server.inject({ url: "/v1/teams/bravo/status", headers })).statusCode).toBe(200); // from the listing
      const metrics = await berth.services.metrics.registry.metrics();
      expect(sample(metrics, "berth_api_status_cache_requests_total", { verb: "list" })).toBe(1);
      expect(
        sample(metrics, "berth_api_status_cache_reads_total", { result: "miss" })! +
          sample(metrics, "berth_api_status_cache_reads_total", { result: "hit" })!,
      ).toBe(reader.stats().misses + reader.stats().hits);
      expect(sample(metrics, "berth_api_status_cache_reads_total", { result: "hit" })).toBeGreaterThan(0);
    } finally {
      await berth.stop();
      await remote.remove();
    }
  });
});
