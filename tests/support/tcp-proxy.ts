/**
 * A TCP proxy in front of a server (the test apiserver), to fail a client's connections as a network or a dead pod
 * would: cut() drops live connections, block() also resets new ones, kill() closes the listener (new ones refused).
 * TLS passes through untouched: the apiserver's certificate is for 127.0.0.1, where the proxy listens too.
 */
import { createServer, connect, type Server, type Socket } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";

export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private blocked = false;
  port = 0;
  connections = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  /** A proxy to the server `kc` talks to. */
  static for(kc: KubeConfig): TcpProxy {
    const url = new URL(kc.getCurrentCluster()!.server);
    return new TcpProxy({ host: url.hostname, port: Number(url.port) });
  }

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

  /** Like a dead pod: every connection dropped and new ones refused. */
  kill(): void {
    this.server?.close();
    this.cut();
  }

  async stop(): Promise<void> {
    this.block();
    await new Promise<void>((r) => (this.server?.listening ? this.server.close(() => r()) : r()));
  }

  /** `kc`'s credentials, through this proxy. */
  kubeConfig(kc: KubeConfig): KubeConfig {
    return viaServer(kc, `https://127.0.0.1:${this.port}`);
  }
}

/** The same credentials as `kc`, through another server URL (a proxy, or one nothing listens on). */
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
