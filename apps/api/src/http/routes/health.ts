import type { FastifyPluginAsync } from "fastify";
import { sendProblem, PROBLEM_BASE } from "../plugins/problem.js";

/** Liveness and readiness. Public: no token needed, nothing sensitive returned. */
export const healthRoutes: FastifyPluginAsync<{ ping: () => Promise<void>; cacheMs?: number }> = async (
  app,
  { ping, cacheMs = 5000 },
) => {
  let last: { at: number; ok: boolean; reason?: string } | undefined;

  const probe = { exemptFromRateLimit: true };
  app.get("/healthz", { config: probe, schema: { hide: true } }, async () => ({ status: "ok" }));

  app.get("/readyz", { config: probe, schema: { hide: true } }, async (request, reply) => {
    // Probes arrive every few seconds from several kubelets; one ls-remote per window is plenty.
    if (!last || Date.now() - last.at > cacheMs) {
      try {
        await ping();
        last = { at: Date.now(), ok: true };
      } catch (err) {
        request.log.warn({ err }, "Flux repo remote is not reachable");
        last = { at: Date.now(), ok: false, reason: "the Flux repo remote is not reachable" };
      }
    }
    if (last.ok) return { status: "ready" };
    return sendProblem(request, reply, {
      type: `${PROBLEM_BASE}not-ready`,
      title: "Not ready",
      status: 503,
      detail: last.reason,
    });
  });
};
