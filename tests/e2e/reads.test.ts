/** Reads at scale: limit/continue pagination and ETag/If-None-Match on GET /v1/teams and /v1/teams/{name}. */
import { teamListResponse, teamResponse, writeResponse } from "@berth/api-contract";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, startBerth, type RunningBerth } from "../support/berth.js";
import { readAnswer } from "../support/contract.js";
import { createBareRepo, type BareRepo } from "../support/git-remotes.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const NAMES = ["echo", "alpha", "delta", "bravo", "charlie"];

describe("reading teams", () => {
  let remote: BareRepo;
  let berth: RunningBerth;
  const auth = { authorization: `Bearer ${DEV_TOKEN}` };
  const get = (url: string, headers: Record<string, string> = {}) =>
    berth.server.inject({ url, headers: { ...auth, ...headers } });

  beforeAll(async () => {
    remote = await createBareRepo();
    berth = await startBerth({ remoteUrl: remote.url });
    for (const name of NAMES) {
      const res = await berth.server.inject({
        method: "POST",
        url: "/v1/teams",
        headers: auth,
        payload: { name, owners: [OWNER], environments: ["dev"] },
      });
      expect(res.statusCode).toBe(201);
    }
  });
  afterAll(async () => {
    await berth?.stop();
    await remote?.remove();
  });

  it("pages through every team in name order with limit and continue", async () => {
    const seen: string[] = [];
    let url = "/v1/teams?limit=2";
    const revisions = new Set<string | null>();
    for (let page = 0; page < 10; page++) {
      const res = await get(url);
      expect(res.statusCode).toBe(200);
      const body = readAnswer(res, teamListResponse);
      expect(body.items.length).toBeLessThanOrEqual(2);
      seen.push(...body.items.map((t) => t.name));
      revisions.add(body.revision);
      if (!body.continue) break;
      url = `/v1/teams?limit=2&continue=${encodeURIComponent(body.continue)}`;
    }
    expect(seen).toEqual([...NAMES].sort());
    expect(revisions.size).toBe(1);
    const all = readAnswer(await get("/v1/teams"), teamListResponse);
    expect(all.items.map((t) => t.name)).toEqual([...NAMES].sort());
    expect(all.continue).toBeUndefined();
  });

  it("refuses a bad limit or a continue token it did not issue (422), and ignores unknown parameters", async () => {
    for (const query of [
      "limit=0",
      "limit=1001",
      "limit=two",
      "continue=bm9wZQ",
      `continue=${Buffer.from(JSON.stringify({ after: "../x" })).toString("base64url")}`,
    ]) {
      const res = await get(`/v1/teams?${query}`);
      expect(res.statusCode, query).toBe(422);
      expect(res.headers["content-type"]).toContain("application/problem+json");
    }
    expect((await get("/v1/teams?unrelated=1")).statusCode).toBe(200);
  });

  it("sends the list gzipped to a reader that accepts it, as its own representation (Vary, ETag, 304)", async () => {
    for (const url of ["/v1/teams", "/v1/teams?limit=2"]) {
      const plain = await get(url);
      expect(plain.headers["content-encoding"], url).toBeUndefined();
      expect(plain.headers.vary, url).toContain("accept-encoding");
      const zipped = await get(url, { "accept-encoding": "br;q=1, gzip;q=0.8" });
      expect(zipped.statusCode, url).toBe(200);
      expect(zipped.headers["content-encoding"], url).toBe("gzip");
      expect(zipped.headers.vary, url).toContain("accept-encoding");
      expect(gunzipSync(zipped.rawPayload).toString("utf8"), url).toBe(plain.body);
      expect(zipped.rawPayload.length, url).toBeLessThan(plain.rawPayload.length);
      // Other bytes, so another strong tag; each answers 304 to its own.
      const tag = zipped.headers.etag as string;
      expect(tag, url).not.toBe(plain.headers.etag);
      expect((await get(url, { "accept-encoding": "gzip", "if-none-match": tag })).statusCode, url).toBe(304);
      expect((await get(url, { "if-none-match": tag })).statusCode, url).toBe(200);
      // Refused or not offered: the body as is.
      for (const refused of ["gzip;q=0", "br", "identity"]) {
        const res = await get(url, { "accept-encoding": refused });
        expect(res.headers["content-encoding"], `${url} ${refused}`).toBeUndefined();
        expect(res.body, `${url} ${refused}`).toBe(plain.body);
      }
    }
  });

  it("answers 304 while the repo has not changed, for the list and for one team", async () => {
    for (const url of ["/v1/teams", "/v1/teams?limit=2", "/v1/teams/alpha"]) {
      const first = await get(url);
      const etag = first.headers.etag as string;
      expect(etag, url).toMatch(/^"[A-Za-z0-9_-]{32}"$/);
      const again = await get(url, { "if-none-match": etag });
      expect(again.statusCode, url).toBe(304);
      expect(again.body).toBe("");
      expect(again.headers.etag).toBe(etag);
      expect((await get(url, { "if-none-match": `"other", W/${etag}` })).statusCode).toBe(304);
      expect((await get(url, { "if-none-match": "*" })).statusCode).toBe(304);
      expect((await get(url, { "if-none-match": '"stale"' })).statusCode).toBe(200);
    }
    // Pages of one revision have different tags; a write changes every tag.
    const page1 = (await get("/v1/teams?limit=2")).headers.etag;
    expect((await get("/v1/teams?limit=3")).headers.etag).not.toBe(page1);
    const before = (await get("/v1/teams/alpha")).headers.etag as string;
    const write = await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: auth,
      payload: { name: "foxtrot", owners: [OWNER], environments: ["dev"] },
    });
    expect(write.statusCode).toBe(201);
    await berth.repo.snapshot(0);
    const after = await get("/v1/teams/alpha", { "if-none-match": before });
    expect(after.statusCode).toBe(200);
    expect(readAnswer(after, teamResponse).revision).toBe(readAnswer(write, writeResponse).revision);
  });
});
