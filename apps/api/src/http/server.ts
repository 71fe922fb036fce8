import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { timeoutsSchema, type ApiConfig, type ApiTimeouts } from "@berth/config";
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { LoggerOptions } from "pino";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { app, type AppDeps } from "./app.js";
import { frameworkErrorHandler, pathOf, rawProblemResponse } from "./plugins/problem.js";

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** Logger settings: JSON with request ids; credentials, secret values and query strings are never written. */
export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    redact: {
      paths: [
        "req.headers.authorization",
        "req.headers.cookie",
        "headers.authorization",
        "*.token",
        "*.password",
        "*.secret",
        "config.fluxRepo.auth",
      ],
      censor: "[redacted]",
    },
    serializers: {
      // The path only: a query string may carry a token (`?access_token=`), so it is never logged.
      req: (req: { method?: string; url?: string; ip?: string; socket?: { remoteAddress?: string } }) => ({
        method: req.method,
        path: pathOf(req.url),
        remoteAddress: req.ip ?? req.socket?.remoteAddress,
      }),
    },
  };
}

/** Node's names for errors on a connection before any request exists, as HTTP statuses. */
function clientErrorStatus(code: string | undefined): number {
  if (code === "ERR_HTTP_REQUEST_TIMEOUT") return 408;
  if (code === "HPE_HEADER_OVERFLOW") return 431;
  if (code === "HPE_URI_TOO_LONG") return 414;
  return 400;
}

const NOT_HTTP_DETAIL = "the request is not valid HTTP/1.1";
const CLIENT_ERROR_DETAIL: Record<number, string> = {
  400: NOT_HTTP_DETAIL,
  408: "the request did not arrive in time",
  414: "the request target is too long",
  431: "the request headers are too large",
};

export interface ServerOptions {
  logger?: FastifyBaseLogger;
  bodyLimit?: number;
  timeouts?: ApiTimeouts;
  trustProxy?: ApiConfig["trustProxy"];
}

/**
 * A Fastify instance with the API on it. Process concerns (listen, signals) stay in main.ts; every
 * connection limit is set here, on purpose (docs/operations.md, "Connections and timeouts").
 */
export async function buildServer(deps: AppDeps, options: ServerOptions = {}): Promise<FastifyInstance> {
  const timeouts = options.timeouts ?? timeoutsSchema.parse({});
  const trustProxy = options.trustProxy ?? false;
  const server = Fastify<Server, IncomingMessage, ServerResponse>({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    bodyLimit: options.bodyLimit ?? 65_536,
    // A hop count trusts that many proxies nearest to us (what proxy-addr does with a number).
    trustProxy: typeof trustProxy === "number" ? (_address: string, hop: number) => hop < trustProxy : trustProxy,
    // Honour a caller's request id (tracing across services) when it is safe to echo and log.
    genReqId: (req) => {
      const given = req.headers["x-request-id"];
      return typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
    },
    serverFactory: (handler) => {
      const http = createServer(
        {
          // Slow or never-finished requests get 408: the whole head within headersMs, the body within requestMs.
          headersTimeout: timeouts.headersMs,
          requestTimeout: timeouts.requestMs,
          // How often Node checks those two; the default (30 s) would let a 1 s limit run 30 s.
          connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(timeouts.headersMs / 2))),
        },
        handler,
      );
      // Idle between requests on a kept-alive connection.
      http.keepAliveTimeout = timeouts.keepAliveMs;
      // No bytes at all for idleMs: a connection that never sends a request, or stalls mid-body. Suspended
      // while a request is being answered (the preHandler hook below): commits can queue behind others.
      http.setTimeout(timeouts.idleMs);
      return http;
    },
    // During shutdown, requests still arriving on open connections are answered normally (with
    // `Connection: close`); fastify's own 503 for them would be plain JSON, outside the problem vocabulary.
    return503OnClosing: false,
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket) {
      if (err.code === "ECONNRESET" || socket.destroyed) return;
      const status = clientErrorStatus(err.code);
      const requestId = randomUUID();
      this.log.info(
        { requestId, status, code: err.code, remoteAddress: socket.remoteAddress },
        "refused a malformed request before routing",
      );
      // Never write into a response already on the wire (a pipelined request failing mid-answer).
      const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
      if (socket.writable && !inFlight?.headersSent)
        socket.end(rawProblemResponse(status, requestId, CLIENT_ERROR_DETAIL[status] ?? NOT_HTTP_DETAIL));
      else socket.destroy();
    },
  }).withTypeProvider<ZodTypeProvider>();
  server.addHook("preHandler", async (request) => {
    // (inject()'s stand-in socket has no timers.)
    const socket = request.raw.socket as Socket | undefined;
    if (typeof socket?.setTimeout === "function") socket.setTimeout(0);
  });
  server.addHook("onSend", async (request, reply) => {
    reply.header("x-request-id", String(request.id));
  });
  await server.register(app, deps);
  return server;
}
