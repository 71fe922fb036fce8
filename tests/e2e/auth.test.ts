import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { writeResponse } from "@berth/api-contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBerth, type RunningBerth } from "../support/berth.js";
import { readAnswer } from "../support/contract.js";
import { startTestIssuer, type TestIssuer } from "../support/oidc-issuer.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const payload = { name: "orders", owners: [OWNER], environments: ["dev"] };

describe("bearer JWT auth against an OIDC issuer's JWKS", () => {
  let issuer: TestIssuer;
  let berth: RunningBerth;
  const call = (method: "GET" | "POST", url: string, token?: string) =>
    berth.server.inject({
      method,
      url,
      headers: token ? { authorization: `Bearer ${token}` } : {},
      payload: method === "POST" ? payload : undefined,
    });

  beforeAll(async () => {
    issuer = await startTestIssuer("api://berth");
    const bare = mkdtempSync(join(tmpdir(), "berth-remote-"));
    execFileSync("git", ["init", "--quiet", "--bare", "--initial-branch=main", bare]);
    // No jwksUri: the API discovers it from the issuer's openid-configuration, as with Entra ID.
    berth = await startBerth({
      remoteUrl: pathToFileURL(bare).href,
      env: { BERTH_AUTH_MODE: "oidc", BERTH_OIDC_ISSUER: issuer.issuer, BERTH_OIDC_AUDIENCE: "api://berth" },
    });
  });
  afterAll(async () => {
    await berth?.stop();
    await issuer?.stop();
  });

  it("lets a reader read but not write (403)", async () => {
    const reader = await issuer.sign({ roles: ["Berth.Read"], preferred_username: "reader@example.com" });
    expect((await call("GET", "/v1/teams", reader)).statusCode).toBe(200);
    const denied = await call("POST", "/v1/teams", reader);
    expect(denied.statusCode).toBe(403);
    expect(denied.headers["content-type"]).toContain("application/problem+json");
  });

  it("lets a writer onboard and records who asked", async () => {
    const writer = await issuer.sign({ roles: ["Berth.Write"], preferred_username: "alice@example.com" });
    const res = await call("POST", "/v1/teams", writer);
    expect(res.statusCode).toBe(201);
    expect((await call("GET", "/v1/teams/orders", writer)).statusCode).toBe(200);
    const tree = await berth.repo.snapshot(0);
    expect(tree.revision).toBe(readAnswer(res, writeResponse).revision);
  });

  it("refuses a token without any Berth role (403), even for reads", async () => {
    const nobody = await issuer.sign({ roles: ["Other.Role"] });
    expect((await call("GET", "/v1/teams", nobody)).statusCode).toBe(403);
  });

  it("refuses expired, foreign-audience, foreign-issuer, wrongly signed and unsigned tokens (401)", async () => {
    const bad = [
      await issuer.sign({ roles: ["Berth.Write"] }, { expiresIn: Math.floor(Date.now() / 1000) - 3600 }),
      await issuer.sign({ roles: ["Berth.Write"] }, { audience: "api://someone-else" }),
      await issuer.sign({ roles: ["Berth.Write"] }, { issuer: "https://evil.example.com" }),
      await issuer.sign({ roles: ["Berth.Write"] }, { key: "untrusted" }),
    ];
    const [header, body] = bad[0]!.split(".");
    const unsigned = `${Buffer.from(JSON.stringify({ alg: "none" })).toString("base64url")}.${body}.`;
    for (const token of [...bad, unsigned, `${header}.${body}.AAAA`]) {
      const res = await call("GET", "/v1/teams", token);
      expect(res.statusCode).toBe(401);
      expect(res.headers["www-authenticate"]).toMatch(/^Bearer/);
    }
    expect((await call("GET", "/v1/teams")).statusCode).toBe(401);
  });

  it("keeps health and the API description public", async () => {
    expect((await berth.server.inject({ url: "/healthz" })).statusCode).toBe(200);
    expect((await berth.server.inject({ url: "/openapi.json" })).statusCode).toBe(200);
  });
});
