/**
 * The Azure side of a test platform (tests/support/flux-platform.ts with `aso: "real"`): one fake Azure
 * (tests/fake-azure) that knows the platform's tenant, each cluster's subscription, and ASO's platform identity
 * (`vars.PLATFORM_CLIENT_ID`, the client id Berth's controller writes into flux-config/aso-credential), which trusts
 * ASO's ServiceAccount on every cluster of the platform: issuer = the cluster's CLUSTER_OIDC_ISSUER_URL (the test
 * apiserver's service-account issuer), subject = ASO's, audience api://AzureADTokenExchange, as docs/install.md
 * step 2 federates id-berth-aso.
 */
import { startFakeAzure, type FakeAzure, type FakeAzureOptions } from "../fake-azure/index.js";
import { ASO_SUBJECT, TOKEN_EXCHANGE_AUDIENCE } from "./aso.js";

interface ClusterVars {
  name: string;
  vars: Record<string, string>;
}

/** Every cluster of a platform section with its vars. */
function clustersOf(platform: Record<string, unknown>): ClusterVars[] {
  return (platform.environments as Array<{ clusters: ClusterVars[] }>).flatMap((e) => e.clusters);
}

/** The OIDC issuer the platform config gives a cluster: what its apiserver signs its service-account tokens with. */
export function clusterIssuer(platform: Record<string, unknown>, cluster: string): string {
  const issuer = clustersOf(platform).find((c) => c.name === cluster)?.vars.CLUSTER_OIDC_ISSUER_URL;
  if (!issuer) throw new Error(`platform config has no CLUSTER_OIDC_ISSUER_URL for cluster ${cluster}`);
  return issuer;
}

export async function startPlatformAzure(
  platform: Record<string, unknown>,
  extra: FakeAzureOptions = {},
): Promise<FakeAzure> {
  const clusters = clustersOf(platform);
  const tenantId = clusters[0]!.vars.TENANT_ID!;
  const subscriptions = [...new Set(clusters.map((c) => c.vars.SUBSCRIPTION_ID!))].map((subscriptionId) => ({
    subscriptionId,
    tenantId,
  }));
  const azure = await startFakeAzure({ tenantId, subscriptions, proxy: true, ...extra });
  for (const clientId of new Set(clusters.map((c) => c.vars.PLATFORM_CLIENT_ID!))) {
    azure.addApp({
      clientId,
      displayName: "id-berth-aso",
      federatedCredentials: clusters
        .filter((c) => c.vars.PLATFORM_CLIENT_ID === clientId)
        .map((c) => ({
          issuer: c.vars.CLUSTER_OIDC_ISSUER_URL!,
          subject: ASO_SUBJECT,
          audiences: [TOKEN_EXCHANGE_AUDIENCE],
        })),
    });
  }
  return azure;
}
