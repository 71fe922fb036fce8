import { LOWERCASE_GUID, platformSchema } from "@berth/core";
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

export const reviewSchema = z.discriminatedUnion("mode", [
  z.object({ mode: z.literal("direct") }).strict(),
  z
    .object({
      mode: z.literal("pull-request"),
      /** `gitea`: Gitea or Forgejo, through Gitea's REST API. `github`: github.com or GitHub Enterprise Server. */
      forge: z.enum(["gitea", "github"]),
      /**
       * Gitea: the forge's base URL, e.g. https://git.example.com (its API is under /api/v1). GitHub: the REST API's
       * base URL, https://api.github.com, or https://<host>/api/v3 for Enterprise Server.
       */
      url: z.url({ protocol: /^https?$/ }),
      /** The repository on the forge: the same one fluxRepo.url names. */
      owner: nonEmpty,
      repository: nonEmpty,
      /** An API token allowed to open and close pull requests (BERTH_FORGE_TOKEN or BERTH_FORGE_TOKEN_FILE, never the file). */
      token: nonEmpty,
      /**
       * The secret the forge signs its webhooks with (BERTH_FORGE_WEBHOOK_SECRET or BERTH_FORGE_WEBHOOK_SECRET_FILE).
       * When set, POST /v1/forge/events takes the forge's pull-request events: a merge or close is acted on at once
       * (a rollout wave's gate starts, the team's review status is read again) instead of at the next poll.
       */
      webhookSecret: z.string().min(16, "must be at least 16 characters").optional(),
      /** How often Berth looks for merged or closed pull requests' branches to delete. */
      sweepSeconds: z.number().int().min(1).max(3600).default(300),
      /**
       * How long a merged or closed pull request's branch is kept before it is deleted (the next write reuses it
       * meanwhile). Gitea closes a deleted branch's pull requests from a queue, so a branch recreated right after its
       * deletion could see its new pull request closed: a day makes that moment rare.
       */
      keepBranchMinutes: z.number().int().min(0).default(1440),
    })
    .strict(),
]);

export const fluxRepoSchema = z
  .object({
    url: z
      .string()
      .regex(
        /^(file:\/\/|https:\/\/|http:\/\/127\.0\.0\.1|http:\/\/localhost|ssh:\/\/|git@)/,
        "must be a file://, https:// or ssh remote",
      ),
    branch: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._/-]{0,100}$/, "must be a plain branch name")
      .default("main"),
    /** Where the long-lived clone lives. */
    workDir: nonEmpty,
    author: z
      .object({
        name: nonEmpty.default("Berth"),
        email: z
          .string()
          .regex(/^[^\s@<>]+@[^\s@<>]+$/, "must be an email address")
          .default("berth@localhost"),
      })
      .strict()
      .default({ name: "Berth", email: "berth@localhost" }),
    auth: gitAuthSchema.default({ kind: "none" }),
    timeoutMs: z.number().int().min(1000).max(600_000).default(30_000),
    /**
     * How a change reaches `branch` (ADR 0030). `direct`: Berth pushes it. `pull-request`: Berth pushes it to the
     * branch of the team (or rollout) it is for and opens a pull request on the forge; reviewers merge it.
     */
    review: reviewSchema.default({ mode: "direct" }),
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
      algorithms: z
        .array(z.enum(["RS256", "RS384", "RS512", "PS256", "ES256", "ES384"]))
        .min(1)
        .default(["RS256"]),
      /** Claim holding app roles (Entra ID: `roles`). */
      rolesClaim: nonEmpty.default("roles"),
      readRole: nonEmpty.default("Berth.Read"),
      writeRole: nonEmpty.default("Berth.Write"),
      clockToleranceSeconds: z.number().int().min(0).max(300).default(30),
      /**
       * Entra ID tenant whose tokens are accepted (the `tid` claim). The issuer check already pins a tenant
       * for a single-tenant issuer URL; this also holds when keys are shared across tenants.
       */
      tenantId: z.string().regex(LOWERCASE_GUID, "must be a lowercase GUID").optional(),
      /** After a JWKS fetch, a token with an unknown key id waits this long before the JWKS is fetched again. */
      jwksCooldownSeconds: z.number().int().min(0).max(3600).default(30),
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

/** Whether a URL carries `user[:password]@` before its host. */
function hasUserinfo(url: string): boolean {
  if (!URL.canParse(url)) return false; // z.url() reports it
  const { username, password } = new URL(url);
  return username !== "" || password !== "";
}

/**
 * Where the API tells a cluster's Flux to fetch after a push (ADR 0020): the webhook URL of the cluster's Receiver
 * `berth-teams` (type generic-hmac; `<notification-controller's receiver address>` + its status.webhookPath) and
 * the file holding its HMAC key (the Receiver Secret's `token`, mounted from a Secret; read at each notification,
 * so a rotated key is picked up without a restart). The key itself is never in this file.
 */
export const fluxReceiverSchema = z
  .object({
    url: z
      .url({ protocol: /^https?$/ })
      // No credentials in the URL: a Receiver authenticates by the signature, and a URL is easily logged.
      .refine((url) => !hasUserinfo(url), {
        message:
          "must not carry user:password@ (the Receiver checks the HMAC signature; a password in the URL would reach logs)",
      }),
    tokenFile: nonEmpty,
  })
  .strict();

/** How the API retries a notification a cluster did not take (the poll interval stays the safety net). */
export const fluxNotifySchema = z
  .object({
    /** Attempts per notification, the first included. */
    attempts: z.number().int().min(1).max(20).default(6),
    /** Backoff between attempts: doubles from minDelayMs up to maxDelayMs, with jitter. */
    minDelayMs: z.number().int().min(1).max(600_000).default(1_000),
    maxDelayMs: z.number().int().min(1).max(3_600_000).default(60_000),
    /** One request's deadline. */
    timeoutMs: z.number().int().min(100).max(60_000).default(5_000),
  })
  .strict();

/** The read-only status page at /ui (apps/api/src/http/ui): sign-in, sessions, refresh. */
export const uiSchema = z
  .object({
    enabled: z.boolean().default(true),
    /**
     * The URL browsers reach the API at, e.g. https://berth.example.com (the OIDC redirect URI is
     * `<publicUrl>/ui/auth/callback`; https makes the session cookie Secure). Required in oidc mode with `oidc` set;
     * in dev mode, derived from the request when absent.
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
    /**
     * How long a session lasts from sign-in (never past the access token's expiry). Signing out clears the
     * browser's cookie, but a copy of it opens the page until then: sessions are stateless, so short.
     */
    sessionTtlSeconds: z.number().int().min(60).max(86_400).default(3_600),
    /** How often an open page asks for fresh status (it gets 304 Not Modified when nothing changed). */
    refreshSeconds: z.number().int().min(1).max(300).default(5),
  })
  .strict();

const ms = (min: number, max: number, fallback: number) => z.number().int().min(min).max(max).default(fallback);

/**
 * Connection timeouts, chosen rather than inherited (docs/operations.md explains each). A request that has
 * arrived is never cut off while it is being answered: commits may queue behind others.
 */
export const timeoutsSchema = z
  .object({
    /** The request line and every header must arrive within this (slow-header clients get 408). */
    headersMs: ms(100, 120_000, 10_000),
    /** The whole request, body included, must arrive within this (408). */
    requestMs: ms(100, 600_000, 30_000),
    /** A connection that sends nothing while it should be sending (before or during a request) is closed after this. */
    idleMs: ms(100, 600_000, 30_000),
    /** An idle keep-alive connection is closed after this; keep it above the idle timeout of any proxy in front. */
    keepAliveMs: ms(100, 600_000, 72_000),
  })
  .strict()
  // Node refuses a headers timeout above the request timeout.
  .refine((t) => t.headersMs <= t.requestMs, { message: "headersMs must not exceed requestMs", path: ["headersMs"] })
  // A stalled request head must meet the headers timeout (a 408 answer) before the idle one (a silent close).
  .refine((t) => t.headersMs < t.idleMs, { message: "headersMs must be below idleMs", path: ["headersMs"] });

/**
 * Requests per window (a fixed window per key, in each replica's memory): per principal for authenticated
 * requests, per client address for everything else. Health probes are never limited.
 */
export const rateLimitSchema = z
  .object({
    enabled: z.boolean().default(true),
    windowSeconds: z.number().int().min(1).max(3600).default(60),
    /** Per principal: GET routes. */
    reads: z.number().int().min(1).default(600),
    /** Per principal: routes that need the write role (writes and previews). Stricter than reads. */
    writes: z.number().int().min(1).default(60),
    /** Per client address: requests without a valid token, and the public docs routes. */
    unauthenticated: z.number().int().min(1).default(120),
  })
  .strict();

/** Idempotency-Key: how far back in the Flux repo's history a key is looked up (docs/decisions/0005). */
export const idempotencySchema = z
  .object({
    /** A key is honoured this long after its commit (the IETF draft's expiry); later, the request runs again. */
    windowHours: z
      .number()
      .int()
      .min(1)
      .max(24 * 30)
      .default(24),
    /** At most this many recent commits are indexed, however young. */
    maxCommits: z.number().int().min(100).max(1_000_000).default(20_000),
  })
  .strict();

export const apiSchema = z
  .object({
    host: z.string().default("127.0.0.1"),
    port: z.number().int().min(0).max(65535).default(8080),
    /** Prometheus metrics at GET /metrics on this port, apart from the API's (never through the ingress). */
    metricsPort: z.number().int().min(0).max(65535).default(9464),
    auth: apiAuthSchema,
    bodyLimitBytes: z.number().int().min(1024).max(1_048_576).default(65_536),
    timeouts: timeoutsSchema.default(timeoutsSchema.parse({})),
    rateLimit: rateLimitSchema.default(rateLimitSchema.parse({})),
    idempotency: idempotencySchema.default(idempotencySchema.parse({})),
    /**
     * Proxies in front whose X-Forwarded-For is believed (fastify's trustProxy): false, a hop count, or
     * addresses/CIDRs. Per-address rate limits need the client's address, not the ingress's.
     */
    trustProxy: z
      .union([z.boolean(), z.number().int().min(1).max(10), z.array(z.string().min(1)).min(1)])
      .default(false),
    /** Clusters by name whose Team status GET /v1/teams/{name}/status reports; others show "not-configured". */
    clusters: z.record(z.string(), clusterAccessSchema).default({}),
    /** Clusters by name whose Flux the API asks to fetch after each push that concerns them; others wait for their poll. */
    fluxReceivers: z.record(z.string(), fluxReceiverSchema).default({}),
    fluxNotify: fluxNotifySchema.default(fluxNotifySchema.parse({})),
    /** One listing of a cluster's Team objects serves every status reader (API, CLI watchers, pages) this long. */
    statusCacheSeconds: z.number().min(0).max(300).default(5),
    ui: uiSchema.default({ enabled: true, sessionTtlSeconds: 3_600, refreshSeconds: 5 }),
    /** The rollout engine (docs/rollouts.md). */
    rollouts: z
      .object({
        /** How often a committed wave's gate is checked (Team status on every cluster of the wave). */
        pollIntervalMs: z.number().int().min(100).max(600_000).default(10_000),
        /** How long a wave may take to become Ready when the rollout does not say; then it halts. */
        gateTimeoutSeconds: z
          .number()
          .int()
          .min(10)
          .max(7 * 86_400)
          .default(1_800),
      })
      .strict()
      .default({ pollIntervalMs: 10_000, gateTimeoutSeconds: 1_800 }),
  })
  .strict()
  // The OIDC redirect URI must not come from the request's Host header, which any caller chooses.
  .refine((api) => !(api.auth.mode === "oidc" && api.ui.enabled && api.ui.oidc && !api.ui.publicUrl), {
    message:
      "is required in oidc mode with the status page's sign-in (api.ui.oidc): the URL browsers use, e.g. https://berth.example.com (BERTH_UI_PUBLIC_URL)",
    path: ["ui", "publicUrl"],
  });

export const berthConfigSchema = z
  .object({
    logLevel: z.enum(["fatal", "error", "warn", "info", "debug", "trace"]).default("info"),
    templatesDir: nonEmpty,
    fluxRepo: fluxRepoSchema,
    api: apiSchema,
    platform: platformSchema,
  })
  .strict()
  // A team's pull request may only touch that team's paths, or two open ones conflict on the shared indexes.
  .refine((config) => config.fluxRepo.review.mode === "direct" || config.platform.layout.appliedBy === "slices", {
    message:
      "pull-request mode needs platform.layout.appliedBy slices: with cluster indexes, open pull requests conflict",
    path: ["fluxRepo", "review", "mode"],
  });

export type BerthConfig = z.infer<typeof berthConfigSchema>;
export type GitAuth = z.infer<typeof gitAuthSchema>;
export type ApiAuth = z.infer<typeof apiAuthSchema>;
export type ClusterAccess = z.infer<typeof clusterAccessSchema>;
export type UiConfig = z.infer<typeof uiSchema>;
export type ApiConfig = z.infer<typeof apiSchema>;
export type ApiTimeouts = z.infer<typeof timeoutsSchema>;
export type RateLimitConfig = z.infer<typeof rateLimitSchema>;
export type IdempotencyConfig = z.infer<typeof idempotencySchema>;
