import { z } from "zod";

/** Where problem `type` URIs live; the suffix names the problem (docs/api.md lists them). */
export const PROBLEM_BASE = "https://berth.dev/problems/";

export const fieldIssueSchema = z.object({ field: z.string(), rule: z.string() });

/** RFC 9457 problem details, as every Berth error answers (application/problem+json). */
export const problemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number(),
    detail: z.string().optional(),
    instance: z.string().optional(),
    requestId: z.string().optional(),
    errors: z.array(fieldIssueSchema).optional(),
  })
  .describe("RFC 9457 problem details (application/problem+json)");

export type ProblemDocument = z.infer<typeof problemSchema>;

/** The problem's short name: `team-not-found` for `https://berth.dev/problems/team-not-found`. */
export function problemName(problem: Pick<ProblemDocument, "type">): string {
  return problem.type.startsWith(PROBLEM_BASE) ? problem.type.slice(PROBLEM_BASE.length) : problem.type;
}
