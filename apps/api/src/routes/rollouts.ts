import { gateTeamReportSchema, rolloutIdSchema, rolloutRequestSchema, rolloutSchema } from "@berth/core";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import type { RolloutService } from "../rollouts/service.js";
import { fileChangeSchema, problemResponse } from "./schemas.js";
import { originOf } from "./teams.js";

/** HTTP shapes of the rollouts API (exported for clients: the CLI and the UI reuse them). */

export const rolloutIdParams = z.object({ id: rolloutIdSchema });

export const gateProgressSchema = z
  .object({
    evaluatedAt: z.string(),
    wave: z.string(),
    verdict: z.enum(["pass", "wait", "halt"]),
    message: z.string(),
    ready: z.number().int(),
    waiting: z.number().int(),
    failed: z.number().int(),
    teams: z.array(gateTeamReportSchema),
  })
  .describe("The last gate evaluation of the current wave, by the replica driving the rollout");

const revision = z.string().nullable().describe("The Flux repo commit the answer reflects");

export const rolloutResponse = z.object({ rollout: rolloutSchema, revision, progress: gateProgressSchema.nullable() });
export const rolloutListResponse = z.object({ items: z.array(rolloutSchema), revision });
export const rolloutCreatedResponse = z.object({
  rollout: rolloutSchema,
  revision: z.string().describe("The commit that created the rollout (unstaged: the commit of the whole change)"),
  summary: z.object({ teams: z.number().int(), files: z.number().int().describe("Files written (unstaged; 0 for a staged rollout, whose waves commit later)") }),
});
export const rolloutWriteResponse = z.object({ rollout: rolloutSchema, revision: z.string() });
export const rolloutAbortResponse = rolloutWriteResponse.extend({
  versions: z.record(z.string(), z.array(z.string())).describe("Each team of the rollout by the template version it is on now (offboarded: \"gone\")"),
});

export const teamPreviewSchema = z.object({
  team: z.string(),
  from: z.string(),
  to: z.string(),
  files: z.array(fileChangeSchema),
  diff: z.string().describe("Unified diff of the team's files against the repo (empty with diffs=false)"),
});
export const rolloutPreviewResponse = z.object({
  revision,
  target: z.object({ templateVersion: z.string().optional() }),
  summary: z.object({
    selected: z.number().int(),
    changed: z.number().int(),
    unchanged: z.number().int(),
    failed: z.number().int(),
    files: z.object({ added: z.number().int(), modified: z.number().int(), deleted: z.number().int() }),
  }),
  waves: z.array(z.object({ name: z.string(), teams: z.array(z.string()) })),
  problems: z.array(z.object({ field: z.string(), rule: z.string() })).describe("Why creating this rollout would be refused; empty: it would be accepted"),
  failed: z.array(z.object({ team: z.string(), error: z.string() })),
  unchanged: z.array(z.string()),
  teams: z.array(teamPreviewSchema),
});
export const previewQuery = z.object({
  diffs: z
    .enum(["true", "false"])
    .default("true")
    .transform((v) => v === "true")
    .describe("Include per-team unified diffs (false: statuses only, for a quick summary of a large fleet)"),
});

const security = [{ bearerAuth: [] }];
const errors = { 401: problemResponse, 403: problemResponse, 422: problemResponse, 500: problemResponse, 503: problemResponse };

export const rolloutRoutes: FastifyPluginAsyncZod<{ rollouts: RolloutService }> = async (app, { rollouts }) => {
  const read = { requiredRole: "read" as const };
  const write = { requiredRole: "write" as const };
  const tags = ["rollouts"];

  app.post(
    "/rollouts/preview",
    {
      config: write,
      schema: { tags, summary: "Preview a rollout: teams and files that would change, with diffs (no commit)", security, querystring: previewQuery, body: rolloutRequestSchema, response: { 200: rolloutPreviewResponse, ...errors } },
    },
    async (request) => {
      const preview = await rollouts.preview(request.body, { diffs: request.query.diffs });
      return { ...preview, revision: preview.revision ?? null };
    },
  );

  app.post(
    "/rollouts",
    {
      config: write,
      schema: {
        tags,
        summary: "Start a rollout: without waves one commit for the whole selection; with waves, gated wave by wave",
        security,
        body: rolloutRequestSchema,
        response: { 201: rolloutCreatedResponse, 409: problemResponse, ...errors },
      },
    },
    async (request, reply) => {
      const result = await rollouts.create(request.body, originOf(request));
      return reply.code(201).header("location", `/v1/rollouts/${result.rollout.metadata.name}`).send(result);
    },
  );

  app.get("/rollouts", { config: read, schema: { tags, summary: "Every rollout, oldest first", security, response: { 200: rolloutListResponse, ...errors } } }, async () => {
    const { revision: rev, items } = await rollouts.list();
    return { items, revision: rev ?? null };
  });

  app.get(
    "/rollouts/:id",
    { config: read, schema: { tags, summary: "A rollout: its state from the Flux repo and the last gate evaluation", security, params: rolloutIdParams, response: { 200: rolloutResponse, 404: problemResponse, ...errors } } },
    async (request) => {
      const { revision: rev, rollout, progress } = await rollouts.get(request.params.id);
      return { rollout, revision: rev ?? null, progress: progress ?? null };
    },
  );

  for (const action of ["pause", "resume"] as const) {
    app.post(
      `/rollouts/:id/${action}`,
      {
        config: write,
        schema: {
          tags,
          summary: action === "pause" ? "Pause: no further wave is committed" : "Resume a paused or halted rollout (the wave's gate clock restarts)",
          security,
          params: rolloutIdParams,
          response: { 200: rolloutWriteResponse, 404: problemResponse, 409: problemResponse, ...errors },
        },
      },
      async (request) => rollouts[action](request.params.id, originOf(request)),
    );
  }

  app.post(
    "/rollouts/:id/abort",
    {
      config: write,
      schema: {
        tags,
        summary: "Abort: no further wave is committed, nothing is reverted; says which version each team is on",
        security,
        params: rolloutIdParams,
        response: { 200: rolloutAbortResponse, 404: problemResponse, 409: problemResponse, ...errors },
      },
    },
    async (request) => rollouts.abort(request.params.id, originOf(request)),
  );
};
