/**
 * Adoption with real Flux: a team onboarded by hand is running on the cluster, applied by Flux; Berth adopts it in
 * one commit. Flux must then suspend the hand-written Kustomization and apply Berth's, and no object of the team may
 * be deleted (the audit log of the apiserver holds every delete request). Two trees, each wired into the cluster's
 * root Kustomization the way its platform wired it:
 *   - tests/fixtures/adoption/repo: plain per-team folders, the platform's variables in flux-system;
 *   - tests/fixtures/adoption/platform: one parameterised base, per-team Flux substitution, per-environment folders
 *     in `spec.path`, and objects Berth does not render (carried as the team's extra manifests), then the clean-up
 *     the adoption report lists, which must delete nothing either.
 */
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
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
import { eventually } from "../support/wait.js";
import type { Obj } from "../controller/helpers.js";

const FIXTURE = join(REPO_ROOT, "tests", "fixtures", "adoption", "repo");
const PLATFORM_FIXTURE = join(REPO_ROOT, "tests", "fixtures", "adoption", "platform");

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

// v1, and v5, whose Kustomization impersonates the team applier under the admission policy (ADR 0023, 0024).
describe.each(["v1", "v5"])(
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
      const revision = res.json.revision as string;
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
  const cm = parse(
    await readFile(join(PLATFORM_FIXTURE, "clusters", PLATFORM_CLUSTER, "cluster-vars.yaml"), "utf8"),
  ) as { data: Record<string, string> };
  return {
    ...cm.data,
    CLUSTER_OIDC_ISSUER_URL: `https://westeurope.oic.prod-aks.azure.com/${cm.data.TENANT_ID}/${PLATFORM_CLUSTER}/`,
  };
}

describe("adopting a team behind Flux substitution with objects Berth does not render, with real Flux: nothing deleted", () => {
  let platform: FluxPlatform;
  let vars: Record<string, string>;

  beforeAll(async () => {
    vars = await fixtureVars();
    platform = await startFluxPlatform({
      platform: (p) => {
        const cluster = p.environments[0]!.clusters[0]!;
        cluster.vars = { ...cluster.vars, ...vars };
      },
      seed: async () => {
        const files = new Map<string, string>();
        for (const dir of ["tenant-base", "tenant-azure", "tenants/dev/01/ledger"])
          for (const [p, c] of await filesUnder(join(PLATFORM_FIXTURE, dir), PLATFORM_FIXTURE)) files.set(p, c);
        for (const f of ["tenants.yaml", "tenants/ledger.yaml"])
          files.set(
            `clusters/${PLATFORM_CLUSTER}/${f}`,
            await readFile(join(PLATFORM_FIXTURE, "clusters", PLATFORM_CLUSTER, f), "utf8"),
          );
        // The bootstrap pipeline adds the issuer to cluster-vars (the fixture says so).
        const clusterVars = parse(
          await readFile(join(PLATFORM_FIXTURE, "clusters", PLATFORM_CLUSTER, "cluster-vars.yaml"), "utf8"),
        ) as Obj & { data: Record<string, string> };
        clusterVars.data.CLUSTER_OIDC_ISSUER_URL = vars.CLUSTER_OIDC_ISSUER_URL!;
        files.set(`clusters/${PLATFORM_CLUSTER}/cluster-vars.yaml`, stringify(clusterVars));
        // The platform runs the Azure App Configuration provider: its CRD is on the cluster (a minimal one here, keeping
        // every field: what matters is that the kind exists, as it does on that platform).
        files.set(`clusters/${PLATFORM_CLUSTER}/app-configuration-provider-crd.yaml`, stringify(APP_CONFIGURATION_CRD));
        files.set(
          `clusters/${PLATFORM_CLUSTER}/kustomization.yaml`,
          clusterKustomization([...PLATFORM_CLUSTER_FILES, "tenants.yaml"]),
        );
        return files;
      },
    });
  }, 300_000);

  afterAll(async () => {
    await platform?.stop();
  });

  it("adopts in one commit: every object the tenant had keeps its uid, the carried ones move to Berth's Kustomization, nothing is deleted", async () => {
    const tenant = await eventually(
      "tenant-ledger Ready (applied by Flux, with the platform's substitution)",
      async () => {
        const k = await platform.kustomization("flux-system", "tenant-ledger");
        return (k?.status as { conditions?: Array<{ type: string; status: string }> } | undefined)?.conditions?.some(
          (c) => c.type === "Ready" && c.status === "True",
        )
          ? k
          : undefined;
      },
      240_000,
    );
    const inventory = (tenant.status as { inventory: { entries: Array<{ id: string; v: string }> } }).inventory.entries;
    expect(inventory.length).toBeGreaterThanOrEqual(15);
    const uids = new Map<string, string>();
    for (const entry of inventory) {
      const [namespace, name, group, kind] = entry.id.split("_") as [string, string, string, string];
      const o = await platform.admin.get(group ? `${group}/${entry.v}` : entry.v, kind, namespace || undefined, name);
      expect(o, entry.id).toBeDefined();
      uids.set(entry.id, String(o!.metadata.uid));
    }
    const before = await platform.cluster.deletes();

    const res = await platform.request("POST", "/v1/teams/ledger/adopt", { keepAzureNames: true });
    expect(res.statusCode, res.body).toBe(201);
    await platform.waitKustomizationReady(ASO_NAMESPACE, "team-ledger", res.json.revision, 240_000);
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
      const [namespace, name, group, kind] = entry.id.split("_") as [string, string, string, string];
      const o = await platform.admin.get(group ? `${group}/${entry.v}` : entry.v, kind, namespace || undefined, name);
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
    const cleanup = res.json.report.cleanup as string[];
    expect(cleanup).toContain(`clusters/${PLATFORM_CLUSTER}/tenants/ledger.yaml`);
    // The platform engineer's commit: the hand-written files gone, the cluster no longer applying them.
    const head = await handEdit(
      platform.repoUrl,
      {
        ...Object.fromEntries([...cleanup, `clusters/${PLATFORM_CLUSTER}/tenants.yaml`].map((path) => [path, null])),
        [`clusters/${PLATFORM_CLUSTER}/kustomization.yaml`]: clusterKustomization(PLATFORM_CLUSTER_FILES),
      },
      { env: platform.gitEnv },
    );
    await platform.waitKustomizationReady("flux-system", "flux-system", head);
    await eventually(
      "tenant-ledger gone",
      async () => (await platform.kustomization("flux-system", "tenant-ledger")) === undefined,
      120_000,
    );
    const after = (await platform.cluster.deletes())
      .slice(before.length)
      .filter((d) => d.code === 200 || d.code === 202);
    expect(after.map((d) => `${d.resource} ${d.name}`).sort()).toEqual([
      "kustomizations.kustomize.toolkit.fluxcd.io tenant-ledger",
      "kustomizations.kustomize.toolkit.fluxcd.io tenants",
    ]);
    for (const entry of inventory) {
      const [namespace, name, group, kind] = entry.id.split("_") as [string, string, string, string];
      expect(
        (await platform.admin.get(group ? `${group}/${entry.v}` : entry.v, kind, namespace || undefined, name))
          ?.metadata.uid,
        entry.id,
      ).toBe(uids.get(entry.id));
    }
  }, 600_000);
});

/** What the platform's cluster folder applies besides its hand-written tenants. */
const PLATFORM_CLUSTER_FILES = [
  "flux-system",
  "berth.yaml",
  "berth-teams.yaml",
  "berth-team-slices.yaml",
  "app-configuration-provider-crd.yaml",
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
