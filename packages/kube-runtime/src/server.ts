/**
 * The probe and metrics endpoint: /metrics (Prometheus text from the app's registry), /healthz
 * (liveness: the event loop answers) and /readyz (the app's `ready()`). Plain node:http — three
 * GET routes need no framework, and it stays up while the rest of the app is starting or stopping.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import { silentLogger, type Logger } from "@berth/logging";

export interface HealthServerOptions {
  /** 0 picks a free port (tests). */
  port: number;
  /** Default "0.0.0.0" (probes come from the kubelet, scrapes from Prometheus). */
  host?: string;
  registry: Registry;
  ready: () => boolean;
  /** Liveness; default always true. */
  live?: () => boolean;
  logger?: Logger;
}

export interface HealthServer {
  port: number;
  close(): Promise<void>;
}

export async function startHealthServer(opts: HealthServerOptions): Promise<HealthServer> {
  const log = (opts.logger ?? silentLogger).child({ component: "health-server" });
  const text = (res: ServerResponse, status: number, body: string, type = "text/plain; charset=utf-8") => {
    res.writeHead(status, { "Content-Type": type, "Cache-Control": "no-store" });
    res.end(body);
  };
  const check = (res: ServerResponse, fn: () => boolean, what: string) => {
    let ok = false;
    try {
      ok = fn();
    } catch (err) {
      log.warn({ err }, `${what} check threw`);
    }
    text(res, ok ? 200 : 503, ok ? "ok\n" : `not ${what}\n`);
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method !== "GET" && req.method !== "HEAD") return text(res, 405, "method not allowed\n");
    switch (path) {
      case "/metrics":
        opts.registry.metrics().then(
          (body) => text(res, 200, body, opts.registry.contentType),
          (err: unknown) => {
            log.error({ err }, "collecting metrics failed");
            text(res, 500, "metrics collection failed\n");
          },
        );
        return;
      case "/healthz":
      case "/livez":
        return check(res, opts.live ?? (() => true), "live");
      case "/readyz":
        return check(res, opts.ready, "ready");
      default:
        return text(res, 404, "not found\n");
    }
  });
  // Probes and scrapes are short; do not let idle keep-alive sockets delay close().
  server.keepAliveTimeout = 5_000;
  server.requestTimeout = 10_000;

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host ?? "0.0.0.0", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  log.info({ port }, "health server listening");
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
