/**
 * Proxy mode: discovery in a child process with production configuration (DefaultAzureCredential,
 * default endpoints); HTTPS_PROXY routes management.azure.com and login.microsoftonline.com to the fake.
 */
import { execFile, spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { azureNames } from "@berth/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServiceAccountIssuer } from "../fake-azure/index.js";
import {
  APP_ID,
  APP_SECRET,
  CLUSTER_NAME,
  CLUSTER_RG,
  GUID,
  PLATFORM_IDENTITY,
  startWorld,
  type World,
} from "./support.js";

const execFileP = promisify(execFile);
const testsDir = join(dirname(fileURLToPath(import.meta.url)), "..");
/** `pnpm exec tsx`, or the workspace's tsx binary where pnpm is not on PATH (run.mjs may use `npx pnpm`). */
const TSX: [string, string[]] =
  spawnSync("pnpm", ["--version"], { encoding: "utf8" }).status === 0
    ? ["pnpm", ["exec", "tsx"]]
    : [join(testsDir, "..", "node_modules", ".bin", "tsx"), []];

let world: World;
beforeAll(async () => {
  world = await startWorld({ teams: ["alpha"], proxy: true });
});
afterAll(async () => {
  await world?.close();
});

/** What azure/proxy-child.ts prints: discovery's answers through the proxy, or the error it threw. */
type ChildOutput = {
  ok: boolean;
  error?: { name: string; message: string };
  clusterFacts?: { tenantId: string; subscriptionId: string; oidcIssuerUrl: string; location: string };
  platformCredential?: unknown;
  teamIdentity?: { clientId: string; [field: string]: unknown };
  missingTeam?: unknown;
  requests: Record<string, number>;
};

async function runChild(env: Record<string, string>) {
  const task = {
    cluster: CLUSTER_NAME,
    subscriptionId: world.fake.subscriptionId,
    resourceGroup: CLUSTER_RG,
    managedClusterName: CLUSTER_NAME,
    platformIdentity: PLATFORM_IDENTITY,
    team: "alpha",
  };
  const { stdout } = await execFileP(TSX[0], [...TSX[1], "azure/proxy-child.ts"], {
    cwd: testsDir,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "/tmp",
      ...world.fake.proxyEnv(),
      ...env,
      BERTH_DISCOVERY_TASK: JSON.stringify(task),
    },
    timeout: 45_000,
  });
  return JSON.parse(stdout.trim().split("\n").pop()!) as ChildOutput;
}

describe("proxy mode (production configuration, HTTPS_PROXY + NODE_EXTRA_CA_CERTS)", () => {
  it("DefaultAzureCredential with AZURE_CLIENT_SECRET: tenant, subscription, OIDC issuer and identity ids", async () => {
    const connectsBefore = world.fake.proxy!.countByTarget();
    const out = await runChild({
      AZURE_TENANT_ID: world.fake.tenantId,
      AZURE_CLIENT_ID: APP_ID,
      AZURE_CLIENT_SECRET: APP_SECRET,
    });
    expect(out.error).toBeUndefined();
    expect(out.clusterFacts).toEqual({
      tenantId: world.fake.tenantId,
      subscriptionId: world.fake.subscriptionId,
      oidcIssuerUrl: world.issuer,
      location: "westeurope",
    });
    expect(out.platformCredential).toEqual({
      tenantId: world.fake.tenantId,
      subscriptionId: world.fake.subscriptionId,
      clientId: world.platformIdentity.clientId,
    });
    expect(out.teamIdentity).toEqual(world.teams.get("alpha"));
    expect(out.teamIdentity?.clientId).toMatch(GUID);
    expect(out.missingTeam).toBeNull();
    // Through the proxy, under the real host names; token requests counted by the default credential's policy.
    const after = world.fake.proxy!.countByTarget();
    expect(after["management.azure.com:443"] ?? 0).toBeGreaterThan(connectsBefore["management.azure.com:443"] ?? 0);
    expect(after["login.microsoftonline.com:443"] ?? 0).toBeGreaterThan(
      connectsBefore["login.microsoftonline.com:443"] ?? 0,
    );
    expect(out.requests).toMatchObject({
      "ManagedClusters_Get 200": 1,
      "Subscriptions_Get 200": 1,
      "UserAssignedIdentities_Get 200": 2,
      "UserAssignedIdentities_Get 404": 1,
    });
    expect(out.requests["Entra_Token 200"]).toBeGreaterThanOrEqual(1);
  });

  it("DefaultAzureCredential with AZURE_FEDERATED_TOKEN_FILE (workload identity, as in the cluster)", async () => {
    const sa = await createServiceAccountIssuer(world.fake, world.issuer);
    const controller = await world.msi.userAssignedIdentities.createOrUpdate(CLUSTER_RG, "id-berth-controller", {
      location: "westeurope",
    });
    await world.msi.federatedIdentityCredentials.createOrUpdate(CLUSTER_RG, "id-berth-controller", "berth-controller", {
      issuer: world.issuer,
      subject: "system:serviceaccount:berth-system:berth-controller",
      audiences: ["api://AzureADTokenExchange"],
    });
    const tokenFile = await sa.tokenFile({ namespace: "berth-system", serviceAccount: "berth-controller" });
    world.fake.stats.reset();
    const out = await runChild({
      AZURE_TENANT_ID: world.fake.tenantId,
      AZURE_CLIENT_ID: controller.clientId!,
      AZURE_FEDERATED_TOKEN_FILE: tokenFile,
    });
    expect(out.error).toBeUndefined();
    expect(out.clusterFacts?.oidcIssuerUrl).toBe(world.issuer);
    expect(out.teamIdentity).toEqual(world.teams.get("alpha"));
    expect(
      world.fake.stats.requests.every(
        (r) => r.host === "management.azure.com" || r.host === "login.microsoftonline.com",
      ),
    ).toBe(true);
    expect(azureNames("alpha", CLUSTER_NAME).identity).toBe("id-alpha--aks-prod");
  });
});
