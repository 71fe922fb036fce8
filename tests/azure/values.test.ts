/**
 * AzureDiscovery against the fake Azure in direct mode (injected endpoint, real SDK, no mocks):
 * the values, the cache (coalescing, TTLs, negative answers), and the request metric.
 */
import { DEFAULT_TTLS, TOKEN_EXCHANGE_AUDIENCE } from "@berth/azure";
import { azureNames, ValueUnavailableError } from "@berth/core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { BUILT_IN_ROLES } from "../fake-azure/index.js";
import { CLUSTER_NAME, CLUSTER_RG, cluster, createTeamIdentity, discoveryFor, GUID, rejection, startWorld, type World } from "./support.js";

let world: World;
beforeAll(async () => {
  world = await startWorld({ teams: ["alpha", "beta"] });
});
afterAll(async () => {
  await world?.close();
});
beforeEach(() => {
  world.fake.stats.reset();
  world.fake.faults.clear();
});

describe("values (injected-endpoint mode)", () => {
  it("clusterFacts: tenant, subscription, OIDC issuer URL and location of the managed cluster", async () => {
    const { discovery } = discoveryFor(world);
    const facts = await discovery.clusterFacts(cluster());
    expect(facts).toEqual({ tenantId: world.fake.tenantId, subscriptionId: world.fake.subscriptionId, oidcIssuerUrl: world.issuer, location: "westeurope" });
    expect(facts.oidcIssuerUrl).toMatch(/^https:\/\/westeurope\.oic\.prod-aks\.azure\.com\//);
    expect(world.fake.stats.count("ManagedClusters_Get", 200)).toBe(1);
    expect(world.fake.stats.count("Subscriptions_Get", 200)).toBe(1);
  });

  it("clusterFacts: a configured location wins over the cluster's", async () => {
    const { fake } = world;
    const { discovery } = discoveryFor(world, {
      clusters: {
        [CLUSTER_NAME]: {
          subscriptionId: fake.subscriptionId,
          resourceGroup: CLUSTER_RG,
          managedClusterName: CLUSTER_NAME,
          location: "northeurope",
          platformIdentity: { resourceGroup: "rg-platform", name: "id-berth-aso" },
        },
      },
    });
    expect((await discovery.clusterFacts(cluster())).location).toBe("northeurope");
  });

  it("platformCredential: the platform identity's clientId with tenant and subscription", async () => {
    const { discovery } = discoveryFor(world);
    expect(await discovery.platformCredential(cluster())).toEqual({
      tenantId: world.fake.tenantId,
      subscriptionId: world.fake.subscriptionId,
      clientId: world.platformIdentity.clientId,
    });
    expect(world.fake.stats.requests.filter((r) => r.operation === "UserAssignedIdentities_Get").map((r) => r.path)).toEqual([
      `/subscriptions/${world.fake.subscriptionId}/resourceGroups/rg-platform/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-berth-aso`,
    ]);
  });

  it("teamIdentity: id-<team>--<cluster> in rg-<team>--<cluster>; undefined when it does not exist", async () => {
    const { discovery } = discoveryFor(world);
    const alpha = await discovery.teamIdentity("alpha", cluster());
    expect(alpha).toEqual(world.teams.get("alpha"));
    expect(alpha!.clientId).toMatch(GUID);
    expect(alpha!.tenantId).toBe(world.fake.tenantId);
    expect(world.fake.stats.requests.at(-1)!.path).toContain("/resourceGroups/rg-alpha--aks-prod/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-alpha--aks-prod");
    expect(await discovery.teamIdentity("ghost", cluster())).toBeUndefined(); // resource group missing
    world.fake.seedResourceGroup({ name: azureNames("ghost2", CLUSTER_NAME).resourceGroup });
    expect(await discovery.teamIdentity("ghost2", cluster())).toBeUndefined(); // identity missing
    await expect(discovery.teamIdentity("Bad--Name", cluster())).rejects.toThrow(/invalid team name/);
  });

  it("an unconfigured cluster, a missing cluster or a disabled OIDC issuer → ValueUnavailableError, never an empty value", async () => {
    const { fake } = world;
    const { discovery } = discoveryFor(world, {
      clusters: {
        missing: { subscriptionId: fake.subscriptionId, resourceGroup: CLUSTER_RG, managedClusterName: "nope", platformIdentity: { resourceGroup: "rg-platform", name: "nope" } },
        [CLUSTER_NAME]: { subscriptionId: fake.subscriptionId, resourceGroup: CLUSTER_RG, managedClusterName: CLUSTER_NAME, platformIdentity: { resourceGroup: "rg-platform", name: "id-berth-aso" } },
        "no-oidc": { subscriptionId: fake.subscriptionId, resourceGroup: "rg-legacy", managedClusterName: "aks-legacy", platformIdentity: { resourceGroup: "rg-platform", name: "id-berth-aso" } },
      },
    });
    fake.seedManagedCluster({ resourceGroup: "rg-legacy", name: "aks-legacy", oidcIssuerEnabled: false });
    const unconfigured = await rejection(discovery.clusterFacts(cluster("other")));
    expect(unconfigured).toBeInstanceOf(ValueUnavailableError);
    const missing = await rejection(discovery.clusterFacts(cluster("missing")));
    expect(missing).toBeInstanceOf(ValueUnavailableError);
    expect(missing.message).toMatch(/not found/);
    const noPlatformId = await rejection(discovery.platformCredential(cluster("missing")));
    expect(noPlatformId).toBeInstanceOf(ValueUnavailableError);
    const noOidc = await rejection(discovery.clusterFacts(cluster("no-oidc")));
    expect(noOidc).toBeInstanceOf(ValueUnavailableError);
    expect(noOidc.message).toMatch(/OIDC issuer/);
  });

  it("resourceGroupExists, federatedCredentials and checkFederatedCredentials (drift)", async () => {
    const { discovery } = discoveryFor(world);
    const { msi } = world;
    expect(await discovery.resourceGroupExists("alpha", cluster())).toBe(true);
    expect(await discovery.resourceGroupExists("nobody", cluster())).toBe(false);

    const n = azureNames("beta", CLUSTER_NAME);
    const fic = (subject: string, issuer = world.issuer) => ({ issuer, subject, audiences: [TOKEN_EXCHANGE_AUDIENCE] });
    await msi.federatedIdentityCredentials.createOrUpdate(n.resourceGroup, n.identity, "aso-controller", fic("system:serviceaccount:azureserviceoperator-system:azureserviceoperator-default"));
    await msi.federatedIdentityCredentials.createOrUpdate(n.resourceGroup, n.identity, "workload", fic("system:serviceaccount:beta:workload", "https://old.issuer.example/"));
    await msi.federatedIdentityCredentials.createOrUpdate(n.resourceGroup, n.identity, "stray", fic("system:serviceaccount:beta:stray"));

    const list = await discovery.federatedCredentials("beta", cluster());
    expect(list?.map((f) => f.name).sort()).toEqual(["aso-controller", "stray", "workload"]);
    expect(list?.find((f) => f.name === "aso-controller")).toEqual({
      name: "aso-controller",
      issuer: world.issuer,
      subject: "system:serviceaccount:azureserviceoperator-system:azureserviceoperator-default",
      audiences: [TOKEN_EXCHANGE_AUDIENCE],
    });
    const mismatches = await discovery.checkFederatedCredentials("beta", cluster(), {
      issuer: world.issuer,
      subjects: ["system:serviceaccount:azureserviceoperator-system:azureserviceoperator-default", "system:serviceaccount:beta:workload", "system:serviceaccount:beta:aso-workload"],
    });
    expect(mismatches).toEqual(
      expect.arrayContaining([
        { kind: "issuer", name: "workload", subject: "system:serviceaccount:beta:workload", expected: world.issuer, actual: "https://old.issuer.example/" },
        { kind: "missing", subject: "system:serviceaccount:beta:aso-workload" },
        { kind: "unexpected", name: "stray", subject: "system:serviceaccount:beta:stray", issuer: world.issuer },
      ]),
    );
    expect(mismatches).toHaveLength(3);
    // The check used the cached list: one List call for both.
    expect(world.fake.stats.count("FederatedIdentityCredentials_List")).toBe(1);
    expect(await discovery.federatedCredentials("nobody", cluster())).toBeUndefined();
    expect(await discovery.checkFederatedCredentials("nobody", cluster(), { issuer: world.issuer, subjects: ["x"] })).toEqual([
      { kind: "identity-missing", identity: "id-nobody--aks-prod" },
    ]);
  });

  it("resolveRoleDefinition (roleName filter) and roleAssignmentsFor", async () => {
    const { discovery } = discoveryFor(world);
    const sub = world.fake.subscriptionId;
    const reader = await discovery.resolveRoleDefinition(sub, "Reader");
    expect(reader).toBe(`/subscriptions/${sub}/providers/Microsoft.Authorization/roleDefinitions/${BUILT_IN_ROLES.find((r) => r.roleName === "Reader")!.id}`);
    expect(await discovery.resolveRoleDefinition(sub, "Azure Service Bus Data Owner")).toMatch(/090c5cfd-751d-490a-894a-3ce6f1109419$/);
    expect(await discovery.resolveRoleDefinition(sub, "No Such Role")).toBeUndefined();
    expect(await discovery.resolveRoleDefinition(sub, "O'Brien's role")).toBeUndefined(); // quotes are escaped, not a 400
    const listCalls = world.fake.stats.requests.filter((r) => r.operation === "RoleDefinitions_List");
    expect(decodeURIComponent(listCalls[0]!.query)).toContain("$filter=roleName eq 'Reader'");
    await discovery.resolveRoleDefinition(sub, "Reader");
    expect(world.fake.stats.count("RoleDefinitions_List")).toBe(4); // the repeat came from the cache

    const alpha = world.teams.get("alpha")!;
    const scope = `/subscriptions/${sub}/resourceGroups/${azureNames("alpha", CLUSTER_NAME).resourceGroup}`;
    expect(await discovery.roleAssignmentsFor(alpha.principalId, scope)).toEqual([]);
    await world.authz.roleAssignments.create(scope.slice(1), "6f0c3f4e-1111-4a2b-9c3d-000000000001", { roleDefinitionId: reader!, principalId: alpha.principalId });
    discovery.invalidate("ra");
    const assignments = await discovery.roleAssignmentsFor(alpha.principalId, scope);
    expect(assignments).toHaveLength(1);
    expect(assignments[0]).toMatchObject({ name: "6f0c3f4e-1111-4a2b-9c3d-000000000001", roleDefinitionId: reader, principalId: alpha.principalId });
    expect(assignments[0]!.scope.toLowerCase()).toBe(scope.toLowerCase());
    await expect(discovery.roleAssignmentsFor("not-a-guid", scope)).rejects.toThrow(/GUID/);
  });

  it("counts every ARM and Entra request in berth_arm_requests_total{operation,code}, with a duration histogram", async () => {
    const { discovery, counted, registry } = discoveryFor(world);
    await discovery.clusterFacts(cluster());
    await discovery.platformCredential(cluster());
    await discovery.teamIdentity("nobody", cluster());
    const s = world.fake.stats;
    expect(await counted("ManagedClusters_Get", "200")).toBe(s.count("ManagedClusters_Get", 200));
    expect(await counted("Subscriptions_Get", "200")).toBe(1);
    expect(await counted("UserAssignedIdentities_Get", "200")).toBe(1);
    expect(await counted("UserAssignedIdentities_Get", "404")).toBe(1);
    expect(await counted("Entra_Token", "200")).toBe(s.count("Entra_Token", 200));
    expect(await counted("Entra_Token")).toBeGreaterThanOrEqual(1);
    // Every request the fake saw was counted, under the fake's own operation id.
    for (const [op, byStatus] of Object.entries(s.byOperation())) {
      for (const [status, n] of Object.entries(byStatus)) expect(await counted(op, status), `${op} ${status}`).toBe(n);
    }
    const text = await registry.metrics();
    expect(text).toContain('berth_arm_request_duration_seconds_count{operation="ManagedClusters_Get",code="200"} 1');
    expect(text).toMatch(/berth_azure_discovery_cache_total\{kind="cluster",result="miss"\} 1/);
  });
});

describe("cache", () => {
  it("10 concurrent clusterFacts → one ManagedClusters_Get and one Subscriptions_Get", async () => {
    const { discovery, registry } = discoveryFor(world);
    const all = await Promise.all(Array.from({ length: 10 }, () => discovery.clusterFacts(cluster())));
    for (const f of all) expect(f.oidcIssuerUrl).toBe(world.issuer);
    expect(world.fake.stats.count("ManagedClusters_Get")).toBe(1);
    expect(world.fake.stats.count("Subscriptions_Get")).toBe(1);
    expect(await registry.metrics()).toMatch(/berth_azure_discovery_cache_total\{kind="cluster",result="coalesced"\} 9/);
    // and later reads are cache hits
    for (let i = 0; i < 20; i++) await discovery.clusterFacts(cluster());
    await Promise.all(Array.from({ length: 10 }, () => discovery.teamIdentity("alpha", cluster())));
    expect(world.fake.stats.count("ManagedClusters_Get")).toBe(1);
    expect(world.fake.stats.count("UserAssignedIdentities_Get")).toBe(1);
  });

  it("TTLs: cluster facts re-fetched after the cluster TTL, identities after the identity TTL", async () => {
    const { discovery, clock } = discoveryFor(world);
    await discovery.clusterFacts(cluster());
    await discovery.teamIdentity("alpha", cluster());
    clock.advance(DEFAULT_TTLS.cluster - 1);
    await discovery.clusterFacts(cluster());
    expect(world.fake.stats.count("ManagedClusters_Get")).toBe(1);
    clock.advance(2);
    await discovery.clusterFacts(cluster());
    await discovery.teamIdentity("alpha", cluster());
    expect(world.fake.stats.count("ManagedClusters_Get")).toBe(2);
    expect(world.fake.stats.count("Subscriptions_Get")).toBe(1); // a subscription's tenant lives as long as an identity
    expect(world.fake.stats.count("UserAssignedIdentities_Get")).toBe(1); // identities live longer
    clock.advance(DEFAULT_TTLS.identity);
    await discovery.teamIdentity("alpha", cluster());
    await discovery.clusterFacts(cluster());
    expect(world.fake.stats.count("UserAssignedIdentities_Get")).toBe(2);
    expect(world.fake.stats.count("Subscriptions_Get")).toBe(2);
  });

  it("negative answers are cached briefly: a new identity is seen after the negative TTL", async () => {
    const { discovery, clock } = discoveryFor(world);
    expect(await discovery.teamIdentity("gamma", cluster())).toBeUndefined();
    const created = await createTeamIdentity(world.fake, world.msi, "gamma");
    expect(await discovery.teamIdentity("gamma", cluster())).toBeUndefined(); // still the cached 404
    expect(world.fake.stats.count("UserAssignedIdentities_Get")).toBe(1);
    clock.advance(DEFAULT_TTLS.negative + 1);
    expect(await discovery.teamIdentity("gamma", cluster())).toEqual(created);
  });

  it("a changed OIDC issuer is seen after the cluster TTL (not before)", async () => {
    const { discovery, clock } = discoveryFor(world);
    const { fake } = world;
    expect((await discovery.clusterFacts(cluster())).oidcIssuerUrl).toBe(world.issuer);
    const rotated = `https://westeurope.oic.prod-aks.azure.com/${fake.tenantId}/0b3f1d7e-2222-4c4c-8d8d-999999999999/`;
    fake.setOidcIssuer({ resourceGroup: CLUSTER_RG, name: CLUSTER_NAME, issuerURL: rotated });
    try {
      clock.advance(DEFAULT_TTLS.cluster / 2);
      expect((await discovery.clusterFacts(cluster())).oidcIssuerUrl).toBe(world.issuer);
      clock.advance(DEFAULT_TTLS.cluster / 2 + 1);
      expect((await discovery.clusterFacts(cluster())).oidcIssuerUrl).toBe(rotated);
      // Disabled issuer: the provider refuses (writes nothing) and looks again after the short negative TTL.
      fake.setOidcIssuer({ resourceGroup: CLUSTER_RG, name: CLUSTER_NAME, enabled: false });
      clock.advance(DEFAULT_TTLS.cluster + 1);
      await expect(discovery.clusterFacts(cluster())).rejects.toBeInstanceOf(ValueUnavailableError);
      fake.setOidcIssuer({ resourceGroup: CLUSTER_RG, name: CLUSTER_NAME, issuerURL: world.issuer });
      clock.advance(DEFAULT_TTLS.negative + 1);
      expect((await discovery.clusterFacts(cluster())).oidcIssuerUrl).toBe(world.issuer);
    } finally {
      fake.setOidcIssuer({ resourceGroup: CLUSTER_RG, name: CLUSTER_NAME, issuerURL: world.issuer });
    }
  });
});
