/**
 * How a failed ARM / Entra call is treated. The SDK's own retries are switched off for ARM clients
 * (retryOptions.maxRetries = 0), so every error reaches this classification exactly once per HTTP attempt.
 */

export type FailureKind =
  /** 429: ARM (or a gateway) throttled us; `retryAfterMs` when the answer said how long. */
  | "throttled"
  /** 5xx (not 501/505), 408, connection errors, our own per-call timeout. */
  | "transient"
  /** The credential could not get a token (Entra down, bad secret, no identity). Not retried here:
   * @azure/identity already retried, and MSAL refuses locally for a while after 429/5xx. */
  | "auth"
  /** 404 — a definitive answer that callers turn into a value (undefined / "does not exist"). */
  | "not-found"
  /** Everything else (400, 401, 403, 409, ...): retrying will not help. */
  | "permanent";

export interface Classified {
  kind: FailureKind;
  statusCode?: number;
  code?: string;
  /** Server-requested delay (Retry-After / retry-after-ms / x-ms-retry-after-ms), in ms. */
  retryAfterMs?: number;
}

interface ErrorLike {
  name?: string;
  code?: string;
  statusCode?: number;
  response?: { headers?: { get(name: string): string | undefined } };
}

const AUTH_ERRORS = new Set([
  "AuthenticationRequiredError",
  "AuthenticationError",
  "CredentialUnavailableError",
  "AggregateAuthenticationError",
]);

/** Parse ARM's retry hints: `retry-after-ms`, `x-ms-retry-after-ms` (milliseconds) or `Retry-After` (seconds or an HTTP date). */
export function retryAfterMs(
  headers: { get(name: string): string | undefined } | undefined,
  now = Date.now(),
): number | undefined {
  if (!headers) return undefined;
  for (const name of ["retry-after-ms", "x-ms-retry-after-ms"]) {
    const v = headers.get(name);
    if (v !== undefined && v.trim() !== "" && Number.isFinite(Number(v))) return Math.max(0, Number(v));
  }
  const ra = headers.get("retry-after");
  if (ra === undefined || ra.trim() === "") return undefined;
  if (/^\d+(\.\d+)?$/.test(ra.trim())) return Math.max(0, Number(ra) * 1000);
  const at = Date.parse(ra);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export function classify(err: unknown): Classified {
  const e = (err ?? {}) as ErrorLike;
  if (e.name && AUTH_ERRORS.has(e.name)) return { kind: "auth" };
  if (e.name === "AbortError" || e.name === "TimeoutError") return { kind: "transient", code: "timeout" };
  const status = typeof e.statusCode === "number" ? e.statusCode : undefined;
  if (status === undefined) {
    // RestError without a response: ECONNRESET, ECONNREFUSED, ETIMEDOUT, REQUEST_SEND_ERROR, ...
    if (e.name === "RestError") return { kind: "transient", ...(e.code ? { code: e.code } : {}) };
    return { kind: "permanent", ...(e.code ? { code: e.code } : {}) };
  }
  const base = { statusCode: status, ...(e.code ? { code: e.code } : {}) };
  if (status === 429) {
    const after = retryAfterMs(e.response?.headers);
    return { kind: "throttled", ...base, ...(after === undefined ? {} : { retryAfterMs: after }) };
  }
  if (status === 404) return { kind: "not-found", ...base };
  if (status === 408 || (status >= 500 && status !== 501 && status !== 505)) {
    const after = retryAfterMs(e.response?.headers);
    return { kind: "transient", ...base, ...(after === undefined ? {} : { retryAfterMs: after }) };
  }
  return { kind: "permanent", ...base };
}

export function isNotFound(err: unknown): boolean {
  return classify(err).kind === "not-found";
}

/** Thrown (internally) when a call would have to wait for a throttling window longer than its wait budget. */
export class ThrottledLocallyError extends Error {
  override readonly name = "ThrottledLocallyError";
}

export function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const c = classify(err);
  const status = c.statusCode ? ` ${c.statusCode}` : "";
  const code = c.code ? ` ${c.code}` : "";
  return `${err.name}${status}${code}: ${(err.message.split("\n")[0] ?? "").slice(0, 300)}`;
}
