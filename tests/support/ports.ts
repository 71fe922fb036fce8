/** Free TCP ports on 127.0.0.1 for the servers tests start (picked, then released: retry on EADDRINUSE). */
import { createServer, type Server } from "node:net";

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/** `n` distinct free ports: every listener is held open until all have one. */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<Server>((resolve, reject) => {
          const server = createServer();
          server.on("error", reject);
          server.listen(0, "127.0.0.1", () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((s) => {
    const a = s.address();
    return typeof a === "object" && a ? a.port : 0;
  });
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports.every((p) => p > 0) ? ports : Promise.all(Array.from({ length: n }, freePort));
}

/**
 * Runs `start` again, up to 3 times, when it failed with "address already in use": a port picked above was taken by
 * another process before the server bound it. `undo` cleans up after a failed attempt.
 */
export async function retryOnPortRace<T>(start: () => Promise<T>, undo?: () => Promise<void>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      await undo?.();
      if (attempt >= 3 || !/address already in use/i.test((err as Error).message)) throw err;
    }
  }
}
