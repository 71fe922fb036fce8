/**
 * What the fake answers beyond the SDK calls, for Azure Service Operator in the loop (tests/flux/aso.test.ts):
 * Entra's instance discovery (MSAL for Go validates a custom authority host with it), Entra ID's replication delay
 * (PrincipalNotFound), a permission the caller lacks (AuthorizationFailed), and requests it has no answer for,
 * which must fail the test that caused them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRawClient } from "./client.js";
import { startFakeAzure, type FakeAzure } from "./index.js";

const CONTRIBUTOR = "b24988ac-6180-42a0-ab88-20f7382dd24c";

describe("the fake Azure, as ASO meets it", () => {
  let fake: FakeAzure;
  let client: ReturnType<typeof createRawClient>;
  const platform = {
    clientId: "33333333-3333-4333-8333-333333333333",
    objectId: "44444444-4444-4444-8444-444444444444",
  };
  let sub: string;

  beforeAll(async () => {
    fake = await startFakeAzure({
      apps: [{ clientId: platform.clientId, objectId: platform.objectId, clientSecret: "s3cret" }],
    });
    client = createRawClient(fake.ca.certPem);
    sub = fake.subscriptionId;
  });
  afterAll(async () => {
    client?.close();
    await fake?.close();
  });

  /** What these tests read of an ARM answer: a resource's properties, or ARM's error. */
  interface ArmBody {
    properties?: { principalId: string };
    error?: { code: string; message: string };
  }
  const arm = async (method: string, path: string, body?: unknown, caller = platform) => {
    const token = await fake.issueToken({ oid: caller.objectId, appId: caller.clientId });
    const res = await client.send(`${fake.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: res.body ? (JSON.parse(res.body) as ArmBody) : undefined };
  };
  const identity = async (rg: string, name: string) => {
    const { status, json } = await arm(
      "PUT",
      `/subscriptions/${sub}/resourceGroups/${rg}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/${name}?api-version=2023-01-31`,
      { location: "westeurope" },
    );
    if (!json?.properties) throw new Error(`creating identity ${name} in ${rg} answered ${status} without properties`);
    return json.properties;
  };
  const assign = (rg: string, name: string, principalId: string, caller = platform) =>
    arm(
      "PUT",
      `/subscriptions/${sub}/resourceGroups/${rg}/providers/Microsoft.Authorization/roleAssignments/${name}?api-version=2022-04-01`,
      {
        properties: {
          roleDefinitionId: `/subscriptions/${sub}/providers/Microsoft.Authorization/roleDefinitions/${CONTRIBUTOR}`,
          principalId,
          principalType: "ServicePrincipal",
        },
      },
      caller,
    );

  it("instance discovery: the tenant discovery endpoint on the authority's own host; an unknown host is invalid_instance", async () => {
    const own = new URL(fake.url).host;
    const discover = (authority: string) =>
      client.send(
        `${fake.url}/common/discovery/instance?api-version=1.1&authorization_endpoint=${encodeURIComponent(`${authority}/${fake.tenantId}/oauth2/v2.0/authorize`)}`,
      );
    const known = await discover(`https://${own}`);
    expect(known.status).toBe(200);
    expect(JSON.parse(known.body).tenant_discovery_endpoint).toBe(
      `https://${own}/${fake.tenantId}/v2.0/.well-known/openid-configuration`,
    );
    const unknown = await discover("https://login.example.org");
    expect(unknown.status).toBe(400);
    expect(JSON.parse(unknown.body)).toMatchObject({ error: "invalid_instance", error_codes: [50049] });
  });

  it("PrincipalNotFound for a new identity's principal until it has replicated", async () => {
    await arm("PUT", `/subscriptions/${sub}/resourceGroups/rg-replication?api-version=2020-06-01`, {
      location: "westeurope",
    });
    fake.arm.opts.principalReplicationMs = 3_600_000;
    const { principalId } = await identity("rg-replication", "id-new");
    const refused = await assign("rg-replication", "0b9a3c1e-0000-4000-8000-000000000001", principalId);
    expect(refused.status).toBe(400);
    expect(refused.json?.error?.code).toBe("PrincipalNotFound");
    expect(refused.json?.error?.message).toContain("replication delay");
    fake.arm.opts.principalReplicationMs = 0; // replicated
    expect((await assign("rg-replication", "0b9a3c1e-0000-4000-8000-000000000001", principalId)).status).toBe(201);
  });

  it("AuthorizationFailed (403, ARM's message) for a withheld permission, at and below its scope only, until restored", async () => {
    await arm("PUT", `/subscriptions/${sub}/resourceGroups/rg-denied?api-version=2020-06-01`, {
      location: "westeurope",
    });
    await arm("PUT", `/subscriptions/${sub}/resourceGroups/rg-allowed?api-version=2020-06-01`, {
      location: "westeurope",
    });
    const { principalId } = await identity("rg-denied", "id-denied");
    const restore = fake.arm.withhold({
      principal: platform.clientId,
      action: "Microsoft.Authorization/roleAssignments/write",
      scope: `/subscriptions/${sub}/resourceGroups/RG-DENIED`,
    });
    const denied = await assign("rg-denied", "0b9a3c1e-0000-4000-8000-000000000002", principalId);
    expect(denied.status).toBe(403);
    expect(denied.json?.error).toEqual({
      code: "AuthorizationFailed",
      message: `The client '${platform.clientId}' with object id '${platform.objectId}' does not have authorization to perform action 'Microsoft.Authorization/roleAssignments/write' over scope '/subscriptions/${sub}/resourceGroups/rg-denied/providers/Microsoft.Authorization/roleAssignments/0b9a3c1e-0000-4000-8000-000000000002' or the scope is invalid. If access was recently granted, please refresh your credentials.`,
    });
    // Another scope, another action, another caller: allowed.
    expect((await assign("rg-allowed", "0b9a3c1e-0000-4000-8000-000000000003", principalId)).status).toBe(201);
    const second = await identity("rg-denied", "id-other");
    const other = {
      clientId: "55555555-5555-4555-8555-555555555555",
      objectId: "66666666-6666-4666-8666-666666666666",
    };
    expect((await assign("rg-denied", "0b9a3c1e-0000-4000-8000-000000000004", principalId, other)).status).toBe(201);
    restore();
    expect((await assign("rg-denied", "0b9a3c1e-0000-4000-8000-000000000002", second.principalId)).status).toBe(201);
  });

  it("records a request it has no answer for, and assertAllAnswered names it", async () => {
    expect(() => fake.stats.assertAllAnswered()).not.toThrow();
    const res = await arm(
      "GET",
      `/subscriptions/${sub}/providers/Microsoft.Storage/storageAccounts?api-version=2023-01-01`,
    );
    expect(res.status).toBe(404);
    expect(fake.stats.unknown().map((r) => r.path)).toEqual([
      `/subscriptions/${sub}/providers/Microsoft.Storage/storageAccounts`,
    ]);
    expect(() => fake.stats.assertAllAnswered()).toThrow(
      /no answer for 1 request\(s\):\n {2}GET .*Microsoft\.Storage\/storageAccounts\?api-version=2023-01-01 \(Unknown\)/,
    );
  });

  it("keeps a record of every token it issued and how the client proved itself", async () => {
    const res = await client.send(`${fake.url}/${fake.tenantId}/oauth2/v2.0/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "client_credentials",
        client_id: platform.clientId,
        client_secret: "s3cret",
        scope: "https://management.core.windows.net//.default",
      }).toString(),
    });
    expect(res.status).toBe(200);
    expect(fake.entra.issued.at(-1)).toMatchObject({
      clientId: platform.clientId,
      tenantId: fake.tenantId,
      audience: "https://management.core.windows.net/",
    });
    expect(fake.entra.issued.at(-1)!.assertion).toBeUndefined();
  });
});
