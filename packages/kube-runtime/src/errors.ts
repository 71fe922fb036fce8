/**
 * Every failure of a call to the apiserver, sorted into a small closed set at the adapter edge so
 * reconcilers branch on `kind` instead of parsing status codes or messages.
 */

export type KubeApiErrorKind = "not-found" | "conflict" | "forbidden" | "invalid" | "unavailable" | "aborted" | "other";

/** The `Status` object the apiserver returns with an error (only the fields we read). */
export interface KubeStatus {
  kind?: string;
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    causes?: Array<{ reason?: string; message?: string; field?: string }>;
  };
}

export class KubeApiError extends Error {
  override readonly name = "KubeApiError";
  /** HTTP status; 0 when no response arrived (network error, timeout). */
  readonly status: number;
  /** `reason` of the Status body (e.g. "NotFound", "Conflict", "Forbidden", "Invalid"), or a local one ("Timeout", "NetworkError"). */
  readonly reason: string;
  readonly kind: KubeApiErrorKind;
  /** The parsed Status body, when there was one. */
  readonly details?: KubeStatus;

  constructor(init: {
    status: number;
    reason: string;
    kind?: KubeApiErrorKind;
    message: string;
    details?: KubeStatus;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.reason = init.reason;
    this.kind = init.kind ?? kindOf(init.status);
    if (init.details) this.details = init.details;
  }

  /** An error for a non-2xx response whose body is (usually) a Status object. */
  static fromResponse(code: number, body: unknown, context: string): KubeApiError {
    const status = parseStatus(body);
    return new KubeApiError({
      status: code,
      reason: status?.reason || defaultReason(code),
      message: `${context}: ${status?.message || "request failed"} (HTTP ${code})`,
      ...(status ? { details: status } : {}),
    });
  }

  /** Converts anything a request threw (network, timeout, abort) into a KubeApiError. Idempotent. */
  static from(err: unknown, context?: string): KubeApiError {
    if (err instanceof KubeApiError) return err;
    const prefix = context ? `${context}: ` : "";
    const e = err as { name?: string; message?: string; code?: string | number; statusCode?: number; type?: string };
    // Watch (and other raw requests) report an HTTP failure as an Error with statusCode.
    if (typeof e?.statusCode === "number") {
      return new KubeApiError({
        status: e.statusCode,
        reason: defaultReason(e.statusCode),
        message: `${prefix}${e.message ?? "request failed"} (HTTP ${e.statusCode})`,
        cause: err,
      });
    }
    if (e?.name === "TimeoutError") {
      return new KubeApiError({
        status: 0,
        reason: "Timeout",
        kind: "unavailable",
        message: `${prefix}${e.message ?? "request timed out"}`,
        cause: err,
      });
    }
    // Aborted by the caller (a reconcile whose leadership ended, a stopping informer): not the server's fault.
    if (e?.name === "AbortError") {
      return new KubeApiError({
        status: 0,
        reason: "Aborted",
        kind: "aborted",
        message: `${prefix}${e.message ?? "request aborted"}`,
        cause: err,
      });
    }
    if (e?.name === "FetchError" || (typeof e?.code === "string" && /^(E[A-Z_]+|UND_ERR.*)$/.test(e.code))) {
      return new KubeApiError({
        status: 0,
        reason: "NetworkError",
        kind: "unavailable",
        message: `${prefix}${e.message ?? String(err)}`,
        cause: err,
      });
    }
    return new KubeApiError({
      status: 0,
      reason: "Unknown",
      kind: "other",
      message: `${prefix}${e?.message ?? String(err)}`,
      cause: err,
    });
  }
}

export function isKubeApiError(err: unknown, kind?: KubeApiErrorKind): err is KubeApiError {
  return err instanceof KubeApiError && (kind === undefined || err.kind === kind);
}

function kindOf(status: number): KubeApiErrorKind {
  if (status === 404) return "not-found";
  if (status === 409) return "conflict";
  if (status === 401 || status === 403) return "forbidden";
  if (status === 400 || status === 422) return "invalid";
  if (status === 0 || status === 429 || status >= 500) return "unavailable";
  return "other";
}

function defaultReason(status: number): string {
  const reasons: Record<number, string> = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
  };
  return reasons[status] ?? "Unknown";
}

/** ApiException.body is the raw response text in client-node 1.x (sometimes already an object). */
export function parseStatus(body: unknown): KubeStatus | undefined {
  if (body && typeof body === "object") return body as KubeStatus;
  if (typeof body !== "string" || !body) return undefined;
  try {
    const parsed = JSON.parse(body) as unknown;
    return parsed && typeof parsed === "object" ? (parsed as KubeStatus) : undefined;
  } catch {
    return { message: body.slice(0, 500) };
  }
}
