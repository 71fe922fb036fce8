import { platformSchema } from "@berth/core";
import { z } from "zod";

/**
 * Berth's configuration: one YAML file (BERTH_CONFIG_FILE) for what a platform team reviews, plus
 * environment variables for what differs per deployment or is secret. Env wins over the file.
 */

const nonEmpty = z.string().min(1);

export const gitAuthSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("none") }).strict(),
  /** HTTPS with a token (from BERTH_GIT_TOKEN or BERTH_GIT_TOKEN_FILE, never from the file). */
  z.object({ kind: z.literal("token"), username: nonEmpty.default("x-access-token"), token: nonEmpty }).strict(),
  /** SSH with a deploy key. */
  z.object({ kind: z.literal("ssh"), privateKeyPath: nonEmpty, knownHostsPath: nonEmpty.optional() }).strict(),
]);

export const fluxRepoSchema = z
  .object({
    url: z
      .string()
      .regex(/^(file:\/\/|https:\/\/|http:\/\/127\.0\.0\.1|http:\/\/localhost|ssh:\/\/|git@)/, "must be a file://, https:// or ssh remote"),
    branch: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._/-]{0,100}$/, "must be a plain branch name").default("main"),
    /** Where the long-lived clone lives. */
    workDir: nonEmpty,
    author: z
      .object({ name: nonEmpty.default("Berth"), email: z.string().regex(/^[^\s@<>]+@[^\s@<>]+$/, "must be an email address").default("berth@localhost") })
      .strict()
      .default({ name: "Berth", email: "berth@localhost" }),
    auth: gitAuthSchema.default({ kind: "none" }),
    timeoutMs: z.number().int().min(1000).max(600_000).default(30_000),
  })
  .strict();

export const apiAuthSchema = z.discriminatedUnion("mode", [
  z
    .object({
      mode: z.literal("oidc"),
      /** The token issuer, e.g. https://login.microsoftonline.com/<tenant>/v2.0. */
      issuer: z.url(),
      /** JWKS location; discovered from the issuer's openid-configuration when absent. */
      jwksUri: z.url().optional(),
      audience: nonEmpty,
      algorithms: z.array(z.enum(["RS256", "RS384", "RS512", "PS256", "ES256", "ES384"])).min(1).default(["RS256"]),
      /** Claim holding app roles (Entra ID: `roles`). */
      rolesClaim: nonEmpty.default("roles"),
      readRole: nonEmpty.default("Berth.Read"),
      writeRole: nonEmpty.default("Berth.Write"),
      clockToleranceSeconds: z.number().int().min(0).max(300).default(30),
    })
    .strict(),
  z
    .object({
      /** Local development only: one static token with every role. Logged as a warning at start. */
      mode: z.literal("dev"),
      token: z.string().min(16, "the development token must be at least 16 characters"),
    })
    .strict(),
]);

/** How the API reaches a cluster to read its teams' status (the Team objects the controller updates). */
export const clusterAccessSchema = z
  .object({
    /** A kubeconfig file with read access to teams.berth.dev on that cluster. */
    kubeconfig: nonEmpty,
    context: nonEmpty.optional(),
  })
  .strict();

export const apiSchema = z
  .object({
    host: z.string().default("127.0.0.1"),
    port: z.number().int().min(0).max(65535).default(8080),
    auth: apiAuthSchema,
    bodyLimitBytes: z.number().int().min(1024).max(1_048_576).default(65_536),
    /** Clusters by name whose Team status GET /v1/teams/{name}/status reports; others show "not-configured". */
    clusters: z.record(z.string(), clusterAccessSchema).default({}),
    /** The rollout engine (docs/rollouts.md). */
    rollouts: z
      .object({
        /** How often a committed wave's gate is checked (Team status on every cluster of the wave). */
        pollIntervalMs: z.number().int().min(100).max(600_000).default(10_000),
        /** How long a wave may take to become Ready when the rollout does not say; then it halts. */
        gateTimeoutSeconds: z.number().int().min(10).max(7 * 86_400).default(1_800),
      })
      .strict()
      .default({ pollIntervalMs: 10_000, gateTimeoutSeconds: 1_800 }),
  })
  .strict();

export const berthConfigSchema = z
  .object({
    logLevel: z.enum(["fatal", "error", "warn", "info", "debug", "trace"]).default("info"),
    templatesDir: nonEmpty,
    fluxRepo: fluxRepoSchema,
    api: apiSchema,
    platform: platformSchema,
  })
  .strict();

export type BerthConfig = z.infer<typeof berthConfigSchema>;
export type GitAuth = z.infer<typeof gitAuthSchema>;
export type ApiAuth = z.infer<typeof apiAuthSchema>;
export type ClusterAccess = z.infer<typeof clusterAccessSchema>;
