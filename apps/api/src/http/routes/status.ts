import { promisify } from "node:util";
import { gzip } from "node:zlib";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import type { StatusBoard } from "../../services/status-board.js";
import { contentCodingFor } from "../encoded-body.js";
import { etagOf, matchesEtag } from "../etag.js";
import { fleetResponse, problemResponses } from "./schemas.js";
import type { FleetResponse } from "@berth/api-contract";

const security = [{ bearerAuth: [] }];
const gzipAsync = promisify(gzip);

/** The fleet: every team's status per cluster in one answer, from the shared per-cluster cache. */
export const statusRoutes: FastifyPluginAsyncZod<{ board: StatusBoard }> = async (app, { board }) => {
  // The last fleet compressed: every page and `berth status --watch` polls the same fleet until the status cache
  // refreshes (5 s), so one compression serves them all. Off the event loop: ~20 MB at 5,000 teams × 3 clusters.
  let compressed: { etag: string; gzip: Promise<Buffer> } | undefined;
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
      // A weak tag names the meaning, not the bytes: the gzip answer shares it (RFC 9110 8.8.1).
      reply.header("etag", etag).header("cache-control", "private, no-cache").header("vary", "accept-encoding");
      if (matchesEtag(request.headers["if-none-match"], etag)) return reply.code(304).send();
      reply.type("application/json; charset=utf-8");
      // The casts: the type provider types send() with the schema's type; the bytes already are that value.
      if (contentCodingFor(request.headers["accept-encoding"]) === "identity")
        return reply.send(body as unknown as FleetResponse);
      if (compressed?.etag !== etag) compressed = { etag, gzip: gzipAsync(body) };
      const bytes = await compressed.gzip;
      return reply.header("content-encoding", "gzip").send(bytes as unknown as FleetResponse);
    },
  );
};
