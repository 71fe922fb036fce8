/**
 * Leader election on a real Lease: one leader among candidates, release on stop with immediate
 * takeover, takeover of a crashed holder's Lease after leaseDuration, and a leader whose renewals
 * are refused (RBAC removed) stepping down by its renew deadline.
 */
// needs: cluster
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  CoordinationV1Api,
  CoreV1Api,
  RbacAuthorizationV1Api,
  V1MicroTime,
  type KubeConfig,
} from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { kubeRequest } from "../../../tests/support/kube-http.js";
import { LeaderElector } from "../src/leader.js";
import { createControllerMetrics } from "../src/metrics.js";
import { recordingLogger, sleep, startKubeCluster, type KubeCluster } from "./support.js";

// Short but valid timings: leaseDuration > renewDeadline > 1.2 × retryPeriod.
const FAST = { leaseDurationSec: 2, renewDeadlineSec: 1.5, retryPeriodSec: 0.25 };

// Concurrent: every test has its own Lease, and most of their time is spent waiting.
describe.concurrent("LeaderElector (real kube-apiserver)", () => {
  let cluster: KubeCluster;
  let admin: KubeConfig;
  let leases: CoordinationV1Api;
  const electors: LeaderElector[] = [];

  beforeAll(async () => {
    cluster = await startKubeCluster({ crdDirs: false });
    admin = cluster.kubeConfig();
    leases = admin.makeApiClient(CoordinationV1Api);
    await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: "election" } } });
  });

  afterAll(async () => {
    await Promise.all(electors.map((e) => e.stop()));
    await cluster?.stop();
  });

  function candidate(
    kc: KubeConfig,
    name: string,
    identity: string,
    extra: Partial<ConstructorParameters<typeof LeaderElector>[1]> = {},
  ) {
    const state = { started: 0, stopped: 0, signals: [] as AbortSignal[] };
    const elector = new LeaderElector(kc, {
      namespace: "election",
      name,
      identity,
      ...FAST,
      onStartedLeading: (signal) => {
        state.started++;
        state.signals.push(signal);
      },
      onStoppedLeading: () => {
        state.stopped++;
      },
      ...extra,
    });
    electors.push(elector);
    return { elector, state };
  }

  const readLease = (name: string) => leases.readNamespacedLease({ name, namespace: "election" });

  it("elects exactly one of two candidates; stop() releases and the other takes over at once", async () => {
    const registry = new Registry();
    const metrics = createControllerMetrics(registry);
    const a = candidate(admin, "pair", "a", { metrics });
    const b = candidate(admin, "pair", "b");
    a.elector.start();
    b.elector.start();
    await vi.waitFor(() => expect(a.elector.isLeader() || b.elector.isLeader(), "a leader").toBe(true), {
      timeout: 10_000,
      interval: 25,
    });
    // Sample for a while: never two leaders, never none once elected.
    for (let i = 0; i < 10; i++) {
      expect(Number(a.elector.isLeader()) + Number(b.elector.isLeader())).toBe(1);
      await sleep(50);
    }
    const [leader, follower] = a.elector.isLeader() ? [a, b] : [b, a];
    const leaderId = leader === a ? "a" : "b";
    const lease = await readLease("pair");
    expect(lease.spec?.holderIdentity).toBe(leaderId);
    expect(lease.spec?.leaseDurationSeconds).toBe(2);
    expect(leader.state.started).toBe(1);
    expect(follower.state.started).toBe(0);
    if (leader === a) expect((await metrics.isLeader.get()).values[0]?.value).toBe(1);
    // Times are MicroTime on the wire: RFC 3339 with 6 fractional digits.
    const raw = await kubeRequest(admin, {
      method: "GET",
      path: "/apis/coordination.k8s.io/v1/namespaces/election/leases/pair",
    });
    const wire = (raw.json as { spec: { renewTime: string; acquireTime: string } }).spec;
    expect(wire.renewTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(wire.acquireTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    // Renewals move renewTime.
    await sleep(600);
    expect(Date.parse((await readLease("pair")).spec?.renewTime as unknown as string)).toBeGreaterThan(
      Date.parse(wire.renewTime),
    );

    const t0 = performance.now();
    await leader.elector.stop();
    expect(leader.elector.isLeader()).toBe(false);
    expect(leader.state.stopped).toBe(1);
    expect(leader.state.signals[0]?.aborted).toBe(true);
    if (leader === a) expect((await metrics.isLeader.get()).values[0]?.value).toBe(0);
    await vi.waitFor(() => expect(follower.elector.isLeader(), "takeover").toBe(true), {
      timeout: 5_000,
      interval: 25,
    });
    const takeoverMs = performance.now() - t0;
    // Far below leaseDuration (2 s): the released Lease is taken on the follower's next retry.
    expect(takeoverMs).toBeLessThan(1_500);
    const after = await readLease("pair");
    expect(after.spec?.holderIdentity).toBe(leaderId === "a" ? "b" : "a");
    expect(after.spec?.leaseTransitions).toBe((lease.spec?.leaseTransitions ?? 0) + 1); // release keeps the count; the takeover adds one
    expect(follower.state.started).toBe(1);
  });

  it("takes over a crashed holder's Lease after about leaseDuration, not before", async () => {
    // A holder that "crashed": it renewed just now and will never renew again.
    const t = new V1MicroTime(Date.now());
    await leases.createNamespacedLease({
      namespace: "election",
      body: {
        metadata: { name: "crashed", namespace: "election" },
        spec: { holderIdentity: "ghost", leaseDurationSeconds: 2, acquireTime: t, renewTime: t, leaseTransitions: 3 },
      },
    });
    const c = candidate(admin, "crashed", "heir");
    const t0 = performance.now();
    c.elector.start();
    await sleep(1_200);
    expect(c.elector.isLeader()).toBe(false);
    await vi.waitFor(() => expect(c.elector.isLeader(), "takeover").toBe(true), { timeout: 5_000, interval: 25 });
    const ms = performance.now() - t0;
    expect(ms).toBeGreaterThanOrEqual(1_900);
    expect(ms).toBeLessThan(3_500);
    const lease = await readLease("crashed");
    expect(lease.spec?.holderIdentity).toBe("heir");
    expect(lease.spec?.leaseTransitions).toBe(4);
  });

  it("steps down by its renew deadline when renewals are refused (RBAC removed)", async () => {
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: "election",
      body: {
        metadata: { name: "lease-writer", namespace: "election" },
        rules: [{ apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "create", "update"] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: "election",
      body: {
        metadata: { name: "controller-lease-writer", namespace: "election" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "lease-writer" },
        subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "controller" }],
      },
    });
    const log = recordingLogger();
    const c = candidate(cluster.kubeConfigFor("controller"), "revoked", "controller-0", { logger: log });
    c.elector.start();
    await vi.waitFor(() => expect(c.elector.isLeader(), "leadership").toBe(true), { timeout: 10_000, interval: 25 });
    const signal = c.state.signals[0]!;
    expect(signal.aborted).toBe(false);

    await rbac.deleteNamespacedRoleBinding({ name: "controller-lease-writer", namespace: "election" });
    const t0 = performance.now();
    await vi.waitFor(() => expect(!c.elector.isLeader(), "step down").toBe(true), { timeout: 5_000, interval: 25 });
    const ms = performance.now() - t0;
    expect(ms).toBeLessThan(1_500 + 500); // renewDeadline + slack
    expect(signal.aborted).toBe(true);
    expect(c.state.stopped).toBe(1);
    expect(log.entries.some((e) => e.level === "warn" && e.obj.kind === "forbidden")).toBe(true);
    // Still a candidate, but it cannot win while forbidden.
    await sleep(500);
    expect(c.elector.isLeader()).toBe(false);
    expect(c.state.started).toBe(1);
  });

  it("stop(): the leader's work drains first, then onStoppedLeading, then the Lease is released", async () => {
    const order: string[] = [];
    const c = candidate(admin, "drain", "solo", {
      onStartedLeading: async (signal) => {
        order.push("started");
        await new Promise((r) => signal.addEventListener("abort", r, { once: true }));
        order.push("aborted");
        await sleep(300); // e.g. in-flight reconciles finishing
        const lease = await readLease("drain");
        order.push(`drained while holder=${lease.spec?.holderIdentity}`);
      },
      onStoppedLeading: () => order.push("stopped"),
    });
    c.elector.start();
    await vi.waitFor(() => expect(c.elector.isLeader(), "leadership").toBe(true), { timeout: 10_000, interval: 25 });
    await c.elector.stop();
    expect(order).toEqual(["started", "aborted", "drained while holder=solo", "stopped"]);
    const lease = await readLease("drain");
    expect(lease.spec?.holderIdentity).toBeUndefined();
    expect(lease.spec?.leaseDurationSeconds).toBe(1);
  });

  it("rejects timings that could let two leaders overlap", () => {
    const base = {
      namespace: "election",
      name: "x",
      identity: "i",
      onStartedLeading: () => {},
      onStoppedLeading: () => {},
    };
    expect(() => new LeaderElector(admin, { ...base, leaseDurationSec: 10, renewDeadlineSec: 10 })).toThrow(
      /leaseDurationSec/,
    );
    expect(() => new LeaderElector(admin, { ...base, renewDeadlineSec: 2, retryPeriodSec: 2 })).toThrow(
      /retryPeriodSec/,
    );
  });
});
