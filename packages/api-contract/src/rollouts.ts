import { gateTeamReportSchema, rolloutIdSchema, rolloutSchema } from "@berth/core";
import { z } from "zod";
import { brokenTeamsSchema, fileChangeSchema, revisionSchema } from "./teams.js";

/** HTTP shapes of the rollouts API: the API serves them, the CLI reads them. */

export const rolloutIdParams = z.object({ id: rolloutIdSchema });

export const gateProgressSchema = z
  .object({
    evaluatedAt: z.string(),
    wave: z.string(),
    verdict: z.enum(["pass", "wait", "halt"]),
    message: z.string(),
    ready: z.number().int(),
    waiting: z.number().int(),
    failed: z.number().int(),
    teams: z.array(gateTeamReportSchema),
  })
  .describe("The last gate evaluation of the current wave, by the replica driving the rollout");

export const rolloutResponse = z.object({
  rollout: rolloutSchema,
  revision: revisionSchema,
  progress: gateProgressSchema.nullable(),
});
export const rolloutListResponse = z.object({ items: z.array(rolloutSchema), revision: revisionSchema });
export const rolloutCreatedResponse = z.object({
  rollout: rolloutSchema,
  revision: z.string().describe("The commit that created the rollout (unstaged: the commit of the whole change)"),
  summary: z.object({
    teams: z.number().int(),
    files: z.number().int().describe("Files written (unstaged; 0 for a staged rollout, whose waves commit later)"),
  }),
});
export const rolloutWriteResponse = z.object({ rollout: rolloutSchema, revision: z.string() });
export const rolloutAbortResponse = rolloutWriteResponse.extend({
  versions: z
    .record(z.string(), z.array(z.string()))
    .describe('Each team of the rollout by the template version it is on now (offboarded: "gone")'),
});

export const teamPreviewSchema = z.object({
  team: z.string(),
  from: z.string(),
  to: z.string(),
  files: z.array(fileChangeSchema),
  diff: z.string().describe("Unified diff of the team's files against the repo (empty with diffs=false)"),
});
export const rolloutPreviewResponse = z.object({
  revision: revisionSchema,
  target: z.object({ templateVersion: z.string().optional() }),
  summary: z.object({
    selected: z.number().int(),
    changed: z.number().int(),
    unchanged: z.number().int(),
    failed: z.number().int(),
    files: z.object({ added: z.number().int(), modified: z.number().int(), deleted: z.number().int() }),
  }),
  waves: z.array(z.object({ name: z.string(), teams: z.array(z.string()) })),
  problems: z
    .array(z.object({ field: z.string(), rule: z.string() }))
    .describe("Why creating this rollout would be refused; empty: it would be accepted"),
  failed: z.array(z.object({ team: z.string(), error: z.string() })),
  broken: brokenTeamsSchema.describe(
    "Teams whose team file cannot be read that the selector might match: left out of the rollout, each with why",
  ),
  unchanged: z.array(z.string()),
  teams: z.array(teamPreviewSchema),
});
export type RolloutResponse = z.infer<typeof rolloutResponse>;
export type RolloutPreviewResponse = z.infer<typeof rolloutPreviewResponse>;
export type GateProgress = z.infer<typeof gateProgressSchema>;
