/**
 * Shared by the runtime tests: the real test cluster (tests/support/kube-cluster.ts), polling, a TCP
 * proxy in front of the apiserver (to cut or block a client's connections, as a network failure
 * would), and a logger that records what it was given.
 */
import type { Logger } from "@berth/logging";
import { captureLogs, parseLogLine } from "../../../tests/support/logs.js";

export { startKubeCluster, type KubeCluster } from "../../../tests/support/kube-cluster.js";
export { TcpProxy, viaServer } from "../../../tests/support/tcp-proxy.js";
export { ManualClock } from "../../../tests/support/clock.js";

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
