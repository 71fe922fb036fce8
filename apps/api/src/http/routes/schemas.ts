import { continueToken, problemSchema } from "@berth/api-contract";
import { teamSchema, teamSpecSchema } from "@berth/core";
import { MAX_TRAILER_VALUE } from "@berth/gitops";
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
  proposalResponse,
  reviewResponse,
  reviewListResponse,
  deleteProposalResponse,
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

/** Whom a caller with its own token, such as a portal (Backstage's scaffolder), acts for: `user:default/jane.doe`. */
export const ON_BEHALF_OF_HEADER = "berth-on-behalf-of";

/** One rule, reported once (`abort`: a value that breaks two checks is not listed twice). */
const onBehalfOfRule = {
  message: `must be 1-${MAX_TRAILER_VALUE} printable ASCII characters without a comma (one name, in one header)`,
  abort: true,
};
/**
 * Printable ASCII, as the token's own actor (plugins/auth.ts), and no longer than a commit trailer keeps: the
 * value is refused rather than recorded changed. No comma, as in Idempotency-Key: Node joins two headers with
 * one, and two names would be recorded as one. The commit message cleans every trailer value again.
 */
export const onBehalfOf = z
  .string()
  .min(1, onBehalfOfRule)
  .max(MAX_TRAILER_VALUE, onBehalfOfRule)
  .regex(/^[\x20-\x2b\x2d-\x7e]+$/, onBehalfOfRule)
  .optional()
  .describe(
    `Whom a caller such as a portal acts for, e.g. \`user:default/jane.doe\` or an email: recorded as the caller's claim in a \`Berth-On-Behalf-Of\` commit trailer, beside \`Berth-Requested-By\` (the token's identity, which it never replaces). 1-${MAX_TRAILER_VALUE} printable ASCII characters, no comma.`,
  );

/**
 * Request headers the API reads, validated and declared for the OpenAPI document (other headers pass through):
 * every write that commits takes Berth-On-Behalf-Of; those that honour Idempotency-Key take writeHeaders.
 */
export const onBehalfOfHeaders = z.looseObject({ [ON_BEHALF_OF_HEADER]: onBehalfOf });
export const writeHeaders = z.looseObject({
  [ON_BEHALF_OF_HEADER]: onBehalfOf,
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
