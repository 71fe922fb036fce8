/**
 * The real Azure SDK (pinned Node-20 versions) against the fake, in both modes:
 *  - direct: endpoint / authorityHost injected, CA trusted through a pipeline policy;
 *  - proxy: default endpoints, HTTPS_PROXY → the fake's CONNECT proxy (in-process and in a
 *    child process with DefaultAzureCredential and NODE_EXTRA_CA_CERTS).
 */
import { execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { AuthorizationManagementClient } from "@azure/arm-authorization";
import { ContainerServiceClient } from "@azure/arm-containerservice";
import { ManagedServiceIdentityClient } from "@azure/arm-msi";
import { ResourceManagementClient } from "@azure/arm-resources";
import { SubscriptionClient } from "@azure/arm-resources-subscriptions";
import { ClientSecretCredential, WorkloadIdentityCredential } from "@azure/identity";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRawClient } from "./client.js";
import { startFakeAzure, type FakeAzure } from "./server.js";
import { createServiceAccountIssuer, type ServiceAccountIssuer } from "./workload.js";

const execFileP = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const APP_ID = "5d0a2d0e-0b5e-4c43-9a43-1f1f6b7b1001";
const APP_SECRET = "fake-secret-value";
const RG = "rg-platform";
const CLUSTER = "aks-prod";
const ARM = "https://management.azure.com/.default";
/** Fast retries so fault tests stay quick; the retry *count* is the SDK default (3). */
const retryOptions = { retryDelayInMs: 20, maxRetryDelayInMs: 100 };

function claims(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString("utf8")) as Record<string, unknown>;
}

async function rejection(p: Promise<unknown>): Promise<Error & { statusCode?: number; code?: string }> {
  try {
    await p;
  } catch (err) {
    return err as Error & { statusCode?: number; code?: string };
  }
  throw new Error("expected the call to fail");
}

// Ambient proxy settings would change what the direct-mode tests measure.
const savedProxyEnv: Record<string, string | undefined> = {};
for (const k of [
  "HTTPS_PROXY",
  "https_proxy",
  "HTTP_PROXY",
  "http_proxy",
  "ALL_PROXY",
  "all_proxy",
  "NO_PROXY",
  "no_proxy",
]) {
  savedProxyEnv[k] = process.env[k];
  delete process.env[k];
}
afterAll(() => {
  for (const [k, v] of Object.entries(savedProxyEnv))
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
});

describe("direct mode (injected endpoint / authorityHost)", () => {
  let fake: FakeAzure;
  let credential: ClientSecretCredential;
  let msi: ManagedServiceIdentityClient;
  let aks: ContainerServiceClient;
  let authz: AuthorizationManagementClient;
  let rm: ResourceManagementClient;
  let issuer: string;
  let sa: ServiceAccountIssuer;

  beforeAll(async () => {
    fake = await startFakeAzure({
      apps: [{ clientId: APP_ID, clientSecret: APP_SECRET }],
      pageSize: 2,
      lro: { polls: 2, retryAfterSeconds: 0 },
    });
    issuer = fake.seedManagedCluster({ resourceGroup: RG, name: CLUSTER, location: "westeurope" }).issuerURL!;
    sa = await createServiceAccountIssuer(fake, issuer);
    credential = new ClientSecretCredential(
      fake.tenantId,
      APP_ID,
      APP_SECRET,
      fake.credentialOptions({ retryOptions }),
    );
    msi = new ManagedServiceIdentityClient(credential, fake.subscriptionId, fake.armClientOptions({ retryOptions }));
    aks = new ContainerServiceClient(credential, fake.subscriptionId, fake.containerServiceOptions({ retryOptions }));
    authz = new AuthorizationManagementClient(credential, fake.subscriptionId, fake.armClientOptions({ retryOptions }));
    rm = new ResourceManagementClient(credential, fake.subscriptionId, fake.armClientOptions({ retryOptions }));
  });
  afterAll(async () => {
    await fake?.close();
  });

  it("ClientSecretCredential gets a JWT with tid/oid/exp from the fake Entra", async () => {
    const token = await credential.getToken(ARM);
    const c = claims(token.token);
    expect(c.tid).toBe(fake.tenantId);
    expect(c.oid).toBe(fake.entra.apps.get(APP_ID)!.objectId);
    expect(c.aud).toBe("https://management.azure.com/");
    expect(c.appid).toBe(APP_ID);
    expect(token.expiresOnTimestamp).toBeGreaterThan(Date.now() + 3000_000);
    expect(fake.stats.count("Entra_OpenIdConfiguration", 200)).toBe(1);
    expect(fake.stats.count("Entra_Token", 200)).toBe(1);
    // Cached by MSAL: no second token request.
    await credential.getToken(ARM);
    expect(fake.stats.count("Entra_Token")).toBe(1);
  });

  it("ignores an ambient HTTPS_PROXY (the trust policy pins a direct agent)", async () => {
    process.env.HTTPS_PROXY = "http://127.0.0.1:9"; // nothing listens there
    try {
      const cred = new ClientSecretCredential(fake.tenantId, APP_ID, APP_SECRET, fake.credentialOptions());
      const subs = new SubscriptionClient(cred, fake.armClientOptions());
      expect((await subs.subscriptions.get(fake.subscriptionId)).tenantId).toBe(fake.tenantId);
    } finally {
      delete process.env.HTTPS_PROXY;
    }
  });

  it("a wrong client secret fails with AADSTS7000215", async () => {
    const bad = new ClientSecretCredential(fake.tenantId, APP_ID, "nope", fake.credentialOptions());
    const err = await rejection(bad.getToken(ARM));
    expect(err.name).toBe("AuthenticationRequiredError");
    expect(err.message).toContain("AADSTS7000215");
  });

  it("reads the subscription's tenantId", async () => {
    const subs = new SubscriptionClient(credential, fake.armClientOptions());
    const s = await subs.subscriptions.get(fake.subscriptionId);
    expect(s.tenantId).toBe(fake.tenantId);
    expect(s.state).toBe("Enabled");
  });

  it("gets the managed cluster's OIDC issuer URL, and sees it change", async () => {
    const mc = await aks.managedClusters.get(RG, CLUSTER);
    expect(mc.oidcIssuerProfile?.enabled).toBe(true);
    expect(mc.oidcIssuerProfile?.issuerURL).toBe(issuer);
    expect(issuer).toMatch(
      new RegExp(`^https://westeurope\\.oic\\.prod-aks\\.azure\\.com/${fake.tenantId}/[0-9a-f-]{36}/$`),
    );
    expect(mc.securityProfile?.workloadIdentity?.enabled).toBe(true);

    fake.setOidcIssuer({ resourceGroup: RG, name: CLUSTER, enabled: false });
    expect((await aks.managedClusters.get(RG, CLUSTER)).oidcIssuerProfile).toEqual({ enabled: false });
    fake.setOidcIssuer({ resourceGroup: RG, name: CLUSTER, issuerURL: issuer });
    expect((await aks.managedClusters.get(RG, CLUSTER)).oidcIssuerProfile?.issuerURL).toBe(issuer);

    const err = await rejection(aks.managedClusters.get(RG, "missing"));
    expect(err.statusCode).toBe(404);
    expect(err.code).toBe("ResourceNotFound");
  });

  it("creates, gets and lists identities with paging (and counts the calls)", async () => {
    const created = [];
    for (let i = 0; i < 5; i++)
      created.push(
        await msi.userAssignedIdentities.createOrUpdate(RG, `team-a-${i}`, {
          location: "westeurope",
          tags: { team: "a" },
        }),
      );
    for (const id of created) {
      expect(id.clientId).toMatch(GUID);
      expect(id.principalId).toMatch(GUID);
      expect(id.tenantId).toBe(fake.tenantId);
    }
    expect(new Set(created.map((c) => c.clientId)).size).toBe(5);

    const again = await msi.userAssignedIdentities.createOrUpdate(RG, "team-a-0", { location: "westeurope" });
    expect(again.clientId).toBe(created[0]!.clientId);
    expect(again.tags).toEqual({});

    const got = await msi.userAssignedIdentities.get(RG, "TEAM-A-1"); // ids are case-insensitive
    expect(got.principalId).toBe(created[1]!.principalId);
    expect(got.name).toBe("team-a-1");

    const before = fake.stats.count("UserAssignedIdentities_ListByResourceGroup");
    const names: string[] = [];
    for await (const i of msi.userAssignedIdentities.listByResourceGroup(RG)) names.push(i.name!);
    expect(names).toEqual(["team-a-0", "team-a-1", "team-a-2", "team-a-3", "team-a-4"]);
    expect(fake.stats.count("UserAssignedIdentities_ListByResourceGroup") - before).toBe(3); // pages of 2

    const err = await rejection(msi.userAssignedIdentities.get(RG, "nope-nope"));
    expect(err.statusCode).toBe(404);
    expect(err.code).toBe("ResourceNotFound");
    const rgErr = await rejection(msi.userAssignedIdentities.get("rg-missing", "team-a-0"));
    expect(rgErr.code).toBe("ResourceGroupNotFound");
  });

  it("federated identity credentials: CRUD, name rule, limit of 20, concurrent writes", async () => {
    await msi.userAssignedIdentities.createOrUpdate(RG, "fic-host", { location: "westeurope" });
    const fic = { issuer, subject: "system:serviceaccount:team-a:api", audiences: ["api://AzureADTokenExchange"] };
    const created = await msi.federatedIdentityCredentials.createOrUpdate(RG, "fic-host", "team-a-api", fic);
    expect(created).toMatchObject({ name: "team-a-api", ...fic });
    expect((await msi.federatedIdentityCredentials.get(RG, "fic-host", "team-a-api")).subject).toBe(fic.subject);

    const badName = await rejection(msi.federatedIdentityCredentials.createOrUpdate(RG, "fic-host", "-bad", fic));
    expect(badName.statusCode).toBe(400);

    // Concurrent writes on one identity: the second write, sent while the first one holds the
    // identity's write lock, gets the real 409; the first one succeeds.
    fake.arm.opts.ficWriteLatencyMs = 1000;
    const host = [...fake.arm.identities.values()].find((i) => i.name === "fic-host")!;
    const first = msi.federatedIdentityCredentials.createOrUpdate(RG, "fic-host", "c-one", {
      ...fic,
      subject: "system:serviceaccount:x:one",
    });
    while (host.ficWritesInFlight === 0) await new Promise((r) => setTimeout(r, 5));
    const second = await rejection(
      msi.federatedIdentityCredentials.createOrUpdate(RG, "fic-host", "c-two", {
        ...fic,
        subject: "system:serviceaccount:x:two",
      }),
    );
    expect(second.statusCode).toBe(409);
    expect(second.code).toBe("ConcurrentFederatedIdentityCredentialsWritesForSingleManagedIdentity");
    expect((await first).name).toBe("c-one");
    fake.arm.opts.ficWriteLatencyMs = 0;
    // Sequential writes up to the limit of 20, then a 400.
    const existing: string[] = [];
    for await (const f of msi.federatedIdentityCredentials.list(RG, "fic-host")) existing.push(f.name!);
    for (let i = existing.length; i < 20; i++) {
      await msi.federatedIdentityCredentials.createOrUpdate(RG, "fic-host", `fill-${i}`, {
        ...fic,
        subject: `system:serviceaccount:fill:${i}`,
      });
    }
    const over = await rejection(
      msi.federatedIdentityCredentials.createOrUpdate(RG, "fic-host", "one-too-many", {
        ...fic,
        subject: "system:serviceaccount:x:21",
      }),
    );
    expect(over.statusCode).toBe(400);
    expect(over.message).toContain("maximum of 20");
    let count = 0;
    for await (const _ of msi.federatedIdentityCredentials.list(RG, "fic-host")) count++;
    expect(count).toBe(20);

    await msi.federatedIdentityCredentials.delete(RG, "fic-host", "team-a-api");
    const gone = await rejection(msi.federatedIdentityCredentials.get(RG, "fic-host", "team-a-api"));
    expect(gone.statusCode).toBe(404);
    expect(gone.code).toBe("NotFound");
  });

  it("WorkloadIdentityCredential exchanges a service-account token via a federated credential", async () => {
    const id = await msi.userAssignedIdentities.createOrUpdate(RG, "team-b-workload", { location: "westeurope" });
    await msi.federatedIdentityCredentials.createOrUpdate(RG, "team-b-workload", "team-b-sa", {
      issuer,
      subject: "system:serviceaccount:team-b:worker",
      audiences: ["api://AzureADTokenExchange"],
    });
    const tokenFilePath = await sa.tokenFile({ namespace: "team-b", serviceAccount: "worker" });
    const wi = new WorkloadIdentityCredential({
      tenantId: fake.tenantId,
      clientId: id.clientId!,
      tokenFilePath,
      ...fake.credentialOptions(),
    });
    const c = claims((await wi.getToken(ARM)).token);
    expect(c.oid).toBe(id.principalId);
    expect(c.tid).toBe(fake.tenantId);
    expect(c.xms_mirid).toContain("/userAssignedIdentities/team-b-workload");

    // The identity's token works against ARM, and the fake records that call as the identity's, the ones before as the app's.
    const since = Date.now();
    const asWorkload = new SubscriptionClient(wi, fake.armClientOptions());
    expect((await asWorkload.subscriptions.get(fake.subscriptionId)).tenantId).toBe(fake.tenantId);
    expect(fake.stats.actingAs(id.clientId!, since).map((r) => `${r.method} ${r.operation} ${r.status}`)).toEqual([
      "GET Subscriptions_Get 200",
    ]);
    expect(fake.stats.actingAs(APP_ID).map((r) => r.operation)).toContain(
      "FederatedIdentityCredentials_CreateOrUpdate",
    );
    expect(fake.stats.actingAs(APP_ID, since)).toEqual([]);

    const otherFile = await sa.tokenFile({ namespace: "team-b", serviceAccount: "intruder" });
    const other = new WorkloadIdentityCredential({
      tenantId: fake.tenantId,
      clientId: id.clientId!,
      tokenFilePath: otherFile,
      ...fake.credentialOptions(),
    });
    const err = await rejection(other.getToken(ARM));
    expect(err.message).toContain("AADSTS70021");
  });

  it("looks up role definitions by name and manages role assignments", async () => {
    const scope = `/subscriptions/${fake.subscriptionId}/resourceGroups/${RG}`;
    const found: string[] = [];
    for await (const d of authz.roleDefinitions.list(scope, { filter: "roleName eq 'Azure Service Bus Data Owner'" }))
      found.push(d.name!);
    expect(found).toEqual(["090c5cfd-751d-490a-894a-3ce6f1109419"]);
    const contributor = await authz.roleDefinitions.get(scope, "b24988ac-6180-42a0-ab88-20f7382dd24c");
    expect(contributor.roleName).toBe("Contributor");
    expect(contributor.id).toBe(
      `/subscriptions/${fake.subscriptionId}/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c`,
    );

    const id = await msi.userAssignedIdentities.createOrUpdate(RG, "team-c", { location: "westeurope" });
    const params = {
      roleDefinitionId: contributor.id!,
      principalId: id.principalId!,
      principalType: "ServicePrincipal",
    };
    const ra = await authz.roleAssignments.create(scope, "3f2b1c2d-0000-4000-8000-000000000001", params);
    expect(ra.principalId).toBe(id.principalId);
    expect(ra.scope).toBe(scope);

    const dup = await rejection(authz.roleAssignments.create(scope, "3f2b1c2d-0000-4000-8000-000000000002", params));
    expect(dup.statusCode).toBe(409);
    expect(dup.code).toBe("RoleAssignmentExists");

    const ghost = await rejection(
      authz.roleAssignments.create(scope, "3f2b1c2d-0000-4000-8000-000000000003", {
        ...params,
        principalId: "0d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6",
      }),
    );
    expect(ghost.statusCode).toBe(400);
    expect(ghost.code).toBe("PrincipalNotFound");

    const listed: string[] = [];
    for await (const r of authz.roleAssignments.listForScope(scope, { filter: `principalId eq '${id.principalId}'` }))
      listed.push(r.name!);
    expect(listed).toEqual(["3f2b1c2d-0000-4000-8000-000000000001"]);
    expect((await authz.roleAssignments.getById(ra.id!)).roleDefinitionId).toBe(contributor.id);
    expect((await authz.roleDefinitions.getById(contributor.id!)).roleName).toBe("Contributor");

    await authz.roleAssignments.delete(scope, "3f2b1c2d-0000-4000-8000-000000000001");
    const deleted = await rejection(authz.roleAssignments.get(scope, "3f2b1c2d-0000-4000-8000-000000000001"));
    expect(deleted.code).toBe("RoleAssignmentNotFound");
    // Once the first is gone, the same principal/role/scope may be assigned under another name.
    expect((await authz.roleAssignments.create(scope, "3f2b1c2d-0000-4000-8000-000000000002", params)).name).toBe(
      "3f2b1c2d-0000-4000-8000-000000000002",
    );
  });

  it("resource groups: create, list with paging, LRO delete polled to completion", async () => {
    for (const n of ["rg-x1", "rg-x2", "rg-x3"])
      await rm.resourceGroups.createOrUpdate(n, { location: "westeurope", tags: { owner: "berth" } });
    fake.stats.reset();
    const names: string[] = [];
    for await (const g of rm.resourceGroups.list()) names.push(g.name!);
    expect(names).toEqual(expect.arrayContaining([RG, "rg-x1", "rg-x2", "rg-x3"]));
    expect(fake.stats.count("ResourceGroups_List", 200)).toBe(Math.ceil(names.length / 2)); // nextLink paging

    fake.stats.reset();
    await rm.resourceGroups.beginDeleteAndWait("rg-x1", { updateIntervalInMs: 5 });
    expect(fake.stats.statuses("ResourceGroups_Delete")).toEqual([202]);
    expect(fake.stats.statuses("OperationResults_Get")).toEqual([202, 202, 200]); // lro.polls = 2
    const err = await rejection(rm.resourceGroups.get("rg-x1"));
    expect(err.code).toBe("ResourceGroupNotFound");
  });

  it("answers auth and api-version errors like ARM (raw HTTP)", async () => {
    const raw = createRawClient(fake.ca.certPem);
    try {
      const path = `${fake.url}/subscriptions/${fake.subscriptionId}/resourceGroups/${RG}`;
      const noToken = await raw.send(`${path}?api-version=2021-04-01`);
      expect(noToken.status).toBe(401);
      expect(JSON.parse(noToken.body)).toEqual({
        error: {
          code: "AuthenticationFailed",
          message: "Authentication failed. The 'Authorization' header is missing.",
        },
      });
      expect(noToken.headers["www-authenticate"]).toMatch(
        /^Bearer authorization_uri="https:\/\/login\.windows\.net\/[0-9a-f-]+", error="invalid_token"/,
      );

      const garbage = await raw.send(`${path}?api-version=2021-04-01`, {
        headers: { Authorization: "Bearer abc.def.ghi" },
      });
      expect(JSON.parse(garbage.body).error.code).toBe("InvalidAuthenticationToken");

      const expired = await fake.issueToken({ expiresInSeconds: -60 });
      const exp = await raw.send(`${path}?api-version=2021-04-01`, { headers: { Authorization: `Bearer ${expired}` } });
      expect(exp.status).toBe(401);
      expect(JSON.parse(exp.body).error.code).toBe("ExpiredAuthenticationToken");

      const wrongAud = await fake.issueToken({ audience: "https://vault.azure.net" });
      expect(
        JSON.parse(
          (await raw.send(`${path}?api-version=2021-04-01`, { headers: { Authorization: `Bearer ${wrongAud}` } })).body,
        ).error.code,
      ).toBe("InvalidAuthenticationTokenAudience");

      const otherTenant = await fake.issueToken({ tenantId: "72f988bf-86f1-41af-91ab-2d7cd011db47" });
      expect(
        JSON.parse(
          (await raw.send(`${path}?api-version=2021-04-01`, { headers: { Authorization: `Bearer ${otherTenant}` } }))
            .body,
        ).error.code,
      ).toBe("InvalidAuthenticationTokenTenant");

      const token = await fake.issueToken();
      const auth = { Authorization: `Bearer ${token}` };
      const noVersion = await raw.send(path, { headers: auth });
      expect(noVersion.status).toBe(400);
      expect(JSON.parse(noVersion.body).error.code).toBe("MissingApiVersionParameter");
      const badVersion = await raw.send(`${path}?api-version=2099-01-01`, { headers: auth });
      expect(JSON.parse(badVersion.body).error.code).toBe("InvalidApiVersionParameter");

      const ok = await raw.send(
        `${path.toUpperCase().replace(fake.url.toUpperCase(), fake.url)}?api-version=2021-04-01`,
        { headers: auth },
      );
      expect(ok.status).toBe(200);
      expect(JSON.parse(ok.body).name).toBe(RG);
      expect(ok.headers["x-ms-request-id"]).toMatch(GUID);
      expect(ok.headers["x-ms-correlation-request-id"]).toMatch(GUID);
      expect(Number(ok.headers["x-ms-ratelimit-remaining-subscription-reads"])).toBeGreaterThan(0);

      // The control route adds faults too (for child processes / other languages).
      const ctl = await raw.send(`${fake.url}/__fake/faults`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({
          match: { operation: "ResourceGroups_Get" },
          times: 1,
          action: { type: "status", status: 503 },
        }),
      });
      expect(ctl.status).toBe(201);
      expect((await raw.send(`${path}?api-version=2021-04-01`, { headers: auth })).status).toBe(503);
      expect((await raw.send(`${path}?api-version=2021-04-01`, { headers: auth })).status).toBe(200);
    } finally {
      raw.close();
    }
  });

  describe("fault injection and the SDK's retry behaviour", () => {
    beforeAll(async () => {
      await aks.managedClusters.get(RG, CLUSTER); // token cached before we count
    });

    const run = async <T>(fn: () => Promise<T>) => {
      fake.stats.reset();
      const started = Date.now();
      try {
        return { value: await fn(), ms: Date.now() - started, statuses: fake.stats.statuses("ManagedClusters_Get") };
      } finally {
        fake.faults.clear();
      }
    };

    it("429 with Retry-After: the SDK waits that long and retries", async () => {
      fake.faults.throttle({ operation: "ManagedClusters_Get" }, { retryAfterSeconds: 1, times: 1 });
      const r = await run(() => aks.managedClusters.get(RG, CLUSTER));
      expect(r.statuses).toEqual([429, 200]);
      expect(r.ms).toBeGreaterThanOrEqual(950);
      expect(r.value.oidcIssuerProfile?.issuerURL).toBe(issuer);
    });

    it("bare 429 (no Retry-After): not retried, the caller gets the 429", async () => {
      fake.faults.throttle({ operation: "ManagedClusters_Get" }, { retryAfterSeconds: null, times: 1 });
      fake.stats.reset();
      const err = await rejection(aks.managedClusters.get(RG, CLUSTER));
      expect(err.statusCode).toBe(429);
      expect(err.code).toBe("SubscriptionRequestsThrottled");
      expect(fake.stats.statuses("ManagedClusters_Get")).toEqual([429]);
      fake.faults.clear();

      // Same for the core-client based clients (arm-msi).
      fake.faults.throttle({ operation: "UserAssignedIdentities_Get" }, { retryAfterSeconds: null, times: 1 });
      fake.stats.reset();
      expect((await rejection(msi.userAssignedIdentities.get(RG, "team-a-0"))).statusCode).toBe(429);
      expect(fake.stats.statuses("UserAssignedIdentities_Get")).toEqual([429]);
      fake.faults.clear();
    });

    it("5xx burst: retried until it recovers; a persistent 5xx costs 1 + 3 retries", async () => {
      fake.faults.serverError({ operation: "ManagedClusters_Get" }, { status: 503, times: 2 });
      expect((await run(() => aks.managedClusters.get(RG, CLUSTER))).statuses).toEqual([503, 503, 200]);

      fake.faults.serverError({ operation: "ManagedClusters_Get" }, { status: 500 });
      fake.stats.reset();
      const err = await rejection(aks.managedClusters.get(RG, CLUSTER));
      fake.faults.clear();
      expect(err.statusCode).toBe(500);
      expect(fake.stats.statuses("ManagedClusters_Get")).toEqual([500, 500, 500, 500]);
    });

    it("connection reset: retried", async () => {
      fake.faults.reset({ operation: "ManagedClusters_Get" }, { times: 1 });
      expect((await run(() => aks.managedClusters.get(RG, CLUSTER))).statuses).toEqual(["reset", 200]);
      fake.faults.reset({ operation: "UserAssignedIdentities_Get" }, { times: 2 });
      fake.stats.reset();
      expect((await msi.userAssignedIdentities.get(RG, "team-a-0")).name).toBe("team-a-0");
      expect(fake.stats.statuses("UserAssignedIdentities_Get")).toEqual(["reset", "reset", 200]);
      fake.faults.clear();
    });

    it("slow answers: the SDK has no default timeout, an abort signal is the caller's job", async () => {
      fake.faults.delay({ operation: "ManagedClusters_Get" }, 300, { times: 1 });
      const slow = await run(() => aks.managedClusters.get(RG, CLUSTER));
      expect(slow.ms).toBeGreaterThanOrEqual(290);
      expect(slow.statuses).toEqual([200]);

      fake.faults.delay({ operation: "ManagedClusters_Get" }, 2000, { times: 1 });
      fake.stats.reset();
      const err = await rejection(aks.managedClusters.get(RG, CLUSTER, { abortSignal: AbortSignal.timeout(150) }));
      fake.faults.clear();
      expect(err.name).toBe("AbortError");
      await new Promise((r) => setTimeout(r, 50));
      expect(fake.stats.statuses("ManagedClusters_Get")).toEqual(["aborted"]);
    });

    it("token endpoint failures: a 5xx is retried; persistent failure, then MSAL refuses locally", async () => {
      const cred = new ClientSecretCredential(
        fake.tenantId,
        APP_ID,
        APP_SECRET,
        fake.credentialOptions({ retryOptions }),
      );
      fake.faults.tokenEndpoint({ status: 503, times: 1 });
      fake.stats.reset();
      await cred.getToken(ARM);
      fake.faults.clear();
      expect(fake.stats.statuses("Entra_Token")).toEqual([503, 200]);

      const cred2 = new ClientSecretCredential(
        fake.tenantId,
        APP_ID,
        APP_SECRET,
        fake.credentialOptions({ retryOptions }),
      );
      fake.faults.tokenEndpoint({ status: 500 });
      fake.stats.reset();
      const err = await rejection(cred2.getToken(ARM));
      fake.faults.clear();
      expect(err.name).toBe("AuthenticationRequiredError");
      expect(err.message).toContain("AADSTS90033");
      expect(fake.stats.statuses("Entra_Token")).toEqual([500, 500, 500, 500]);
      // The endpoint has recovered, but MSAL's throttling cache answers from memory (60 s).
      fake.stats.reset();
      await expect(cred2.getToken(ARM)).rejects.toThrow(/AADSTS90033/);
      expect(fake.stats.count("Entra_Token")).toBe(0);
    });
  });
});

describe("proxy mode (default endpoints through HTTPS_PROXY)", () => {
  let fake: FakeAzure;
  let sa: ServiceAccountIssuer;
  const child = async (task: Record<string, unknown>, env: Record<string, string>) => {
    const { stdout } = await execFileP(process.execPath, [join(here, "fixtures", "proxy-child.mjs")], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "/tmp",
        ...env,
        FAKE_TASK: JSON.stringify({ fakeUrl: fake.url, ...task }),
      },
      timeout: 30_000,
    });
    return JSON.parse(stdout.trim().split("\n").pop()!) as Record<string, unknown>;
  };

  beforeAll(async () => {
    fake = await startFakeAzure({ apps: [{ clientId: APP_ID, clientSecret: APP_SECRET }], proxy: true });
    const { issuerURL } = fake.seedManagedCluster({ resourceGroup: RG, name: CLUSTER });
    sa = await createServiceAccountIssuer(fake, issuerURL!);
  });
  afterAll(async () => {
    await fake?.close();
  });

  it("in-process: HTTPS_PROXY set before the clients are built; only the CA is passed", async () => {
    process.env.HTTPS_PROXY = fake.proxyUrl!;
    try {
      const opts = { additionalPolicies: [fake.proxyTrustPolicy] };
      const cred = new ClientSecretCredential(fake.tenantId, APP_ID, APP_SECRET, opts);
      const aks = new ContainerServiceClient(cred, fake.subscriptionId, opts);
      expect((await aks.managedClusters.get(RG, CLUSTER)).oidcIssuerProfile?.issuerURL).toBe(sa.issuer);
      const msi = new ManagedServiceIdentityClient(cred, fake.subscriptionId, opts);
      expect(
        (await msi.userAssignedIdentities.createOrUpdate(RG, "via-proxy", { location: "westus2" })).clientId,
      ).toMatch(GUID);
    } finally {
      delete process.env.HTTPS_PROXY;
    }
    const byTarget = fake.proxy!.countByTarget();
    expect(byTarget["login.microsoftonline.com:443"]).toBeGreaterThanOrEqual(1);
    expect(byTarget["management.azure.com:443"]).toBeGreaterThanOrEqual(1);
    expect(
      fake.stats.requests.every((r) => r.host === "login.microsoftonline.com" || r.host === "management.azure.com"),
    ).toBe(true);
    // MSAL knows login.microsoftonline.com's metadata: no discovery request, just the token.
    expect(fake.stats.count("Entra_OpenIdConfiguration")).toBe(0);
  });

  it("child process: DefaultAzureCredential with AZURE_CLIENT_SECRET, all defaults", async () => {
    const out = await child(
      {
        mode: "default-chain",
        subscriptionId: fake.subscriptionId,
        resourceGroup: RG,
        cluster: CLUSTER,
        identity: "child-secret",
      },
      { ...fake.proxyEnv(), AZURE_TENANT_ID: fake.tenantId, AZURE_CLIENT_ID: APP_ID, AZURE_CLIENT_SECRET: APP_SECRET },
    );
    expect(out.error).toBeUndefined();
    expect(out).toMatchObject({
      ok: true,
      token: {
        tid: fake.tenantId,
        oid: fake.entra.apps.get(APP_ID)!.objectId,
        aud: "https://management.azure.com/",
        appid: APP_ID,
      },
      subscriptionTenantId: fake.tenantId,
      issuerURL: sa.issuer,
      identity: { tenantId: fake.tenantId },
      readerRoleIds: ["acdd72a7-3d41-4ff1-9a1f-6bef14e3d45c"],
    });
    expect(fake.arm.identities.size).toBeGreaterThan(0);
  });

  it("child process: DefaultAzureCredential with AZURE_FEDERATED_TOKEN_FILE (workload identity)", async () => {
    const msiIdentity = await (async () => {
      // Set up the identity + federated credential in-process (direct mode).
      const cred = new ClientSecretCredential(fake.tenantId, APP_ID, APP_SECRET, fake.credentialOptions());
      const msi = new ManagedServiceIdentityClient(cred, fake.subscriptionId, fake.armClientOptions());
      const id = await msi.userAssignedIdentities.createOrUpdate(RG, "berth-controller", { location: "westus2" });
      await msi.federatedIdentityCredentials.createOrUpdate(RG, "berth-controller", "berth-system", {
        issuer: sa.issuer,
        subject: "system:serviceaccount:berth-system:berth",
        audiences: ["api://AzureADTokenExchange"],
      });
      return id;
    })();
    const tokenFile = await sa.tokenFile({ namespace: "berth-system", serviceAccount: "berth" });
    const out = await child(
      {
        mode: "default-chain",
        subscriptionId: fake.subscriptionId,
        resourceGroup: RG,
        cluster: CLUSTER,
        identity: "child-wi",
      },
      {
        ...fake.proxyEnv(),
        AZURE_TENANT_ID: fake.tenantId,
        AZURE_CLIENT_ID: msiIdentity.clientId!,
        AZURE_FEDERATED_TOKEN_FILE: tokenFile,
      },
    );
    expect(out.error).toBeUndefined();
    expect(out).toMatchObject({
      ok: true,
      token: { tid: fake.tenantId, oid: msiIdentity.principalId },
      issuerURL: sa.issuer,
    });
  });

  it("child process: HTTPS_PROXY is read when a client is built, NO_PROXY once per process", async () => {
    const token = await fake.issueToken();
    const out = await child(
      { mode: "env-timing", subscriptionId: fake.subscriptionId, token, proxyUrl: fake.proxyUrl },
      { NODE_EXTRA_CA_CERTS: fake.caFile },
    );
    expect(out.error).toBeUndefined();
    expect(out).toMatchObject({
      ok: true,
      beforeEnv: 0, // no proxy in the environment: direct
      oldClientAfterEnv: 0, // env changed, but the client kept the settings it was built with
      newClientAfterEnv: 1, // a client built after the change uses the proxy
      newClientAfterNoProxy: 2, // NO_PROXY was loaded with the first client: later changes ignored
    });
  });

  it("child process: NO_PROXY present at start bypasses the proxy for its hosts only", async () => {
    const token = await fake.issueToken();
    const before = fake.proxy!.countByTarget()[`127.0.0.1:${fake.port}`] ?? 0;
    const out = await child(
      { mode: "no-proxy-at-start", subscriptionId: fake.subscriptionId, token },
      { ...fake.proxyEnv(), NO_PROXY: "127.0.0.1" },
    );
    expect(out.error).toBeUndefined();
    expect(out.viaProxyFor127).toBe(before);
    expect(out.defaultEndpointTenant).toBe(fake.tenantId);
    expect(out.viaProxyForArm).toBeGreaterThanOrEqual(1);
  });
});
