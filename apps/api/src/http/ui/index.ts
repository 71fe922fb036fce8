import cookie from "@fastify/cookie";
import type { ApiAuth, UiConfig } from "@berth/config";
import type { FastifyError, FastifyInstance, FastifyRequest } from "fastify";
import type { Authenticator } from "../plugins/auth.js";
import { frameworkProblem, HttpProblem, reasonPhrase } from "../plugins/problem.js";
import { SessionCookies, type UiSession } from "../plugins/session.js";
import type { Clock } from "@berth/kube-runtime";
import type { RolloutService } from "../../services/rollouts/service.js";
import type { StatusBoard } from "../../services/status-board.js";
import { loadAssets } from "./assets.js";
import { registerPages } from "./pages.js";
import { isFragment, Responder } from "./respond.js";
import { addSecurityHeaders, safeNext } from "./security.js";
import { registerSignIn, signInMethod } from "./sign-in.js";

export { safeNext, UI_CONTENT_SECURITY_POLICY } from "./security.js";

/**
 * The read-only status page at /ui: the fleet (teams × clusters) and one page per team, rendered on the
 * server. Its own auth: a session cookie (plugins/session.ts) from a sign-in with the dev token (dev mode)
 * or OIDC authorization code + PKCE against the API's issuer. Its own strict CSP on every response.
 *
 * This plugin puts the parts together: security.ts (headers, same-origin checks), the session check below,
 * pages.ts, sign-in.ts and assets.ts (the routes), respond.ts (how a page, a fragment or an error is sent).
 */

export interface UiOptions {
  board: StatusBoard;
  /** Rollouts, read from the Flux repo (and the gate's last evaluation on the replica driving one). */
  rollouts: RolloutService;
  auth: ApiAuth;
  ui: UiConfig;
  authenticator: Authenticator;
  /** What time it is for sessions (tests move it); the system's clock when absent. */
  clock?: Pick<Clock, "now">;
}

declare module "fastify" {
  interface FastifyContextConfig {
    /** Who may open a /ui route: anyone (sign-in, assets) or a signed-in reader. Every /ui route declares it. */
    uiAccess?: "public" | "read";
  }
  interface FastifyRequest {
    uiSession?: UiSession;
  }
}

export async function uiPlugin(app: FastifyInstance, opts: UiOptions): Promise<void> {
  const { board, rollouts, auth, ui, authenticator, clock } = opts;

  app.addHook("onRoute", (route) => {
    if (!route.config?.uiAccess)
      throw new Error(`route ${String(route.method)} ${route.url} declares no uiAccess: every /ui route must`);
    route.schema = { ...route.schema, hide: true }; // pages, not API: kept out of /openapi.json
  });

  await app.register(cookie);
  app.addContentTypeParser(
    "application/x-www-form-urlencoded",
    { parseAs: "string", bodyLimit: 16_384 },
    (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(String(body))));
    },
  );

  const publicUrl = ui.publicUrl ? new URL(ui.publicUrl) : undefined;
  const secure = (request: FastifyRequest) =>
    publicUrl ? publicUrl.protocol === "https:" : request.protocol === "https";
  const origin = (request: FastifyRequest) => (publicUrl ? publicUrl.origin : `${request.protocol}://${request.host}`);
  const sessions = new SessionCookies({
    secret: ui.sessionSecret,
    secure,
    ttlSeconds: ui.sessionTtlSeconds,
    ...(clock ? { now: () => clock.now() } : {}),
  });
  const method = signInMethod(auth, ui);
  const assets = await loadAssets(app.log);
  const respond = new Responder(ui, assets.urls, method.mode);

  addSecurityHeaders(app);

  // A "read" route needs a session with the read role: else the sign-in page (or a 401 for the live refresh).
  app.addHook("onRequest", async (request, reply) => {
    if (request.routeOptions.config.uiAccess !== "read") return;
    const session = await sessions.read(request);
    if (session?.roles.includes("read")) {
      request.uiSession = session;
      return;
    }
    if (isFragment(request)) return reply.code(401).type("text/plain; charset=utf-8").send("sign in again");
    return reply.redirect(`/ui/sign-in?next=${encodeURIComponent(safeNext(request.url))}`, 303);
  });

  app.setNotFoundHandler((request, reply) =>
    respond.error(request, reply, 404, "Not found", `Nothing lives at ${request.url.split("?")[0]}.`),
  );
  // What the API-wide hooks refuse (a body json-body.ts cannot read, the rate limit: HttpProblem; fastify's own
  // client errors) keeps the status and words /v1 gives it, on the page's error page.
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status = error instanceof HttpProblem ? error.status : (error.statusCode ?? 500);
    if (error instanceof HttpProblem) reply.headers(error.headers);
    if (status < 400 || status >= 500) {
      request.log.error({ err: error }, "status page failed");
      return respond.error(
        request,
        reply,
        500,
        "Something went wrong",
        `See the server log for request ${String(request.id)}.`,
      );
    }
    request.log.info({ code: error.code, status }, "status page refused a request");
    const detail = error instanceof HttpProblem ? error.message : (frameworkProblem(error).detail ?? error.message);
    return respond.error(request, reply, status, reasonPhrase(status), `${detail}.`);
  });

  registerPages(app, { board, rollouts, respond });
  registerSignIn(app, { auth, authenticator, sessions, respond, method, origin });
  assets.register(app);
}
