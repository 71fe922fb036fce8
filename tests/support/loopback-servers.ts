import type { Server as HttpServer } from "node:http";
import type { AddressInfo, Server, Socket } from "node:net";

/**
 * Servers a test starts on 127.0.0.1 (plain TCP or HTTP, often ones that misbehave on purpose), closed
 * together at the end with every connection they still hold (a server that never answers keeps them open).
 */
export class LoopbackServers {
  private readonly servers: Array<Server | HttpServer> = [];
  private readonly sockets = new Set<Socket>();

  /** Listens on a free port of 127.0.0.1; resolves to its base URL. */
  async listen(server: Server | HttpServer): Promise<string> {
    this.servers.push(server);
    server.on("connection", (socket: Socket) => {
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await Promise.all(this.servers.map((s) => new Promise((resolve) => s.close(resolve))));
  }
}
