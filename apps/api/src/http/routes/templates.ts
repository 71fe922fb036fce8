import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { templateListResponse } from "@berth/api-contract";
import type { FleetService } from "../../services/fleet-service.js";
import { problemResponses } from "./schemas.js";

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
