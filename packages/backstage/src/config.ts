import { DefaultAzureCredential } from "@azure/identity";
import type { RootConfigService } from "@backstage/backend-plugin-api";
import { z } from "zod";
import { BerthClient } from "./client.js";

/** The `berth` section of app-config (config.d.ts declares it to Backstage). */
export const berthConfigSchema = z
  .object({
    baseUrl: z.url({ protocol: /^https?$/ }),
    token: z.string().min(1).optional(),
    entraScope: z.string().min(1).optional(),
    requestTimeoutMs: z.number().int().positive().default(30_000),
    scaffolder: z.object({ waitPollSeconds: z.number().positive().default(5) }).default({ waitPollSeconds: 5 }),
    catalog: z
      .object({
        fullRefreshMinutes: z.number().positive().default(30),
        pollSeconds: z.number().positive().default(30),
      })
      .default({ fullRefreshMinutes: 30, pollSeconds: 30 }),
  })
  .refine((c) => c.token || c.entraScope, "set berth.token or berth.entraScope");
export type BerthConfig = z.infer<typeof berthConfigSchema>;

export function readBerthConfig(config: RootConfigService): BerthConfig {
  const parsed = berthConfigSchema.safeParse(config.getOptional("berth"));
  if (!parsed.success)
    // The message names fields only: zod's issues never echo a value, so the token stays out of it.
    throw new Error(
      `app-config berth: ${parsed.error.issues.map((i) => `${i.path.join(".") || "berth"}: ${i.message}`).join("; ")}`,
    );
  return parsed.data;
}

/** A client from app-config: the static token, or an Entra ID token for `entraScope` (cached and renewed by Azure's SDK). */
export function berthClientFrom(config: BerthConfig): BerthClient {
  const { token, entraScope } = config;
  let tokenFor: () => Promise<string>;
  if (token) tokenFor = async () => token;
  else if (entraScope) {
    const credential = new DefaultAzureCredential();
    tokenFor = async () => (await credential.getToken(entraScope)).token;
  } else throw new Error("app-config berth: set berth.token or berth.entraScope");
  return new BerthClient({ baseUrl: config.baseUrl, token: tokenFor, timeoutMs: config.requestTimeoutMs });
}
