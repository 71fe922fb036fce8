import { z } from "zod";
import { RolloutValidationError, type FieldIssue } from "../errors.js";
import { DNS_LABEL } from "../patterns.js";
import { parseRepoFile, toYamlFile } from "../serialize.js";
import { safeTextSchema, teamNameSchema, templateVersionSchema } from "../team.js";

/**
 * Rollouts, the pure part (docs/rollouts.md). This file: what a rollout request says, and the state file
 * kept in the Flux repo (its schema, how it is written and read back). waves.ts selects teams and splits
 * them into waves, transitions.ts moves the state, gate.ts judges a wave, reader.ts reads the files of a
 * tree. The engine that waits, reads cluster status and commits is the API's (apps/api/src/services/rollouts/).
 */

/** Every commit of a rollout carries this trailer with the rollout id. */
export const ROLLOUT_TRAILER = "Berth-Rollout-Id";
export const ROLLOUT_API_VERSION = "berth.dev/v1alpha1";
export const ROLLOUT_KIND = "Rollout";

/** `ro-<yyyymmdd>-<hhmmss>-<6 hex>`: sortable by creation time, safe as a file name and in a URL. */
export const ROLLOUT_ID = /^ro-[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$/;
export const rolloutIdSchema = z.string().regex(ROLLOUT_ID, "must be a rollout id such as ro-20261124-153000-1a2b3c");

/** A rollout id from a creation time and 3 random bytes (the caller's: the domain has no randomness). */
export function rolloutId(at: Date, random: Buffer): string {
  const iso = at.toISOString();
  return `ro-${iso.slice(0, 10).replaceAll("-", "")}-${iso.slice(11, 19).replaceAll(":", "")}-${random.subarray(0, 3).toString("hex")}`;
}

const environmentName = z.string().regex(DNS_LABEL).max(30);

export const teamSelectorSchema = z
  .object({
    names: z.array(teamNameSchema).min(1).max(10_000).optional().describe("These teams"),
    environments: z
      .array(environmentName)
      .min(1)
      .max(10)
      .optional()
      .describe("Teams that land on at least one of these environments"),
    onlyEnvironments: z
      .array(environmentName)
      .min(1)
      .max(10)
      .optional()
      .describe("Teams that land on none but these environments (a dev wave that must not reach prod)"),
    labels: z
      .record(z.string().max(317), z.string().max(63))
      .optional()
      .describe("Teams whose labels include all of these"),
    templateVersions: z
      .array(templateVersionSchema)
      .min(1)
      .max(20)
      .optional()
      .describe("Teams currently rendered with one of these versions"),
  })
  .strict()
  .describe("Every field given must match; an empty selector selects every team");
export type TeamSelector = z.infer<typeof teamSelectorSchema>;

export const waveRequestSchema = z
  .object({
    name: z.string().regex(DNS_LABEL, "must be a DNS label").max(40),
    selector: teamSelectorSchema.optional().describe("Which of the teams no earlier wave took; default: all of them"),
    percent: z
      .number()
      .int()
      .min(1)
      .max(100)
      .optional()
      .describe("Keep this share of the matched teams (rounded up), by a stable hash of the name"),
  })
  .strict();
export type WaveRequest = z.infer<typeof waveRequestSchema>;

export const rolloutRequestSchema = z
  .object({
    description: safeTextSchema(256).default(""),
    target: z
      .object({
        templateVersion: templateVersionSchema
          .optional()
          .describe("Move the teams to this version; absent: re-render each on its own version"),
      })
      .strict()
      .default({}),
    selector: teamSelectorSchema.default({}),
    waves: z
      .array(waveRequestSchema)
      .min(1)
      .max(20)
      .optional()
      .describe("Ordered waves, each gated on Ready; absent: one commit for the whole selection")
      .refine(
        (ws) => ws === undefined || new Set(ws.map((w) => w.name)).size === ws.length,
        "wave names must be unique",
      ),
    gate: z
      .object({
        timeoutSeconds: z
          .number()
          .int()
          .min(10)
          .max(7 * 86_400)
          .optional()
          .describe("How long a wave may take to become Ready; default: the API's"),
      })
      .strict()
      .default({}),
  })
  .strict();
export type RolloutRequest = z.infer<typeof rolloutRequestSchema>;
export type RolloutRequestInput = z.input<typeof rolloutRequestSchema>;

// ---- state (the file in the Flux repo) -----------------------------------------------------------------

export const ROLLOUT_PHASES = ["Running", "Paused", "Halted", "Completed", "Aborted"] as const;
export type RolloutPhase = (typeof ROLLOUT_PHASES)[number];
/** Phases in which a rollout still owns its teams (another rollout may not take them). */
export const ACTIVE_PHASES: readonly RolloutPhase[] = ["Running", "Paused", "Halted"];

const isoTime = z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/, "must be an ISO 8601 UTC time");

/** One team on one cluster, as the gate judged it. */
export const gateTeamReportSchema = z.object({
  team: z.string(),
  cluster: z.string().optional(),
  result: z.enum(["ready", "waiting", "failed", "render-failed", "gone"]),
  /** The cluster's status state (reported, pending, absent, unreachable, not-configured). */
  state: z.string().optional(),
  condition: z.string().optional().describe("The condition holding the team back, e.g. IdentityReady"),
  reason: z.string().optional().describe("Its reason, as ASO (or Flux, or the controller) gave it"),
  severity: z.string().optional(),
  message: z.string().optional(),
});
export type GateTeamReport = z.infer<typeof gateTeamReportSchema>;

export const haltSchema = z.object({
  at: isoTime,
  wave: z.string(),
  /** ProposalClosed: pull-request mode, the wave's pull request was closed without merge. */
  reason: z.enum(["Failed", "Timeout", "RenderFailed", "ProposalClosed"]),
  message: z.string(),
  teams: z.array(gateTeamReportSchema),
});
export type Halt = z.infer<typeof haltSchema>;

export const waveStatusSchema = z.object({
  name: z.string(),
  /** Proposed: pull-request mode, the wave's team files wait in `pullRequest`; Committed once it is merged. */
  phase: z.enum(["Pending", "Proposed", "Committed", "Ready"]),
  /** Pull-request mode: the pull request that proposes the wave's team files (ADR 0030). */
  pullRequest: z
    .object({
      number: z.number().int().positive(),
      // Shown as a link (status page, CLI): a web address only, whatever a hand edit of the file says.
      url: z
        .string()
        .max(2048)
        .regex(/^https?:\/\/[^\s"'<>]+$/, "must be an http(s) URL"),
    })
    .strict()
    .optional(),
  proposedAt: isoTime.optional(),
  committedAt: isoTime.optional(),
  /** Where the gate's timeout counts from: the commit, or the last resume. */
  gateSince: isoTime.optional(),
  readyAt: isoTime.optional(),
  /** Teams of the wave that were gone (offboarded) when it was committed. */
  skipped: z.array(z.string()).optional(),
});
export type WaveStatus = z.infer<typeof waveStatusSchema>;

export const historyEntrySchema = z.object({
  at: isoTime,
  event: z.string(),
  by: z.string().optional(),
  message: z.string().optional(),
});
export type HistoryEntry = z.infer<typeof historyEntrySchema>;

export const rolloutSchema = z
  .object({
    apiVersion: z.literal(ROLLOUT_API_VERSION),
    kind: z.literal(ROLLOUT_KIND),
    metadata: z.object({ name: rolloutIdSchema }).strict(),
    spec: z
      .object({
        description: z.string(),
        requestedBy: z.string(),
        /** Whom the caller said it started the rollout for (Berth-On-Behalf-Of): each wave's commit says it too. */
        onBehalfOf: z.string().optional(),
        createdAt: isoTime,
        target: z.object({ templateVersion: templateVersionSchema.optional() }).strict(),
        selector: teamSelectorSchema,
        /** Unstaged rollouts have no gate. */
        gate: z.object({ timeoutSeconds: z.number().int().positive() }).strict().nullable(),
        waves: z.array(z.object({ name: z.string(), teams: z.array(teamNameSchema) }).strict()).min(1),
      })
      .strict(),
    status: z
      .object({
        phase: z.enum(ROLLOUT_PHASES),
        /** Index of the wave in progress (waves.length once completed). */
        wave: z.number().int().min(0),
        waves: z.array(waveStatusSchema),
        halt: haltSchema.optional(),
        history: z.array(historyEntrySchema),
      })
      .strict(),
  })
  .strict();
export type Rollout = z.infer<typeof rolloutSchema>;

export function serializeRollout(rollout: Rollout): string {
  return toYamlFile(
    [rollout],
    [
      `Berth rollout ${rollout.metadata.name}: its spec and state. Written by Berth's API only (docs/rollouts.md);`,
      "every commit of the rollout carries the trailer Berth-Rollout-Id. Not applied by Flux.",
    ],
  );
}

export function parseRollout(text: string, path: string): Rollout {
  return parseRepoFile(text, path, rolloutSchema);
}

/** Refusal with one field/rule, for request checks made outside the zod schema. */
export function rolloutIssue(field: string, rule: string): RolloutValidationError {
  return new RolloutValidationError([{ field, rule } satisfies FieldIssue]);
}
