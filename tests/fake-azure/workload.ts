/**
 * A stand-in for an AKS cluster's OIDC issuer: signs Kubernetes service-account tokens that the
 * fake Entra accepts as client assertions (workload identity federation) once it trusts the keys.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportJWK, generateKeyPair, SignJWT, type JSONWebKeySet } from "jose";
import { TOKEN_EXCHANGE_AUDIENCE } from "./entra.js";
import type { FakeAzure } from "./server.js";

export interface ServiceAccountIssuer {
  issuer: string;
  jwks: JSONWebKeySet;
  /** A projected service-account token for system:serviceaccount:{namespace}:{name}. */
  token(o: {
    namespace: string;
    serviceAccount: string;
    audience?: string;
    ttlSeconds?: number;
    issuer?: string;
  }): Promise<string>;
  /** Write a token to a temp file (for AZURE_FEDERATED_TOKEN_FILE / tokenFilePath). */
  tokenFile(o: { namespace: string; serviceAccount: string; audience?: string; ttlSeconds?: number }): Promise<string>;
}

/** Create an issuer for `issuerURL` and make the fake trust its signing key. */
export async function createServiceAccountIssuer(fake: FakeAzure, issuerURL: string): Promise<ServiceAccountIssuer> {
  const { privateKey, publicKey } = await generateKeyPair("RS256");
  const kid = `sa-${Math.random().toString(36).slice(2, 10)}`;
  const jwks: JSONWebKeySet = { keys: [{ ...(await exportJWK(publicKey)), kid, alg: "RS256", use: "sig" }] };
  fake.entra.trustIssuer(issuerURL, jwks);
  const dir = mkdtempSync(join(tmpdir(), "fake-azure-sa-"));
  let n = 0;
  const token: ServiceAccountIssuer["token"] = (o) => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({
      "kubernetes.io": { namespace: o.namespace, serviceaccount: { name: o.serviceAccount, uid: crypto.randomUUID() } },
    })
      .setProtectedHeader({ alg: "RS256", kid })
      .setIssuer(o.issuer ?? issuerURL)
      .setSubject(`system:serviceaccount:${o.namespace}:${o.serviceAccount}`)
      .setAudience(o.audience ?? TOKEN_EXCHANGE_AUDIENCE)
      .setIssuedAt(now)
      .setNotBefore(now)
      .setExpirationTime(now + (o.ttlSeconds ?? 3600))
      .sign(privateKey);
  };
  return {
    issuer: issuerURL,
    jwks,
    token,
    async tokenFile(o) {
      const file = join(dir, `token-${++n}`);
      writeFileSync(file, await token(o));
      return file;
    },
  };
}
