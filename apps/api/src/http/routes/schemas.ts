import { continueToken, problemSchema } from "@berth/api-contract";
import { teamSchema, teamSpecSchema } from "@berth/core";
import { z } from "zod";

/** HTTP shapes of the teams API live in @berth/api-contract, shared with the CLI; the team model is @berth/core's. */
export {
  continueToken,
  deleteResponse,
  driftedFileSchema,
  driftResponse,
  encodeContinue,
  fileChangeSchema,
  fleetResponse,
  previewResponse,
  problemSchema as problemResponse,
  statusResponse,
  teamListResponse,
  teamNameParams,
  teamResponse,
  writeResponse,
} from "@berth/api-contract";

export const teamListQuery = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(1000)
    .optional()
    .describe("At most this many teams (1-1000); all when absent"),
  continue: continueToken.optional().describe("The `continue` of the previous page"),
});

/** Request headers the API reads, declared for the OpenAPI document (other headers pass through). */
export const writeHeaders = z.looseObject({
  "idempotency-key": z
    .string()
    .optional()
    .describe(
      "Makes a retry safe: the same key with the same request answers the original outcome (IETF draft-ietf-httpapi-idempotency-key-header). 1-128 visible ASCII characters, e.g. a UUID.",
    ),
});
export const conditionalHeaders = z.looseObject({
  "if-none-match": z.string().optional().describe("An ETag from an earlier answer: 304 when nothing changed since"),
});

export { teamSchema as createTeamBody, teamSpecSchema as updateTeamBody };

/**
 * The problems a /v1 route answers, declared once: every route authenticates (401, 403), is rate-limited (429:
 * plugins/rate-limit.ts limits every route but the probes) and can fail inside (500) or find the Flux repo
 * unavailable (503); `also` adds the route's own (404, 409, 422, ...). tests/e2e/openapi.test.ts holds each
 * route's real answers to what it declares.
 */
export function problemResponses(...also: number[]): Record<number, typeof problemSchema> {
  return Object.fromEntries([401, 403, 429, 500, 503, ...also].map((status) => [status, problemSchema]));
}
