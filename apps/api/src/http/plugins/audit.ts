import type { FastifyInstance, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import type { Idempotency } from "../../services/idempotency.js";
import type { AuditedAction, AuditLine, AuditOutcome } from "../../services/audit.js";
import { onBehalfOfOf } from "../write-request.js";

export type { AuditedAction, AuditOutcome } from "../../services/audit.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** Marks a write route: its every answer is audited (one line per request). */
    action?: AuditedAction;
  }
  interface FastifyRequest {
    idempotency?: Idempotency;
    /** Set by a write handler that got to the repo: what happened there. */
    auditResult?: {
      team: string | null;
      rollout?: string;
      revision: string;
      /** Refused and failed are the plugin's to say, from the status. */
      outcome: Exclude<AuditOutcome, "refused" | "failed">;
      /** Pull-request mode: the pull request the write proposed in (or closed). */
      pullRequest?: number;
    };
  }
}

function teamOf(request: FastifyRequest): string | null {
  const fromPath = (request.params as { name?: unknown } | undefined)?.name;
  if (typeof fromPath === "string") return fromPath.slice(0, 64);
  const fromBody = (request.body as { name?: unknown } | undefined)?.name;
  return typeof fromBody === "string" ? fromBody.slice(0, 64) : null;
}

function rolloutOf(request: FastifyRequest): string | null {
  const fromPath = (request.params as { id?: unknown } | undefined)?.id;
  return typeof fromPath === "string" ? fromPath.slice(0, 64) : null;
}

/**
 * One structured audit line per write request, whatever its fate: who, what, which team, the request id and
 * idempotency key, the resulting revision and the outcome. The commit's trailers carry the same facts for
 * the writes that landed (docs/operations.md, "Who changed a team"). Written at info level even when the
 * log level is higher: an audit trail is not optional.
 */
export const auditPlugin = fp(async (app: FastifyInstance) => {
  app.addHook("onResponse", async (request, reply) => {
    const action = request.routeOptions.config.action;
    if (!action) return;
    const result = request.auditResult;
    const status = reply.statusCode;
    const outcome: AuditOutcome = result?.outcome ?? (status >= 500 ? "failed" : "refused");
    const audit: AuditLine = {
      principal: request.principal?.actor ?? null,
      onBehalfOf: onBehalfOfOf(request),
      action,
      team: result ? result.team : teamOf(request),
      rollout: result?.rollout ?? rolloutOf(request),
      requestId: String(request.id),
      idempotencyKey: request.idempotency?.key ?? null,
      revision: result?.revision ?? null,
      pullRequest: result?.pullRequest ?? null,
      outcome,
      status,
      problem: request.problemType ?? null,
    };
    request.log.child({}, { level: "info" }).info({ audit }, "audit");
  });
});
