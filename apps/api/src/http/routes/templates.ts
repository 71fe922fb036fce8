import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { brokenTeamsSchema } from "@berth/api-contract";
import { z } from "zod";
import type { FleetService } from "../../services/fleet-service.js";
import { problemResponses } from "./schemas.js";

export const templateVersionInfoSchema = z.object({
  version: z.string(),
  default: z.boolean().describe("New teams get this version (platform.templateVersion)"),
  available: z
    .boolean()
    .describe("The version's folder is loaded; false for a version teams still use whose folder is gone"),
  teams: z.number().int().describe("Teams rendered with this version"),
});
export const templateListResponse = z.object({
  revision: z.string().nullable().describe("The Flux repo commit the counts were read from"),
  default: z.string(),
  items: z.array(templateVersionInfoSchema),
  broken: brokenTeamsSchema.describe("Teams whose team file cannot be read (not counted), each with why"),
});

const security = [{ bearerAuth: [] }];

export const templateRoutes: FastifyPluginAsyncZod<{ fleet: FleetService }> = async (app, { fleet }) => {
  app.get(
    "/templates",
    {
      config: { requiredRole: "read" },
      schema: {
        tags: ["fleet"],
        summary: "Template versions and how many teams use each",
        security,
        response: { 200: templateListResponse, ...problemResponses() },
      },
    },
    async () => {
      const { revision, ...rest } = await fleet.templates();
      return { revision: revision ?? null, ...rest };
    },
  );
};
