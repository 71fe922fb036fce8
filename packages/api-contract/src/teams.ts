import { teamNameSchema, teamSchema } from "@berth/core";
import { z } from "zod";

/** HTTP shapes of the teams API; the team model itself is @berth/core's. */

export const teamNameParams = z.object({ name: teamNameSchema });

export const fileChangeSchema = z.object({
  path: z.string(),
  status: z.enum(["added", "modified", "deleted"]),
});

export const revisionSchema = z.string().nullable().describe("The Flux repo commit the answer reflects");

export const teamResponse = z.object({ team: teamSchema, revision: revisionSchema });

/** A team folder whose team file cannot be read (a hand edit, corruption): reported beside the teams that can. */
export const brokenTeamSchema = z.object({
  team: z.string().describe("The team folder's name"),
  error: z.string().describe("Why its team file cannot be read"),
});
export const brokenTeamsSchema = z
  .array(brokenTeamSchema)
  .default([])
  .describe("Teams whose team file cannot be read (every one, on every page): left out of the answer, each with why");

export const teamListResponse = z.object({
  items: z.array(teamSchema),
  broken: brokenTeamsSchema,
  revision: revisionSchema,
  continue: z
    .string()
    .optional()
    .describe("Present when more teams follow: pass it as `continue` to get the next page"),
});
export const writeResponse = z.object({
  team: teamSchema,
  revision: z.string().describe("The commit holding the change (the current head when nothing changed)"),
  committed: z.boolean(),
  files: z.array(fileChangeSchema),
});
export const pullRequestSchema = z
  .object({
    number: z.number().int(),
    url: z.string(),
    state: z.enum(["open", "approved", "changes-requested", "merged", "closed"]),
  })
  .describe("The pull request that proposes the change (pull-request mode): it applies once merged");
export type PullRequestRef = z.infer<typeof pullRequestSchema>;
/** The team's pending change in pull-request mode: its open pull request and where review stands. */
export const reviewResponse = z.object({ team: z.string(), pullRequest: pullRequestSchema });
/** Every team whose change waits in an open pull request, by name; always empty in direct mode. */
export const reviewListResponse = z.object({
  review: z.enum(["direct", "pull-request"]).describe("The platform's review mode (fluxRepo.review.mode)"),
  items: z.array(reviewResponse),
});
export type ReviewListResponse = z.infer<typeof reviewListResponse>;
/** 202 in pull-request mode: the change is committed on the team's branch, not yet on the Flux repo's branch. */
export const proposalResponse = writeResponse.extend({ pullRequest: pullRequestSchema });
export const deleteResponse = z.object({
  team: z.string(),
  revision: z.string(),
  files: z.array(fileChangeSchema),
  pullRequest: pullRequestSchema
    .optional()
    .describe(
      "Pull-request mode, a team only in review: its onboarding's pull request, closed without merge (nothing was committed)",
    ),
});
/** 202 in pull-request mode: the offboarding waits in the team's pull request. */
export const deleteProposalResponse = deleteResponse.extend({ pullRequest: pullRequestSchema });
export const previewResponse = z.object({
  team: teamSchema,
  revision: revisionSchema,
  files: z.array(fileChangeSchema.extend({ content: z.string().nullable() })),
  diff: z.string().describe("Unified diff against the repo"),
});

export type BrokenTeam = z.infer<typeof brokenTeamSchema>;
export type TeamListResponse = z.infer<typeof teamListResponse>;
export type TeamResponse = z.infer<typeof teamResponse>;
export type WriteResponse = z.infer<typeof writeResponse>;
export type DeleteResponse = z.infer<typeof deleteResponse>;
export type PreviewResponse = z.infer<typeof previewResponse>;
