/**
 * Proxy-mode child process: Berth's discovery exactly as production builds it — no credential, no client
 * options (only a metrics registry), so `new DefaultAzureCredential()` and the real endpoints (management.azure.com,
 * login.microsoftonline.com). Only the environment points it at the fake: HTTPS_PROXY, NODE_EXTRA_CA_CERTS,
 * AZURE_TENANT_ID / AZURE_CLIENT_ID / AZURE_CLIENT_SECRET or AZURE_FEDERATED_TOKEN_FILE.
 *
 * Run: `pnpm exec tsx azure/proxy-child.ts` in tests/, with BERTH_DISCOVERY_TASK (JSON) in the environment.
 * Prints one JSON line.
 */
import { AzureDiscovery, Registry } from "@berth/azure";

interface Task {
  cluster: string;
  subscriptionId: string;
  resourceGroup: string;
  managedClusterName: string;
  platformIdentity: { resourceGroup: string; name: string };
  team: string;
}

const task = JSON.parse(process.env.BERTH_DISCOVERY_TASK ?? "{}") as Task;
const out: Record<string, unknown> = {};
try {
  // What the controller passes: its metrics registry and the cluster map. Nothing else.
  const registry = new Registry();
  const discovery = AzureDiscovery.fromConfig({
    registry,
    clusters: {
      [task.cluster]: {
        subscriptionId: task.subscriptionId,
        resourceGroup: task.resourceGroup,
        managedClusterName: task.managedClusterName,
        platformIdentity: task.platformIdentity,
      },
    },
  });
  const cluster = { name: task.cluster, vars: {}, environment: "prod" };
  out.clusterFacts = await discovery.clusterFacts(cluster);
  out.platformCredential = await discovery.platformCredential(cluster);
  out.teamIdentity = await discovery.teamIdentity(task.team, cluster);
  out.missingTeam = (await discovery.teamIdentity("nobody", cluster)) ?? null;
  const metric = await registry.getSingleMetric("berth_arm_requests_total")!.get();
  out.requests = Object.fromEntries(metric.values.map((v) => [`${v.labels.operation} ${v.labels.code}`, v.value]));
  out.ok = true;
} catch (err) {
  out.ok = false;
  out.error = { name: (err as Error).name, message: String((err as Error).message).slice(0, 500) };
}
process.stdout.write(`${JSON.stringify(out)}\n`);
