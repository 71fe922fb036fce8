/**
 * ARM calls per hour made by Berth's Azure discovery in steady state, next to Azure Service Operator's own
 * re-sync load for the same teams. Prints figures; asserts nothing.
 *
 * Run from the repo root: `pnpm exec tsx --tsconfig tests/tsconfig.json tests/bench/arm-calls.ts`
 * (BENCH_TEAMS=100,1000 to choose team counts; BENCH_RESYNC_MIN=5 for the controller's resync period).
 *
 * How: the real AzureDiscovery (default TTLs, real SDK) against the fake Azure, with a simulated clock for the
 * cache: one simulated hour in 1-minute steps, each team reconciled every BENCH_RESYNC_MIN minutes (spread
 * evenly), after a warm-up hour so the figures are steady state, not a cold start. ARM calls are counted by
 * the fake (fake.stats) and cross-checked with berth_arm_requests_total.
 *
 * ASO's load: every ASO resource is re-read from Azure once per azureSyncPeriod (default 1 h), so per team
 * resources × 60 / syncPeriodMinutes with RG + identity + 2 federated credentials + 2 role assignments = 6.
 * Berth does not re-read what ASO owns (docs/decisions/0012-azure-checks.md).
 */
import { ManagedServiceIdentityClient } from "@azure/arm-msi";
import { ClientSecretCredential } from "@azure/identity";
import { AzureDiscovery, credentialMetricsPolicy, DEFAULT_TTLS, Registry } from "@berth/azure";
import { azureNames, type Cluster } from "@berth/core";
import { ARM_SCOPE, startFakeAzure } from "../fake-azure/index.js";

const TEAM_COUNTS = (process.env.BENCH_TEAMS ?? "100,1000").split(",").map(Number);
const RESYNC_MIN = Number(process.env.BENCH_RESYNC_MIN ?? 5);
const ASO_SYNC_PERIOD_MIN = 60;
const ASO_RESOURCES_PER_TEAM = 6;
const APP_ID = "5d0a2d0e-0b5e-4c43-9a43-1f1f6b7b1001";
const APP_SECRET = "bench-secret";
const CLUSTER = "aks-prod";

type Scenario = {
  name: string;
  /** What one reconcile of one team asks the provider. */
  reconcile: (d: AzureDiscovery, team: string, c: Cluster, minute: number) => Promise<unknown>;
  /** Teams reconciled at `minute` (default: every RESYNC_MIN minutes, spread). */
};

const teamName = (i: number) => `team-${String(i).padStart(4, "0")}`;
/** The role names of infra/local/berth.yaml's catalog. */
const CATALOG_ROLES = ["Contributor", "Azure Service Bus Data Owner", "Reader"];

const clusterObj: Cluster = { name: CLUSTER, vars: {}, environment: "prod" };

const SCENARIOS: Scenario[] = [
  {
    name: "steady state (ASO ConfigMaps present)",
    reconcile: (d, _team, c) => Promise.all([d.clusterFacts(c), d.platformCredential(c)]),
  },
  {
    name: "+ teamIdentity on every reconcile (fallback / verify)",
    reconcile: (d, team, c) => Promise.all([d.clusterFacts(c), d.platformCredential(c), d.teamIdentity(team, c)]),
  },
  {
    // The platform reconciler's checks (role catalog names, resource provider registration) run on each
    // platform pass (every RESYNC_MIN minutes): modelled as part of one team's reconcile.
    name: "steady state + platform checks (3 catalog roles, 1 resource provider)",
    reconcile: async (d, team, c) => {
      await Promise.all([d.clusterFacts(c), d.platformCredential(c)]);
      if (team === teamName(0))
        await Promise.all([
          ...CATALOG_ROLES.map((role) => d.roleDefinitionId(c, role)),
          d.resourceProviderState(c, "Microsoft.ManagedIdentity"),
        ]);
    },
  },
];

async function pool<T>(items: T[], n: number, fn: (t: T) => Promise<unknown>) {
  let i = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (i < items.length) await fn(items[i++]!);
    }),
  );
}

async function main() {
  const rows: string[][] = [];
  for (const teamsN of TEAM_COUNTS) {
    const fake = await startFakeAzure({ apps: [{ clientId: APP_ID, clientSecret: APP_SECRET }] });
    fake.seedManagedCluster({ resourceGroup: "rg-platform", name: CLUSTER, location: "westeurope" });
    const setup = new ClientSecretCredential(fake.tenantId, APP_ID, APP_SECRET, fake.credentialOptions());
    const msi = new ManagedServiceIdentityClient(setup, fake.subscriptionId, fake.armClientOptions());
    await msi.userAssignedIdentities.createOrUpdate("rg-platform", "id-berth-aso", { location: "westeurope" });
    const teams = Array.from({ length: teamsN }, (_, i) => teamName(i));
    const seedStart = performance.now();
    await pool(teams, 16, async (t) => {
      const n = azureNames(t, CLUSTER);
      fake.seedResourceGroup({ name: n.resourceGroup, location: "westeurope" });
      await msi.userAssignedIdentities.createOrUpdate(n.resourceGroup, n.identity, { location: "westeurope" });
    });
    process.stderr.write(
      `seeded ${teamsN} team identities in ${((performance.now() - seedStart) / 1000).toFixed(1)} s\n`,
    );

    for (const scenario of SCENARIOS) {
      const registry = new Registry();
      const clock = { t: Date.now() };
      const credential = new ClientSecretCredential(
        fake.tenantId,
        APP_ID,
        APP_SECRET,
        fake.credentialOptions({ additionalPolicies: [credentialMetricsPolicy(registry)] }),
      );
      const discovery = AzureDiscovery.fromConfig({
        credential,
        clusters: {
          [CLUSTER]: {
            subscriptionId: fake.subscriptionId,
            resourceGroup: "rg-platform",
            managedClusterName: CLUSTER,
            platformIdentity: { resourceGroup: "rg-platform", name: "id-berth-aso" },
          },
        },
        clientOptions: { endpoint: fake.url, credentialScopes: [ARM_SCOPE], additionalPolicies: [fake.trustPolicy] },
        registry,
        now: () => clock.t,
      });
      const simulateHour = async () => {
        for (let minute = 0; minute < 60; minute++) {
          const due = teams.filter((_, i) => i % RESYNC_MIN === minute % RESYNC_MIN);
          await pool(due, 32, (t) => scenario.reconcile(discovery, t, clusterObj, minute));
          clock.t += 60_000;
        }
      };
      const wall = performance.now();
      fake.stats.reset();
      await simulateHour(); // hour 1: cold start
      const cold = armCalls(fake.stats.requests);
      fake.stats.reset();
      await simulateHour(); // hour 2: steady state
      const steady = armCalls(fake.stats.requests);
      const byOp = Object.entries(fake.stats.byOperation())
        .filter(([op]) => !op.startsWith("Entra"))
        .map(([op, s]) => `${op.replace(/_.*/, "")}:${Object.values(s).reduce((a, b) => a + b, 0)}`)
        .join(" ");
      const metric = await registry.getSingleMetric("berth_arm_requests_total")!.get();
      const counted = metric.values
        .filter((v) => !String(v.labels.operation).startsWith("Entra"))
        .reduce((a, v) => a + v.value, 0);
      if (counted !== cold + steady)
        process.stderr.write(`warning: metric counted ${counted}, fake saw ${cold + steady}\n`);
      const cache = await registry.getSingleMetric("berth_azure_discovery_cache_total")!.get();
      const byResult = (r: string) =>
        cache.values.filter((v) => v.labels.result === r).reduce((a, v) => a + v.value, 0);
      const reads = byResult("hit") + byResult("miss") + byResult("coalesced") + byResult("stale") + byResult("error");
      const aso = (teamsN * ASO_RESOURCES_PER_TEAM * 60) / ASO_SYNC_PERIOD_MIN;
      rows.push([
        String(teamsN),
        scenario.name,
        String(teamsN * (60 / RESYNC_MIN)),
        String(cold),
        String(steady),
        (steady / teamsN).toFixed(3),
        String(aso),
        `${((steady / aso) * 100).toFixed(1)} %`,
        `${((byResult("hit") / reads) * 100).toFixed(2)} % of ${reads}`,
        byOp,
        `${((performance.now() - wall) / 1000).toFixed(1)} s`,
      ]);
    }
    await fake.close();
  }
  const header = [
    "teams",
    "scenario",
    "reconciles/h",
    "ARM calls hour 1 (cold)",
    "ARM calls/h steady",
    "per team/h",
    "ASO re-sync calls/h",
    "Berth / ASO",
    "reads from cache (2 h)",
    "steady calls by type",
    "wall",
  ];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  console.log(
    `\nARM calls per hour — controller resync every ${RESYNC_MIN} min; cache TTLs: cluster ${DEFAULT_TTLS.cluster / 60_000} min, identity ${DEFAULT_TTLS.identity / 60_000} min, role definition ${DEFAULT_TTLS.roleDefinition / 3_600_000} h, negative ${DEFAULT_TTLS.negative / 1000} s`,
  );
  console.log(`ASO: ${ASO_RESOURCES_PER_TEAM} resources/team × 60 / azureSyncPeriod ${ASO_SYNC_PERIOD_MIN} min\n`);
  console.log(line(header));
  console.log(line(widths.map((w) => "-".repeat(w))));
  for (const r of rows) console.log(line(r));
  console.log("\n(Entra token requests are not in these figures: about 1–2 per token lifetime (1 h) per process.)");
}

function armCalls(requests: Array<{ service: string }>): number {
  return requests.filter((r) => r.service === "arm").length;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
