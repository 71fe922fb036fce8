import { hkdfSync, randomBytes } from "node:crypto";
import type {} from "@fastify/cookie";
import type { FastifyReply, FastifyRequest } from "fastify";
import { EncryptJWT, jwtDecrypt, type JWTPayload } from "jose";
import { z } from "zod";
import type { Role } from "./auth.js";

/**
 * Browser sessions for the status page, kept in cookies the browser cannot read (httpOnly) and cannot
 * forge or read into (encrypted and authenticated: JWE, dir + A256GCM, with a key derived from
 * api.ui.sessionSecret). The cookie holds who signed in and their roles, never a token: the identity
 * provider's tokens are checked once at sign-in and then dropped. Stateless, so any replica given the
 * same secret accepts it, and so nothing can end it early: signing out clears the browser's cookie, while a copy
 * of it opens the page until it expires. Hence a short lifetime (api.ui.sessionTtlSeconds, 1 h by default).
 */

export interface UiSession {
  actor: string;
  roles: Role[];
  /** Seconds since the epoch. */
  expiresAt: number;
}

/** A sign-in in progress (OIDC authorization code + PKCE): what the callback must match. */
export interface SignInTransaction {
  state: string;
  nonce: string;
  verifier: string;
  /** Where to go after signing in (a /ui path). */
  next: string;
}

const sessionClaims = z.object({
  actor: z.string().min(1).max(200),
  roles: z.array(z.enum(["read", "write"])),
  exp: z.number(),
});
const transactionClaims = z.object({ state: z.string(), nonce: z.string(), verifier: z.string(), next: z.string() });

export interface SessionOptions {
  /** At least 32 characters; a random per-process key when absent (sessions then end at restart). */
  secret: string | undefined;
  /** Whether cookies get Secure (and the __Host- prefix): true when the page is served over https. */
  secure: (request: FastifyRequest) => boolean;
  /** How long a session lasts from sign-in (shorter when the access token it came from expires sooner). */
  ttlSeconds: number;
  /** What time it is (tests move it); the system's clock when absent. */
  now?: () => Date;
}

const SIGN_IN_SECONDS = 600;

export class SessionCookies {
  private readonly key: Uint8Array;

  constructor(private readonly options: SessionOptions) {
    this.key = options.secret
      ? new Uint8Array(hkdfSync("sha256", options.secret, "berth-ui", "session cookies", 32))
      : new Uint8Array(randomBytes(32));
  }

  /** `__Host-` binds the cookie to this exact origin and path / (only allowed on Secure cookies). */
  private name(request: FastifyRequest, base: string): string {
    return this.options.secure(request) ? `__Host-${base}` : base;
  }

  /** Seconds since the epoch. */
  private nowSeconds(): number {
    return Math.floor((this.options.now?.() ?? new Date()).getTime() / 1000);
  }

  private async seal(claims: JWTPayload, purpose: string, expiresAt: number): Promise<string> {
    return new EncryptJWT(claims)
      .setProtectedHeader({ alg: "dir", enc: "A256GCM" })
      .setAudience(purpose)
      .setIssuedAt(this.nowSeconds())
      .setExpirationTime(expiresAt)
      .encrypt(this.key);
  }

  private async open(value: string | undefined, purpose: string): Promise<JWTPayload | undefined> {
    if (!value) return undefined;
    try {
      return (
        await jwtDecrypt(value, this.key, {
          audience: purpose,
          currentDate: new Date(this.nowSeconds() * 1000),
          keyManagementAlgorithms: ["dir"],
          contentEncryptionAlgorithms: ["A256GCM"],
        })
      ).payload;
    } catch {
      return undefined; // expired, tampered with, or sealed with another key: not a session
    }
  }

  private set(request: FastifyRequest, reply: FastifyReply, base: string, value: string, maxAgeSeconds: number): void {
    reply.setCookie(this.name(request, base), value, {
      path: "/",
      httpOnly: true,
      secure: this.options.secure(request),
      // Lax, not Strict: the identity provider's redirect back to the callback is a cross-site navigation.
      sameSite: "lax",
      maxAge: maxAgeSeconds,
    });
  }

  private clear(request: FastifyRequest, reply: FastifyReply, base: string): void {
    reply.clearCookie(this.name(request, base), {
      path: "/",
      httpOnly: true,
      secure: this.options.secure(request),
      sameSite: "lax",
    });
  }

  async read(request: FastifyRequest): Promise<UiSession | undefined> {
    const claims = sessionClaims.safeParse(
      await this.open(request.cookies[this.name(request, "berth-session")], "berth-ui-session"),
    );
    return claims.success
      ? { actor: claims.data.actor, roles: claims.data.roles, expiresAt: claims.data.exp }
      : undefined;
  }

  /** Signs `who` in for ttlSeconds, or until `notAfter` (the access token's expiry, seconds) when sooner. */
  async start(
    request: FastifyRequest,
    reply: FastifyReply,
    who: Omit<UiSession, "expiresAt">,
    notAfter = Number.POSITIVE_INFINITY,
  ): Promise<void> {
    const now = this.nowSeconds();
    const expiresAt = Math.min(now + this.options.ttlSeconds, notAfter);
    const value = await this.seal({ actor: who.actor, roles: who.roles }, "berth-ui-session", expiresAt);
    this.set(request, reply, "berth-session", value, Math.max(0, expiresAt - now));
  }

  end(request: FastifyRequest, reply: FastifyReply): void {
    this.clear(request, reply, "berth-session");
  }

  async beginSignIn(request: FastifyRequest, reply: FastifyReply, transaction: SignInTransaction): Promise<void> {
    const value = await this.seal({ ...transaction }, "berth-ui-sign-in", this.nowSeconds() + SIGN_IN_SECONDS);
    this.set(request, reply, "berth-sign-in", value, SIGN_IN_SECONDS);
  }

  /** The sign-in in progress, consumed: its cookie is cleared whatever the outcome. */
  async finishSignIn(request: FastifyRequest, reply: FastifyReply): Promise<SignInTransaction | undefined> {
    const claims = transactionClaims.safeParse(
      await this.open(request.cookies[this.name(request, "berth-sign-in")], "berth-ui-sign-in"),
    );
    this.clear(request, reply, "berth-sign-in");
    return claims.success ? claims.data : undefined;
  }
}
