import { z } from "zod";

/**
 * The Team custom resource (`teams.berth.dev`) as the controller writes its status and the API reads it:
 * one source for its group/version and for the shape of a status condition.
 */

export const TEAM_GROUP = "berth.dev";
export const TEAM_VERSION = "v1alpha1";
export const TEAM_API_VERSION = `${TEAM_GROUP}/${TEAM_VERSION}` as const;
export const TEAM_PLURAL = "teams";
export const TEAM_KIND = "Team";

export const conditionStatuses = ["True", "False", "Unknown"] as const;
/** ASO's severities (Error: needs a person; Warning: retrying; Info: progress). */
export const conditionSeverities = ["Error", "Warning", "Info"] as const;

/** A Team status condition as read back from the cluster: tolerant of what older controllers wrote. */
export const teamConditionSchema = z.object({
  type: z.string(),
  status: z.enum(conditionStatuses),
  reason: z.string().optional(),
  message: z.string().optional(),
  severity: z.string().optional(),
  lastTransitionTime: z.string().optional(),
  observedGeneration: z.number().optional(),
});
export type TeamConditionRead = z.infer<typeof teamConditionSchema>;

/** The Team's status as the controller writes it (the API serves it per cluster). */
export const teamStatusSchema = z.object({
  conditions: z.array(teamConditionSchema).default([]),
  revision: z.string().optional(),
  identity: z.object({ clientId: z.string() }).optional(),
  observedGeneration: z.number().optional(),
});
