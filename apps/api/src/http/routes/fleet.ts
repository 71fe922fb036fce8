import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import type { FleetService } from "../../services/fleet-service.js";
import { problemResponses } from "./schemas.js";

/** HTTP shapes of the fleet routes (exported for clients). */

export const driftedFileSchema = z.object({
  path: z.string(),
  drift: z
    .enum(["modified", "missing", "unexpected"])
    .describe(
      "modified: differs; missing: Berth renders it, the repo lacks it; unexpected: in the team's files, not rendered",
    ),
  diff: z.string().describe("Unified diff from the repo's content to Berth's render (empty with diffs=false)"),
});
export const driftResponse = z.object({
  revision: z.string().nullable(),
  summary: z.object({
    checked: z.number().int(),
    drifted: z.number().int(),
    files: z.number().int(),
    failed: z.number().int(),
  }),
  teams: z.array(z.object({ team: z.string(), templateVersion: z.string(), files: z.array(driftedFileSchema) })),
  layout: z.array(driftedFileSchema).describe("Cluster teams indexes that do not list exactly the teams present"),
  failed: z
    .array(z.object({ team: z.string(), error: z.string() }))
    .describe("Teams that cannot be rendered, so their drift cannot be told"),
  fix: z
    .object({ selector: z.object({ names: z.array(z.string()) }) })
    .nullable()
    .describe("A rollout request body that puts the drifted teams back (same version): POST /v1/rollouts"),
});
export const driftQuery = z.object({
  diffs: z
    .enum(["true", "false"])
    .default("true")
    .transform((v) => v === "true"),
});

export const fleetRoutes: FastifyPluginAsyncZod<{ fleet: FleetService }> = async (app, { fleet }) => {
  app.get(
    "/fleet/drift",
    {
      config: { requiredRole: "read" },
      schema: {
        tags: ["fleet"],
        summary: "Generated files that differ from Berth's render of their team file (hand edits in the Flux repo)",
        security: [{ bearerAuth: [] }],
        querystring: driftQuery,
        response: { 200: driftResponse, ...problemResponses(422) },
      },
    },
    async (request) => {
      const { revision, teams, layout, failed, checked } = await fleet.drift({ diffs: request.query.diffs });
      const drifted = teams.map((t) => t.team);
      return {
        revision: revision ?? null,
        summary: {
          checked,
          drifted: teams.length,
          files: teams.reduce((n, t) => n + t.files.length, 0) + layout.length,
          failed: failed.length,
        },
        teams,
        layout,
        failed,
        fix: drifted.length ? { selector: { names: drifted } } : null,
      };
    },
  );
};
