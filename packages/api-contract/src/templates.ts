import { z } from "zod";
import { brokenTeamsSchema } from "./teams.js";

/** HTTP shapes of the template versions (GET /v1/templates). */

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

export type TemplateVersionInfo = z.infer<typeof templateVersionInfoSchema>;
export type TemplateListResponse = z.infer<typeof templateListResponse>;
