import type { ApiAuth, UiConfig } from "@berth/config";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { decodeJwt } from "jose";
import { z } from "zod";
import { AuthenticationError, IssuerUnavailableError, type Authenticator, type Principal } from "../plugins/auth.js";
import type { SessionCookies } from "../plugins/session.js";
import { OidcSignIn, OidcSignInError } from "./oidc.js";
import type { Responder } from "./respond.js";
import { safeNext, sameOrigin } from "./security.js";
import type { SignInMode } from "./views/sign-in.js";

/**
 * Signing in to the status page and out of it: the development token (dev mode) in a form, or OIDC
 * authorization code + PKCE against the API's issuer (oidc.ts). Either ends in a session cookie
 * (plugins/session.ts) holding the actor and the roles its token had.
 */

const signInForm = z.object({ token: z.string().max(8192).default(""), next: z.string().max(2048).optional() });

/** How this API's status page signs in: the dev token, OIDC (when ui.oidc is configured), or not at all. */
export function signInMethod(auth: ApiAuth, ui: UiConfig): { mode: SignInMode; oidc?: OidcSignIn } {
  if (auth.mode === "dev") return { mode: { kind: "dev" } };
  if (auth.mode === "oidc" && ui.oidc) {
    const oidc = new OidcSignIn({
      issuer: auth.issuer,
      clientId: ui.oidc.clientId,
      clientSecret: ui.oidc.clientSecret,
      scopes: ui.oidc.scopes ?? ["openid", "profile", `${auth.audience.replace(/\/$/, "")}/.default`],
    });
    return { mode: { kind: "oidc", issuerHost: oidc.issuerHost }, oidc };
  }
  return { mode: { kind: "unconfigured" } };
}

export interface SignInOptions {
  auth: ApiAuth;
  authenticator: Authenticator;
  sessions: SessionCookies;
  respond: Responder;
  method: { mode: SignInMode; oidc?: OidcSignIn };
  /** This page's origin as browsers see it (ui.publicUrl, else the request's). */
  origin: (request: FastifyRequest) => string;
}

export function registerSignIn(app: FastifyInstance, opts: SignInOptions): void {
  const { auth, authenticator, sessions, respond, origin } = opts;
  const { mode: signInMode, oidc } = opts.method;

  const startSession = async (
    request: FastifyRequest,
    reply: FastifyReply,
    principal: Principal,
    tokenExpiresAt?: number,
  ) => sessions.start(request, reply, { actor: principal.actor, roles: [...principal.roles] }, tokenExpiresAt);

  const crossSite = (request: FastifyRequest, reply: FastifyReply) => {
    request.log.warn(
      { origin: request.headers.origin, secFetchSite: request.headers["sec-fetch-site"] },
      "status page: cross-site form refused",
    );
    return respond.error(
      request,
      reply,
      403,
      "Cross-site request refused",
      "This form can only be sent from Berth's own pages. Open the status page and try again.",
      { href: "/ui", text: "Open the status page" },
    );
  };

  app.get("/sign-in", { config: { uiAccess: "public" } }, async (request, reply) => {
    const next = safeNext((request.query as { next?: unknown } | undefined)?.next);
    if (await sessions.read(request)) return reply.redirect(next, 303);
    return respond.signIn(reply, next);
  });

  app.post("/sign-in", { config: { uiAccess: "public" } }, async (request, reply) => {
    if (!sameOrigin(request, origin(request))) return crossSite(request, reply);
    const form = signInForm.safeParse(request.body ?? {});
    const next = safeNext(form.success ? form.data.next : undefined);
    if (auth.mode !== "dev") return respond.signIn(reply, next, "Sign in with your organisation account.", 400);
    if (!form.success || !form.data.token) return respond.signIn(reply, next, "Enter the development token.", 400);
    let principal: Principal;
    try {
      principal = await authenticator.authenticate(form.data.token.trim());
    } catch (err) {
      if (err instanceof AuthenticationError) return respond.signIn(reply, next, "That token was not accepted.", 401);
      throw err;
    }
    await startSession(request, reply, principal);
    return reply.redirect(next, 303);
  });

  app.get("/auth/login", { config: { uiAccess: "public" } }, async (request, reply) => {
    const next = safeNext((request.query as { next?: unknown } | undefined)?.next);
    if (!oidc) return respond.signIn(reply, next, undefined, signInMode.kind === "dev" ? 200 : 503);
    let started;
    try {
      started = await oidc.start(`${origin(request)}/ui/auth/callback`);
    } catch (err) {
      request.log.error({ err }, "status page sign-in cannot start");
      return respond.error(
        request,
        reply,
        503,
        "Sign-in is unavailable",
        "The identity provider cannot be reached right now. Try again in a minute.",
      );
    }
    await sessions.beginSignIn(request, reply, {
      state: started.state,
      nonce: started.nonce,
      verifier: started.verifier,
      next,
    });
    return reply.redirect(started.url, 302);
  });

  app.get("/auth/callback", { config: { uiAccess: "public" } }, async (request, reply) => {
    const transaction = await sessions.finishSignIn(request, reply);
    const retry = { href: "/ui/sign-in", text: "Sign in again" };
    if (!oidc) return respond.error(request, reply, 404, "Not found", "OIDC sign-in is not configured.");
    if (!transaction)
      return respond.error(
        request,
        reply,
        400,
        "Sign-in failed",
        "The sign-in expired or was started in another browser.",
        retry,
      );
    const query = request.url.includes("?") ? request.url.slice(request.url.indexOf("?")) : "";
    let accessToken: string;
    try {
      ({ accessToken } = await oidc.finish(new URL(`${origin(request)}/ui/auth/callback${query}`), transaction));
    } catch (err) {
      const reason = err instanceof OidcSignInError ? err.message : "unexpected error";
      request.log.warn({ reason }, "status page sign-in failed");
      return respond.error(
        request,
        reply,
        400,
        "Sign-in failed",
        `The identity provider's answer was not accepted (${reason}).`,
        retry,
      );
    }
    let principal: Principal;
    try {
      principal = await authenticator.authenticate(accessToken);
    } catch (err) {
      if (err instanceof IssuerUnavailableError)
        return respond.error(
          request,
          reply,
          503,
          "Sign-in unavailable",
          "The identity provider cannot be reached right now; try again shortly.",
          retry,
        );
      if (!(err instanceof AuthenticationError)) throw err;
      // Why it was refused goes to the log only, as for the API's bearer tokens.
      request.log.warn({ reason: err.reason }, "status page sign-in: access token refused");
      return respond.error(request, reply, 401, "Sign-in failed", "The access token was not accepted.", retry);
    }
    if (!principal.roles.has("read")) {
      return respond.error(
        request,
        reply,
        403,
        "Not allowed",
        `${principal.actor} is signed in but lacks Berth's read role, which the status page needs.`,
      );
    }
    await startSession(request, reply, principal, decodeJwt(accessToken).exp);
    return reply.redirect(transaction.next, 303);
  });

  app.post("/sign-out", { config: { uiAccess: "public" } }, async (request, reply) => {
    if (!sameOrigin(request, origin(request))) return crossSite(request, reply);
    sessions.end(request, reply);
    return reply.redirect("/ui/sign-in", 303);
  });
}
