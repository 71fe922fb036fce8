import { readFile } from "node:fs/promises";
import cookie from "@fastify/cookie";
import { PHASES } from "@berth/api-contract";
import type { ApiAuth, UiConfig } from "@berth/config";
import { RolloutNotFoundError, rolloutIdSchema, teamNameSchema } from "@berth/core";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { decodeJwt } from "jose";
import { z } from "zod";
import { AuthenticationError, IssuerUnavailableError, type Authenticator, type Principal } from "../plugins/auth.js";
import { SessionCookies, type UiSession } from "../plugins/session.js";
import type { RolloutService } from "../rollouts/service.js";
import type { StatusBoard } from "../status-board.js";
import { etagOf, matchesEtag } from "../etag.js";
import { type Html } from "./html.js";
import { OidcSignIn, OidcSignInError } from "./oidc.js";
import { STYLES } from "./styles.js";
import { fleetFilterForm, fleetMain, fleetView } from "./views/fleet.js";
import { page } from "./views/layout.js";
import { rolloutMain, rolloutsMain } from "./views/rollouts.js";
import { errorMain, signInMain, type SignInMode } from "./views/sign-in.js";
import { teamMain } from "./views/team.js";

/**
 * The read-only status page at /ui: the fleet (teams × clusters) and one page per team, rendered on the
 * server. Its own auth: a session cookie (plugins/session.ts) from a sign-in with the dev token (dev mode)
 * or OIDC authorization code + PKCE against the API's issuer. Its own strict CSP on every response.
 */

export interface UiOptions {
  board: StatusBoard;
  /** Rollouts, read from the Flux repo (and the gate's last evaluation on the replica driving one). */
  rollouts: RolloutService;
  auth: ApiAuth;
  ui: UiConfig;
  authenticator: Authenticator;
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

/**
 * No inline script or style, nothing from another origin, no framing, forms only to this origin, and
 * Trusted Types: script may insert HTML only through the "berth" policy (client/live.ts).
 */
export const UI_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types berth",
].join("; ");

const UI_HEADERS: Record<string, string> = {
  "content-security-policy": UI_CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#0550ae"/><path d="M9 8h9a5 5 0 0 1 1 9.9A5 5 0 0 1 18 26H9zm4 4v4h5a2 2 0 0 0 0-4zm0 7v4h5a2 2 0 0 0 0-4z" fill="#fff"/></svg>`;

const fleetQuery = z.object({
  q: z.string().max(100).catch(""),
  phase: z.enum(PHASES).optional().catch(undefined),
  fragment: z.literal("main").optional().catch(undefined),
});
const fragmentQuery = z.object({ fragment: z.literal("main").optional().catch(undefined) });
const signInForm = z.object({ token: z.string().max(8192).default(""), next: z.string().max(2048).optional() });

/** Where to go after signing in: only a path of this page, never another site (`//evil`, `/\evil`). */
export function safeNext(next: unknown): string {
  if (typeof next !== "string" || !/^\/ui(\/[A-Za-z0-9._~%-]*)*(\?[A-Za-z0-9._~%&=+-]*)?$/.test(next)) return "/ui";
  const url = new URL(next, "http://ui.invalid");
  // Dot segments resolve first: `/ui/../v1` is not a page of /ui.
  if (url.host !== "ui.invalid" || !(url.pathname === "/ui" || url.pathname.startsWith("/ui/"))) return "/ui";
  url.searchParams.delete("fragment");
  return url.pathname + url.search;
}

interface Asset {
  body: string | Buffer;
  type: string;
  url: string;
}

/** The page's script, built by tsconfig.ui.json into dist/ui/client; running from sources, the built copy. */
async function loadClientScript(): Promise<string | undefined> {
  for (const candidate of ["./client/live.js", "../../dist/ui/client/live.js"]) {
    try {
      return await readFile(new URL(candidate, import.meta.url), "utf8");
    } catch {
      // try the next place
    }
  }
  return undefined;
}

export async function uiPlugin(app: FastifyInstance, opts: UiOptions): Promise<void> {
  const { board, rollouts, auth, ui, authenticator } = opts;

  app.addHook("onRoute", (route) => {
    if (!route.config?.uiAccess) throw new Error(`route ${String(route.method)} ${route.url} declares no uiAccess: every /ui route must`);
    route.schema = { ...route.schema, hide: true }; // pages, not API: kept out of /openapi.json
  });

  await app.register(cookie);
  app.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string", bodyLimit: 16_384 }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(String(body))));
  });

  const publicUrl = ui.publicUrl ? new URL(ui.publicUrl) : undefined;
  const secure = (request: FastifyRequest) => (publicUrl ? publicUrl.protocol === "https:" : request.protocol === "https");
  const origin = (request: FastifyRequest) => (publicUrl ? publicUrl.origin : `${request.protocol}://${request.host}`);
  const sessions = new SessionCookies({ secret: ui.sessionSecret, secure });

  /**
   * Forms that change who is signed in (sign-in, sign-out) only from this page's own origin. Browsers say where
   * a request comes from in Sec-Fetch-Site, which page script cannot set; the page's `Referrer-Policy:
   * no-referrer` makes them send `Origin: null` even for its own forms, so Origin decides only without it
   * (older browsers). A request with neither is no browser's, so no cross-site forgery (curl, tests).
   */
  const sameOrigin = (request: FastifyRequest): boolean => {
    const site = request.headers["sec-fetch-site"];
    if (site !== undefined) return site === "same-origin" || site === "none";
    const sent = request.headers.origin;
    if (sent === undefined || sent === "null") return true;
    try {
      return new URL(sent).origin === new URL(origin(request)).origin;
    } catch {
      return false;
    }
  };

  const oidc =
    auth.mode === "oidc" && ui.oidc
      ? new OidcSignIn({
          issuer: auth.issuer,
          clientId: ui.oidc.clientId,
          clientSecret: ui.oidc.clientSecret,
          scopes: ui.oidc.scopes ?? ["openid", "profile", `${auth.audience.replace(/\/$/, "")}/.default`],
        })
      : undefined;
  const signInMode: SignInMode = auth.mode === "dev" ? { kind: "dev" } : oidc ? { kind: "oidc", issuerHost: oidc.issuerHost } : { kind: "unconfigured" };

  const script = await loadClientScript();
  if (!script) app.log.warn("the status page script is not built (apps/api/dist/ui/client/live.js): pages will not refresh themselves");
  const version = (text: string) => etagOf(text).slice(3, 13);
  const assets: Record<string, Asset> = {
    "ui.css": { body: STYLES, type: "text/css; charset=utf-8", url: `/ui/assets/ui.css?v=${version(STYLES)}` },
    "live.js": { body: script ?? "", type: "text/javascript; charset=utf-8", url: `/ui/assets/live.js?v=${version(script ?? "")}` },
    "favicon.svg": { body: FAVICON, type: "image/svg+xml", url: "/ui/assets/favicon.svg" },
  };
  const assetUrls = { css: assets["ui.css"]!.url, js: assets["live.js"]!.url };

  // Set last (onSend), so these win over any header a global plugin set earlier for every route.
  app.addHook("onSend", async (request, reply, payload) => {
    reply.headers(UI_HEADERS);
    if (!reply.hasHeader("cache-control")) reply.header("cache-control", "no-store");
    return payload;
  });

  const isFragment = (request: FastifyRequest) => fragmentQuery.parse(request.query ?? {}).fragment === "main";

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

  const sendHtml = (reply: FastifyReply, markup: Html, status = 200) => reply.code(status).type("text/html; charset=utf-8").send(markup.value);

  /** A full page, or only its <main> with an ETag (304 when the caller has it) for the live refresh. */
  const sendPage = (request: FastifyRequest, reply: FastifyReply, title: string, main: Html, before?: Html) => {
    const etag = etagOf(main.value);
    if (isFragment(request)) {
      reply.header("etag", etag);
      if (matchesEtag(request.headers["if-none-match"], etag)) return reply.code(304).send();
      return sendHtml(reply, main);
    }
    return sendHtml(reply, page({ title, session: request.uiSession, refreshSeconds: ui.refreshSeconds, etag, before, main, assets: assetUrls }));
  };

  const errorPage = (request: FastifyRequest, reply: FastifyReply, status: number, title: string, detail: string, action?: { href: string; text: string }) =>
    sendHtml(reply, page({ title, session: request.uiSession, main: errorMain(status, title, detail, action), assets: assetUrls }), status);

  const signInPage = (request: FastifyRequest, reply: FastifyReply, next: string, error?: string, status = 200) =>
    sendHtml(reply, page({ title: "Sign in", main: signInMain(signInMode, next, error), assets: assetUrls }), status);

  const startSession = async (request: FastifyRequest, reply: FastifyReply, principal: Principal, tokenExpiresAt?: number) => {
    const now = Math.floor(Date.now() / 1000);
    const expiresAt = Math.min(now + ui.sessionTtlSeconds, tokenExpiresAt ?? Number.POSITIVE_INFINITY);
    await sessions.start(request, reply, { actor: principal.actor, roles: [...principal.roles], expiresAt });
  };

  app.setNotFoundHandler((request, reply) => errorPage(request, reply, 404, "Not found", `Nothing lives at ${request.url.split("?")[0]}.`));
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status = error.statusCode && error.statusCode >= 400 ? error.statusCode : 500;
    if (status >= 500) request.log.error({ err: error }, "status page failed");
    return errorPage(request, reply, status, status >= 500 ? "Something went wrong" : "Bad request", status >= 500 ? `See the server log for request ${String(request.id)}.` : error.message);
  });

  // ---- pages -------------------------------------------------------------------------------------

  app.get("/", { config: { uiAccess: "read" } }, async (request, reply) => {
    const query = fleetQuery.parse(request.query ?? {});
    const filter = { q: query.q, phase: query.phase };
    const view = fleetView(await board.fleet(), board.clusters(), filter);
    return sendPage(request, reply, "Fleet", fleetMain(view, filter), fleetFilterForm(filter));
  });

  app.get("/teams/:name", { config: { uiAccess: "read" } }, async (request, reply) => {
    const name = teamNameSchema.safeParse((request.params as { name?: unknown }).name);
    const detail = name.success ? await board.team(name.data) : undefined;
    if (!detail) return errorPage(request, reply, 404, "Team not found", `There is no team "${String((request.params as { name?: unknown }).name)}" in the Flux repo.`);
    return sendPage(request, reply, detail.team.name, teamMain(detail));
  });

  app.get("/rollouts", { config: { uiAccess: "read" } }, async (request, reply) => {
    const { revision, items } = await rollouts.list();
    return sendPage(request, reply, "Rollouts", rolloutsMain(items, revision));
  });

  app.get("/rollouts/:id", { config: { uiAccess: "read" } }, async (request, reply) => {
    const raw = (request.params as { id?: unknown }).id;
    const id = rolloutIdSchema.safeParse(raw);
    const notFound = () => errorPage(request, reply, 404, "Rollout not found", `There is no rollout "${String(raw)}" in the Flux repo.`, { href: "/ui/rollouts", text: "All rollouts" });
    if (!id.success) return notFound();
    try {
      const { revision, rollout, progress } = await rollouts.get(id.data);
      return sendPage(request, reply, rollout.metadata.name, rolloutMain(rollout, progress, revision));
    } catch (err) {
      if (err instanceof RolloutNotFoundError) return notFound();
      throw err;
    }
  });

  // ---- sign-in -----------------------------------------------------------------------------------

  app.get("/sign-in", { config: { uiAccess: "public" } }, async (request, reply) => {
    const next = safeNext((request.query as { next?: unknown } | undefined)?.next);
    if (await sessions.read(request)) return reply.redirect(next, 303);
    return signInPage(request, reply, next);
  });

  const crossSite = (request: FastifyRequest, reply: FastifyReply) => {
    request.log.warn({ origin: request.headers.origin, secFetchSite: request.headers["sec-fetch-site"] }, "status page: cross-site form refused");
    return errorPage(request, reply, 403, "Cross-site request refused", "This form can only be sent from Berth's own pages. Open the status page and try again.", { href: "/ui", text: "Open the status page" });
  };

  app.post("/sign-in", { config: { uiAccess: "public" } }, async (request, reply) => {
    if (!sameOrigin(request)) return crossSite(request, reply);
    const form = signInForm.safeParse(request.body ?? {});
    const next = safeNext(form.success ? form.data.next : undefined);
    if (auth.mode !== "dev") return signInPage(request, reply, next, "Sign in with your organisation account.", 400);
    if (!form.success || !form.data.token) return signInPage(request, reply, next, "Enter the development token.", 400);
    let principal: Principal;
    try {
      principal = await authenticator.authenticate(form.data.token.trim());
    } catch (err) {
      if (err instanceof AuthenticationError) return signInPage(request, reply, next, "That token was not accepted.", 401);
      throw err;
    }
    await startSession(request, reply, principal);
    return reply.redirect(next, 303);
  });

  app.get("/auth/login", { config: { uiAccess: "public" } }, async (request, reply) => {
    const next = safeNext((request.query as { next?: unknown } | undefined)?.next);
    if (!oidc) return signInPage(request, reply, next, undefined, signInMode.kind === "dev" ? 200 : 503);
    let started;
    try {
      started = await oidc.start(`${origin(request)}/ui/auth/callback`);
    } catch (err) {
      request.log.error({ err }, "status page sign-in cannot start");
      return errorPage(request, reply, 503, "Sign-in is unavailable", "The identity provider cannot be reached right now. Try again in a minute.");
    }
    await sessions.beginSignIn(request, reply, { state: started.state, nonce: started.nonce, verifier: started.verifier, next });
    return reply.redirect(started.url, 302);
  });

  app.get("/auth/callback", { config: { uiAccess: "public" } }, async (request, reply) => {
    const transaction = await sessions.finishSignIn(request, reply);
    const retry = { href: "/ui/sign-in", text: "Sign in again" };
    if (!oidc) return errorPage(request, reply, 404, "Not found", "OIDC sign-in is not configured.");
    if (!transaction) return errorPage(request, reply, 400, "Sign-in failed", "The sign-in expired or was started in another browser.", retry);
    const query = request.url.includes("?") ? request.url.slice(request.url.indexOf("?")) : "";
    let accessToken: string;
    try {
      ({ accessToken } = await oidc.finish(new URL(`${origin(request)}/ui/auth/callback${query}`), transaction));
    } catch (err) {
      const reason = err instanceof OidcSignInError ? err.message : "unexpected error";
      request.log.warn({ reason }, "status page sign-in failed");
      return errorPage(request, reply, 400, "Sign-in failed", `The identity provider's answer was not accepted (${reason}).`, retry);
    }
    let principal: Principal;
    try {
      principal = await authenticator.authenticate(accessToken);
    } catch (err) {
      if (err instanceof IssuerUnavailableError) return errorPage(request, reply, 503, "Sign-in unavailable", "The identity provider cannot be reached right now; try again shortly.", retry);
      if (!(err instanceof AuthenticationError)) throw err;
      // Why it was refused goes to the log only, as for the API's bearer tokens.
      request.log.warn({ reason: err.reason }, "status page sign-in: access token refused");
      return errorPage(request, reply, 401, "Sign-in failed", "The access token was not accepted.", retry);
    }
    if (!principal.roles.has("read")) {
      return errorPage(request, reply, 403, "Not allowed", `${principal.actor} is signed in but lacks Berth's read role, which the status page needs.`);
    }
    await startSession(request, reply, principal, decodeJwt(accessToken).exp);
    return reply.redirect(transaction.next, 303);
  });

  app.post("/sign-out", { config: { uiAccess: "public" } }, async (request, reply) => {
    if (!sameOrigin(request)) return crossSite(request, reply);
    sessions.end(request, reply);
    return reply.redirect("/ui/sign-in", 303);
  });

  // ---- assets --------------------------------------------------------------------------------------

  app.get("/assets/:file", { config: { uiAccess: "public" } }, async (request, reply) => {
    const asset = assets[(request.params as { file: string }).file];
    if (!asset || (asset.url.endsWith("live.js") && !script)) return reply.code(404).type("text/plain; charset=utf-8").send("not found");
    // Versioned URLs (?v=<content hash>): a new build changes the URL, so the old content can be kept.
    return reply.header("cache-control", "public, max-age=31536000, immutable").type(asset.type).send(asset.body);
  });
}
