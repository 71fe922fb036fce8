import { teamNameSchema, teamSchema, teamSpecSchema } from "@berth/core";
import { z } from "zod";
import { clusterStatusSchema } from "../team-status.js";

/** HTTP shapes of the teams API; the team model itself is @berth/core's. */

export const teamNameParams = z.object({ name: teamNameSchema });

export const fileChangeSchema = z.object({
  path: z.string(),
  status: z.enum(["added", "modified", "deleted"]),
});

const revision = z.string().nullable().describe("The Flux repo commit the answer reflects");

export const teamResponse = z.object({ team: teamSchema, revision });
export const teamListResponse = z.object({
  items: z.array(teamSchema),
  revision,
  continue: z.string().optional().describe("Present when more teams follow: pass it as `continue` to get the next page"),
});

/** An opaque page cursor: the last team name of the previous page, base64url-encoded JSON. */
const continueToken = z
  .string()
  .max(256)
  .transform((value, ctx) => {
    try {
      const decoded = teamCursor.parse(JSON.parse(Buffer.from(value, "base64url").toString("utf8")));
      return decoded.after;
    } catch {
      ctx.addIssue({ code: "custom", message: "is not a continue token this API returned" });
      return z.NEVER;
    }
  });
const teamCursor = z.object({ after: teamNameSchema }).strict();
export function encodeContinue(after: string): string {
  return Buffer.from(JSON.stringify({ after } satisfies z.infer<typeof teamCursor>)).toString("base64url");
}

export const teamListQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(1000).optional().describe("At most this many teams (1-1000); all when absent"),
    continue: continueToken.optional().describe("The `continue` of the previous page"),
  });

/** Request headers the API reads, declared for the OpenAPI document (other headers pass through). */
export const writeHeaders = z.looseObject({
  "idempotency-key": z
    .string()
    .optional()
    .describe("Makes a retry safe: the same key with the same request answers the original outcome (IETF draft-ietf-httpapi-idempotency-key-header). 1-128 visible ASCII characters, e.g. a UUID."),
});
export const conditionalHeaders = z.looseObject({
  "if-none-match": z.string().optional().describe("An ETag from an earlier answer: 304 when nothing changed since"),
});
export const writeResponse = z.object({
  team: teamSchema,
  revision: z.string().describe("The commit holding the change (the current head when nothing changed)"),
  committed: z.boolean(),
  files: z.array(fileChangeSchema),
});
export const deleteResponse = z.object({
  team: z.string(),
  revision: z.string(),
  files: z.array(fileChangeSchema),
});
export const previewResponse = z.object({
  team: teamSchema,
  revision,
  files: z.array(fileChangeSchema.extend({ content: z.string().nullable() })),
  diff: z.string().describe("Unified diff against the repo"),
});

export const statusResponse = z.object({
  team: z.string(),
  revision: revision.describe("The Flux repo commit the team spec was read from"),
  ready: z.boolean().describe("Ready on every cluster the team lands on"),
  clusters: z.array(clusterStatusSchema),
});

export const problemResponse = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number(),
    detail: z.string().optional(),
    instance: z.string().optional(),
    requestId: z.string().optional(),
    errors: z.array(z.object({ field: z.string(), rule: z.string() })).optional(),
  })
  .describe("RFC 9457 problem details (application/problem+json)");

export { teamSchema as createTeamBody, teamSpecSchema as updateTeamBody };
