/**
 * Shared set-up for the @berth/azure tests and the ARM-call benchmark: a fake Azure with one AKS cluster,
 * the platform identity and some team identities, plus an AzureDiscovery wired to it in direct mode.
 */
import { AuthorizationManagementClient } from "@azure/arm-authorization";
import { ManagedServiceIdentityClient } from "@azure/arm-msi";
import { ClientSecretCredential } from "@azure/identity";
import { AzureDiscovery, credentialMetricsPolicy, Registry, type AzureDiscoveryConfig } from "@berth/azure";
import { azureNames, type Cluster } from "@berth/core";
import { ARM_SCOPE, startFakeAzure, type FakeAzure } from "../fake-azure/index.js";

export const APP_ID = "5d0a2d0e-0b5e-4c43-9a43-1f1f6b7b1001";
export const APP_SECRET = "fake-secret-value";
export const CLUSTER_RG = "rg-platform";
export const CLUSTER_NAME = "aks-prod";
export const PLATFORM_IDENTITY = { resourceGroup: "rg-platform", name: "id-berth-aso" };
export const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export const cluster = (name = CLUSTER_NAME): Cluster => ({ name, vars: {}, environment: "prod" });

/** Fast retry / breaker numbers so fault tests take seconds; the shapes are the production ones. */
export const FAST = {
  retry: { baseDelayMs: 20, maxDelayMs: 200, throttleBaseDelayMs: 50, maxWaitMs: 5_000 },
  breaker: { consecutiveFailures: 3, halfOpenAfterMs: 300, maxHalfOpenAfterMs: 1_000 },
  callTimeoutMs: 2_000,
} satisfies Partial<AzureDiscoveryConfig>;

export interface World {
  fake: FakeAzure;
  issuer: string;
  platformIdentity: { clientId: string; principalId: string };
  teams: Map<string, { clientId: string; principalId: string; tenantId: string }>;
  msi: ManagedServiceIdentityClient;
  authz: AuthorizationManagementClient;
  /** A credential for set-up calls (not the one under test). */
  setupCredential: ClientSecretCredential;
  close(): Promise<void>;
}

export async function startWorld(opts: { teams?: string[]; proxy?: boolean } = {}): Promise<World> {
  const fake = await startFakeAzure({
    apps: [{ clientId: APP_ID, clientSecret: APP_SECRET }],
    ...(opts.proxy ? { proxy: true } : {}),
  });
  const { issuerURL } = fake.seedManagedCluster({
    resourceGroup: CLUSTER_RG,
    name: CLUSTER_NAME,
    location: "westeurope",
  });
  const setupCredential = new ClientSecretCredential(fake.tenantId, APP_ID, APP_SECRET, fake.credentialOptions());
  const msi = new ManagedServiceIdentityClient(setupCredential, fake.subscriptionId, fake.armClientOptions());
  const authz = new AuthorizationManagementClient(setupCredential, fake.subscriptionId, fake.armClientOptions());
  const p = await msi.userAssignedIdentities.createOrUpdate(PLATFORM_IDENTITY.resourceGroup, PLATFORM_IDENTITY.name, {
    location: "westeurope",
  });
  const teams = new Map<string, { clientId: string; principalId: string; tenantId: string }>();
  for (const team of opts.teams ?? []) teams.set(team, await createTeamIdentity(fake, msi, team));
  fake.stats.reset();
  return {
    fake,
    issuer: issuerURL!,
    platformIdentity: { clientId: p.clientId!, principalId: p.principalId! },
    teams,
    msi,
    authz,
    setupCredential,
    close: () => fake.close(),
  };
}

export async function createTeamIdentity(
  fake: FakeAzure,
  msi: ManagedServiceIdentityClient,
  team: string,
  clusterName = CLUSTER_NAME,
) {
  const n = azureNames(team, clusterName);
  fake.seedResourceGroup({ name: n.resourceGroup, location: "westeurope" });
  const id = await msi.userAssignedIdentities.createOrUpdate(n.resourceGroup, n.identity, { location: "westeurope" });
  return { clientId: id.clientId!, principalId: id.principalId!, tenantId: id.tenantId! };
}

/** A controllable clock for cache TTLs. */
export function testClock(start = Date.now()) {
  const c = {
    t: start,
    now: () => c.t,
    advance: (ms: number) => {
      c.t += ms;
    },
  };
  return c;
}

export interface DiscoveryUnderTest {
  discovery: AzureDiscovery;
  registry: Registry;
  clock: ReturnType<typeof testClock>;
  credential: ClientSecretCredential;
  /** berth_arm_requests_total for one operation (all codes, or one). */
  counted(operation: string, code?: string): Promise<number>;
}

/** An AzureDiscovery in direct mode (injected endpoint), with its own registry, clock and credential. */
export function discoveryFor(
  world: World,
  overrides: Partial<AzureDiscoveryConfig> & {
    credentialRetry?: { maxRetries?: number; retryDelayInMs?: number };
  } = {},
): DiscoveryUnderTest {
  const { fake } = world;
  const registry = new Registry();
  const clock = testClock();
  const { credentialRetry, ...rest } = overrides;
  const credential = new ClientSecretCredential(
    fake.tenantId,
    APP_ID,
    APP_SECRET,
    fake.credentialOptions({
      additionalPolicies: [credentialMetricsPolicy(registry)],
      ...(credentialRetry ? { retryOptions: credentialRetry } : {}),
    }),
  );
  const discovery = AzureDiscovery.fromConfig({
    credential,
    clusters: {
      [CLUSTER_NAME]: {
        subscriptionId: fake.subscriptionId,
        resourceGroup: CLUSTER_RG,
        managedClusterName: CLUSTER_NAME,
        platformIdentity: PLATFORM_IDENTITY,
      },
    },
    clientOptions: { endpoint: fake.url, credentialScopes: [ARM_SCOPE], additionalPolicies: [fake.trustPolicy] },
    registry,
    now: clock.now,
    ...FAST,
    ...rest,
  });
  const counted = async (operation: string, code?: string) => {
    const m = await registry.getSingleMetric("berth_arm_requests_total")!.get();
    return m.values
      .filter((v) => v.labels.operation === operation && (code === undefined || String(v.labels.code) === code))
      .reduce((a, v) => a + v.value, 0);
  };
  return { discovery, registry, clock, credential, counted };
}

export async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error("expected the call to fail");
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
