import type { FastifyInstance, FastifySchemaCompiler } from "fastify";
import { toFieldIssues } from "@berth/core";
import { serializerCompiler } from "fastify-type-provider-zod";
import type { ZodType } from "zod";
import { auditPlugin } from "./plugins/audit.js";
import { authenticatePlugin, authorizePlugin, type Authenticator } from "./plugins/auth.js";
import { jsonBodyPlugin } from "./plugins/json-body.js";
import { metricsPlugin } from "./plugins/metrics.js";
import { openapiPlugin } from "./plugins/openapi.js";
import { problemPlugin, RequestValidationError } from "./plugins/problem.js";
import type { AdoptionService } from "../services/adoption-service.js";
import type { FleetService } from "../services/fleet-service.js";
import type { ApiMetrics } from "../metrics.js";
import type { Clock } from "@berth/kube-runtime";
import type { RolloutService } from "../services/rollouts/service.js";
import { adoptionRoutes } from "./routes/adoption.js";
import { fleetRoutes } from "./routes/fleet.js";
import { forgeEventRoutes, type PullRequestEvent } from "./routes/forge-events.js";
import { rateLimitPlugin } from "./plugins/rate-limit.js";
import { securityHeadersPlugin } from "./plugins/security-headers.js";
import { healthRoutes } from "./routes/health.js";
import { statusRoutes } from "./routes/status.js";
import type { StatusBoard } from "../services/status-board.js";
import { rolloutRoutes } from "./routes/rollouts.js";
import { teamRoutes } from "./routes/teams.js";
import { templateRoutes } from "./routes/templates.js";
import type { TeamService, TeamStore } from "../services/team-service.js";
import { uiPlugin } from "./ui/index.js";
import { rateLimitSchema, type ApiAuth, type RateLimitConfig, type UiConfig } from "@berth/config";

export interface AppDeps {
  teams: TeamService;
  fleet: FleetService;
  rollouts: RolloutService;
  adoption: AdoptionService;
  store: Pick<TeamStore, "ping">;
  authenticator: Authenticator;
  /** Views across teams: GET /v1/status and, with `ui`, the status page at /ui. */
  board?: StatusBoard;
  ui?: { auth: ApiAuth; config: UiConfig; clock?: Pick<Clock, "now"> };
  /** Rate limits (config `api.rateLimit`); the defaults when absent. */
  limits?: RateLimitConfig;
  /** Prometheus metrics (served on their own port by main.ts); none when absent. */
  metrics?: ApiMetrics;
  /** Pull-request mode with a webhook secret: POST /v1/forge/events takes the forge's signed events. */
  forgeEvents?: { secret: string; onPullRequest: (event: PullRequestEvent) => Promise<void> };
}

/**
 * zod validation that keeps each issue's exact field path (fastify-type-provider-zod joins paths with
 * "/", which garbles label keys such as `toolkit.fluxcd.io/tenant`).
 */
const validatorCompiler: FastifySchemaCompiler<ZodType> =
  ({ schema, httpPart }) =>
  (data) => {
    const result = schema.safeParse(data);
    if (result.success) return { value: result.data };
    const prefix = httpPart === "body" || httpPart === undefined ? [] : [httpPart];
    return { error: new RequestValidationError(httpPart ?? "body", toFieldIssues(result.error, prefix)) };
  };

/**
 * Routes anyone may call: health and the API description. Every other route must declare a role. The
 * status page (/ui) checks its own session cookie: each of its routes must declare `uiAccess` instead.
 */
const PUBLIC_ROUTES = [/^\/healthz$/, /^\/readyz$/, /^\/openapi\.json$/, /^\/docs(\/.*)?$/, /^\/ui(\/.*)?$/];

/**
 * The API as a plugin: main.ts registers it on a server, tests register it on an instance they call with
 * `inject` — no port, same code.
 */
export async function app(instance: FastifyInstance, deps: AppDeps): Promise<void> {
  instance.addHook("onRoute", (route) => {
    const isPublic = PUBLIC_ROUTES.some((re) => re.test(route.url));
    if (!isPublic && !route.config?.requiredRole && !route.config?.signedWebhook) {
      throw new Error(
        `route ${String(route.method)} ${route.url} declares no required role (nor a signature): every non-public route must`,
      );
    }
  });
  // First, so every route registered after it is measured.
  if (deps.metrics) await instance.register(metricsPlugin, { metrics: deps.metrics });
  await instance.register(problemPlugin);
  await instance.register(securityHeadersPlugin);
  await instance.register(jsonBodyPlugin);
  // onRequest runs these in order: who is calling, how often, may they.
  await instance.register(authenticatePlugin, { authenticator: deps.authenticator });
  await instance.register(rateLimitPlugin, { limits: deps.limits ?? rateLimitSchema.parse({}) });
  await instance.register(authorizePlugin);
  await instance.register(auditPlugin);
  await instance.register(openapiPlugin);
  await instance.register(healthRoutes, { ping: () => deps.store.ping() });
  await instance.register(
    async (v1) => {
      // zod compilers only under /v1: on the root they break plain-JSON-schema routes.
      v1.setValidatorCompiler(validatorCompiler);
      v1.setSerializerCompiler(serializerCompiler);
      // JSON only: fastify would otherwise hand text/plain bodies to the schema as strings (415 instead).
      v1.removeContentTypeParser("text/plain");
      await v1.register(teamRoutes, { teams: deps.teams });
      if (deps.board) await v1.register(statusRoutes, { board: deps.board });
      await v1.register(templateRoutes, { fleet: deps.fleet });
      await v1.register(fleetRoutes, { fleet: deps.fleet });
      await v1.register(rolloutRoutes, { rollouts: deps.rollouts });
      await v1.register(adoptionRoutes, { adoption: deps.adoption });
      if (deps.forgeEvents) await v1.register(forgeEventRoutes, deps.forgeEvents);
    },
    { prefix: "/v1" },
  );
  if (deps.board && deps.ui?.config.enabled) {
    await instance.register(uiPlugin, {
      prefix: "/ui",
      board: deps.board,
      rollouts: deps.rollouts,
      auth: deps.ui.auth,
      ui: deps.ui.config,
      authenticator: deps.authenticator,
      ...(deps.ui.clock ? { clock: deps.ui.clock } : {}),
    });
  }
}
