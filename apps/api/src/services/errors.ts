/**
 * The API services' own errors, beside the domain's (`@berth/core`'s DomainError): a closed set of codes that the
 * HTTP edge maps to problems in the same table (apps/api/src/http/plugins/problem.ts). Services never name a status.
 */

export const SERVICE_ERROR_CODES = ["idempotency-key-in-use", "idempotency-key-reused", "not-proposed"] as const;
export type ServiceErrorCode = (typeof SERVICE_ERROR_CODES)[number];

export abstract class ServiceError extends Error {
  abstract readonly code: ServiceErrorCode;
  /** When asking again may succeed, how long to wait first (a problem's Retry-After). */
  readonly retryAfterSeconds: number | undefined = undefined;
}

/** A request with this Idempotency-Key is still running in this process (the draft's 409). */
export class IdempotencyKeyInUseError extends ServiceError {
  override readonly name = "IdempotencyKeyInUseError";
  readonly code = "idempotency-key-in-use";
  override readonly retryAfterSeconds = 1;
  constructor() {
    super("a request with this Idempotency-Key is still being processed; retry when it has finished");
  }
}

/** The key was used before for another request (the draft's 422). */
export class IdempotencyKeyReusedError extends ServiceError {
  override readonly name = "IdempotencyKeyReusedError";
  readonly code = "idempotency-key-reused";
  constructor(readonly originalRevision: string) {
    super(
      `this Idempotency-Key was used for a different request (commit ${originalRevision}); use a new key for a new request`,
    );
  }
}

/** Pull-request mode proposes team writes only so far: a rollout or an adoption would bypass review (issue 38). */
export class NotProposedError extends ServiceError {
  override readonly name = "NotProposedError";
  readonly code = "not-proposed";
  constructor(what: string) {
    super(`${what} is not proposed as a pull request yet, and pull-request mode never pushes to the branch directly`);
  }
}
