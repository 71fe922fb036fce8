/**
 * Replays the ARM recordings in ../shared/arm-recordings (go-vcr cassettes recorded against real
 * Azure by Azure Service Operator's test suite) against the fake, request by request, and checks
 * each live answer against the recorded one. See normalise.ts for what is compared how.
 */
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rgDeletionOperationId } from "./arm.js";
import { header, loadCassette, type CassetteInteraction } from "./cassette.js";
import { createRawClient } from "./client.js";
import { Normaliser } from "./normalise.js";
import { startFakeAzure, type FakeAzure } from "./server.js";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const recordings = resolve(repoRoot, "../shared/arm-recordings");
const ZERO = "00000000-0000-0000-0000-000000000000";
const CASSETTES = ["Test_ResourceGroup_CRUD.yaml", "Test_ManagedIdentity_UserAssignedIdentity_20230131_CRUD.yaml"];

/** How many 202s the recording got while polling the operation — the fake is set to the same. */
function recordedPolls(interactions: CassetteInteraction[]): number {
  return interactions.filter(
    (i) => /\/operationresults\//i.test(new URL(i.request.url).pathname) && i.response.code === 202,
  ).length;
}

describe("recordings are present", () => {
  it("finds both cassettes beside the repository", () => {
    for (const c of CASSETTES) expect(existsSync(resolve(recordings, c)), resolve(recordings, c)).toBe(true);
  });
});

describe.each(CASSETTES)("replay %s", (file) => {
  const interactions = existsSync(resolve(recordings, file)) ? loadCassette(resolve(recordings, file)) : [];
  let fake: FakeAzure;
  let client: ReturnType<typeof createRawClient>;
  let token: string;
  let normaliser: Normaliser;

  beforeAll(async () => {
    fake = await startFakeAzure({
      tenantId: ZERO,
      subscriptions: [{ subscriptionId: ZERO, tenantId: ZERO }],
      apps: [{ clientId: "aaaaaaaa-0000-0000-0000-000000000001", clientSecret: "replay-secret" }],
      // Real ARM sends Retry-After: 15 and needed this many polls when the cassette was recorded.
      lro: { polls: recordedPolls(interactions), retryAfterSeconds: 15 },
      ficWriteLatencyMs: 0,
    });
    client = createRawClient(fake.ca.certPem);
    const res = await client.send(`${fake.url}/${ZERO}/oauth2/v2.0/token`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "client_credentials",
        client_id: "aaaaaaaa-0000-0000-0000-000000000001",
        client_secret: "replay-secret",
        scope: "https://management.azure.com/.default",
      }).toString(),
    });
    expect(res.status).toBe(200);
    token = (JSON.parse(res.body) as { access_token: string }).access_token;
    normaliser = new Normaliser(fake.url);
    fake.stats.reset();
  });

  afterAll(async () => {
    client?.close();
    await fake?.close();
  });

  it("has interactions to replay", () => {
    expect(interactions.length).toBeGreaterThan(5);
  });

  it("answers every recorded request like ARM did, in order", async () => {
    const failures: string[] = [];
    for (const i of interactions) {
      const recordedUrl = new URL(i.request.url);
      expect(recordedUrl.host).toBe("management.azure.com");
      const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
      for (const [k, v] of Object.entries(i.request.headers)) {
        if (k.toLowerCase() !== "content-length" && v[0] !== undefined) headers[k] = v[0];
      }
      const res = await client.send(`${fake.url}${recordedUrl.pathname}${recordedUrl.search}`, {
        method: i.request.method,
        headers,
        body: i.request.body,
      });
      const where = `#${i.index} ${i.request.method} ${recordedUrl.pathname.split("/").slice(-2).join("/")}`;
      if (res.status !== i.response.code)
        failures.push(`${where}: status ${res.status}, recorded ${i.response.code} (${res.body.slice(0, 300)})`);
      failures.push(...normaliser.compareHeaders(i.response.headers, res.headers, where));
      failures.push(...normaliser.compareBody(i.response.body, res.body, where));
    }
    expect(failures).toEqual([]);
    // Every request was understood (no "Unknown" operation) and served once, nothing retried.
    expect(fake.stats.requests).toHaveLength(interactions.length);
    expect(fake.stats.count("Unknown")).toBe(0);
  });

  it("mapped every generated id one-to-one", () => {
    for (const [recorded, actual] of normaliser.mapping) {
      expect(actual).not.toBe(recorded);
      expect(actual).toMatch(/^[0-9a-f-]{36}$/);
    }
    const expected = interactions.some((i) => i.response.body.includes("principalId")) ? 2 : 0;
    expect(normaliser.mapping.size).toBe(expected);
  });
});

describe("normalisation rules (they must reject what real ARM would not send)", () => {
  const base = "https://127.0.0.1:1234";
  const identity = (principalId: string, clientId: string, extra = "") =>
    `{"location":"westus2","tags":{},"id":"/x","name":"n","type":"t","properties":{"tenantId":"${ZERO}","principalId":"${principalId}","clientId":"${clientId}"${extra}}}`;
  const A = "fb25ca0a-e028-430c-8099-5b17b40521fe";
  const B = "6e6268a6-8da7-4035-8fa8-84d3279966ee";
  const X = "11111111-2222-4333-8444-555555555555";
  const Y = "66666666-7777-4888-9999-aaaaaaaaaaaa";

  it("accepts fresh GUIDs for principalId/clientId and keeps them consistent", () => {
    const n = new Normaliser(base);
    expect(n.compareBody(identity(A, B), identity(X, Y), "1")).toEqual([]);
    expect(n.compareBody(identity(A, B), identity(X, Y), "2")).toEqual([]);
    // The same recorded id now answered with another value:
    expect(n.compareBody(identity(A, B), identity(Y, X), "3").join()).toMatch(/was .* earlier/);
  });

  it("rejects a non-GUID id, a changed plain value, extra or missing keys, and key order changes", () => {
    const n = new Normaliser(base);
    expect(n.compareBody(identity(A, B), identity("not-a-guid", Y), "1").join()).toMatch(/expected a GUID/);
    expect(
      new Normaliser(base).compareBody(identity(A, B), identity(X, Y).replace("westus2", "eastus"), "2").join(),
    ).toMatch(/location/);
    expect(
      new Normaliser(base).compareBody(identity(A, B), identity(X, Y, ',"isolationScope":"None"'), "3").join(),
    ).toMatch(/unexpected keys isolationScope/);
    const reordered = `{"tags":{},"location":"westus2","id":"/x","name":"n","type":"t","properties":{"tenantId":"${ZERO}","principalId":"${X}","clientId":"${Y}"}}`;
    expect(new Normaliser(base).compareBody(identity(A, B), reordered, "4").join()).toMatch(/byte-wise/);
    expect(new Normaliser(base).compareBody("", "{}", "5").join()).toMatch(/empty body/);
  });

  it("never treats tag values as generated", () => {
    const n = new Normaliser(base);
    const rec = `{"tags":{"principalId":"${A}"}}`;
    expect(n.compareBody(rec, `{"tags":{"principalId":"${X}"}}`, "1").join()).toMatch(/expected/);
  });

  it("compares LRO Location by path, api-version and the format of ARM's signing parameters", () => {
    const n = new Normaliser(base);
    const op = rgDeletionOperationId("asotest-rg-qwiiib", "westus2");
    const rec = `https://management.azure.com/subscriptions/${ZERO}/operationresults/${op}?api-version=2020-06-01`;
    const sig = "A".repeat(120);
    const good = `${base}/subscriptions/${ZERO}/operationresults/${op}?api-version=2020-06-01&t=638367434810238821&c=${sig}&s=${sig}&h=${"h".repeat(43)}`;
    expect(n.compareLocation(rec, good, "ok")).toEqual([]);
    expect(n.compareLocation(rec, good.replace("2020-06-01", "2021-04-01"), "v").join()).toMatch(/api-version/);
    expect(n.compareLocation(rec, good.replace(op, rgDeletionOperationId("other", "westus2")), "p").join()).toMatch(
      /path/,
    );
    expect(n.compareLocation(rec, good.replace("t=638367434810238821", "t=yesterday"), "t").join()).toMatch(
      /t=yesterday/,
    );
    expect(n.compareLocation(rec, `${good}&extra=1`, "x").join()).toMatch(/unexpected parameter extra/);
    expect(n.compareLocation(rec, good.replace(base, "https://evil.example"), "o").join()).toMatch(/origin/);
  });

  it("derives ARM's deterministic operation id for a resource group deletion", () => {
    // Both values appear verbatim in the recordings.
    expect(rgDeletionOperationId("asotest-rg-qwiiib", "westus2")).toBe(
      "eyJqb2JJZCI6IlJFU09VUkNFR1JPVVBERUxFVElPTkpPQi1BU09URVNUOjJEUkc6MkRRV0lJSUItV0VTVFVTMiIsImpvYkxvY2F0aW9uIjoid2VzdHVzMiJ9",
    );
    expect(rgDeletionOperationId("asotest-rg-ecobit", "westus2")).toBe(
      "eyJqb2JJZCI6IlJFU09VUkNFR1JPVVBERUxFVElPTkpPQi1BU09URVNUOjJEUkc6MkRFQ09CSVQtV0VTVFVTMiIsImpvYkxvY2F0aW9uIjoid2VzdHVzMiJ9",
    );
  });

  it("compares the header set both ways", () => {
    const n = new Normaliser(base);
    const rec = { "Content-Type": ["application/json; charset=utf-8"], Vary: ["Accept-Encoding"] };
    expect(
      n.compareHeaders(rec, { "content-type": "application/json; charset=utf-8", vary: "Accept-Encoding" }, "ok"),
    ).toEqual([]);
    expect(n.compareHeaders(rec, { "content-type": "application/json; charset=utf-8" }, "m").join()).toMatch(
      /missing header vary/,
    );
    expect(
      n
        .compareHeaders(
          rec,
          { "content-type": "application/json; charset=utf-8", vary: "Accept-Encoding", "content-length": "3" },
          "u",
        )
        .join(),
    ).toMatch(/unexpected header content-length/);
    expect(header({ "X-Ms-Failure-Cause": ["gateway"] }, "x-ms-failure-cause")).toBe("gateway");
  });
});
