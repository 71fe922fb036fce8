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

/** The read-only status page at /ui (apps/api/src/ui): sign-in, sessions, refresh. */
export const uiSchema = z
  .object({
    enabled: z.boolean().default(true),
    /**
     * The URL browsers reach the API at, e.g. https://berth.example.com (the OIDC redirect URI is
     * `<publicUrl>/ui/auth/callback`; https makes the session cookie Secure). Derived from the request when absent.
     */
    publicUrl: z.url().optional(),
    /** The browser sign-in in oidc mode: authorization code + PKCE against api.auth.issuer. */
    oidc: z
      .object({
        clientId: nonEmpty,
        /** A confidential client's secret (BERTH_UI_CLIENT_SECRET or BERTH_UI_CLIENT_SECRET_FILE, never the file). */
        clientSecret: nonEmpty.optional(),
        /** Scopes asked for; the default asks for an access token for api.auth.audience (`<audience>/.default`). */
        scopes: z.array(nonEmpty).min(1).optional(),
      })
      .strict()
      .optional(),
    /**
     * Key material for session cookies (BERTH_UI_SESSION_SECRET or BERTH_UI_SESSION_SECRET_FILE). Give every
     * replica the same one; without it each process makes its own, so sessions end at restart.
     */
    sessionSecret: z.string().min(32, "the session secret must be at least 32 characters").optional(),
    sessionTtlSeconds: z.number().int().min(60).max(86_400).default(28_800),
    /** How often an open page asks for fresh status (it gets 304 Not Modified when nothing changed). */
    refreshSeconds: z.number().int().min(1).max(300).default(5),
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
    /** One listing of a cluster's Team objects serves every status reader (API, CLI watchers, pages) this long. */
    statusCacheSeconds: z.number().min(0).max(300).default(5),
    ui: uiSchema.default({ enabled: true, sessionTtlSeconds: 28_800, refreshSeconds: 5 }),
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
export type UiConfig = z.infer<typeof uiSchema>;
