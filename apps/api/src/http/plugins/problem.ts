import { STATUS_CODES } from "node:http";
import { DomainError, type DomainErrorCode, type FieldIssue } from "@berth/core";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ForgeError, GitOpsError } from "@berth/gitops";
import fp from "fastify-plugin";
import { RAW_RESPONSE_SECURITY_HEADERS } from "./security-headers.js";
import { ServiceError, type ServiceErrorCode } from "../../services/errors.js";

/**
 * RFC 9457 problem details: the API's one error vocabulary. Every error the server sends, routed or not, is
 * one of these with a `type` from docs/api.md; framework error codes never reach a client.
 */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  /** The request path, never its query string (which may carry a token). */
  instance?: string;
  requestId?: string;
  errors?: FieldIssue[];
}

export const PROBLEM_BASE = "https://berth.dev/problems/";

declare module "fastify" {
  interface FastifyRequest {
    /** The problem type answered, after PROBLEM_BASE (for the audit line). */
    problemType?: string;
  }
}
export const PROBLEM_CONTENT_TYPE = "application/problem+json; charset=utf-8";

/** An error the API raises on purpose, carrying its problem type. */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly problemType: string,
    readonly title: string,
    detail?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail ?? title);
  }
}

/** The HTTP reason phrase: the title of protocol-level problems (never a framework code). */
export function reasonPhrase(status: number): string {
  return STATUS_CODES[status] ?? "Error";
}

/** A request target without its query string: what may be echoed and logged. */
export function pathOf(url: string | undefined): string {
  const path = (url ?? "").split("?", 1)[0] ?? "";
  return path.slice(0, 512);
}

export function sendProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  problem: Omit<Problem, "instance" | "requestId">,
) {
  request.problemType = problem.type.startsWith(PROBLEM_BASE) ? problem.type.slice(PROBLEM_BASE.length) : problem.type;
  return reply
    .code(problem.status)
    .header("x-request-id", String(request.id))
    .type(PROBLEM_CONTENT_TYPE)
    .send({ ...problem, instance: pathOf(request.url), requestId: String(request.id) } satisfies Problem);
}

/** A request part (body, params, query, headers) failed its zod schema; issues keep zod's exact field paths. */
export class RequestValidationError extends Error {
  constructor(
    readonly part: string,
    readonly issues: FieldIssue[],
  ) {
    super(`the request ${part} does not match the schema`);
  }
}

/**
 * Fastify's own client errors (parsing, limits, routing), in words a client can act on. Anything not
 * listed keeps a generic detail: fastify's messages can name internals.
 */
const FASTIFY_DETAILS: Record<string, string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: "the request body is larger than the limit",
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "the request body must be application/json",
  FST_ERR_CTP_INVALID_TYPE: "the request has a body but no valid Content-Type",
  FST_ERR_CTP_EMPTY_JSON_BODY: "the request body is empty",
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: "Content-Length does not match the body",
  FST_ERR_CTP_INVALID_JSON_BODY: "the request body is not valid JSON",
  FST_ERR_BAD_URL: "the request path is not valid (bad percent-encoding)",
  FST_ERR_MAX_PARAM_LENGTH: "a path segment is longer than any valid value",
  FST_ERR_ASYNC_CONSTRAINT: "the request cannot be routed",
};

/** The problem type for a protocol-level status: one type per kind of failure, stable across releases. */
function protocolType(status: number): string {
  if (status === 408) return "request-timeout";
  if (status === 429) return "too-many-requests";
  return "bad-request";
}

/** What fastify raises before a handler runs (no route, malformed body, limits), as a problem. */
export function frameworkProblem(error: {
  code?: string;
  statusCode?: number;
  message?: string;
}): Omit<Problem, "instance" | "requestId"> {
  const status = error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 400;
  return {
    type: `${PROBLEM_BASE}${protocolType(status)}`,
    title: reasonPhrase(status),
    status,
    detail: (error.code && FASTIFY_DETAILS[error.code]) ?? "the request is malformed",
  };
}

/** For fastify's `frameworkErrors` option: errors raised while routing (bad URL, over-long parameter). */
export function frameworkErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  request.log.info({ code: error.code }, "refused a request before routing");
  // These replies skip the app's hooks, so they carry the baseline security headers themselves.
  reply.headers(RAW_RESPONSE_SECURITY_HEADERS);
  return sendProblem(request, reply, frameworkProblem(error));
}

/**
 * A complete HTTP/1.1 response for errors Node raises on the socket, before any request object exists
 * (unparseable request, headers too large or too slow). Same vocabulary, same headers.
 */
export function rawProblemResponse(status: number, requestId: string, detail: string): string {
  const body = JSON.stringify({
    type: `${PROBLEM_BASE}${protocolType(status)}`,
    title: reasonPhrase(status),
    status,
    detail,
    requestId,
  } satisfies Problem);
  const headers = {
    "Content-Type": PROBLEM_CONTENT_TYPE,
    "Content-Length": String(Buffer.byteLength(body)),
    "X-Request-Id": requestId,
    Connection: "close",
    ...RAW_RESPONSE_SECURITY_HEADERS,
  };
  return `HTTP/1.1 ${status} ${reasonPhrase(status)}\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join("\r\n")}\r\n\r\n${body}`;
}

/**
 * Each domain and service error code as the API answers it. `logged`: the error means Berth or its repo is wrong, not the request,
 * so it is logged whole; `opaque`: its message may name internals, so the client gets the request id instead;
 * `uncommitted`: the detail says that nothing was committed.
 */
const CODED_PROBLEMS: Record<
  DomainErrorCode | ServiceErrorCode,
  { status: number; title: string; logged?: string; opaque?: true; uncommitted?: true }
> = {
  "invalid-team": { status: 422, title: "Invalid team" },
  "team-exists": { status: 409, title: "Team already exists" },
  "team-not-found": { status: 404, title: "Team not found" },
  "render-failed": {
    status: 500,
    title: "Cannot render the team",
    logged: "cannot render from the Flux repo or templates",
    opaque: true,
  },
  "template-version-retired": {
    status: 409,
    title: "The team's template version is no longer installed",
    uncommitted: true,
  },
  "path-ownership": {
    status: 409,
    title: "Change outside the team's files",
    logged: "refused a change outside the team's own files",
    uncommitted: true,
  },
  "invalid-rollout": { status: 422, title: "Invalid rollout" },
  "rollout-not-found": { status: 404, title: "Rollout not found" },
  "rollout-state": { status: 409, title: "Not possible in the rollout's phase" },
  "rollout-conflict": { status: 409, title: "Teams are in another rollout" },
  "rollout-render-failed": { status: 422, title: "Teams cannot be rendered", uncommitted: true },
  "adoption-limit": { status: 422, title: "The hand-written tree is beyond adoption's limits", uncommitted: true },
  "adoption-unmappable": { status: 422, title: "Cannot be mapped onto a Berth team", uncommitted: true },
  "adoption-recreates-azure-resources": {
    status: 422,
    title: "Adoption would recreate Azure resources",
    uncommitted: true,
  },
  "idempotency-key-in-use": { status: 409, title: "Request in progress" },
  "idempotency-key-reused": { status: 422, title: "Idempotency-Key reused" },
  "not-proposed": { status: 409, title: "Not available in pull-request mode", uncommitted: true },
};

/** The one error handler: maps domain and HTTP errors to problems; details only below 500. */
export const problemPlugin = fp(async (app: FastifyInstance) => {
  app.setNotFoundHandler((request, reply) =>
    sendProblem(request, reply, {
      type: `${PROBLEM_BASE}not-found`,
      title: "Not Found",
      status: 404,
      detail: `no route ${request.method} ${pathOf(request.url)}`,
    }),
  );

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof HttpProblem) {
      reply.headers(error.headers);
      return sendProblem(request, reply, {
        type: `${PROBLEM_BASE}${error.problemType}`,
        title: error.title,
        status: error.status,
        detail: error.message,
      });
    }
    if (error instanceof RequestValidationError) {
      // A malformed header is a malformed request (400, as a malformed Idempotency-Key); a body, path or query
      // that breaks its schema is content the API cannot act on (422).
      if (error.part === "headers")
        return sendProblem(request, reply, {
          type: `${PROBLEM_BASE}bad-request`,
          title: reasonPhrase(400),
          status: 400,
          detail: "a request header is malformed",
          errors: error.issues,
        });
      return sendProblem(request, reply, {
        type: `${PROBLEM_BASE}invalid-request`,
        title: "Invalid request",
        status: 422,
        detail: error.message,
        errors: error.issues,
      });
    }
    if (error instanceof DomainError || error instanceof ServiceError) {
      const problem = CODED_PROBLEMS[error.code];
      if (problem.logged) request.log.error({ err: error }, problem.logged);
      const issues = error instanceof DomainError ? error.issues : [];
      if (error instanceof ServiceError && error.retryAfterSeconds !== undefined)
        reply.header("retry-after", String(error.retryAfterSeconds));
      return sendProblem(request, reply, {
        type: `${PROBLEM_BASE}${error.code}`,
        title: problem.title,
        status: problem.status,
        detail: problem.opaque
          ? "see the server log for this request id"
          : problem.uncommitted
            ? `${error.message}; nothing was committed`
            : error.message,
        ...(issues.length ? { errors: issues } : {}),
      });
    }
    // Pull-request mode: the forge refused or did not answer. Its message names the forge's answer, never the token.
    if (error instanceof ForgeError) {
      request.log.warn({ err: error }, "the forge refused or did not answer");
      if (error.kind === "unavailable") reply.header("retry-after", "5");
      return sendProblem(request, reply, {
        type: `${PROBLEM_BASE}forge-unavailable`,
        title: "Forge unavailable",
        status: 502,
        detail: request.method === "GET" ? error.message : `${error.message}; nothing was proposed`,
      });
    }
    // The remote declined the push by a rule of its own (a protected branch): the same again would be declined too.
    if (error instanceof GitOpsError && error.kind === "refused") {
      request.log.error({ err: error }, "the Flux repo declined the push");
      return sendProblem(request, reply, {
        type: `${PROBLEM_BASE}repo-refused`,
        title: "Flux repo refused the push",
        status: 502,
        detail: `${error.message}; nothing was committed. A branch that takes changes only through pull requests needs fluxRepo.review.mode pull-request (docs/pull-requests.md)`,
      });
    }
    if (error instanceof GitOpsError && error.kind !== "invalid-change" && error.kind !== "config") {
      request.log.error({ err: error }, "Flux repo write failed");
      reply.header("retry-after", "5");
      return sendProblem(request, reply, {
        type: `${PROBLEM_BASE}repo-unavailable`,
        title: "Flux repo unavailable",
        status: 503,
        detail:
          error.kind === "conflict"
            ? "the Flux repo branch kept moving; nothing was committed, try again"
            : "the Flux repo cannot be written right now; nothing was committed",
      });
    }
    const status = error.statusCode ?? 500;
    if (status < 500) {
      // Fastify's own client errors: body too large, unsupported media type, ...
      request.log.info({ code: error.code, status }, "refused a malformed request");
      return sendProblem(request, reply, frameworkProblem(error));
    }
    request.log.error({ err: error }, "request failed");
    return sendProblem(request, reply, {
      type: `${PROBLEM_BASE}internal`,
      title: "Internal Server Error",
      status: 500,
      detail: "see the server log for this request id",
    });
  });
});
