import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";

/**
 * What the test harness does for the servers it starts as processes (kube-apiserver and etcd, Flux's controllers,
 * ASO): a detached watchdog that ends them when this Node process dies without stopping them (SIGKILL, a crashed
 * worker), and the end of a server's log for a failure message.
 */

// TERM first, KILL after a grace when one is given; then the folder, when one is given.
const WATCHDOG = `
parent=$1; grace=$2; dir=$3; shift 3
while kill -0 "$parent" 2>/dev/null; do sleep 1; done
if [ "$grace" -gt 0 ]; then kill -TERM "$@" 2>/dev/null; sleep "$grace"; fi
kill -KILL "$@" 2>/dev/null
if [ -n "$dir" ]; then rm -rf "$dir"; fi
`;

export interface WatchdogOptions {
  /** Seconds between SIGTERM and SIGKILL; 0 (the default) kills at once. */
  graceSeconds?: number;
  /** A folder to remove once the processes are gone. */
  removeDir?: string;
}

/** Ends `pids` within about a second of this process's death; `name` is what `ps` shows for the watchdog. */
export function startWatchdog(
  name: string,
  pids: ReadonlyArray<number | undefined>,
  opts: WatchdogOptions = {},
): ChildProcess {
  const watchdog = spawn(
    "bash",
    [
      "-c",
      WATCHDOG,
      name,
      String(process.pid),
      String(opts.graceSeconds ?? 0),
      opts.removeDir ?? "",
      ...pids.filter((p): p is number => p !== undefined).map(String),
    ],
    { detached: true, stdio: "ignore" },
  );
  watchdog.unref();
  return watchdog;
}

/** The last `lines` lines of a log file, or "(no log)". */
export function logTail(file: string, lines = 30): string {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}
