/** The health/metrics server: Prometheus text from the app's registry, liveness, readiness. */
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { createControllerMetrics } from "../src/metrics.js";
import { startHealthServer } from "../src/server.js";

describe("startHealthServer", () => {
  it("serves /metrics, /healthz and /readyz", async () => {
    const registry = new Registry();
    const metrics = createControllerMetrics(registry);
    metrics.reconcileTotal.inc({ controller: "team", result: "success" });
    metrics.watchRestarts.inc({ informer: "teams" });
    metrics.isLeader.set(1);
    let ready = false;
    const server = await startHealthServer({ port: 0, host: "127.0.0.1", registry, ready: () => ready });
    const url = (p: string) => `http://127.0.0.1:${server.port}${p}`;
    try {
      const m = await fetch(url("/metrics"));
      expect(m.status).toBe(200);
      expect(m.headers.get("content-type")).toContain("text/plain");
      const text = await m.text();
      expect(text).toContain('berth_controller_reconcile_total{controller="team",result="success"} 1');
      expect(text).toContain('berth_controller_watch_restarts_total{informer="teams"} 1');
      expect(text).toContain("berth_controller_is_leader 1");
      for (const name of ["reconcile_errors_total", "reconcile_duration_seconds", "workqueue_depth"]) {
        expect(text).toContain(`# TYPE berth_controller_${name}`);
      }

      expect((await fetch(url("/healthz"))).status).toBe(200);
      const notReady = await fetch(url("/readyz"));
      expect(notReady.status).toBe(503);
      expect(await notReady.text()).toBe("not ready\n");
      ready = true;
      expect((await fetch(url("/readyz"))).status).toBe(200);
      expect((await fetch(url("/nope"))).status).toBe(404);
      expect((await fetch(url("/metrics"), { method: "POST" })).status).toBe(405);
    } finally {
      await server.close();
    }
    await expect(fetch(url("/healthz"))).rejects.toThrow();
  });

  it("answers 503 when the readiness check throws", async () => {
    const server = await startHealthServer({
      port: 0,
      host: "127.0.0.1",
      registry: new Registry(),
      ready: () => {
        throw new Error("broken");
      },
    });
    try {
      expect((await fetch(`http://127.0.0.1:${server.port}/readyz`)).status).toBe(503);
    } finally {
      await server.close();
    }
  });
});
