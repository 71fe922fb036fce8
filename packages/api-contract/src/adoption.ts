import { teamSchema } from "@berth/core";
import { z } from "zod";
import { fileChangeSchema, pullRequestSchema } from "./teams.js";

/** HTTP shapes of adoption (POST /v1/teams/{name}/adopt and its preview); the request is @berth/core's. */

export const adoptionReportSchema = z.object({
  kustomizations: z
    .array(
      z.object({
        cluster: z.string(),
        path: z.string(),
        name: z.string(),
        namespace: z.string(),
        fate: z.enum(["replaced", "suspended"]),
      }),
    )
    .describe(
      "The hand-written Flux Kustomizations: replaced by Berth's, or suspended with pruning off (delete them after the clusters applied the adoption)",
    ),
  mapped: z.array(z.object({ field: z.string(), from: z.string() })).describe("Where each team field came from"),
  roles: z
    .array(
      z.object({
        cluster: z.string(),
        object: z.string(),
        role: z.string(),
        scope: z.enum(["team-resource-group", "exact", "pattern"]),
        variables: z.record(z.string(), z.string()).optional(),
      }),
    )
    .describe(
      "Each hand-written RoleAssignment and the catalog role it matched: on the team's resource group, on the entry's ARM id with known values (exact), or with variables Berth does not know matched as any value (pattern, with the values found)",
    ),
  azureNames: z
    .array(
      z.object({
        cluster: z.string(),
        kind: z.enum(["ResourceGroup", "UserAssignedIdentity"]),
        object: z.string(),
        from: z.string(),
        to: z.string(),
        kept: z.boolean(),
      }),
    )
    .describe("Azure names that differ from Berth's; all kept (an adoption that would rename is refused)"),
  objects: z
    .array(
      z.object({
        ref: z.string(),
        source: z.string(),
        cluster: z.string(),
        fate: z.enum(["updated", "carried", "controller", "left-behind"]),
        note: z.string().optional(),
      }),
    )
    .describe(
      "Each hand-written object: updated in place by Berth's, carried as the team's own manifest (spec.extraManifests), written by Berth's controller now (aso-credential), or left behind on the cluster (what to do with it)",
    ),
  warnings: z.array(z.string()),
  cleanup: z
    .array(z.string())
    .describe(
      "Hand-written files that hold nothing but the team's: delete them once every cluster applied the adoption commit",
    ),
  cleanupDocuments: z
    .array(z.object({ path: z.string(), kind: z.string(), namespace: z.string(), name: z.string() }))
    .describe(
      "The team's suspended Kustomizations in files that hold other documents too (another team's): remove the document, keep the file",
    ),
});
export const adoptionPreviewResponse = z.object({
  team: teamSchema,
  revision: z.string().nullable(),
  report: adoptionReportSchema,
  files: z.array(fileChangeSchema.extend({ content: z.string().nullable() })),
  diff: z.string().describe("Unified diff against the repo"),
});
export const adoptionResponse = z.object({
  team: teamSchema,
  revision: z.string(),
  report: adoptionReportSchema,
  files: z.array(fileChangeSchema),
});
/** 202 in pull-request mode: the adoption waits in the team's pull request (nothing is on the Flux repo's branch). */
export const adoptionProposalResponse = adoptionResponse.extend({ pullRequest: pullRequestSchema });

export type AdoptionReport = z.infer<typeof adoptionReportSchema>;
export type AdoptionPreviewResponse = z.infer<typeof adoptionPreviewResponse>;
export type AdoptionResponse = z.infer<typeof adoptionResponse>;
export type AdoptionProposalResponse = z.infer<typeof adoptionProposalResponse>;
