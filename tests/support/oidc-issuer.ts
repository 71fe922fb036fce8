import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT, type JWTPayload } from "jose";

/**
 * A tiny OIDC issuer on 127.0.0.1 for auth tests: discovery document and JWKS over HTTP, plus a signer.
 * Tokens it signs are verified by the API exactly as Entra ID's would be (JWKS fetched over the network).
 */
export interface TestIssuer {
  issuer: string;
  jwksUri: string;
  sign(claims: JWTPayload, options?: { expiresIn?: string | number; audience?: string; issuer?: string; alg?: string; key?: "trusted" | "untrusted" }): Promise<string>;
  stop(): Promise<void>;
}

export async function startTestIssuer(audience = "api://berth"): Promise<TestIssuer> {
  const trusted = await generateKeyPair("RS256", { extractable: true });
  const untrusted = await generateKeyPair("RS256", { extractable: true });
  const jwk = { ...(await exportJWK(trusted.publicKey)), kid: "test-key", alg: "RS256", use: "sig" };
  let base = "";
  const server: Server = createServer((req, res) => {
    if (req.url === "/.well-known/openid-configuration") {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ issuer: base, jwks_uri: `${base}/keys` }));
    } else if (req.url === "/keys") {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ keys: [jwk] }));
    } else {
      res.statusCode = 404;
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer: base,
    jwksUri: `${base}/keys`,
    async sign(claims, options = {}) {
      const key = options.key === "untrusted" ? untrusted.privateKey : trusted.privateKey;
      return new SignJWT({ ...claims })
        .setProtectedHeader({ alg: options.alg ?? "RS256", kid: "test-key" })
        .setIssuer(options.issuer ?? base)
        .setAudience(options.audience ?? audience)
        .setSubject(typeof claims.sub === "string" ? claims.sub : "test-user")
        .setIssuedAt()
        .setExpirationTime(options.expiresIn ?? "5m")
        .sign(key);
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
