/**
 * Rate limits: per principal for reads and (stricter) writes, per client address for requests without a
 * valid token, health probes never; RateLimit headers on answers, 429 problem+json with Retry-After.
 * The window is an hour, so no budget refills while the test runs.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, startBerth, type RunningBerth } from "../support/berth.js";
import { readProblem } from "../support/contract.js";
import { createBareRepo, type BareRepo } from "../support/git-remotes.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const LIMITS = { windowSeconds: 3600, reads: 5, writes: 2, unauthenticated: 3 };

describe("rate limits", () => {
  let remote: BareRepo;
  let berth: RunningBerth;
  const auth = { authorization: `Bearer ${DEV_TOKEN}` };
  const from = (remoteAddress: string) => ({ remoteAddress });

  beforeAll(async () => {
    remote = await createBareRepo();
    berth = await startBerth({ remoteUrl: remote.url, api: { rateLimit: LIMITS } });
  });
  afterAll(async () => {
    await berth?.stop();
    await remote?.remove();
  });

  it("gives writes their own, stricter budget, and answers 429 problem+json with Retry-After", async () => {
    const preview = () =>
      berth.server.inject({
        method: "POST",
        url: "/v1/teams/preview",
        headers: auth,
        payload: { name: "limited", owners: [OWNER], environments: ["dev"] },
        ...from("10.0.0.1"),
      });
    const first = await preview();
    expect(first.statusCode).toBe(200);
    expect(first.headers["ratelimit-policy"]).toBe('"writes";q=2;w=3600');
    expect(first.headers.ratelimit).toMatch(/^"writes";r=1;t=\d+$/);
    expect((await preview()).statusCode).toBe(200);
    const refused = await preview();
    expect(refused.statusCode).toBe(429);
    expect(refused.headers["content-type"]).toContain("application/problem+json");
    expect(readProblem(refused)).toMatchObject({ type: "https://berth.dev/problems/too-many-requests", status: 429 });
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    expect(refused.headers.ratelimit).toMatch(/^"writes";r=0;t=\d+$/);
    // Reads are counted apart: still allowed.
    const read = await berth.server.inject({ url: "/v1/teams", headers: auth, ...from("10.0.0.1") });
    expect(read.statusCode).toBe(200);
    expect(read.headers["ratelimit-policy"]).toBe('"reads";q=5;w=3600');
  });

  it("counts a principal's reads across client addresses", async () => {
    const statuses: number[] = [];
    // One read was spent above; four more from other addresses fill the budget, the next is refused.
    for (const ip of ["10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"]) {
      statuses.push((await berth.server.inject({ url: "/v1/teams", headers: auth, ...from(ip) })).statusCode);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
  });

  it("counts requests without a valid token per client address, so guessing tokens is limited too", async () => {
    const attempt = (ip: string, token = "wrong-token-wrong-token") =>
      berth.server.inject({ url: "/v1/teams", headers: { authorization: `Bearer ${token}` }, ...from(ip) });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await attempt("192.0.2.7")).statusCode);
    expect(statuses).toEqual([401, 401, 401, 429]);
    const limited = await attempt("192.0.2.7");
    expect(limited.headers["ratelimit-policy"]).toBe('"unauthenticated";q=3;w=3600');
    // Another address has its own budget; the docs are public but counted the same way.
    expect((await attempt("192.0.2.8")).statusCode).toBe(401);
    expect((await berth.server.inject({ url: "/openapi.json", ...from("192.0.2.7") })).statusCode).toBe(429);
    // Addresses in one IPv6 /64 share a budget (one host can hold the whole prefix). Sent as one burst:
    // exactly the requests over the limit are refused, not the whole burst.
    const v6 = await Promise.all(["2001:db8::1", "2001:db8::2", "2001:db8::3", "2001:db8::4"].map((ip) => attempt(ip)));
    expect(v6.map((r) => r.statusCode).sort()).toEqual([401, 401, 401, 429]);
  });

  it("never limits health probes, even from an address whose budget is spent", async () => {
    const spent = "192.0.2.99";
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++)
      statuses.push((await berth.server.inject({ url: "/v1/teams", ...from(spent) })).statusCode);
    expect(statuses).toEqual([401, 401, 401, 429]);
    for (let i = 0; i < 20; i++) {
      const res = await berth.server.inject({ url: i % 2 ? "/healthz" : "/readyz", ...from(spent) });
      expect(res.statusCode).toBe(200);
      expect(res.headers.ratelimit).toBeUndefined();
    }
  });
});
