import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { writeResponse } from "@berth/api-contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBerth, type RunningBerth } from "../support/berth.js";
import { readAnswer, readProblem } from "../support/contract.js";
import { startTestIssuer, type TestIssuer } from "../support/oidc-issuer.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const payload = { name: "orders", owners: [OWNER], environments: ["dev"] };

describe("bearer JWT auth against an OIDC issuer's JWKS", () => {
  let issuer: TestIssuer;
  let berth: RunningBerth;
  let bare: string;
  const remoteHead = () =>
    execFileSync("git", ["--git-dir", bare, "rev-parse", "--verify", "-q", "refs/heads/main"], {
      encoding: "utf8",
    }).trim();
  /** The trailers of `revision` in the Flux repo, as git itself reads them. */
  const trailersOf = (revision: string) =>
    execFileSync("git", ["--git-dir", bare, "log", "-1", "--format=%(trailers:only,unfold)", revision], {
      encoding: "utf8",
    })
      .trim()
      .split("\n");
  const call = (method: "GET" | "POST", url: string, token?: string) =>
    berth.server.inject({
      method,
      url,
      headers: token ? { authorization: `Bearer ${token}` } : {},
      payload: method === "POST" ? payload : undefined,
    });

  beforeAll(async () => {
    issuer = await startTestIssuer("api://berth");
    bare = mkdtempSync(join(tmpdir(), "berth-remote-"));
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
    // Nor steer a rollout (an abort closes its wave's pull request in pull-request mode).
    for (const action of ["pause", "resume", "abort"]) {
      const steered = await call("POST", `/v1/rollouts/ro-20261127-000000-abcdef/${action}`, reader);
      expect(steered.statusCode, action).toBe(403);
    }
  });

  it("lets a writer onboard and records who asked", async () => {
    const writer = await issuer.sign({ roles: ["Berth.Write"], preferred_username: "alice@example.com" });
    const res = await call("POST", "/v1/teams", writer);
    expect(res.statusCode).toBe(201);
    expect((await call("GET", "/v1/teams/orders", writer)).statusCode).toBe(200);
    const tree = await berth.repo.snapshot(0);
    const { revision } = readAnswer(res, writeResponse);
    expect(tree.revision).toBe(revision);
    const trailers = trailersOf(revision);
    expect(trailers).toContain("Berth-Requested-By: alice@example.com");
    expect(trailers.filter((t) => t.startsWith("Berth-On-Behalf-Of"))).toEqual([]);
  });

  it("records whom a portal says it acts for beside its own identity, and replays its retry", async () => {
    const portal = await issuer.sign({ roles: ["Berth.Write"], sub: "backstage-scaffolder" });
    const onboard = () =>
      berth.server.inject({
        method: "POST",
        url: "/v1/teams",
        headers: {
          authorization: `Bearer ${portal}`,
          "berth-on-behalf-of": "user:default/jane.doe",
          "idempotency-key": "portal-billing-1",
        },
        payload: { ...payload, name: "billing" },
      });
    const res = await onboard();
    expect(res.statusCode).toBe(201);
    const { revision } = readAnswer(res, writeResponse);
    expect(trailersOf(revision)).toEqual([
      "Berth-Requested-By: backstage-scaffolder",
      expect.stringMatching(/^Berth-Request-Id: /),
      "Berth-On-Behalf-Of: user:default/jane.doe",
      "Berth-Action: create",
      "Berth-Team: billing",
      "Berth-Idempotency-Key: portal-billing-1",
      expect.stringMatching(/^Berth-Request-Fingerprint: sha256:/),
    ]);
    const retry = await onboard();
    expect(retry.statusCode).toBe(201);
    expect(retry.headers["idempotent-replayed"]).toBe("true");
    expect(readAnswer(retry, writeResponse).revision).toBe(revision);
    expect(remoteHead()).toBe(revision);
    // The audit line names the person beside the caller, for the original and its replay.
    const audited = berth
      .logEntries<{ audit?: { principal: string; onBehalfOf: string | null; team: string } }>()
      .filter((l) => l.audit?.team === "billing")
      .map((l) => [l.audit?.principal, l.audit?.onBehalfOf]);
    expect(audited).toEqual([
      ["backstage-scaffolder", "user:default/jane.doe"],
      ["backstage-scaffolder", "user:default/jane.doe"],
    ]);
  });

  it("refuses a malformed Berth-On-Behalf-Of on every write (400 naming the header) and commits nothing", async () => {
    const writer = await issuer.sign({ roles: ["Berth.Write"], preferred_username: "alice@example.com" });
    const before = remoteHead();
    const rollout = "/v1/rollouts/ro-20261127-000000-abcdef";
    const writes: Array<["POST" | "PUT" | "DELETE", string, object | undefined]> = [
      ["POST", "/v1/teams", { ...payload, name: "ledger" }],
      ["PUT", "/v1/teams/orders", { owners: [OWNER], environments: ["dev"] }],
      ["DELETE", "/v1/teams/orders", undefined],
      ["POST", "/v1/teams/orders/adopt", {}],
      ["POST", "/v1/rollouts", {}],
      ["POST", `${rollout}/pause`, undefined],
      ["POST", `${rollout}/resume`, undefined],
      ["POST", `${rollout}/abort`, undefined],
    ];
    // A newline cannot be sent in a header; control characters (C0, C1), an over-long value and two headers (which
    // Node joins with a comma) can.
    const logged = berth.logs.length;
    const malformed = [
      "jane\u0007doe",
      "user:default/jane\u0085",
      "x".repeat(300),
      "\u0007".repeat(300),
      "user:default/jane.doe, user:default/mallory",
    ];
    for (const value of malformed) {
      for (const [method, url, body] of writes) {
        const res = await berth.server.inject({
          method,
          url,
          headers: { authorization: `Bearer ${writer}`, "berth-on-behalf-of": value },
          ...(body ? { payload: body } : {}),
        });
        const what = `${method} ${url} ${JSON.stringify(value.slice(0, 20))}`;
        expect(res.statusCode, what).toBe(400);
        expect(readProblem(res), what).toMatchObject({
          type: "https://berth.dev/problems/bad-request",
          errors: [{ field: "headers.berth-on-behalf-of" }],
        });
      }
    }
    expect(remoteHead()).toBe(before);
    // Each refusal is audited without the claim: a malformed value is never repeated into the log.
    const audits = berth
      .logEntries<{ audit?: { onBehalfOf: string | null; status: number } }>(logged)
      .filter((l) => l.audit);
    expect(audits).toHaveLength(malformed.length * writes.length);
    expect(audits.every((l) => l.audit?.onBehalfOf === null && l.audit.status === 400)).toBe(true);
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
