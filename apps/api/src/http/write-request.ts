import { createHash } from "node:crypto";
import { TRAILER_ON_BEHALF_OF, type ChangeOrigin } from "@berth/core";
import type { FastifyRequest } from "fastify";
import type { WriteRequest } from "../services/idempotency.js";
import { HttpProblem, pathOf } from "./plugins/problem.js";
import { ON_BEHALF_OF_HEADER, onBehalfOf } from "./routes/schemas.js";

/**
 * What a write request carries into the services, read from HTTP: who asked and for whom (the commit's trailers)
 * and its Idempotency-Key (draft-ietf-httpapi-idempotency-key-header) with a fingerprint of the request. Every write
 * route (teams, rollouts, adoption) uses these.
 */

export const IDEMPOTENCY_HEADER = "idempotency-key";

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
  const raw = request.raw.rawHeaders; // name, value, name, value, …
  const [first, ...more] = raw.filter((_, i) => i % 2 === 1 && raw[i - 1]?.toLowerCase() === IDEMPOTENCY_HEADER);
  if (first === undefined) return undefined;
  if (more.length > 0) throw badKey("more than one Idempotency-Key header");
  const value = first.trim();
  const key = value.startsWith('"') && value.endsWith('"') && value.length >= 2 ? value.slice(1, -1) : value;
  if (!KEY.test(key))
    throw badKey(
      "Idempotency-Key must be 1-128 visible ASCII characters (a UUID is ideal), optionally in double quotes",
    );
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
  const hash = createHash("sha256")
    .update(`${method.toUpperCase()} ${path}\n${canonical(body ?? null)}`)
    .digest("base64url");
  return `sha256:${hash}`;
}

/**
 * Whom the caller says it acts for, when it sent a valid Berth-On-Behalf-Of; a malformed one (the request is
 * refused for it) is never repeated into a log or a commit.
 */
export function onBehalfOfOf(request: FastifyRequest): string | null {
  const parsed = onBehalfOf.safeParse(request.headers[ON_BEHALF_OF_HEADER]);
  return parsed.success ? (parsed.data ?? null) : null;
}

/**
 * Who asked for a write, for its commit's trailers: the token's identity, and whom the caller says it acts for
 * when it sent Berth-On-Behalf-Of (a claim, recorded as such, never in the place of the identity). The route's
 * header schema (routes/schemas.ts) has validated the value by now.
 */
export function originOf(request: FastifyRequest): ChangeOrigin {
  const origin = { actor: request.principal?.actor ?? "unknown", requestId: String(request.id) };
  const onBehalfOf = request.headers[ON_BEHALF_OF_HEADER];
  if (typeof onBehalfOf !== "string") return origin;
  return { ...origin, trailers: [{ key: TRAILER_ON_BEHALF_OF, value: onBehalfOf }] };
}

/** What the commit records about who asked, and the request's Idempotency-Key with its fingerprint. */
export function writeRequest(request: FastifyRequest, body: unknown): WriteRequest {
  const origin = originOf(request);
  const key = idempotencyKeyOf(request);
  if (key === undefined) return { origin };
  request.idempotency = { key, fingerprint: requestFingerprint(request.method, pathOf(request.url), body) };
  return { origin, idempotency: request.idempotency };
}
