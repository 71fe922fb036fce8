/**
 * Adoption with real Flux: a team onboarded by hand is running on the cluster, applied by Flux; Berth adopts it in
 * one commit. Flux must then suspend the hand-written Kustomization and apply Berth's, and no object of the team may
 * be deleted (the audit log of the apiserver holds every delete request). Two trees, each wired into the cluster's
 * root Kustomization the way its platform wired it:
 *   - tests/fixtures/adoption/repo: plain per-team folders, the platform's variables in flux-system;
 *   - tests/fixtures/adoption/platform: one parameterised base, per-team Flux substitution, per-environment folders
 *     in `spec.path`, and objects Berth does not render (carried as the team's extra manifests), then the clean-up
 *     the adoption report lists, which must delete nothing either;
 *   - tests/fixtures/adoption/flux-namespace: every Flux object in the platform's Flux namespace, the team's own
 *     HelmRepository there too, and `${clientId}` substituted from the ConfigMap ASO exports the identity's ids to.
 */
// needs: cluster dist
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { adoptionPreviewResponse, adoptionResponse } from "@berth/api-contract";
import { parse, stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/berth.js";
import {
  ASO_NAMESPACE,
  PLATFORM_CLUSTER,
  requestReconcile,
  startFluxPlatform,
  testPlatform,
  type FluxPlatform,
} from "../support/flux-platform.js";
import { handEdit } from "../support/git-remotes.js";
import type { FluxOptions } from "../support/flux.js";
import { eventually } from "../support/wait.js";
import type { Obj } from "../controller/helpers.js";

const FIXTURE = join(REPO_ROOT, "tests", "fixtures", "adoption", "repo");
const PLATFORM_FIXTURE = join(REPO_ROOT, "tests", "fixtures", "adoption", "platform");
const FLUX_NAMESPACE_FIXTURE = join(REPO_ROOT, "tests", "fixtures", "adoption", "flux-namespace");

async function filesUnder(dir: string, root = FIXTURE): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      if (e.isDirectory()) await walk(join(d, e.name));
      else out.set(relative(root, join(d, e.name)), await readFile(join(d, e.name), "utf8"));
    }
  };
  await walk(dir);
  return out;
}

// v1, and v6 (the newest), whose Kustomization impersonates the team applier under the admission policy (ADR 0023, 0024).
describe.each(["v1", "v6"])(
  "adopting a hand-written team that Flux applied onto templates %s, with real Flux: nothing of the team is deleted",
  (templateVersion) => {
    let platform: FluxPlatform;

    beforeAll(async () => {
      platform = await startFluxPlatform({
        platform: (p) => (p.templateVersion = templateVersion),
        seed: async () => {
          const files = await filesUnder(join(FIXTURE, "tenants", "payments"));
          files.set(
            `clusters/${PLATFORM_CLUSTER}/tenants/payments.yaml`,
            await readFile(join(FIXTURE, "clusters", PLATFORM_CLUSTER, "tenants", "payments.yaml"), "utf8"),
          );
          // That platform's own wiring: its root Kustomization lists its tenants, and the variables they substitute
          // live beside them (Flux reads substituteFrom only in the Kustomization's namespace).
          const vars = testPlatform().environments[0]!.clusters[0]!.vars;
          files.set(
            `clusters/${PLATFORM_CLUSTER}/platform-vars.yaml`,
            stringify({
              apiVersion: "v1",
              kind: "ConfigMap",
              metadata: { name: "platform-vars", namespace: "flux-system" },
              data: { ...vars, CLUSTER_NAME: PLATFORM_CLUSTER },
            }),
          );
          files.set(
            `clusters/${PLATFORM_CLUSTER}/kustomization.yaml`,
            stringify({
              apiVersion: "kustomize.config.k8s.io/v1beta1",
              kind: "Kustomization",
              resources: [
                "flux-system",
                "berth.yaml",
                "berth-teams.yaml",
                "berth-team-slices.yaml",
                "platform-vars.yaml",
                "tenants/payments.yaml",
              ],
            }),
          );
          return files;
        },
      });
    }, 300_000);

    afterAll(async () => {
      await platform?.stop();
    });

    it("the hand-written tenant runs: Flux applied it", async () => {
      await eventually(
        "namespace payments applied by tenant-payments",
        async () => {
          const ns = await platform.admin.get("v1", "Namespace", undefined, "payments");
          return (
            (ns?.metadata.labels as Record<string, string> | undefined)?.["kustomize.toolkit.fluxcd.io/name"] ===
            "tenant-payments"
          );
        },
        180_000,
      );
      await platform.waitKustomizationReady("flux-system", "tenant-payments", await platform.head(), 180_000);
    });

    it("adopts in one commit: the old Kustomization suspended, Berth's Ready, nothing deleted", async () => {
      const uid = (await platform.admin.get("v1", "Namespace", undefined, "payments"))!.metadata.uid;
      const before = await platform.cluster.deletes();
      const res = await platform.request("POST", "/v1/teams/payments/adopt", { keepAzureNames: true });
      expect(res.statusCode, res.body).toBe(201);
      const { revision } = adoptionResponse.parse(res.json);
      await platform.waitKustomizationReady(ASO_NAMESPACE, "team-payments", revision, 180_000);
      const old = await eventually(
        "tenant-payments suspended on the cluster",
        async () => {
          const k = await platform.kustomization("flux-system", "tenant-payments");
          return (k?.spec as { suspend?: boolean } | undefined)?.suspend ? k : undefined;
        },
        60_000,
      );
      expect(old).toBeDefined();
      // Berth's Kustomization reads the team's artifact, fetched at once (ADR 0019, 0020); the old one reads
      // flux-system, fetched at its own poll, so it may apply the team once more before Flux applies its suspension.
      // Berth's takes the objects back at its next reconcile (its interval; asked for here, as docs/adoption.md says).
      await requestReconcile(
        platform.admin,
        "kustomize.toolkit.fluxcd.io/v1",
        "Kustomization",
        ASO_NAMESPACE,
        "team-payments",
      );
      const ns = (await platform.admin.get("v1", "Namespace", undefined, "payments"))!;
      expect(ns.metadata.uid).toBe(uid);
      expect((ns.metadata.labels as Record<string, string>)["kustomize.toolkit.fluxcd.io/name"]).toBe("team-payments");
      await eventually(
        "payments Ready through Berth",
        async () => (await platform.request("GET", "/v1/teams/payments/status")).json.clusters?.[0]?.ready,
        120_000,
      );
      expect(await platform.cluster.deletes()).toEqual(before);
      const ks = await platform.kustomization(ASO_NAMESPACE, "team-payments");
      expect((ks!.spec as { serviceAccountName?: string }).serviceAccountName).toBe(
        templateVersion === "v1" ? undefined : "berth-team-applier",
      );
    });
  },
);

/** The fixture platform's own variables for aks-dev-weu (its cluster-vars ConfigMap), as Berth's config gives them. */
async function fixtureVars(): Promise<Record<string, string>> {
  const data = await fixtureClusterVars(PLATFORM_FIXTURE);
  return {
    ...data,
    CLUSTER_OIDC_ISSUER_URL: `https://westeurope.oic.prod-aks.azure.com/${data.TENANT_ID}/${PLATFORM_CLUSTER}/`,
  };
}

/** The data of a fixture's `clusters/<cluster>/cluster-vars.yaml` ConfigMap. */
async function fixtureClusterVars(fixture: string): Promise<Record<string, string>> {
  const cm = parse(await readFile(join(fixture, "clusters", PLATFORM_CLUSTER, "cluster-vars.yaml"), "utf8")) as {
    data: Record<string, string>;
  };
  return cm.data;
}

/**
 * The test platform with `vars` in Berth's config for its cluster and a hand-written tree committed with the install:
 * the fixture's `folders`, its cluster folder's `clusterFiles`, the cluster-vars ConfigMap with `clusterVars`, and
 * the cluster root listing `resources`.
 */
function startWithTree(o: {
  vars: Record<string, string>;
  fixture: string;
  folders: string[];
  clusterFiles: string[];
  clusterVars: Record<string, string>;
  extra?: Record<string, string>;
  resources: string[];
  flux?: FluxOptions;
}): Promise<FluxPlatform> {
  const cluster = (f: string) => `clusters/${PLATFORM_CLUSTER}/${f}`;
  return startFluxPlatform({
    ...(o.flux ? { flux: o.flux } : {}),
    platform: (p) => {
      const c = p.environments[0]!.clusters[0]!;
      c.vars = { ...c.vars, ...o.vars };
    },
    seed: async () => {
      const files = new Map<string, string>();
      for (const dir of o.folders)
        for (const [p, c] of await filesUnder(join(o.fixture, dir), o.fixture)) files.set(p, c);
      for (const f of o.clusterFiles)
        files.set(cluster(f), await readFile(join(o.fixture, "clusters", PLATFORM_CLUSTER, f), "utf8"));
      const clusterVars = parse(await readFile(join(o.fixture, cluster("cluster-vars.yaml")), "utf8")) as Obj;
      files.set(cluster("cluster-vars.yaml"), stringify({ ...clusterVars, data: o.clusterVars }));
      for (const [f, content] of Object.entries(o.extra ?? {})) files.set(cluster(f), content);
      files.set(cluster("kustomization.yaml"), clusterKustomization(o.resources));
      return files;
    },
  });
}

describe("adopting a team behind Flux substitution with objects Berth does not render, with real Flux: nothing deleted", () => {
  let platform: FluxPlatform;
  let vars: Record<string, string>;

  beforeAll(async () => {
    vars = await fixtureVars();
    // The bootstrap pipeline adds the issuer to cluster-vars (the fixture says so).
    const clusterVars = await fixtureClusterVars(PLATFORM_FIXTURE);
    clusterVars.CLUSTER_OIDC_ISSUER_URL = vars.CLUSTER_OIDC_ISSUER_URL!;
    platform = await startWithTree({
      vars,
      fixture: PLATFORM_FIXTURE,
      folders: ["tenant-base", "tenant-azure", "tenants/dev/01/ledger"],
      clusterFiles: ["tenants.yaml", "tenants/ledger.yaml"],
      clusterVars,
      // The platform runs the Azure App Configuration provider: its CRD is on the cluster (a minimal one here, keeping
      // every field: what matters is that the kind exists, as it does on that platform).
      extra: { "app-configuration-provider-crd.yaml": stringify(APP_CONFIGURATION_CRD) },
      resources: [...PLATFORM_CLUSTER_FILES, "tenants.yaml"],
    });
  }, 300_000);

  afterAll(async () => {
    await platform?.stop();
  });

  it("adopts in one commit: every object the tenant had keeps its uid, the carried ones move to Berth's Kustomization, nothing is deleted", async () => {
    const tenant = await readyKustomization(platform, "flux-system", "tenant-ledger");
    const inventory = (tenant.status as { inventory: { entries: InventoryEntry[] } }).inventory.entries;
    expect(inventory.length).toBeGreaterThanOrEqual(15);
    const uids = await uidsOf(platform, inventory);
    const before = await platform.cluster.deletes();

    const res = await platform.request("POST", "/v1/teams/ledger/adopt", { keepAzureNames: true });
    expect(res.statusCode, res.body).toBe(201);
    const adopted = adoptionResponse.parse(res.json);
    await platform.waitKustomizationReady(ASO_NAMESPACE, "team-ledger", adopted.revision, 240_000);
    await eventually(
      "tenant-ledger suspended",
      async () =>
        ((await platform.kustomization("flux-system", "tenant-ledger"))?.spec as { suspend?: boolean }).suspend,
      60_000,
    );
    // As above: tenant-ledger may apply the tenant once more before Flux applies its suspension; Berth's
    // Kustomization takes the objects back at its next reconcile (asked for here, as docs/adoption.md says).
    await requestReconcile(
      platform.admin,
      "kustomize.toolkit.fluxcd.io/v1",
      "Kustomization",
      ASO_NAMESPACE,
      "team-ledger",
    );
    const carried = new Set<string>();
    for (const entry of inventory) {
      const [, name, , kind] = entry.id.split("_") as [string, string, string, string];
      const o = await readEntry(platform, entry);
      expect(o?.metadata.uid, `${entry.id} kept`).toBe(uids.get(entry.id));
      if (
        (o!.metadata.labels as Record<string, string> | undefined)?.["kustomize.toolkit.fluxcd.io/name"] ===
        "team-ledger"
      )
        carried.add(`${kind}/${name}`);
    }
    // The objects Berth does not render are Berth's team's now, in place.
    expect([...carried]).toEqual(
      expect.arrayContaining([
        "NetworkPolicy/default-deny-ingress",
        "HelmRepository/team-charts",
        "ServiceAccount/db-admin",
        "FederatedIdentityCredential/ledger-db-admin",
        "AzureAppConfigurationProvider/app-settings",
      ]),
    );
    expect(await platform.cluster.deletes()).toEqual(before);

    // The clean-up the report lists: the hand-written files go. Ledger was this platform's last hand-written tenant,
    // so its `tenants` wiring goes too. Flux prunes the `tenants` Kustomization, and with it tenant-ledger, which,
    // suspended, prunes nothing (Flux garbage-collects only a Kustomization that is not suspended).
    const { cleanup } = adopted.report;
    expect(cleanup).toContain(`clusters/${PLATFORM_CLUSTER}/tenants/ledger.yaml`);
    await cleanUpAndCheck(
      platform,
      {
        remove: [...cleanup, `clusters/${PLATFORM_CLUSTER}/tenants.yaml`],
        clusterFiles: PLATFORM_CLUSTER_FILES,
        gone: { namespace: "flux-system", name: "tenant-ledger", parent: "tenants" },
      },
      before,
      inventory,
      uids,
    );
  }, 600_000);
});

describe("adopting a team whose Flux source and identity ConfigMap live in the platform's Flux namespace, with real Flux: nothing deleted", () => {
  let platform: FluxPlatform;
  let vars: Record<string, string>;

  beforeAll(async () => {
    // This cluster's Azure facts are the test platform's (its fake Azure's tenant and subscription, the issuer the
    // bootstrap pipeline adds): Berth's controller checks the identity's tenant against them before it writes the
    // credential. The platform's other variables are the fixture's, in Berth's config too.
    const facts = testPlatform().environments[0]!.clusters[0]!.vars!;
    vars = { ...(await fixtureClusterVars(FLUX_NAMESPACE_FIXTURE)) };
    for (const key of ["TENANT_ID", "SUBSCRIPTION_ID", "CLUSTER_OIDC_ISSUER_URL"]) vars[key] = String(facts[key]);
    platform = await startWithTree({
      vars,
      fixture: FLUX_NAMESPACE_FIXTURE,
      folders: ["services"],
      clusterFiles: ["services.yaml", "services/grants.yaml"],
      clusterVars: vars,
      resources: [...FLUX_NAMESPACE_CLUSTER_FILES, "services.yaml"],
      // The tree was written for Flux before 2.9: `${clientId}` has no default, and its ConfigMap exists only once
      // ASO made the identity, which this same Kustomization applies. Flux 2.9 fails such a build (strict
      // substitution is its new default), so a platform keeping this tree opts out, as here.
      flux: { featureGates: { "kustomize-controller": ["StrictPostBuildSubstitutions=false"] } },
    });
  }, 300_000);

  afterAll(async () => {
    await platform?.stop();
  });

  it("adopts in one commit: the team's HelmRepository moves into its namespace, ${clientId} is the identity's, nothing is deleted", async () => {
    const tenant = await readyKustomization(platform, ASO_NAMESPACE, "grants-base", "services");
    const inventory = (tenant.status as { inventory: { entries: InventoryEntry[] } }).inventory.entries;
    expect(inventory.map((e) => e.id).sort()).toEqual(
      expect.arrayContaining([
        `${ASO_NAMESPACE}_grants-helm-repo_source.toolkit.fluxcd.io_HelmRepository`,
        "grants_aso-credential__Secret",
        "grants_workload__ServiceAccount",
      ]),
    );
    const uids = await uidsOf(platform, inventory);
    const before = await platform.cluster.deletes();

    const preview = await platform.request("POST", "/v1/teams/grants/adopt/preview", { keepAzureNames: true });
    expect(preview.statusCode, preview.body).toBe(200);
    const fates = adoptionPreviewResponse.parse(preview.json).report.objects.map((o) => `${o.ref}: ${o.fate}`);
    expect(fates).toContain("HelmRepository flux-config/grants-helm-repo: carried");
    expect(fates).toHaveLength(inventory.length);

    const res = await platform.request("POST", "/v1/teams/grants/adopt", { keepAzureNames: true });
    expect(res.statusCode, res.body).toBe(201);
    const adopted = adoptionResponse.parse(res.json);
    await platform.waitKustomizationReady(ASO_NAMESPACE, "team-grants", adopted.revision, 240_000);
    await eventually(
      "grants-base suspended",
      async () => ((await platform.kustomization(ASO_NAMESPACE, "grants-base"))?.spec as { suspend?: boolean }).suspend,
      60_000,
    );
    await requestReconcile(
      platform.admin,
      "kustomize.toolkit.fluxcd.io/v1",
      "Kustomization",
      ASO_NAMESPACE,
      "team-grants",
    );
    // The team's charts, now beside its HelmReleases, applied by Berth's Kustomization; the old one stays in place.
    const moved = await eventually(
      "HelmRepository grants/grants-helm-repo",
      () => platform.admin.get("source.toolkit.fluxcd.io/v1", "HelmRepository", "grants", "grants-helm-repo"),
      120_000,
    );
    expect((moved.metadata.labels as Record<string, string> | undefined)?.["kustomize.toolkit.fluxcd.io/name"]).toBe(
      "team-grants",
    );
    expect((moved.spec as { url: string }).url).toBe(`oci://${vars.APPLICATION_ACR_NAME}.azurecr.io/helm`);
    // What the tenant substituted as ${clientId}, Berth's controller writes: its identity's client id, in the same
    // two objects.
    let seen = "";
    const clientIds = await eventually(
      "the team identity's client id in aso-credential and on ServiceAccount workload",
      async () => {
        const secret = await platform.admin.get("v1", "Secret", "grants", "aso-credential");
        const account = await platform.admin.get("v1", "ServiceAccount", "grants", "workload");
        const inSecret = Buffer.from(
          String((secret?.data as Record<string, string> | undefined)?.AZURE_CLIENT_ID ?? ""),
          "base64",
        ).toString();
        const onAccount = (account?.metadata.annotations as Record<string, string> | undefined)?.[
          "azure.workload.identity/client-id"
        ];
        const team = await platform.admin.get("berth.dev/v1alpha1", "Team", undefined, "grants");
        seen = JSON.stringify({ secret: secret?.metadata, inSecret, account: account?.metadata, team: team?.status });
        const identity = (team?.status as { identity?: { clientId?: string } } | undefined)?.identity?.clientId;
        return inSecret && onAccount ? { inSecret, onAccount, identity } : undefined;
      },
      120_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; last seen: ${seen}`, { cause: err });
    });
    expect(clientIds.identity).toMatch(/^[0-9a-f-]{36}$/);
    expect(clientIds).toEqual({
      inSecret: clientIds.identity,
      onAccount: clientIds.identity,
      identity: clientIds.identity,
    });
    for (const entry of inventory)
      expect((await readEntry(platform, entry))?.metadata.uid, `${entry.id} kept`).toBe(uids.get(entry.id));
    expect(await platform.cluster.deletes()).toEqual(before);

    // grants was this platform's last hand-written team: the clean-up takes its `services` wiring too.
    const { cleanup } = adopted.report;
    expect(cleanup).toContain(`clusters/${PLATFORM_CLUSTER}/services/grants.yaml`);
    await cleanUpAndCheck(
      platform,
      {
        remove: [...cleanup, `clusters/${PLATFORM_CLUSTER}/services.yaml`],
        clusterFiles: FLUX_NAMESPACE_CLUSTER_FILES,
        gone: { namespace: ASO_NAMESPACE, name: "grants-base", parent: "services" },
      },
      before,
      inventory,
      uids,
    );
  }, 600_000);
});

/** The Kustomization once Flux reports it Ready; on a timeout, its conditions (or its absence) and its parent's. */
async function readyKustomization(platform: FluxPlatform, namespace: string, name: string, parent?: string) {
  const conditions = async (n: string) =>
    JSON.stringify(((await platform.kustomization(namespace, n))?.status as { conditions?: unknown })?.conditions);
  try {
    return await eventually(
      `${namespace}/${name} Ready (applied by Flux, with the platform's substitution)`,
      async () => {
        const k = await platform.kustomization(namespace, name);
        return (k?.status as { conditions?: Array<{ type: string; status: string }> } | undefined)?.conditions?.some(
          (c) => c.type === "Ready" && c.status === "True",
        )
          ? k
          : undefined;
      },
      240_000,
    );
  } catch (err) {
    const parentState = parent ? `; ${parent}: ${await conditions(parent)}` : "";
    throw new Error(`${(err as Error).message}; ${name}: ${await conditions(name)}${parentState}`, { cause: err });
  }
}

type InventoryEntry = { id: string; v: string };

/** Each inventory entry's object uid, as it is now (every entry must exist). */
async function uidsOf(platform: FluxPlatform, inventory: InventoryEntry[]): Promise<Map<string, string>> {
  const uids = new Map<string, string>();
  for (const entry of inventory) {
    const o = await readEntry(platform, entry);
    expect(o, entry.id).toBeDefined();
    uids.set(entry.id, String(o!.metadata.uid));
  }
  return uids;
}

/** The object a Kustomization's inventory entry names (`<namespace>_<name>_<group>_<kind>`), as it is now. */
function readEntry(platform: FluxPlatform, entry: InventoryEntry) {
  const [namespace, name, group, kind] = entry.id.split("_") as [string, string, string, string];
  return platform.admin.get(group ? `${group}/${entry.v}` : entry.v, kind, namespace || undefined, name);
}

/**
 * The platform engineer's clean-up commit: the files the report lists and the wiring of the last hand-written team
 * gone; then only the two Kustomizations may be deleted (the suspended one prunes nothing), each object keeps its uid.
 */
async function cleanUpAndCheck(
  platform: FluxPlatform,
  o: { remove: string[]; clusterFiles: string[]; gone: { namespace: string; name: string; parent: string } },
  before: Awaited<ReturnType<FluxPlatform["cluster"]["deletes"]>>,
  inventory: InventoryEntry[],
  uids: Map<string, string>,
): Promise<void> {
  const head = await handEdit(
    platform.repoUrl,
    {
      ...Object.fromEntries(o.remove.map((path) => [path, null])),
      [`clusters/${PLATFORM_CLUSTER}/kustomization.yaml`]: clusterKustomization(o.clusterFiles),
    },
    { env: platform.gitEnv },
  );
  await platform.waitKustomizationReady("flux-system", "flux-system", head);
  await eventually(
    `${o.gone.name} gone`,
    async () => (await platform.kustomization(o.gone.namespace, o.gone.name)) === undefined,
    120_000,
  );
  const after = (await platform.cluster.deletes()).slice(before.length).filter((d) => d.code === 200 || d.code === 202);
  expect(after.map((d) => `${d.resource} ${d.name}`).sort()).toEqual(
    [o.gone.name, o.gone.parent].map((n) => `kustomizations.kustomize.toolkit.fluxcd.io ${n}`).sort(),
  );
  for (const entry of inventory)
    expect((await readEntry(platform, entry))?.metadata.uid, entry.id).toBe(uids.get(entry.id));
}

/** What the platform's cluster folder applies besides its hand-written tenants. */
const PLATFORM_CLUSTER_FILES = [
  "flux-system",
  "berth.yaml",
  "berth-teams.yaml",
  "berth-team-slices.yaml",
  "app-configuration-provider-crd.yaml",
  "cluster-vars.yaml",
];

/** What the Flux-namespace platform's cluster folder applies besides its teams' wiring (services.yaml). */
const FLUX_NAMESPACE_CLUSTER_FILES = [
  "flux-system",
  "berth.yaml",
  "berth-teams.yaml",
  "berth-team-slices.yaml",
  "cluster-vars.yaml",
];

function clusterKustomization(resources: string[]): string {
  return stringify({ apiVersion: "kustomize.config.k8s.io/v1beta1", kind: "Kustomization", resources });
}

const APP_CONFIGURATION_CRD = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "azureappconfigurationproviders.azconfig.io" },
  spec: {
    group: "azconfig.io",
    scope: "Namespaced",
    names: {
      kind: "AzureAppConfigurationProvider",
      listKind: "AzureAppConfigurationProviderList",
      plural: "azureappconfigurationproviders",
      singular: "azureappconfigurationprovider",
    },
    versions: [
      {
        name: "v1",
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } },
      },
    ],
  },
};
