import {
  rolloutAbortResponse,
  rolloutCreatedResponse,
  rolloutIdParams,
  rolloutListResponse,
  rolloutPreviewResponse,
  rolloutResponse,
  rolloutWriteResponse,
} from "@berth/api-contract";
import { rolloutRequestSchema } from "@berth/core";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { FastifyRequest } from "fastify";
import { z } from "zod";
import type { RolloutService } from "../../services/rollouts/service.js";
import { onBehalfOfHeaders, problemResponse, problemResponses, writeHeaders } from "./schemas.js";
import { originOf, writeRequest } from "../write-request.js";

/** The rollouts API's response shapes live in @berth/api-contract, shared with the CLI. */
export const previewQuery = z.object({
  diffs: z
    .enum(["true", "false"])
    .default("true")
    .transform((v) => v === "true")
    .describe("Include per-team unified diffs (false: statuses only, for a quick summary of a large fleet)"),
});

const security = [{ bearerAuth: [] }];
const errors = problemResponses(422);
/** A write's headers can be malformed (Idempotency-Key, Berth-On-Behalf-Of): 400. */
const writeErrors = problemResponses(400, 422);

export const rolloutRoutes: FastifyPluginAsyncZod<{ rollouts: RolloutService }> = async (app, { rollouts }) => {
  const read = { requiredRole: "read" as const };
  const write = { requiredRole: "write" as const };
  const tags = ["rollouts"];

  app.post(
    "/rollouts/preview",
    {
      config: write,
      schema: {
        tags,
        summary: "Preview a rollout: teams and files that would change, with diffs (no commit)",
        security,
        querystring: previewQuery,
        body: rolloutRequestSchema,
        response: { 200: rolloutPreviewResponse, ...errors },
      },
    },
    async (request) => {
      const preview = await rollouts.preview(request.body, { diffs: request.query.diffs });
      return { ...preview, revision: preview.revision ?? null };
    },
  );

  app.post(
    "/rollouts",
    {
      config: { ...write, action: "rollout-start" },
      schema: {
        tags,
        summary: "Start a rollout: without waves one commit for the whole selection; with waves, gated wave by wave",
        security,
        headers: writeHeaders,
        body: rolloutRequestSchema,
        response: { 201: rolloutCreatedResponse, 409: problemResponse, ...writeErrors },
      },
    },
    async (request, reply) => {
      const { replayed, ...result } = await rollouts.create(request.body, writeRequest(request, request.body));
      if (replayed) reply.header("idempotent-replayed", "true");
      audited(request, result, replayed);
      return reply.code(201).header("location", `/v1/rollouts/${result.rollout.metadata.name}`).send(result);
    },
  );

  app.get(
    "/rollouts",
    {
      config: read,
      schema: {
        tags,
        summary: "Every rollout, oldest first",
        security,
        response: { 200: rolloutListResponse, ...errors },
      },
    },
    async () => {
      const { revision: rev, items } = await rollouts.list();
      return { items, revision: rev ?? null };
    },
  );

  app.get(
    "/rollouts/:id",
    {
      config: read,
      schema: {
        tags,
        summary: "A rollout: its state from the Flux repo and the last gate evaluation",
        security,
        params: rolloutIdParams,
        response: { 200: rolloutResponse, 404: problemResponse, ...errors },
      },
    },
    async (request) => {
      const { revision: rev, rollout, progress } = await rollouts.get(request.params.id);
      return { rollout, revision: rev ?? null, progress: progress ?? null };
    },
  );

  for (const action of ["pause", "resume"] as const) {
    app.post(
      `/rollouts/:id/${action}`,
      {
        config: { ...write, action: `rollout-${action}` },
        schema: {
          tags,
          summary:
            action === "pause"
              ? "Pause: no further wave is committed"
              : "Resume a paused or halted rollout (the wave's gate clock restarts)",
          security,
          params: rolloutIdParams,
          headers: onBehalfOfHeaders,
          response: { 200: rolloutWriteResponse, 404: problemResponse, 409: problemResponse, ...writeErrors },
        },
      },
      async (request) => audited(request, await rollouts[action](request.params.id, originOf(request))),
    );
  }

  app.post(
    "/rollouts/:id/abort",
    {
      config: { ...write, action: "rollout-abort" },
      schema: {
        tags,
        summary: "Abort: no further wave is committed, nothing is reverted; says which version each team is on",
        security,
        params: rolloutIdParams,
        headers: onBehalfOfHeaders,
        response: { 200: rolloutAbortResponse, 404: problemResponse, 409: problemResponse, ...writeErrors },
      },
    },
    async (request) => audited(request, await rollouts.abort(request.params.id, originOf(request))),
  );
};

/** Records a rollout's write for the audit line: its start, pause, resume or abort, each one commit (or a replay). */
function audited<T extends { rollout: { metadata: { name: string } }; revision: string }>(
  request: FastifyRequest,
  result: T,
  replayed = false,
): T {
  request.auditResult = {
    team: null,
    rollout: result.rollout.metadata.name,
    revision: result.revision,
    outcome: replayed ? "replayed" : "committed",
  };
  return result;
}
