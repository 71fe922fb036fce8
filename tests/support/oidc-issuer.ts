import { createHash, createHmac, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type JWTPayload } from "jose";

/**
 * A small OIDC issuer on 127.0.0.1 for auth tests: discovery document and JWKS over HTTP, a signer, and
 * the authorization code flow with PKCE (S256) as Entra ID runs it for a web app:
 *
 *   GET  /authorize  checks client_id, redirect_uri (exact match), response_type=code, S256 challenge,
 *                    state and nonce, then shows a sign-in page with one button per test user;
 *   POST /authorize  (the button) redirects to redirect_uri with a one-time code, the state and `iss`;
 *   POST /token      exchanges the code once, checking client, redirect_uri, code_verifier and the
 *                    client secret, and answers an access token for the API audience (with the user's
 *                    roles) and an ID token for the client (with the nonce).
 *
 * Tokens it signs are verified by the API exactly as Entra ID's would be (JWKS fetched over the network).
 * It can rotate its signing key, count JWKS fetches, go down, and forge the tokens an attacker would try.
 */
export interface SignOptions {
  expiresIn?: string | number;
  /** `nbf`: seconds since the epoch, or a jose time span ("1h" from now). */
  notBefore?: string | number;
  audience?: string;
  issuer?: string;
  alg?: string;
  /** "trusted": the key the JWKS serves; "untrusted": a key it never served. */
  key?: "trusted" | "untrusted";
  /** The `kid` header; default: the current key's. */
  kid?: string;
  /** Leave out `exp` (jose's signer sets it otherwise). */
  noExpiry?: boolean;
  /** Leave out `sub`. */
  noSubject?: boolean;
}

export interface TestIssuer {
  issuer: string;
  jwksUri: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  /** The current signing key's id (changes with rotate()). */
  readonly kid: string;
  /** How many times the JWKS was fetched. */
  readonly jwksFetches: number;
  sign(claims: JWTPayload, options?: SignOptions): Promise<string>;
  /** The algorithm-confusion forgery: HS256, with the issuer's public key (PEM) as the HMAC secret. */
  signHs256WithPublicKey(claims: JWTPayload): Promise<string>;
  /** A new key pair with a new kid; the JWKS serves only the new key from now on. */
  rotate(): Promise<void>;
  /** Discovery and JWKS answer 503 while down. */
  setDown(down: boolean): void;
  /** Every /authorize and /token request received, in order (parameters only, for assertions). */
  readonly requests: Array<{ endpoint: "authorize" | "token"; method: string; params: Record<string, string> }>;
  stop(): Promise<void>;
}

export interface TestClient {
  clientId: string;
  redirectUris: string[];
  /** A confidential client's secret (client_secret_post); public clients have none. */
  secret?: string;
}

export interface TestUser {
  /** Shown on the sign-in button and put in preferred_username. */
  username: string;
  sub?: string;
  /** App roles, e.g. ["Berth.Read"]. */
  roles?: string[];
}

export interface TestIssuerOptions {
  clients?: TestClient[];
  users?: TestUser[];
  /** Lifetime of the access tokens /token issues (seconds). */
  accessTokenSeconds?: number;
}

interface PendingCode {
  clientId: string;
  redirectUri: string;
  challenge: string;
  nonce: string;
  scope: string;
  user: TestUser;
  expiresAt: number;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

async function readForm(req: IncomingMessage): Promise<Record<string, string>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString("utf8")));
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader("content-type", "application/json");
  res.setHeader("cache-control", "no-store");
  res.end(JSON.stringify(body));
}

function page(res: ServerResponse, status: number, body: string): void {
  res.statusCode = status;
  res.setHeader("content-type", "text/html; charset=utf-8");
  res.end(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Test issuer</title></head><body><main>${body}</main></body></html>`,
  );
}

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;
interface SigningKey extends KeyPair {
  kid: string;
}

async function newKey(kid: string): Promise<SigningKey> {
  const pair = await generateKeyPair("RS256", { extractable: true });
  return { kid, ...pair };
}

export async function startTestIssuer(audience = "api://berth", options: TestIssuerOptions = {}): Promise<TestIssuer> {
  let current = await newKey("test-key");
  const untrusted = await newKey("untrusted-key");
  let generation = 0;
  let jwksFetches = 0;
  let down = false;
  const clients = options.clients ?? [];
  const users = options.users ?? [{ username: "alice@example.test", roles: ["Berth.Read"] }];
  const codes = new Map<string, PendingCode>();
  const requests: TestIssuer["requests"] = [];
  let base = "";

  const sign: TestIssuer["sign"] = async (claims, opts = {}) => {
    const key = opts.key === "untrusted" ? untrusted : current;
    const jwt = new SignJWT({ ...claims })
      .setProtectedHeader({ alg: opts.alg ?? "RS256", kid: opts.kid ?? current.kid })
      .setIssuer(opts.issuer ?? base)
      .setAudience(opts.audience ?? audience)
      .setIssuedAt();
    if (!opts.noSubject) jwt.setSubject(typeof claims.sub === "string" ? claims.sub : "test-user");
    if (!opts.noExpiry) jwt.setExpirationTime(opts.expiresIn ?? "5m");
    if (opts.notBefore !== undefined) jwt.setNotBefore(opts.notBefore);
    return jwt.sign(key.privateKey);
  };

  /** The /authorize parameters, checked; a bad client or redirect URI never redirects (an open redirector otherwise). */
  const checkAuthorize = (params: Record<string, string>): { error?: string; client?: TestClient } => {
    const client = clients.find((c) => c.clientId === params.client_id);
    if (!client) return { error: "unknown client_id" };
    if (!params.redirect_uri || !client.redirectUris.includes(params.redirect_uri))
      return { error: "redirect_uri is not registered for this client" };
    if (params.response_type !== "code") return { error: "response_type must be code" };
    if (!params.code_challenge || params.code_challenge_method !== "S256")
      return { error: "PKCE with S256 is required" };
    if (!params.state || !params.nonce) return { error: "state and nonce are required" };
    if (!(params.scope ?? "").split(" ").includes("openid")) return { error: "scope must include openid" };
    return { client };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", base);
    if (down && (url.pathname === "/.well-known/openid-configuration" || url.pathname === "/keys")) {
      res.statusCode = 503;
      return void res.end();
    }
    if (url.pathname === "/.well-known/openid-configuration") {
      return json(res, 200, {
        issuer: base,
        jwks_uri: `${base}/keys`,
        authorization_endpoint: `${base}/authorize`,
        token_endpoint: `${base}/token`,
        response_types_supported: ["code"],
        subject_types_supported: ["public"],
        id_token_signing_alg_values_supported: ["RS256"],
        code_challenge_methods_supported: ["S256"],
        grant_types_supported: ["authorization_code"],
        token_endpoint_auth_methods_supported: ["none", "client_secret_post"],
        authorization_response_iss_parameter_supported: true,
      });
    }
    if (url.pathname === "/keys") {
      jwksFetches += 1;
      return json(res, 200, {
        keys: [{ ...(await exportJWK(current.publicKey)), kid: current.kid, alg: "RS256", use: "sig" }],
      });
    }
    if (url.pathname === "/favicon.ico") {
      res.statusCode = 204;
      return void res.end();
    }
    if (url.pathname === "/authorize" && req.method === "GET") {
      const params = Object.fromEntries(url.searchParams);
      requests.push({ endpoint: "authorize", method: "GET", params });
      const { error } = checkAuthorize(params);
      if (error) return page(res, 400, `<h1>Sign-in request refused</h1><p>${escapeHtml(error)}</p>`);
      const hidden = Object.entries(params)
        .map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v)}">`)
        .join("");
      const buttons = users
        .map((u, i) => `<button type="submit" name="user" value="${i}">Continue as ${escapeHtml(u.username)}</button>`)
        .join(" ");
      return page(
        res,
        200,
        `<h1>Test issuer: sign in</h1><form method="post" action="/authorize">${hidden}${buttons}</form>`,
      );
    }
    if (url.pathname === "/authorize" && req.method === "POST") {
      const params = await readForm(req);
      requests.push({ endpoint: "authorize", method: "POST", params });
      const { error } = checkAuthorize(params);
      const user = users[Number(params.user)];
      if (error || !user)
        return page(res, 400, `<h1>Sign-in request refused</h1><p>${escapeHtml(error ?? "unknown user")}</p>`);
      const code = randomBytes(24).toString("base64url");
      codes.set(code, {
        clientId: params.client_id!,
        redirectUri: params.redirect_uri!,
        challenge: params.code_challenge!,
        nonce: params.nonce!,
        scope: params.scope!,
        user,
        expiresAt: Date.now() + 60_000,
      });
      const back = new URL(params.redirect_uri!);
      back.searchParams.set("code", code);
      back.searchParams.set("state", params.state!);
      back.searchParams.set("iss", base);
      res.statusCode = 302;
      res.setHeader("location", back.href);
      return void res.end();
    }
    if (url.pathname === "/token" && req.method === "POST") {
      const params = await readForm(req);
      requests.push({
        endpoint: "token",
        method: "POST",
        params: { ...params, ...(params.client_secret ? { client_secret: "[redacted]" } : {}) },
      });
      const fail = (description: string, error = "invalid_grant") =>
        json(res, 400, { error, error_description: description });
      if (params.grant_type !== "authorization_code")
        return fail("grant_type must be authorization_code", "unsupported_grant_type");
      const pending = codes.get(params.code ?? "");
      codes.delete(params.code ?? ""); // one use, whatever happens next
      if (!pending || pending.expiresAt < Date.now()) return fail("the code is unknown, used or expired");
      const client = clients.find((c) => c.clientId === params.client_id);
      if (!client || client.clientId !== pending.clientId)
        return fail("the code was issued to another client", "invalid_client");
      if (client.secret && params.client_secret !== client.secret)
        return fail("client authentication failed", "invalid_client");
      if (params.redirect_uri !== pending.redirectUri)
        return fail("redirect_uri does not match the authorization request");
      const challenge = createHash("sha256")
        .update(params.code_verifier ?? "")
        .digest("base64url");
      if (!params.code_verifier || challenge !== pending.challenge)
        return fail("code_verifier does not match the code_challenge");
      const sub = pending.user.sub ?? `sub-${pending.user.username}`;
      const lifetime = options.accessTokenSeconds ?? 300;
      const accessToken = await sign(
        { sub, preferred_username: pending.user.username, roles: pending.user.roles ?? [], scp: pending.scope },
        { expiresIn: `${lifetime}s` },
      );
      const idToken = await sign(
        { sub, preferred_username: pending.user.username, nonce: pending.nonce },
        { audience: client.clientId, expiresIn: `${lifetime}s` },
      );
      return json(res, 200, {
        access_token: accessToken,
        id_token: idToken,
        token_type: "Bearer",
        expires_in: lifetime,
        scope: pending.scope,
      });
    }
    res.statusCode = 404;
    res.end();
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      res.statusCode = 500;
      res.end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer: base,
    jwksUri: `${base}/keys`,
    authorizationEndpoint: `${base}/authorize`,
    tokenEndpoint: `${base}/token`,
    get kid() {
      return current.kid;
    },
    get jwksFetches() {
      return jwksFetches;
    },
    sign,
    async signHs256WithPublicKey(claims) {
      const secret = await exportSPKI(current.publicKey);
      const now = Math.floor(Date.now() / 1000);
      const header = Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT", kid: current.kid })).toString("base64url");
      const payload = Buffer.from(
        JSON.stringify({ iss: base, aud: audience, sub: "test-user", iat: now, exp: now + 300, ...claims }),
      ).toString("base64url");
      const signature = createHmac("sha256", secret).update(`${header}.${payload}`).digest("base64url");
      return `${header}.${payload}.${signature}`;
    },
    async rotate() {
      generation += 1;
      current = await newKey(`test-key-${generation}`);
    },
    setDown(value) {
      down = value;
    },
    requests,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
