import { z } from "zod";
import { revisionSchema } from "./teams.js";

/** HTTP shapes of GET /v1/fleet/drift: hand edits in the Flux repo, paged by team name. */

export const driftedFileSchema = z.object({
  path: z.string(),
  drift: z
    .enum(["modified", "missing", "unexpected"])
    .describe(
      "modified: differs; missing: Berth renders it, the repo lacks it; unexpected: in the team's files, not rendered",
    ),
  diff: z
    .string()
    .describe(
      "Unified diff from the repo's content to Berth's render (empty with diffs=false); a team's diffs hold at most 32 KiB characters in all",
    ),
  truncated: z
    .boolean()
    .describe("The diff was cut or left out (size limits); its last line then starts with `\\ Berth: diff truncated`"),
});

export const driftedTeamSchema = z.object({
  team: z.string(),
  templateVersion: z.string(),
  files: z.array(driftedFileSchema),
});

export const driftResponse = z.object({
  revision: revisionSchema,
  summary: z
    .object({
      checked: z.number().int(),
      drifted: z.number().int(),
      files: z.number().int(),
      failed: z.number().int(),
    })
    .describe("The whole fleet's counts at this revision (every page has the same)"),
  teams: z.array(driftedTeamSchema).describe("This page's drifted teams, in name order"),
  layout: z
    .array(driftedFileSchema)
    .describe("Cluster teams indexes that do not list exactly the teams present (on the first page only)"),
  failed: z
    .array(z.object({ team: z.string(), error: z.string() }))
    .describe("This page's teams that cannot be rendered, so their drift cannot be told"),
  fix: z
    .object({ selector: z.object({ names: z.array(z.string()) }) })
    .nullable()
    .describe("A rollout request body that puts this page's drifted teams back (same version): POST /v1/rollouts"),
  continue: z
    .string()
    .optional()
    .describe("Present when more drifted or failed teams follow: pass it as `continue` to get the next page"),
});

export type DriftResponse = z.infer<typeof driftResponse>;
