import { createHmac } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type JWTPayload } from "jose";

/**
 * A tiny OIDC issuer on 127.0.0.1 for auth tests: discovery document and JWKS over HTTP, plus a signer.
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
  stop(): Promise<void>;
}

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;
interface SigningKey extends KeyPair {
  kid: string;
}

async function newKey(kid: string): Promise<SigningKey> {
  const pair = await generateKeyPair("RS256", { extractable: true });
  return { kid, ...pair };
}

export async function startTestIssuer(audience = "api://berth"): Promise<TestIssuer> {
  let current = await newKey("test-key");
  const untrusted = await newKey("untrusted-key");
  let generation = 0;
  let jwksFetches = 0;
  let down = false;
  let base = "";
  const server: Server = createServer((req, res) => {
    void (async () => {
      if (down && (req.url === "/.well-known/openid-configuration" || req.url === "/keys")) {
        res.statusCode = 503;
        res.end();
      } else if (req.url === "/.well-known/openid-configuration") {
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ issuer: base, jwks_uri: `${base}/keys` }));
      } else if (req.url === "/keys") {
        jwksFetches += 1;
        const jwk = { ...(await exportJWK(current.publicKey)), kid: current.kid, alg: "RS256", use: "sig" };
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ keys: [jwk] }));
      } else {
        res.statusCode = 404;
        res.end();
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer: base,
    jwksUri: `${base}/keys`,
    get kid() {
      return current.kid;
    },
    get jwksFetches() {
      return jwksFetches;
    },
    async sign(claims, options = {}) {
      const key = options.key === "untrusted" ? untrusted : current;
      const jwt = new SignJWT({ ...claims })
        .setProtectedHeader({ alg: options.alg ?? "RS256", kid: options.kid ?? current.kid })
        .setIssuer(options.issuer ?? base)
        .setAudience(options.audience ?? audience)
        .setIssuedAt();
      if (!options.noSubject) jwt.setSubject(typeof claims.sub === "string" ? claims.sub : "test-user");
      if (!options.noExpiry) jwt.setExpirationTime(options.expiresIn ?? "5m");
      if (options.notBefore !== undefined) jwt.setNotBefore(options.notBefore);
      return jwt.sign(key.privateKey);
    },
    async signHs256WithPublicKey(claims) {
      const secret = await exportSPKI(current.publicKey);
      const now = Math.floor(Date.now() / 1000);
      const header = Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT", kid: current.kid })).toString("base64url");
      const payload = Buffer.from(JSON.stringify({ iss: base, aud: audience, sub: "test-user", iat: now, exp: now + 300, ...claims })).toString("base64url");
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
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
