import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import type { DriftResponse } from "@berth/api-contract";
import type { FleetService } from "../../services/fleet-service.js";
import { continueToken, driftedFileSchema, driftResponse, problemResponses } from "./schemas.js";

/** The drift shapes are @berth/api-contract's; re-exported for the tests that import them from here. */
export { driftedFileSchema, driftResponse };

/** At most this many drifted or failed teams a page: with diffs, each team's hold up to 32 KiB. */
export const DRIFT_PAGE_MAX = 100;

export const driftQuery = z.object({
  diffs: z
    .enum(["true", "false"])
    .default("true")
    .transform((v) => v === "true"),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(DRIFT_PAGE_MAX)
    .default(50)
    .describe(`Drifted or failed teams per page (1-${DRIFT_PAGE_MAX}, default 50)`),
  continue: continueToken.optional().describe("The `continue` of the previous page"),
});

export const fleetRoutes: FastifyPluginAsyncZod<{ fleet: FleetService }> = async (app, { fleet }) => {
  app.get(
    "/fleet/drift",
    {
      config: { requiredRole: "read" },
      schema: {
        tags: ["fleet"],
        summary:
          "Generated files that differ from Berth's render of their team file (hand edits in the Flux repo), paged by team name",
        security: [{ bearerAuth: [] }],
        querystring: driftQuery,
        response: { 200: driftResponse, ...problemResponses(422) },
      },
    },
    async (request, reply) => {
      const { diffs, limit, continue: after } = request.query;
      const body = await fleet.drift({ diffs, limit, after });
      // Checked against driftResponse and serialized in the drift worker (drift-body.ts); a Buffer payload skips
      // fastify's serializer (hence the cast: the type provider types send() with the schema's type).
      const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
      return reply.type("application/json; charset=utf-8").send(bytes as unknown as DriftResponse);
    },
  );
};
