import { randomUUID } from "node:crypto";
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { LoggerOptions } from "pino";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { app, type AppDeps } from "./app.js";

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** Logger settings: JSON with request ids; credentials and secret values are never written. */
export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    redact: {
      paths: ["req.headers.authorization", "req.headers.cookie", "headers.authorization", "*.token", "*.password", "*.secret", "config.fluxRepo.auth"],
      censor: "[redacted]",
    },
  };
}

/** A Fastify instance with the API on it. Process concerns (listen, signals) stay in main.ts. */
export async function buildServer(deps: AppDeps, options: { logger?: FastifyBaseLogger; bodyLimit?: number } = {}): Promise<FastifyInstance> {
  const server = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    bodyLimit: options.bodyLimit ?? 65_536,
    // Honour a caller's request id (tracing across services) when it is safe to echo and log.
    genReqId: (req) => {
      const given = req.headers["x-request-id"];
      return typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // Commits can wait behind a batch of others; the default 10 s is too short under load.
    connectionTimeout: 120_000,
    requestTimeout: 120_000,
    return503OnClosing: true,
  }).withTypeProvider<ZodTypeProvider>();
  server.addHook("onSend", async (request, reply) => {
    reply.header("x-request-id", String(request.id));
  });
  await server.register(app, deps);
  return server;
}
