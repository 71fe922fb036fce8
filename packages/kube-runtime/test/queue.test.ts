/**
 * WorkQueue semantics (controller-runtime's): dedupe of pending keys, one worker per key, per-key
 * exponential backoff that resets on success, requeueAfter, bounded concurrency, shutdown.
 */
import { Registry } from "prom-client";
import { describe, expect, it, vi } from "vitest";
import { createControllerMetrics } from "../src/metrics.js";
import { WorkQueue, type QueueHandler } from "../src/queue.js";
import { ManualClock, recordingLogger, sleep } from "./support.js";

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe("WorkQueue", () => {
  it("deduplicates a key that is waiting", async () => {
    const q = new WorkQueue({ name: "dedupe" });
    for (let i = 0; i < 5; i++) q.add("a");
    q.add("b");
    q.add("a");
    expect(q.depth).toBe(2);
    const seen: string[] = [];
    q.start(async (key) => {
      seen.push(key);
    });
    await vi.waitFor(() => expect(seen.length === 2 && q.inFlight === 0).toBe(true), { timeout: 10_000, interval: 25 });
    await sleep(50);
    expect(seen.sort()).toEqual(["a", "b"]);
    await q.shutdown();
  });

  it("never runs one key in two workers; a key added while in flight runs once more afterwards", async () => {
    const q = new WorkQueue({ name: "serial", concurrency: 4 });
    const running = new Map<string, number>();
    const runs = new Map<string, number>();
    let maxPerKey = 0;
    let maxTotal = 0;
    let total = 0;
    q.start(async (key) => {
      const n = (running.get(key) ?? 0) + 1;
      running.set(key, n);
      runs.set(key, (runs.get(key) ?? 0) + 1);
      total++;
      maxPerKey = Math.max(maxPerKey, n);
      maxTotal = Math.max(maxTotal, total);
      await sleep(60);
      running.set(key, n - 1);
      total--;
    });
    q.add("hot");
    await vi.waitFor(() => expect(q.inFlight === 1).toBe(true), { timeout: 10_000, interval: 25 });
    // While "hot" is in flight: add it 10 times, plus 7 other keys.
    for (let i = 0; i < 10; i++) q.add("hot");
    for (let i = 0; i < 7; i++) q.add(`k${i}`);
    await vi.waitFor(() => expect(q.inFlight === 0 && q.depth === 0, "queue drained").toBe(true), {
      timeout: 5_000,
      interval: 25,
    });
    expect(maxPerKey).toBe(1);
    expect(maxTotal).toBe(4);
    expect(runs.get("hot")).toBe(2);
    for (let i = 0; i < 7; i++) expect(runs.get(`k${i}`)).toBe(1);
    await q.shutdown();
  });

  it("retries a failing key with growing, jittered backoff and resets it on success", async () => {
    const log = recordingLogger();
    const q = new WorkQueue({ name: "backoff", baseDelayMs: 30, maxDelayMs: 10_000, logger: log });
    const times: number[] = [];
    let failNext = 4;
    q.start(async () => {
      times.push(performance.now());
      if (failNext > 0) {
        failNext--;
        throw new Error("boom");
      }
    });
    q.add("k");
    await vi.waitFor(() => expect(times.length === 5, "4 retries").toBe(true), { timeout: 5_000, interval: 25 });
    const delays = log.entries.filter((e) => e.msg.includes("retrying")).map((e) => e.obj.retryInMs as number);
    expect(delays).toHaveLength(4);
    // base·2^(n-1) within ±20 %: 30, 60, 120, 240.
    delays.forEach((d, i) => {
      const nominal = 30 * 2 ** i;
      expect(d).toBeGreaterThanOrEqual(Math.floor(nominal * 0.8));
      expect(d).toBeLessThanOrEqual(Math.ceil(nominal * 1.2));
    });
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(delays[i - 1]! - 2);
    expect(q.retries("k")).toBe(0);
    // Failing again starts from the base delay.
    failNext = 1;
    q.add("k");
    await vi.waitFor(() => expect(times.length === 7, "retry after reset").toBe(true), {
      timeout: 5_000,
      interval: 25,
    });
    const after = log.entries.filter((e) => e.msg.includes("retrying")).map((e) => e.obj.retryInMs as number);
    expect(after).toHaveLength(5);
    expect(after[4]).toBeLessThanOrEqual(36);
    expect(after[4]!).toBeLessThan(delays[3]!);
    await q.shutdown();
  });

  it("caps the backoff at maxDelayMs", async () => {
    const log = recordingLogger();
    const q = new WorkQueue({ name: "cap", baseDelayMs: 1, maxDelayMs: 8, logger: log });
    let n = 0;
    q.start(async () => {
      n++;
      if (n <= 8) throw new Error("boom");
    });
    q.add("k");
    await vi.waitFor(() => expect(n === 9).toBe(true), { timeout: 5_000, interval: 25 });
    const delays = log.entries.filter((e) => e.msg.includes("retrying")).map((e) => e.obj.retryInMs as number);
    expect(Math.max(...delays)).toBeLessThanOrEqual(8);
    expect(delays.slice(-3)).toEqual([8, 8, 8]);
    await q.shutdown();
  });

  it("a handler that throws synchronously is retried like a rejection", async () => {
    const q = new WorkQueue({ name: "sync-throw", baseDelayMs: 1 });
    let n = 0;
    const handler: QueueHandler = (key) => {
      n++;
      if (n === 1) throw new Error(`sync ${key}`);
      return Promise.resolve();
    };
    q.start(handler);
    q.add("k");
    await vi.waitFor(() => expect(n === 2).toBe(true), { timeout: 10_000, interval: 25 });
    await q.shutdown();
  });

  it("requeueAfterMs schedules a later pass; of two delayed adds the earliest wins", async () => {
    const q = new WorkQueue({ name: "requeue" });
    const times: number[] = [];
    q.start(async () => {
      times.push(performance.now());
      return times.length === 1 ? { requeueAfterMs: 150 } : undefined;
    });
    const t0 = performance.now();
    q.add("k");
    await vi.waitFor(() => expect(times.length === 2).toBe(true), { timeout: 3_000, interval: 25 });
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(145);
    await sleep(300);
    expect(times).toHaveLength(2);

    q.addAfter("k", 2_000);
    q.addAfter("k", 100);
    q.addAfter("k", 1_000);
    expect(q.delayedCount).toBe(1);
    await vi.waitFor(() => expect(times.length === 3).toBe(true), { timeout: 3_000, interval: 25 });
    expect(times[2]! - t0).toBeLessThan(times[1]! - t0 + 1_000);
    expect(q.delayedCount).toBe(0);
    await q.shutdown();
  });

  it("waits on its clock: a retry and a requeueAfter run only once the clock passes them", async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ name: "clocked", baseDelayMs: 1_000, clock });
    const runs: string[] = [];
    q.start(async (key) => {
      runs.push(key);
      if (key === "fails" && runs.filter((k) => k === key).length === 1) throw new Error("first pass fails");
      if (key === "polls" && runs.filter((k) => k === key).length === 1) return { requeueAfterMs: 60_000 };
    });
    q.add("fails");
    q.add("polls");
    await vi.waitFor(() => expect(q.delayedCount).toBe(2), { timeout: 3_000, interval: 10 });
    // Real time passes, the clock does not: nothing runs again.
    await sleep(100);
    expect(runs.sort()).toEqual(["fails", "polls"]);
    // Past the backoff (1 s, ±20 % jitter) but not the requeue.
    clock.advance(2_000);
    await vi.waitFor(() => expect(runs.filter((k) => k === "fails")).toHaveLength(2), { timeout: 3_000, interval: 10 });
    expect(q.delayedCount).toBe(1);
    clock.advance(58_000);
    await vi.waitFor(() => expect(runs.filter((k) => k === "polls")).toHaveLength(2), { timeout: 3_000, interval: 10 });
    expect(q.delayedCount).toBe(0);
    // A delayed key dropped by shutdown never runs, however far the clock moves.
    q.addAfter("late", 1_000);
    await q.shutdown();
    clock.advance(10_000);
    await sleep(20);
    expect(runs).not.toContain("late");
  });

  it("shutdown waits for in-flight handlers, drops waiting keys and ignores new ones", async () => {
    const q = new WorkQueue({ name: "shutdown", concurrency: 2 });
    const gate = deferred();
    const started: string[] = [];
    const finished: string[] = [];
    q.start(async (key) => {
      started.push(key);
      await gate.promise;
      finished.push(key);
      throw new Error("fails during shutdown: must not be retried");
    });
    q.add("a");
    q.add("b");
    q.add("c"); // waits: concurrency 2
    q.addAfter("d", 50);
    await vi.waitFor(() => expect(started.length === 2).toBe(true), { timeout: 10_000, interval: 25 });
    let done = false;
    const stopping = q.shutdown().then(() => (done = true));
    await sleep(80);
    expect(done).toBe(false);
    q.add("e");
    gate.resolve();
    await stopping;
    expect(finished.sort()).toEqual(["a", "b"]);
    await sleep(100);
    expect(started.sort()).toEqual(["a", "b"]);
    expect(q.depth).toBe(0);
    expect(q.delayedCount).toBe(0);
  });

  it("records reconcile results, errors, durations and depth", async () => {
    const registry = new Registry();
    const metrics = createControllerMetrics(registry);
    expect(createControllerMetrics(registry)).toBe(metrics);
    const q = new WorkQueue({ name: "metered", baseDelayMs: 1, metrics });
    q.add("x");
    q.add("y");
    expect((await metrics.queueDepth.get()).values.find((v) => v.labels.queue === "metered")?.value).toBe(2);
    let n = 0;
    q.start(async (key) => {
      n++;
      if (key === "x" && n <= 2) throw Object.assign(new Error("nope"), { kind: "conflict" });
      if (key === "y" && n <= 2) return { requeueAfterMs: 1 };
    });
    await vi.waitFor(() => expect(n >= 4 && q.inFlight === 0 && q.delayedCount === 0).toBe(true), {
      timeout: 3_000,
      interval: 25,
    });
    const text = await registry.metrics();
    expect(text).toMatch(/berth_controller_reconcile_total\{controller="metered",result="success"\} \d+/);
    expect(text).toMatch(/berth_controller_reconcile_total\{controller="metered",result="error"\} [1-9]/);
    expect(text).toMatch(/berth_controller_reconcile_errors_total\{controller="metered",reason="conflict"\} [1-9]/);
    expect(text).toMatch(/berth_controller_reconcile_duration_seconds_count\{controller="metered"\} [1-9]/);
    expect(text).toContain('berth_controller_workqueue_depth{queue="metered"} 0');
    await q.shutdown();
  });
});
