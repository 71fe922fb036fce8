/** Free TCP ports on 127.0.0.1 for the servers tests start (picked, then released: retry on EADDRINUSE). */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
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

/**
 * The TCP ports on 127.0.0.1 that process `pid` listens on: its socket descriptors matched against the kernel's
 * table of listening sockets. A server that lost a picked port to another process often logs the error after its
 * health endpoint already answered (source-controller binds its artifact server once it leads); this tells.
 */
export function listeningPorts(pid: number): Set<number> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const socket = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
      if (socket) inodes.add(socket);
    } catch {
      // closed between the listing and the read
    }
  }
  const ports = new Set<number>();
  for (const line of readFileSync(`/proc/${pid}/net/tcp`, "utf8").split("\n").slice(1)) {
    const [, local, , state, , , , , , inode] = line.trim().split(/\s+/);
    const [address, port] = (local ?? "").split(":");
    // 0A is TCP_LISTEN; 0100007F is 127.0.0.1 in the table's byte order.
    if (state === "0A" && address === "0100007F" && inodes.has(inode ?? "")) ports.add(parseInt(port!, 16));
  }
  return ports;
}
