/** Unit tests of the pieces under AzureDiscovery: operation ids, error classification, cache, retry budget. */
import { classify, operationOf, RetryBudget, retryAfterMs, TtlCache } from "@berth/azure";
import { describe, expect, it } from "vitest";

const S = "https://management.azure.com/subscriptions/0b9a3c1e-1111-4222-8333-444455556666";

describe("operationOf (metric label / breaker key from method + URL)", () => {
  it.each([
    ["GET", `${S}?api-version=2022-12-01`, "Subscriptions_Get"],
    [
      "GET",
      `${S}/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks?api-version=2025-01-01`,
      "ManagedClusters_Get",
    ],
    [
      "GET",
      `${S}/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-a--b?api-version=2023-01-31`,
      "UserAssignedIdentities_Get",
    ],
    [
      "GET",
      `${S}/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id/federatedIdentityCredentials?api-version=2023-01-31`,
      "FederatedIdentityCredentials_List",
    ],
    [
      "GET",
      `${S}/providers/Microsoft.Authorization/roleDefinitions?$filter=roleName%20eq%20'Reader'`,
      "RoleDefinitions_List",
    ],
    [
      "GET",
      `https://management.azure.com//subscriptions/x/resourceGroups/rg/providers/Microsoft.Authorization/roleAssignments?$filter=x`,
      "RoleAssignments_ListForScope",
    ],
    ["HEAD", `${S}/resourcegroups/rg-a--b?api-version=2025-04-01`, "ResourceGroups_CheckExistence"],
    ["GET", `${S}/resourcegroups?api-version=2025-04-01`, "ResourceGroups_List"],
    ["GET", `${S}/providers/Microsoft.ManagedIdentity?api-version=2025-04-01`, "Providers_Get"],
    [
      "PUT",
      `${S}/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id`,
      "UserAssignedIdentities_CreateOrUpdate",
    ],
    ["POST", "https://login.microsoftonline.com/tenant/oauth2/v2.0/token", "Entra_Token"],
    ["GET", "https://127.0.0.1:1234/tenant/v2.0/.well-known/openid-configuration", "Entra_OpenIdConfiguration"],
    ["GET", "http://169.254.169.254/metadata/identity/oauth2/token?resource=x", "ManagedIdentity_Token"],
    ["GET", "https://example.com/whatever", "Unknown"],
  ])("%s %s → %s", (method, url, op) => {
    expect(operationOf(method, url)).toBe(op);
  });
});

describe("classify", () => {
  const headers = (h: Record<string, string>) => ({ get: (n: string) => h[n.toLowerCase()] });
  const rest = (statusCode: number | undefined, h: Record<string, string> = {}, code?: string) =>
    Object.assign(new Error("x"), { name: "RestError", statusCode, code, response: { headers: headers(h) } });
  it("sorts failures", () => {
    expect(classify(rest(429, { "retry-after": "7" }))).toMatchObject({ kind: "throttled", retryAfterMs: 7000 });
    expect(classify(rest(429))).toEqual({ kind: "throttled", statusCode: 429 });
    expect(classify(rest(503))).toMatchObject({ kind: "transient", statusCode: 503 });
    expect(classify(rest(501)).kind).toBe("permanent");
    expect(classify(rest(408)).kind).toBe("transient");
    expect(classify(rest(404, {}, "ResourceNotFound")).kind).toBe("not-found");
    expect(classify(rest(403)).kind).toBe("permanent");
    expect(classify(rest(undefined, {}, "ECONNRESET"))).toEqual({ kind: "transient", code: "ECONNRESET" });
    expect(classify(Object.assign(new Error("t"), { name: "AbortError" })).kind).toBe("transient");
    expect(classify(Object.assign(new Error("t"), { name: "AuthenticationRequiredError" })).kind).toBe("auth");
    expect(classify(new TypeError("bug")).kind).toBe("permanent");
  });
  it("reads retry-after-ms, x-ms-retry-after-ms, Retry-After seconds and HTTP dates", () => {
    expect(retryAfterMs(headers({ "retry-after-ms": "250" }))).toBe(250);
    expect(retryAfterMs(headers({ "x-ms-retry-after-ms": "1500", "retry-after": "9" }))).toBe(1500);
    expect(retryAfterMs(headers({ "retry-after": "2" }))).toBe(2000);
    expect(retryAfterMs(headers({ "retry-after": new Date(10_000).toUTCString() }), 4_000)).toBe(6_000);
    expect(retryAfterMs(headers({}))).toBeUndefined();
    expect(retryAfterMs(headers({ "retry-after": "soon" }))).toBeUndefined();
  });
});

describe("TtlCache", () => {
  const make = (o: Partial<ConstructorParameters<typeof TtlCache>[0]> = {}) => {
    const clock = { t: 0 };
    const cache = new TtlCache({
      now: () => clock.t,
      maxEntries: 100,
      maxStaleMs: 1_000,
      retryStaleAfterMs: 100,
      ...o,
    });
    return { cache, clock };
  };
  it("serves stale values for at most maxStaleMs after expiry, then throws", async () => {
    const { cache, clock } = make();
    await cache.get("k", "a", async () => ({ value: 1, ttlMs: 10 }));
    const fail = async (): Promise<{ value: number; ttlMs: number }> => {
      throw new Error("down");
    };
    clock.t = 500;
    expect(await cache.get("k", "a", fail)).toBe(1);
    clock.t = 550; // within retryStaleAfterMs: no new load
    let loads = 0;
    expect(await cache.get("k", "a", async () => (loads++, fail()))).toBe(1);
    expect(loads).toBe(0);
    clock.t = 1_011;
    await expect(cache.get("k", "a", fail)).rejects.toThrow("down");
  });
  it("keeps at most maxEntries keys", async () => {
    const { cache } = make({ maxEntries: 3 });
    for (const k of ["a", "b", "c", "d"]) await cache.get("k", k, async () => ({ value: k, ttlMs: 1_000 }));
    expect(cache.size).toBe(3);
    let loaded = false;
    await cache.get("k", "a", async () => ((loaded = true), { value: "a", ttlMs: 1 }));
    expect(loaded).toBe(true); // the oldest went first
  });
});

describe("RetryBudget", () => {
  it("allows min + ratio × requests retries per window", () => {
    const b = new RetryBudget({ budgetRatio: 0.5, budgetMinRetries: 1, budgetWindowMs: 1_000 });
    for (let i = 0; i < 4; i++) b.recordRequest(0);
    let granted = 0;
    while (b.canRetry(10) && granted < 100) {
      b.recordRetry(10);
      granted++;
    }
    expect(granted).toBe(3); // 1 + 0.5 × 4
    expect(b.canRetry(1_011)).toBe(true); // window slid past
  });
});
