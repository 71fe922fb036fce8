import { teamNameSchema } from "@berth/core";
import { z } from "zod";

/** An opaque page cursor: the last team name of the previous page, base64url-encoded JSON. */
export const continueToken = z
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
