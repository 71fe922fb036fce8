import { timingSafeEqual, createHash } from "node:crypto";
import type { ApiAuth } from "@berth/config";
import type { FastifyInstance, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from "jose";
import { z } from "zod";
import { HttpProblem } from "./problem.js";

export type Role = "read" | "write";

export interface Principal {
  /** Who to record in commit trailers: a user name or object id from the token. */
  actor: string;
  roles: ReadonlySet<Role>;
}

declare module "fastify" {
  interface FastifyRequest {
    principal?: Principal;
  }
  interface FastifyContextConfig {
    /** The role a route needs; routes without one are public (health, API description). */
    requiredRole?: Role;
  }
}

export interface Authenticator {
  authenticate(token: string): Promise<Principal>;
}

const claimText = z.string().min(1).max(200);
/** Keeps an actor safe to put in a commit trailer: one printable line. */
function safeActor(value: string): string {
  return value.replace(/[^\x20-\x7e]/g, "?").slice(0, 120);
}

/** Bearer JWTs from an OIDC issuer (Entra ID in production): signature via JWKS, issuer, audience, expiry, algorithm. */
export function oidcAuthenticator(config: Extract<ApiAuth, { mode: "oidc" }>): Authenticator {
  let jwks: ReturnType<typeof createRemoteJWKSet> | undefined;
  const keySet = async () => {
    if (jwks) return jwks;
    let uri = config.jwksUri;
    if (!uri) {
      const res = await fetch(`${config.issuer.replace(/\/$/, "")}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(5000) });
      const discovery = z.object({ jwks_uri: z.url() }).parse(await res.json());
      uri = discovery.jwks_uri;
    }
    jwks = createRemoteJWKSet(new URL(uri), { timeoutDuration: 5000, cooldownDuration: 30_000 });
    return jwks;
  };
  return {
    async authenticate(token) {
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, await keySet(), {
          issuer: config.issuer,
          audience: config.audience,
          algorithms: config.algorithms,
          clockTolerance: config.clockToleranceSeconds,
          requiredClaims: ["exp", "sub"],
        }));
      } catch (err) {
        throw new HttpProblem(401, "unauthorized", "Unauthorized", `invalid token: ${(err as { code?: string }).code ?? "verification failed"}`, {
          "www-authenticate": 'Bearer error="invalid_token"',
        });
      }
      const claimed = z.array(z.string()).catch([]).parse(payload[config.rolesClaim]);
      const roles = new Set<Role>();
      if (claimed.includes(config.writeRole)) roles.add("write").add("read");
      if (claimed.includes(config.readRole)) roles.add("read");
      const actor = [payload.preferred_username, payload.upn, payload.oid, payload.sub].map((c) => claimText.safeParse(c)).find((r) => r.success)?.data;
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
      if (!timingSafeEqual(given, expected)) {
        throw new HttpProblem(401, "unauthorized", "Unauthorized", "invalid token", { "www-authenticate": 'Bearer error="invalid_token"' });
      }
      return { actor: "developer", roles: new Set<Role>(["read", "write"]) };
    },
  };
}

export function authenticatorFor(config: ApiAuth): Authenticator {
  return config.mode === "oidc" ? oidcAuthenticator(config) : devAuthenticator(config);
}

function bearerToken(request: FastifyRequest): string {
  const header = request.headers.authorization;
  const match = header ? /^Bearer ([A-Za-z0-9._~+/=-]+)$/.exec(header) : null;
  if (!match) {
    throw new HttpProblem(401, "unauthorized", "Unauthorized", "a bearer token is required", { "www-authenticate": 'Bearer realm="berth"' });
  }
  return match[1]!;
}

/**
 * Checks every route that declares `config.requiredRole`. A route with no role is public, which is why
 * the public ones are listed explicitly in app.ts; every /v1 route declares one.
 */
export const authPlugin = fp(async (app: FastifyInstance, opts: { authenticator: Authenticator }) => {
  app.addHook("onRequest", async (request) => {
    const required = request.routeOptions.config.requiredRole;
    if (!required) return;
    const principal = await opts.authenticator.authenticate(bearerToken(request));
    if (!principal.roles.has(required)) {
      throw new HttpProblem(403, "forbidden", "Forbidden", `this operation needs the ${required} role`);
    }
    request.principal = principal;
  });
});
