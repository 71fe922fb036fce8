/**
 * Shared by the runtime tests: the real test cluster (tests/support/kube-cluster.ts), polling, a TCP
 * proxy in front of the apiserver (to cut or block a client's connections, as a network failure
 * would), and a logger that records what it was given.
 */
import { createServer, connect, type Server, type Socket } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "@berth/core";
import { captureLogs, parseLogLine } from "../../../tests/support/logs.js";

export { startKubeCluster, type KubeCluster } from "../../../tests/support/kube-cluster.js";

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A TCP proxy to `target` (host:port). cut() drops live connections; block() also refuses new ones. */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private blocked = false;
  port = 0;
  connections = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async start(): Promise<void> {
    this.server = createServer((client) => {
      if (this.blocked) {
        client.destroy();
        return;
      }
      this.connections++;
      const upstream = connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("close", () => this.sockets.delete(s));
        s.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((r) => this.server!.listen(0, "127.0.0.1", r));
    this.port = (this.server.address() as { port: number }).port;
  }

  cut(): void {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  block(): void {
    this.blocked = true;
    this.cut();
  }

  unblock(): void {
    this.blocked = false;
  }

  async stop(): Promise<void> {
    this.block();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

/** The same credentials as `kc`, through another server URL (e.g. a proxy). */
export function viaServer(kc: KubeConfig, server: string): KubeConfig {
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  if (!cluster || !user) throw new Error("kubeconfig without cluster or user");
  const out = new KubeConfig();
  out.loadFromOptions({
    clusters: [{ ...cluster, server }],
    users: [user],
    contexts: [{ name: "via", cluster: cluster.name, user: user.name }],
    currentContext: "via",
  });
  return out;
}

export function proxyFor(kc: KubeConfig): TcpProxy {
  const url = new URL(kc.getCurrentCluster()!.server);
  return new TcpProxy({ host: url.hostname, port: Number(url.port) });
}

export interface LogEntry {
  level: "debug" | "info" | "warn" | "error";
  msg: string;
  obj: Record<string, unknown>;
}

const LEVELS: Record<number, LogEntry["level"]> = { 20: "debug", 30: "info", 40: "warn", 50: "error" };

/**
 * The project's test logger (a real pino logger into memory, tests/support/logs.ts) with its lines read
 * back: every line must parse with a duplicate-key-refusing parser, so these tests also check that the
 * runtime's child loggers never bind a key twice.
 */
export function recordingLogger(): Logger & { entries: LogEntry[] } {
  const { logger, lines } = captureLogs({ level: "debug" });
  return Object.defineProperty(logger as unknown as Logger & { entries: LogEntry[] }, "entries", {
    get: (): LogEntry[] =>
      lines.map((line) => {
        const { level, msg, time: _t, pid: _p, hostname: _h, ...obj } = parseLogLine(line);
        return { level: LEVELS[level as number] ?? "error", msg: typeof msg === "string" ? msg : "", obj };
      }),
  });
}
