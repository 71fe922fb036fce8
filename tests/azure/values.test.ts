/**
 * AzureDiscovery against the fake Azure in direct mode (injected endpoint, real SDK, no mocks):
 * the values, the cache (coalescing, TTLs, negative answers), and the request metric.
 */
import { DEFAULT_TTLS } from "@berth/azure";
import { azureNames, ValueUnavailableError } from "@berth/core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { BUILT_IN_ROLES } from "../fake-azure/index.js";
import {
  CLUSTER_NAME,
  CLUSTER_RG,
  cluster,
  createTeamIdentity,
  discoveryFor,
  GUID,
  rejection,
  startWorld,
  type World,
} from "./support.js";

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
    expect(facts).toEqual({
      tenantId: world.fake.tenantId,
      subscriptionId: world.fake.subscriptionId,
      oidcIssuerUrl: world.issuer,
      location: "westeurope",
    });
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
    expect(
      world.fake.stats.requests.filter((r) => r.operation === "UserAssignedIdentities_Get").map((r) => r.path),
    ).toEqual([
      `/subscriptions/${world.fake.subscriptionId}/resourceGroups/rg-platform/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-berth-aso`,
    ]);
  });

  it("teamIdentity: id-<team>--<cluster> in rg-<team>--<cluster>; undefined when it does not exist", async () => {
    const { discovery } = discoveryFor(world);
    const alpha = await discovery.teamIdentity("alpha", cluster());
    expect(alpha).toEqual(world.teams.get("alpha"));
    expect(alpha!.clientId).toMatch(GUID);
    expect(alpha!.tenantId).toBe(world.fake.tenantId);
    expect(world.fake.stats.requests.at(-1)!.path).toContain(
      "/resourceGroups/rg-alpha--aks-prod/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-alpha--aks-prod",
    );
    expect(await discovery.teamIdentity("ghost", cluster())).toBeUndefined(); // resource group missing
    world.fake.seedResourceGroup({ name: azureNames("ghost2", CLUSTER_NAME).resourceGroup });
    expect(await discovery.teamIdentity("ghost2", cluster())).toBeUndefined(); // identity missing
    await expect(discovery.teamIdentity("Bad--Name", cluster())).rejects.toThrow(/invalid team name/);
  });

  it("an unconfigured cluster, a missing cluster or a disabled OIDC issuer → ValueUnavailableError, never an empty value", async () => {
    const { fake } = world;
    const { discovery } = discoveryFor(world, {
      clusters: {
        missing: {
          subscriptionId: fake.subscriptionId,
          resourceGroup: CLUSTER_RG,
          managedClusterName: "nope",
          platformIdentity: { resourceGroup: "rg-platform", name: "nope" },
        },
        [CLUSTER_NAME]: {
          subscriptionId: fake.subscriptionId,
          resourceGroup: CLUSTER_RG,
          managedClusterName: CLUSTER_NAME,
          platformIdentity: { resourceGroup: "rg-platform", name: "id-berth-aso" },
        },
        "no-oidc": {
          subscriptionId: fake.subscriptionId,
          resourceGroup: "rg-legacy",
          managedClusterName: "aks-legacy",
          platformIdentity: { resourceGroup: "rg-platform", name: "id-berth-aso" },
        },
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

  it("resolveRoleDefinition and roleDefinitionId (roleName filter, escaped, cached)", async () => {
    const { discovery } = discoveryFor(world);
    const sub = world.fake.subscriptionId;
    const readerGuid = BUILT_IN_ROLES.find((r) => r.roleName === "Reader")!.id;
    const reader = await discovery.resolveRoleDefinition(sub, "Reader");
    expect(reader).toBe(`/subscriptions/${sub}/providers/Microsoft.Authorization/roleDefinitions/${readerGuid}`);
    expect(await discovery.resolveRoleDefinition(sub, "Azure Service Bus Data Owner")).toMatch(
      /090c5cfd-751d-490a-894a-3ce6f1109419$/,
    );
    expect(await discovery.resolveRoleDefinition(sub, "No Such Role")).toBeUndefined();
    expect(await discovery.resolveRoleDefinition(sub, "O'Brien's role")).toBeUndefined(); // quotes are escaped, not a 400
    const listCalls = world.fake.stats.requests.filter((r) => r.operation === "RoleDefinitions_List");
    expect(decodeURIComponent(listCalls[0]!.query)).toContain("$filter=roleName eq 'Reader'");
    // By cluster (its subscription), as the platform check asks: the GUID, from the cache.
    expect(await discovery.roleDefinitionId(cluster(), "Reader")).toBe(readerGuid);
    expect(await discovery.roleDefinitionId(cluster(), "No Such Role")).toBeUndefined();
    expect(world.fake.stats.count("RoleDefinitions_List")).toBe(4);

    // Two custom roles with one name: which id the catalog meant cannot be told, and that needs a person.
    world.fake.arm.addRoleDefinition({ id: "7a1e0000-0000-4000-8000-000000000001", roleName: "Twin Role" });
    world.fake.arm.addRoleDefinition({ id: "7a1e0000-0000-4000-8000-000000000002", roleName: "Twin Role" });
    try {
      const twin = await rejection(discovery.roleDefinitionId(cluster(), "Twin Role"));
      expect(twin).toBeInstanceOf(ValueUnavailableError);
      expect(twin).toMatchObject({ reason: "RoleNameAmbiguous", severity: "Error" });
    } finally {
      for (const n of [1, 2]) world.fake.arm.roleDefinitions.delete(`7a1e0000-0000-4000-8000-00000000000${n}`);
    }
  });

  it("resourceProviderState: the namespace's registration state in the cluster's subscription", async () => {
    const { discovery } = discoveryFor(world);
    expect(await discovery.resourceProviderState(cluster(), "Microsoft.ManagedIdentity")).toBe("Registered");
    expect(await discovery.resourceProviderState(cluster(), "Microsoft.NoSuchThing")).toBeUndefined(); // 404 InvalidResourceNamespace
    world.fake.arm.setResourceProviderState({ namespace: "Microsoft.ManagedIdentity", state: "NotRegistered" });
    try {
      // Registered was cached (it rarely changes); after invalidation the new state is read.
      expect(await discovery.resourceProviderState(cluster(), "Microsoft.ManagedIdentity")).toBe("Registered");
      discovery.invalidate("provider");
      expect(await discovery.resourceProviderState(cluster(), "Microsoft.ManagedIdentity")).toBe("NotRegistered");
    } finally {
      world.fake.arm.providerStates.clear();
    }
    expect(
      world.fake.stats.requests.filter((r) => r.operation === "Providers_Get").map((r) => `${r.path} ${r.status}`),
    ).toEqual([
      `/subscriptions/${world.fake.subscriptionId}/providers/Microsoft.ManagedIdentity 200`,
      `/subscriptions/${world.fake.subscriptionId}/providers/Microsoft.NoSuchThing 404`,
      `/subscriptions/${world.fake.subscriptionId}/providers/Microsoft.ManagedIdentity 200`,
    ]);
    await expect(discovery.resourceProviderState(cluster(), "not a namespace")).rejects.toThrow(/invalid namespace/);
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
    expect(await registry.metrics()).toMatch(
      /berth_azure_discovery_cache_total\{kind="cluster",result="coalesced"\} 9/,
    );
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
