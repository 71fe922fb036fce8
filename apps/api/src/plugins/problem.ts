import {
  AdoptionRecreatesError,
  AdoptionUnmappableError,
  FleetRenderError,
  PathOwnershipError,
  RenderError,
  RepoContentError,
  RolloutConflictError,
  RolloutNotFoundError,
  RolloutStateError,
  RolloutValidationError,
  TeamExistsError,
  TeamNotFoundError,
  TeamValidationError,
  type FieldIssue,
} from "@berth/core";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { GitOpsError } from "@berth/gitops";
import fp from "fastify-plugin";

/** RFC 9457 problem details. `type` URIs are documented in docs/api.md. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
  requestId?: string;
  errors?: FieldIssue[];
}

export const PROBLEM_BASE = "https://berth.dev/problems/";

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

export function sendProblem(request: FastifyRequest, reply: FastifyReply, problem: Omit<Problem, "instance" | "requestId">) {
  return reply
    .code(problem.status)
    .type("application/problem+json")
    .send({ ...problem, instance: request.url, requestId: String(request.id) } satisfies Problem);
}

/** A request part (body, params, query) failed its zod schema; issues keep zod's exact field paths. */
export class RequestValidationError extends Error {
  constructor(
    readonly part: string,
    readonly issues: FieldIssue[],
  ) {
    super(`the request ${part} does not match the schema`);
  }
}

/** The one error handler: maps domain and HTTP errors to problems; details only below 500. */
export const problemPlugin = fp(async (app: FastifyInstance) => {
  app.setNotFoundHandler((request, reply) =>
    sendProblem(request, reply, { type: `${PROBLEM_BASE}not-found`, title: "Not Found", status: 404, detail: `no route ${request.method} ${request.url.split("?")[0]}` }),
  );

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof HttpProblem) {
      reply.headers(error.headers);
      return sendProblem(request, reply, { type: `${PROBLEM_BASE}${error.problemType}`, title: error.title, status: error.status, detail: error.message });
    }
    if (error instanceof RequestValidationError) {
      return sendProblem(request, reply, { type: `${PROBLEM_BASE}invalid-request`, title: "Invalid request", status: 422, detail: error.message, errors: error.issues });
    }
    if (error instanceof TeamValidationError) {
      return sendProblem(request, reply, { type: `${PROBLEM_BASE}invalid-team`, title: "Invalid team", status: 422, detail: error.message, errors: error.issues });
    }
    if (error instanceof TeamExistsError) {
      return sendProblem(request, reply, { type: `${PROBLEM_BASE}team-exists`, title: "Team already exists", status: 409, detail: error.message });
    }
    if (error instanceof TeamNotFoundError) {
      return sendProblem(request, reply, { type: `${PROBLEM_BASE}team-not-found`, title: "Team not found", status: 404, detail: error.message });
    }
    if (error instanceof RolloutValidationError) {
      return sendProblem(request, reply, { type: `${PROBLEM_BASE}invalid-rollout`, title: "Invalid rollout", status: 422, detail: error.message, errors: error.issues });
    }
    if (error instanceof FleetRenderError) {
      // Each team that cannot be rendered, and why: the team file or the platform config must change first.
      const errors = error.failures.map((f) => ({ field: `teams.${f.team}`, rule: f.error }));
      return sendProblem(request, reply, { type: `${PROBLEM_BASE}rollout-render-failed`, title: "Teams cannot be rendered", status: 422, detail: `${error.message}; nothing was committed`, errors });
    }
    if (error instanceof AdoptionUnmappableError) {
      return sendProblem(request, reply, { type: `${PROBLEM_BASE}adoption-unmappable`, title: "Cannot be mapped onto a Berth team", status: 422, detail: `${error.message}; nothing was committed`, errors: error.issues });
    }
    if (error instanceof AdoptionRecreatesError) {
      const errors = error.changes.map((c) => ({
        field: `${c.cluster} ${c.kind} ${c.object} spec.azureName`,
        rule: `is ${c.from} in Azure; Berth would name it ${c.to}, and Azure would create a new ${c.kind === "ResourceGroup" ? "(empty) resource group" : "identity (new client and principal id)"}: adopt with keepAzureNames: true`,
      }));
      return sendProblem(request, reply, { type: `${PROBLEM_BASE}adoption-recreates-azure-resources`, title: "Adoption would recreate Azure resources", status: 422, detail: `${error.message}; nothing was committed`, errors });
    }
    if (error instanceof RolloutNotFoundError) {
      return sendProblem(request, reply, { type: `${PROBLEM_BASE}rollout-not-found`, title: "Rollout not found", status: 404, detail: error.message });
    }
    if (error instanceof RolloutStateError) {
      return sendProblem(request, reply, { type: `${PROBLEM_BASE}rollout-state`, title: "Not possible in the rollout's phase", status: 409, detail: error.message });
    }
    if (error instanceof RolloutConflictError) {
      return sendProblem(request, reply, { type: `${PROBLEM_BASE}rollout-conflict`, title: "Teams are in another rollout", status: 409, detail: error.message });
    }
    if (error instanceof PathOwnershipError) {
      request.log.error({ err: error }, "refused a change outside the team's own files");
      return sendProblem(request, reply, { type: `${PROBLEM_BASE}path-ownership`, title: "Change outside the team's files", status: 409, detail: `${error.message}; nothing was committed` });
    }
    if (error instanceof RenderError || error instanceof RepoContentError) {
      request.log.error({ err: error }, "cannot render from the Flux repo or templates");
      return sendProblem(request, reply, { type: `${PROBLEM_BASE}render-failed`, title: "Cannot render the team", status: 500, detail: "see the server log for this request id" });
    }
    if (error instanceof GitOpsError && error.kind !== "invalid-change" && error.kind !== "config") {
      request.log.error({ err: error }, "Flux repo write failed");
      reply.header("retry-after", "5");
      return sendProblem(request, reply, {
        type: `${PROBLEM_BASE}repo-unavailable`,
        title: "Flux repo unavailable",
        status: 503,
        detail: error.kind === "conflict" ? "the Flux repo branch kept moving; nothing was committed, try again" : "the Flux repo cannot be written right now; nothing was committed",
      });
    }
    const status = error.statusCode ?? 500;
    if (status < 500) {
      // Fastify's own client errors: malformed JSON, body too large, unsupported media type...
      return sendProblem(request, reply, { type: `${PROBLEM_BASE}bad-request`, title: error.code ?? "Bad request", status, detail: error.message });
    }
    request.log.error({ err: error }, "request failed");
    return sendProblem(request, reply, { type: `${PROBLEM_BASE}internal`, title: "Internal Server Error", status, detail: "see the server log for this request id" });
  });
});
