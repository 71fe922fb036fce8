import type { FastifyInstance } from "fastify";
import fastifyMetricsModule from "fastify-metrics";
import fp from "fastify-plugin";
import promClient from "prom-client";
import type { ApiMetrics } from "../../metrics.js";

/** fastify-metrics is CommonJS: from ESM its plugin is the module's `default`. */
const fastifyMetrics = fastifyMetricsModule.default;

/**
 * HTTP requests by route template, method and status (fastify-metrics' histogram, on the API's own registry),
 * and problems and idempotent replays counted from each answer. The registry is served on its own port
 * (main.ts, api.metricsPort), not through the API's: the ingress never exposes it.
 */
export const metricsPlugin = fp(async (app: FastifyInstance, opts: { metrics: ApiMetrics }) => {
  const { metrics } = opts;
  await app.register(fastifyMetrics, {
    promClient,
    endpoint: null,
    defaultMetrics: { enabled: false },
    routeMetrics: {
      enabled: { histogram: true, summary: false },
      registeredRoutesOnly: true,
      overrides: {
        histogram: {
          name: "berth_api_http_request_duration_seconds",
          help: "HTTP requests by method, route template and status code, and how long each took to answer.",
          buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
          registers: [metrics.registry],
        },
        // Off (above), yet fastify-metrics always builds it: registered nowhere, so a second app in one
        // process does not collide with the first on prom-client's global registry.
        summary: { registers: [] },
      },
    },
  });

  app.addHook("onResponse", async (request, reply) => {
    const route = request.routeOptions.url ?? "__unknown__";
    if (request.problemType) metrics.problems.inc({ route, type: request.problemType });
    if (reply.getHeader("idempotent-replayed") === "true") metrics.idempotentReplays.inc({ route });
  });
});
