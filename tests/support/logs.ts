/**
 * The one test logger: a real pino logger (the apps' own) writing JSON lines into memory, and a strict
 * reader for those lines. JSON.parse quietly keeps the last of two equal keys; some log stores refuse such
 * lines, so `parseLogLine` refuses them too (parsed with @humanwhocodes/momoa, which keeps every member).
 */
import { Writable } from "node:stream";
import { parse, type AnyNode } from "@humanwhocodes/momoa";
import pino, { type Logger, type LoggerOptions } from "pino";

export interface CapturedLogs {
  logger: Logger;
  /** Every line written, as written (each ends with "\n"). */
  lines: string[];
}

/** pino at `level` (default "info") into memory; `prefix` is put before each stored line (e.g. a replica's name). */
export function captureLogs(options: LoggerOptions = {}, prefix = ""): CapturedLogs {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(`${prefix}${String(chunk)}`);
      done();
    },
  });
  return { logger: pino({ level: "info", ...options }, sink), lines };
}

/** Parses one JSON log line; throws when it is not JSON or when any object in it has a key twice. */
export function parseLogLine(line: string): Record<string, unknown> {
  const doc = parse(line.trim());
  const check = (node: AnyNode, path: string): void => {
    if (node.type === "Object") {
      const seen = new Set<string>();
      for (const m of node.members) {
        const key = m.name.type === "String" ? m.name.value : String((m.name as { name?: string }).name);
        if (seen.has(key))
          throw new Error(`duplicate key "${key}" at ${path || "top level"} in log line: ${line.trim().slice(0, 300)}`);
        seen.add(key);
        check(m.value, `${path}.${key}`);
      }
    } else if (node.type === "Array") node.elements.forEach((e, i) => check(e.value, `${path}[${i}]`));
  };
  check(doc.body, "");
  return JSON.parse(line) as Record<string, unknown>;
}

/** Every JSON line of `text` (a process's stdout) parsed strictly; non-JSON lines are returned apart. */
export function parseLogOutput(text: string): { entries: Array<Record<string, unknown>>; other: string[] } {
  const entries: Array<Record<string, unknown>> = [];
  const other: string[] = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    if (line.trimStart().startsWith("{")) entries.push(parseLogLine(line));
    else other.push(line);
  }
  return { entries, other };
}
