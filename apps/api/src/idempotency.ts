import { createHash } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { HttpProblem } from "./plugins/problem.js";

/**
 * Idempotency-Key (draft-ietf-httpapi-idempotency-key-header): a retried write with the same key and the
 * same request gets the original outcome instead of running again. The key and a fingerprint of the request
 * are recorded as commit trailers, so the outcome is found again from the Flux repo's history after a
 * restart and by every replica (docs/decisions/0011-idempotency-in-git-trailers.md).
 */

export const IDEMPOTENCY_HEADER = "idempotency-key";
export const TRAILER_IDEMPOTENCY_KEY = "Berth-Idempotency-Key";
export const TRAILER_REQUEST_FINGERPRINT = "Berth-Request-Fingerprint";

export interface Idempotency {
  key: string;
  /** What "the same request" means: method, path and body (keys sorted), hashed. */
  fingerprint: string;
}

/** Visible ASCII without space, quote, backslash, comma or semicolon: safe in a header list and a trailer. */
const KEY = /^[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]{1,128}$/;

function badKey(detail: string): HttpProblem {
  return new HttpProblem(400, "bad-request", "Bad Request", detail);
}

/**
 * The request's Idempotency-Key: an RFC 8941 string (`"…"`, as the draft specifies) or, as most clients
 * send it, the bare value. Undefined when absent; 400 when repeated or malformed.
 */
export function idempotencyKeyOf(request: FastifyRequest): string | undefined {
  const raw = request.raw.rawHeaders;
  const values: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === IDEMPOTENCY_HEADER) values.push(raw[i + 1]!);
  if (values.length === 0) return undefined;
  if (values.length > 1) throw badKey("more than one Idempotency-Key header");
  const value = values[0]!.trim();
  const key = value.startsWith('"') && value.endsWith('"') && value.length >= 2 ? value.slice(1, -1) : value;
  if (!KEY.test(key)) throw badKey("Idempotency-Key must be 1-128 visible ASCII characters (a UUID is ideal), optionally in double quotes");
  return key;
}

/** JSON with object keys sorted, so the same body sent with another key order is the same request. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

export function requestFingerprint(method: string, path: string, body: unknown): string {
  const hash = createHash("sha256").update(`${method.toUpperCase()} ${path}\n${canonical(body ?? null)}`).digest("base64url");
  return `sha256:${hash}`;
}

/**
 * One request per key at a time in this process (the draft's 409 for a retry that arrives while the
 * original is still running). Across replicas, the commit itself decides: see TeamService.write.
 */
export class KeysInFlight {
  private readonly held = new Set<string>();

  acquire(scope: string): () => void {
    if (this.held.has(scope)) {
      throw new HttpProblem(409, "idempotency-key-in-use", "Request in progress", "a request with this Idempotency-Key is still being processed; retry when it has finished", { "retry-after": "1" });
    }
    this.held.add(scope);
    return () => this.held.delete(scope);
  }
}
