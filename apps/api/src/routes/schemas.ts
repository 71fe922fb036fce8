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
export const teamListResponse = z.object({ items: z.array(teamSchema), revision });
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
