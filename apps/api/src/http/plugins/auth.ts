import { timingSafeEqual, createHash } from "node:crypto";
import type { ApiAuth } from "@berth/config";
import type { FastifyInstance, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTPayload } from "jose";
import { z } from "zod";
import { HttpProblem } from "./problem.js";

export type Role = "read" | "write";

export interface Principal {
  /** Who to record in commit trailers and the audit log: a user name or object id from the token. */
  actor: string;
  roles: ReadonlySet<Role>;
}

declare module "fastify" {
  interface FastifyRequest {
    principal?: Principal;
    /** Why authentication failed. Raised by the authorize hook, after the rate limit has counted the request. */
    authFailure?: HttpProblem;
  }
  interface FastifyContextConfig {
    /** The role a route needs; routes without one are public (health, API description). */
    requiredRole?: Role;
  }
}

export interface Authenticator {
  /** The token's principal; throws AuthenticationError (a refused token) or IssuerUnavailableError. */
  authenticate(token: string): Promise<Principal>;
}

/** A token was refused. `reason` goes to the log only: a client learns nothing about why. */
export class AuthenticationError extends Error {
  constructor(readonly reason: string) {
    super(`token refused: ${reason}`);
  }
}

/** The identity provider (its discovery document or JWKS) cannot be reached: not the caller's fault. */
export class IssuerUnavailableError extends Error {}

/** Every refused token gets this same answer: which check failed is for the server log, not an attacker. */
const WWW_AUTHENTICATE_INVALID = 'Bearer realm="berth", error="invalid_token"';
const refused = () =>
  new HttpProblem(401, "unauthorized", "Unauthorized", "the bearer token is missing or not valid", {
    "www-authenticate": WWW_AUTHENTICATE_INVALID,
  });

const claimText = z.string().min(1).max(200);
/** Keeps an actor safe to put in a commit trailer: one printable line. */
function safeActor(value: string): string {
  return value.replace(/[^\x20-\x7e]/g, "?").slice(0, 120);
}

/**
 * jose errors that say the issuer's keys could not be fetched, rather than that the token is bad (jose
 * raises its generic error only for a JWKS answer that is not 200 or not JSON).
 */
const ISSUER_FAILURES = new Set(["ERR_JWKS_TIMEOUT", "ERR_JWKS_INVALID", "ERR_JOSE_GENERIC"]);

/**
 * Bearer JWTs from an OIDC issuer (Entra ID in production): signature via JWKS, issuer, audience, expiry and
 * not-before (with clock tolerance), algorithm allow-list, and the tenant when configured.
 */
export function oidcAuthenticator(config: Extract<ApiAuth, { mode: "oidc" }>): Authenticator {
  let jwks: Promise<ReturnType<typeof createRemoteJWKSet>> | undefined;
  const discover = async () => {
    let uri = config.jwksUri;
    if (!uri) {
      const res = await fetch(`${config.issuer.replace(/\/$/, "")}/.well-known/openid-configuration`, {
        signal: AbortSignal.timeout(5000),
      });
      if (!res.ok) throw new IssuerUnavailableError(`openid-configuration answered ${res.status}`);
      uri = z.object({ jwks_uri: z.url() }).parse(await res.json()).jwks_uri;
    }
    // An unknown key id makes jose fetch the JWKS again (a key rotated at the issuer), at most once per cooldown.
    return createRemoteJWKSet(new URL(uri), {
      timeoutDuration: 5000,
      cooldownDuration: config.jwksCooldownSeconds * 1000,
    });
  };
  const keySet = () => {
    jwks ??= discover().catch((err: unknown) => {
      jwks = undefined;
      throw err instanceof IssuerUnavailableError
        ? err
        : new IssuerUnavailableError(`OIDC discovery failed: ${(err as Error).message}`);
    });
    return jwks;
  };
  return {
    async authenticate(token) {
      let payload: JWTPayload;
      const keys = await keySet();
      try {
        ({ payload } = await jwtVerify(token, keys, {
          issuer: config.issuer,
          audience: config.audience,
          algorithms: config.algorithms,
          clockTolerance: config.clockToleranceSeconds,
          requiredClaims: ["exp", "sub"],
        }));
      } catch (err) {
        const code = (err as { code?: string }).code;
        if ((code && ISSUER_FAILURES.has(code)) || !(err instanceof joseErrors.JOSEError)) {
          throw new IssuerUnavailableError(`JWKS: ${code ?? (err as Error).message}`);
        }
        throw new AuthenticationError(code ?? "verification failed");
      }
      if (config.tenantId !== undefined && payload.tid !== config.tenantId)
        throw new AuthenticationError("tid is not the configured tenant");
      const claimed = z.array(z.string()).catch([]).parse(payload[config.rolesClaim]);
      const roles = new Set<Role>();
      if (claimed.includes(config.writeRole)) roles.add("write").add("read");
      if (claimed.includes(config.readRole)) roles.add("read");
      const actor = [payload.preferred_username, payload.upn, payload.oid, payload.sub]
        .map((c) => claimText.safeParse(c))
        .find((r) => r.success)?.data;
      return { actor: safeActor(actor ?? "unknown"), roles };
    },
  };
}

/** Local development: one static token with every role. */
export function devAuthenticator(config: Extract<ApiAuth, { mode: "dev" }>): Authenticator {
  const expected = createHash("sha256").update(config.token).digest();
  return {
    async authenticate(token) {
      const given = createHash("sha256").update(token).digest();
      if (!timingSafeEqual(given, expected)) throw new AuthenticationError("not the development token");
      return { actor: "developer", roles: new Set<Role>(["read", "write"]) };
    },
  };
}

export function authenticatorFor(config: ApiAuth): Authenticator {
  return config.mode === "oidc" ? oidcAuthenticator(config) : devAuthenticator(config);
}

/** RFC 6750 b64token after a case-insensitive scheme (RFC 9110 §11.1) and one or more spaces. */
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*)$/i;

function bearerToken(request: FastifyRequest): string {
  // Node keeps only the first of repeated Authorization headers; count them on the wire instead, so a
  // second credential can never be silently ignored (or preferred by a proxy in front).
  const raw = request.raw.rawHeaders; // name, value, name, value, …
  const count = raw.filter((name, i) => i % 2 === 0 && name.toLowerCase() === "authorization").length;
  if (count > 1) {
    throw new HttpProblem(400, "bad-request", "Bad Request", "more than one Authorization header", {
      "www-authenticate": 'Bearer realm="berth", error="invalid_request"',
    });
  }
  const token = BEARER.exec(request.headers.authorization ?? "")?.[1];
  if (token === undefined) {
    throw new HttpProblem(401, "unauthorized", "Unauthorized", "a bearer token is required", {
      "www-authenticate": 'Bearer realm="berth"',
    });
  }
  return token;
}

/**
 * Who is calling: sets `request.principal`, or records why not in `request.authFailure`. Nothing is refused
 * here, so the rate limiter (next hook) can count failed attempts per client address.
 */
export const authenticatePlugin = fp(async (app: FastifyInstance, opts: { authenticator: Authenticator }) => {
  app.addHook("onRequest", async (request) => {
    if (!request.routeOptions.config.requiredRole) return;
    try {
      request.principal = await opts.authenticator.authenticate(bearerToken(request));
    } catch (err) {
      if (err instanceof HttpProblem) {
        request.authFailure = err;
      } else if (err instanceof AuthenticationError) {
        request.log.info({ reason: err.reason }, "bearer token refused");
        request.authFailure = refused();
      } else if (err instanceof IssuerUnavailableError) {
        request.log.warn({ reason: err.message }, "cannot verify tokens: the OIDC issuer is unavailable");
        request.authFailure = new HttpProblem(
          503,
          "auth-unavailable",
          "Authentication unavailable",
          "tokens cannot be verified right now; try again",
          { "retry-after": "5" },
        );
      } else {
        throw err;
      }
    }
  });
});

/**
 * May the caller do this: the route's `config.requiredRole` against the principal's roles. A route with no
 * role is public, which is why the public ones are listed explicitly in app.ts; every /v1 route declares one.
 */
export const authorizePlugin = fp(async (app: FastifyInstance) => {
  app.addHook("onRequest", async (request) => {
    const required = request.routeOptions.config.requiredRole;
    if (!required) return;
    if (request.authFailure) throw request.authFailure;
    if (!request.principal?.roles.has(required)) {
      throw new HttpProblem(403, "forbidden", "Forbidden", `this operation needs the ${required} role`, {
        "www-authenticate": 'Bearer realm="berth", error="insufficient_scope"',
      });
    }
  });
});
