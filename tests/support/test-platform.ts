import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { Admin, INFRA, readManifests } from "../controller/helpers.js";
import { REPO_ROOT } from "./kube-cluster.js";

/**
 * One platform for the API and the controller of end-to-end tests: infra/local/berth.yaml (what `npm
 * start` runs) with the values the controller's static provider needs for aks-dev-weu, written to `dir`.
 */
export const TEST_CLUSTER_VARS = {
  TENANT_ID: "11111111-1111-4111-8111-111111111111",
  SUBSCRIPTION_ID: "22222222-2222-4222-8222-222222222222",
  CLUSTER_OIDC_ISSUER_URL: "https://westeurope.oic.prod-aks.azure.com/tenant/aks-dev-weu/",
  PLATFORM_CLIENT_ID: "33333333-3333-4333-8333-333333333333",
  SERVICEBUS_NAMESPACE: "sb-dev-weu",
  POSTGRES_SERVER: "pg-dev-weu",
};

export async function writeTestPlatformConfig(dir: string): Promise<string> {
  const config = parse(await readFile(join(REPO_ROOT, "infra", "local", "berth.yaml"), "utf8")) as {
    templatesDir: string;
    platform: { environments: Array<{ clusters: Array<{ name: string; vars: Record<string, string> }> }> };
  };
  config.templatesDir = join(REPO_ROOT, "templates");
  for (const env of config.platform.environments) {
    for (const cluster of env.clusters)
      if (cluster.name === "aks-dev-weu") cluster.vars = { ...cluster.vars, ...TEST_CLUSTER_VARS };
  }
  const file = join(dir, "berth.yaml");
  await writeFile(file, stringify(config));
  return file;
}

/** The cluster-side setup the controller and the API need: the ASO namespace, the controller's RBAC, a status reader. */
export async function prepareCluster(admin: Admin, reader = "berth-api"): Promise<void> {
  await admin.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "flux-config" } });
  for (const obj of readManifests(INFRA, (f) => f === "namespace.yaml" || f.startsWith("rbac-")))
    await admin.create(obj);
  // The API reads Team objects only: get, and list for its per-cluster cache.
  await admin.create({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name: "berth-api-status" },
    rules: [{ apiGroups: ["berth.dev"], resources: ["teams"], verbs: ["get", "list"] }],
  });
  await admin.create({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: "berth-api-status" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "berth-api-status" },
    subjects: [{ kind: "User", name: reader, apiGroup: "rbac.authorization.k8s.io" }],
  });
}
