import { platformSchema, type Cluster, type Platform } from "@berth/core";

export const TENANT = "11111111-1111-4111-8111-111111111111";
export const SUBSCRIPTION = "22222222-2222-4222-8222-222222222222";
export const PLATFORM_CLIENT = "33333333-3333-4333-8333-333333333333";
export const CLIENT_A = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa";
export const CLIENT_B = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb";

export function platform(overrides: Record<string, unknown> = {}): Platform {
  return platformSchema.parse({
    environments: [
      {
        name: "dev",
        clusters: [
          {
            name: "aks-dev-weu",
            vars: {
              TENANT_ID: TENANT,
              SUBSCRIPTION_ID: SUBSCRIPTION,
              CLUSTER_OIDC_ISSUER_URL: "https://oidc.example/issuer/",
              AZURE_LOCATION: "westeurope",
              PLATFORM_CLIENT_ID: PLATFORM_CLIENT,
              SERVICEBUS_NAMESPACE: "sb-dev",
            },
          },
        ],
      },
    ],
    platformVars: { SERVICEBUS_NAMESPACE: "Shared Service Bus namespace" },
    ...overrides,
  });
}

export function clusterOf(p: Platform): Cluster {
  const env = p.environments[0]!;
  return { ...env.clusters[0]!, environment: env.name };
}

export const FACTS = {
  tenantId: TENANT,
  subscriptionId: SUBSCRIPTION,
  oidcIssuerUrl: "https://oidc.example/issuer/",
  location: "westeurope",
};

export const decode = (data: Record<string, string> | undefined) =>
  Object.fromEntries(Object.entries(data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]));
