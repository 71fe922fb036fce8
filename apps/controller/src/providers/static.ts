import {
  ValueUnavailableError,
  type Cluster,
  type ClusterFacts,
  type PlatformCredential,
  type PlatformValuesProvider,
} from "@berth/core";

/**
 * Values from the cluster's `vars` in platform config (environments[].clusters[].vars), until live Azure
 * discovery replaces them. A missing or blank value is a ValueUnavailableError naming every missing key:
 * the controller then writes nothing rather than an empty tenant or client id.
 */
export class StaticValuesProvider implements PlatformValuesProvider {
  async clusterFacts(cluster: Cluster): Promise<ClusterFacts> {
    const v = required(cluster, ["TENANT_ID", "SUBSCRIPTION_ID", "CLUSTER_OIDC_ISSUER_URL", "AZURE_LOCATION"]);
    return {
      tenantId: v.TENANT_ID,
      subscriptionId: v.SUBSCRIPTION_ID,
      oidcIssuerUrl: v.CLUSTER_OIDC_ISSUER_URL,
      location: v.AZURE_LOCATION,
    };
  }

  async platformCredential(cluster: Cluster): Promise<PlatformCredential> {
    const v = required(cluster, ["TENANT_ID", "SUBSCRIPTION_ID", "PLATFORM_CLIENT_ID"]);
    return { tenantId: v.TENANT_ID, subscriptionId: v.SUBSCRIPTION_ID, clientId: v.PLATFORM_CLIENT_ID };
  }
}

function required<K extends string>(cluster: Cluster, keys: readonly K[]): Record<K, string> {
  const out = {} as Record<K, string>;
  const missing: string[] = [];
  for (const key of keys) {
    const value = cluster.vars[key]?.trim();
    if (value) out[key] = value;
    else missing.push(key);
  }
  if (missing.length) {
    throw new ValueUnavailableError(
      `cluster ${cluster.name} has no value for ${missing.join(", ")} in platform config (environments[].clusters[].vars)`,
      {
        reason: missing.includes("CLUSTER_OIDC_ISSUER_URL") ? "OIDCIssuerNotConfigured" : "ValuesNotConfigured",
        severity: "Error",
      },
    );
  }
  return out;
}
