import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import type { StatusBoard } from "../../services/status-board.js";
import { etagOf, matchesEtag } from "../etag.js";
import { fleetResponse, problemResponses } from "./schemas.js";
import type { FleetResponse } from "@berth/api-contract";

const security = [{ bearerAuth: [] }];

/** The fleet: every team's status per cluster in one answer, from the shared per-cluster cache. */
export const statusRoutes: FastifyPluginAsyncZod<{ board: StatusBoard }> = async (app, { board }) => {
  app.get(
    "/status",
    {
      config: { requiredRole: "read" },
      schema: {
        tags: ["teams"],
        summary:
          "Every team's status on every cluster it lands on (ETag: send If-None-Match to get 304 while nothing changed)",
        security,
        response: {
          200: fleetResponse,
          304: z.void().describe("Not Modified: the If-None-Match tag is current"),
          ...problemResponses(),
        },
      },
    },
    async (request, reply) => {
      const fleet = await board.fleet();
      // Serialized once, for the ETag and the answer: at 5,000 teams × 3 clusters the fleet is ~20 MB of JSON,
      // and the schema serializer would validate and stringify it all again. Its shape is StatusBoard's typed
      // FleetResponse, the schema above.
      const body = JSON.stringify(fleet satisfies FleetResponse);
      const etag = etagOf(body);
      reply.header("etag", etag).header("cache-control", "private, no-cache");
      if (matchesEtag(request.headers["if-none-match"], etag)) return reply.code(304).send();
      // The cast: the type provider types send() with the schema's type; the text already is that value, serialized.
      return reply.type("application/json; charset=utf-8").send(body as unknown as FleetResponse);
    },
  );
};
