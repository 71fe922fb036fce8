/**
 * A minimal HTTP CONNECT proxy on 127.0.0.1 that tunnels the real Azure host names to the fake.
 *
 * With HTTPS_PROXY pointing here (and the fake's CA trusted), code that talks to
 * https://management.azure.com and https://login.microsoftonline.com with default settings ends
 * up at the fake: the client opens a TLS session *through* the tunnel with SNI = the real host
 * name, and the fake presents a certificate for that name signed by the test CA.
 * Any other target is refused (403), so nothing leaks to the network.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import { connect, type AddressInfo, type Socket } from "node:net";

export interface ProxyConnect {
  at: number;
  target: string;
  allowed: boolean;
}

export interface FakeProxy {
  url: string;
  port: number;
  readonly connects: ProxyConnect[];
  /** CONNECT requests per target ("host:port"). */
  countByTarget(): Record<string, number>;
  close(): Promise<void>;
}

export async function startConnectProxy(opts: {
  upstreamPort: number;
  routedHosts: readonly string[];
}): Promise<FakeProxy> {
  const connects: ProxyConnect[] = [];
  const sockets = new Set<Socket>();
  const allowed = new Set<string>([
    ...opts.routedHosts.map((h) => `${h.toLowerCase()}:443`),
    `127.0.0.1:${opts.upstreamPort}`,
    `localhost:${opts.upstreamPort}`,
  ]);
  const server: Server = createServer((req, res) => {
    // Plain-HTTP forwarding is not needed: every Azure endpoint is HTTPS.
    res.writeHead(501, { "Content-Type": "text/plain" }).end("fake proxy only supports CONNECT\n");
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  server.on("connect", (req: IncomingMessage, client: Socket, head: Buffer) => {
    const target = (req.url ?? "").toLowerCase();
    const ok = allowed.has(target);
    connects.push({ at: Date.now(), target, allowed: ok });
    if (!ok) {
      client.end("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      return;
    }
    const upstream = connect(opts.upstreamPort, "127.0.0.1", () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on("close", () => {
      sockets.delete(upstream);
      client.destroy();
    });
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
    client.on("close", () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    connects,
    countByTarget() {
      const out: Record<string, number> = {};
      for (const c of connects) out[c.target] = (out[c.target] ?? 0) + 1;
      return out;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
