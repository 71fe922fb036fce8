import { readFileSync } from "node:fs";

/** What a process has used so far, as Linux reports it in /proc. */
export interface ProcessUsage {
  /** User + system CPU seconds (/proc/<pid>/stat utime + stime, 100 ticks a second). */
  cpuSeconds: number;
  /** Resident memory now (VmRSS). */
  rssBytes: number;
  /** Peak resident memory (VmHWM), since start or since the last write of 5 to /proc/<pid>/clear_refs. */
  peakRssBytes: number;
}

/** The process's usage, or undefined once it is gone (or was never there). */
export function processUsage(pid: number): ProcessUsage | undefined {
  try {
    // The fields after the parenthesised command name; utime and stime are the 14th and 15th of the line.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const bytes = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0) * 1024;
    return {
      cpuSeconds: (Number(fields[11]) + Number(fields[12])) / 100,
      rssBytes: bytes("VmRSS"),
      peakRssBytes: bytes("VmHWM"),
    };
  } catch {
    return undefined;
  }
}
