/**
 * Production-mode auth (OIDC, RS256 JWKS served by a real issuer over HTTP) against the tokens an attacker
 * or a misconfigured client sends. Each is 401 or 403 as docs/api.md says, and every 401 is the same
 * answer: which check failed goes to the log, never to the caller.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { LightMyRequestResponse } from "fastify";
import { startBerth, type RunningBerth } from "../support/berth.js";
import { readProblem } from "../support/contract.js";
import { createBareRepo, type BareRepo } from "../support/git-remotes.js";
import { startTestIssuer, type TestIssuer } from "../support/oidc-issuer.js";

const TENANT = "11111111-2222-4333-8444-555555555555";
const OTHER_TENANT = "99999999-8888-4777-8666-555555555555";
const AUDIENCE = "api://berth";

describe("JWT negatives in production (OIDC) mode", () => {
  let issuer: TestIssuer;
  let remote: BareRepo;
  let berth: RunningBerth;
  const call = (token: string | undefined, method: "GET" | "POST" = "GET") =>
    berth.server.inject({
      method,
      url: method === "GET" ? "/v1/teams" : "/v1/teams/preview",
      headers: token ? { authorization: `Bearer ${token}` } : {},
      payload:
        method === "POST"
          ? { name: "orders", owners: ["0b9a3c1e-1111-4222-8333-444455556666"], environments: ["dev"] }
          : undefined,
    });
  const writer = { roles: ["Berth.Write"], tid: TENANT, preferred_username: "alice@example.com" };
  const reader = { roles: ["Berth.Read"], tid: TENANT };
  /** The parts of a 401 that may differ between requests. */
  const comparable = (res: LightMyRequestResponse) => {
    const { requestId: _id, instance: _instance, ...rest } = readProblem(res);
    return { status: res.statusCode, body: rest, wwwAuthenticate: res.headers["www-authenticate"] };
  };

  beforeAll(async () => {
    issuer = await startTestIssuer(AUDIENCE);
    remote = await createBareRepo();
    berth = await startBerth({
      remoteUrl: remote.url,
      env: { BERTH_AUTH_MODE: "oidc" },
      // A short JWKS cooldown so the rotation case needs no long wait; production keeps 30 s.
      api: {
        auth: { mode: "oidc", issuer: issuer.issuer, audience: AUDIENCE, tenantId: TENANT, jwksCooldownSeconds: 1 },
      },
    });
  });
  afterAll(async () => {
    await berth?.stop();
    await issuer?.stop();
    await remote?.remove();
  });

  it("accepts a valid reader and writer", async () => {
    expect((await call(await issuer.sign(reader))).statusCode).toBe(200);
    expect((await call(await issuer.sign(writer), "POST")).statusCode).toBe(200);
  });

  it("refuses bad tokens with one identical 401 that names no reason", async () => {
    const now = Math.floor(Date.now() / 1000);
    const [header, payload] = (await issuer.sign(writer)).split(".");
    const cases: Record<string, string> = {
      expired: await issuer.sign(writer, { expiresIn: now - 3600 }),
      "not yet valid": await issuer.sign(writer, { notBefore: now + 3600 }),
      "wrong issuer": await issuer.sign(writer, { issuer: "https://login.microsoftonline.com/evil/v2.0" }),
      "wrong audience": await issuer.sign(writer, { audience: "api://someone-else" }),
      "unknown key id": await issuer.sign(writer, { key: "untrusted", kid: "no-such-key" }),
      "known key id, wrong key": await issuer.sign(writer, { key: "untrusted" }),
      "alg none": `${Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url")}.${payload}.`,
      "HS256 signed with the public key": await issuer.signHs256WithPublicKey(writer),
      "signature stripped": `${header}.${payload}.`,
      "signature of another token": `${header}.${payload}.${(await issuer.sign(reader)).split(".")[2]}`,
      "another tenant (its issuer)": await issuer.sign(
        { ...writer, tid: OTHER_TENANT },
        { issuer: `https://login.microsoftonline.com/${OTHER_TENANT}/v2.0` },
      ),
      "another tenant (same issuer, shared keys)": await issuer.sign({ ...writer, tid: OTHER_TENANT }),
      "no tenant": await issuer.sign({ roles: ["Berth.Write"] }),
      "no exp": await issuer.sign(writer, { noExpiry: true }),
      "no sub": await issuer.sign(writer, { noSubject: true }),
      "not a JWT": "not-a-jwt",
    };
    const answers: Array<ReturnType<typeof comparable>> = [];
    for (const [label, token] of Object.entries(cases)) {
      const res = await call(token);
      expect(res.statusCode, label).toBe(401);
      expect(res.headers["content-type"], label).toContain("application/problem+json");
      answers.push(comparable(res));
    }
    const first = answers[0]!;
    expect(first).toEqual({
      status: 401,
      body: {
        type: "https://berth.dev/problems/unauthorized",
        title: "Unauthorized",
        status: 401,
        detail: "the bearer token is missing or not valid",
      },
      wwwAuthenticate: 'Bearer realm="berth", error="invalid_token"',
    });
    for (const a of answers) expect(a).toEqual(first);
    // The reason is in the log, for the operator.
    expect(berth.logs.some((l) => l.includes('"msg":"bearer token refused"') && l.includes("ERR_JWT_EXPIRED"))).toBe(
      true,
    );
  });

  it("refuses a valid token without the role, or with the role in the wrong claim (403)", async () => {
    const cases: Record<string, Record<string, unknown>> = {
      "no role": { tid: TENANT },
      "another app's role": { tid: TENANT, roles: ["Other.Role"] },
      "role in groups": { tid: TENANT, groups: ["Berth.Write"] },
      "role in scp": { tid: TENANT, scp: "Berth.Write" },
      "roles as a string": { tid: TENANT, roles: "Berth.Write" },
      "role name in another case": { tid: TENANT, roles: ["berth.write"] },
    };
    for (const [label, claims] of Object.entries(cases)) {
      const res = await call(await issuer.sign(claims));
      expect(res.statusCode, label).toBe(403);
      expect(readProblem(res), label).toMatchObject({ type: "https://berth.dev/problems/forbidden" });
    }
    const readerWrites = await call(await issuer.sign(reader), "POST");
    expect(readerWrites.statusCode).toBe(403);
  });

  it("accepts a key rotated at the issuer after fetching the JWKS once more", async () => {
    expect((await call(await issuer.sign(reader))).statusCode).toBe(200);
    const fetchesBefore = issuer.jwksFetches;
    await issuer.rotate();
    const rotated = await issuer.sign(reader);
    // Within the cooldown after the last fetch an unknown kid is refused without asking the issuer again;
    // once it has passed, the JWKS is fetched once and the new key is accepted.
    await vi.waitFor(async () => expect((await call(rotated)).statusCode).toBe(200), {
      timeout: 30_000,
      interval: 250,
    });
    expect(issuer.jwksFetches).toBe(fetchesBefore + 1);
    for (let i = 0; i < 5; i++) expect((await call(rotated)).statusCode).toBe(200);
    expect(issuer.jwksFetches).toBe(fetchesBefore + 1);
    // The old key is gone from the JWKS: its tokens are refused.
    const old = await call(await issuer.sign(reader, { key: "untrusted", kid: "test-key" }));
    expect(old.statusCode).toBe(401);
  });

  it("answers 503 (not 401) when the issuer cannot be reached to check a new key", async () => {
    issuer.setDown(true);
    try {
      await issuer.rotate();
      const token = await issuer.sign(reader);
      await vi.waitFor(
        async () => {
          const res = await call(token);
          expect(res.statusCode).toBe(503);
          expect(readProblem(res)).toMatchObject({ type: "https://berth.dev/problems/auth-unavailable" });
        },
        { timeout: 30_000, interval: 250 },
      );
    } finally {
      issuer.setDown(false);
    }
  });
});
