import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";

export const GUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function guid(): string {
  return randomUUID();
}

export function isGuid(value: unknown): value is string {
  return typeof value === "string" && GUID_RE.test(value);
}

export async function readBody(req: IncomingMessage, limit = 4 * 1024 * 1024): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > limit) throw new Error("request body too large");
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}

/** .NET ticks (100 ns since 0001-01-01), as ARM puts in its signed operation URLs (`t=`). */
export function dotnetTicks(ms = Date.now()): string {
  return (BigInt(ms) * 10000n + 621355968000000000n).toString();
}

/** The `.NET`-style timestamp with 7 fractional digits ARM uses in role assignments. */
export function armTimestamp(date = new Date()): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, ".$10000Z");
}

export interface ResponseSpec {
  status: number;
  headers?: Record<string, string | number | undefined>;
  /** Object → JSON; string/Buffer → sent as is; undefined → empty body. */
  body?: unknown;
}

/**
 * Write a response the way ARM's front door does it:
 *  - a 200 with a body goes out chunked (no Content-Length) with `Vary: Accept-Encoding`;
 *  - every other response (201, 202, 204, errors, empty bodies) carries a Content-Length.
 * This is what the go-vcr recordings show, so the replay test can compare header sets.
 */
export function send(res: ServerResponse, spec: ResponseSpec): void {
  let payload: Buffer | undefined;
  if (spec.body !== undefined && spec.body !== null) {
    if (Buffer.isBuffer(spec.body)) payload = spec.body;
    else if (typeof spec.body === "string") payload = Buffer.from(spec.body);
    else payload = Buffer.from(JSON.stringify(spec.body));
  }
  for (const [k, v] of Object.entries(spec.headers ?? {})) {
    if (v !== undefined) res.setHeader(k, String(v));
  }
  if (payload && payload.length > 0 && !res.hasHeader("content-type")) {
    res.setHeader("Content-Type", "application/json; charset=utf-8");
  }
  res.statusCode = spec.status;
  const chunked = spec.status === 200 && payload !== undefined && payload.length > 0;
  if (chunked) {
    res.setHeader("Vary", "Accept-Encoding");
    res.write(payload);
    res.end();
  } else {
    res.setHeader("Content-Length", String(payload?.length ?? 0));
    res.end(payload);
  }
}

export function lower(s: string): string {
  return s.toLowerCase();
}

export function headerValue(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
