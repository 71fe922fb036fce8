/**
 * Adoption of a team written the way large ASO-on-AKS platforms write every team
 * (tests/fixtures/adoption/platform): one parameterised tenant base, per-team Flux postBuild.substitute,
 * the platform's variables from substituteFrom, per-environment folders reached through a spec.path that
 * its parent Kustomization substitutes, and objects Berth does not render.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse, parseAllDocuments } from "yaml";
import { describe, expect, it } from "vitest";
import {
  Adoption,
  AdoptionUnmappableError,
  adoptionRequestSchema,
  Onboarding,
  platformSchema,
  type Team,
} from "@berth/core";
import { loadCatalog, MemoryRepoTree, REPO_ROOT, rerender, treeFromFolder } from "./fixtures.js";

const FIXTURE = join(REPO_ROOT, "tests/fixtures/adoption/platform");
/** The part of infra/local/berth.yaml's platform these tests change (platformSchema checks the whole). */
type RawPlatform = { environments: Array<{ clusters: Array<{ name: string; vars?: Record<string, string> }> }> };
const raw = (parse(readFileSync(join(REPO_ROOT, "infra/local/berth.yaml"), "utf8")) as { platform: RawPlatform })
  .platform;
/** The per-cluster values the platform keeps in its cluster-vars ConfigMaps, in Berth's config. */
const VARS: Record<string, Record<string, string>> = {
  "aks-dev-weu": { ENVIRONMENT_ID: "01", SERVICEBUS_NAMESPACE: "sb-shared-dev-01" },
  "aks-prod-weu": { ENVIRONMENT_ID: "01", SERVICEBUS_NAMESPACE: "sb-shared-prod-01" },
  "aks-prod-neu": { ENVIRONMENT_ID: "02", SERVICEBUS_NAMESPACE: "sb-shared-prod-02" },
};
function platformWith(vars: Record<string, Record<string, string>>) {
  const copy = structuredClone(raw);
  for (const env of copy.environments) for (const c of env.clusters) c.vars = { ...c.vars, ...vars[c.name] };
  return platformSchema.parse(copy);
}
const PLATFORM = platformWith(VARS);
const onboarding = new Onboarding(PLATFORM, loadCatalog("v3"));
const adoption = new Adoption(onboarding);
const request = adoptionRequestSchema.parse({ keepAzureNames: true });

const platformTree = (): MemoryRepoTree => treeFromFolder(FIXTURE);

/** An extra manifest's object as these tests read it. */
type Carried = {
  kind: string;
  metadata: { name: string; namespace: string; annotations?: Record<string, string> };
  spec: Record<string, unknown>;
};
const carried = (e: { object: Record<string, unknown> }) => e.object as Carried;
const extraRefs = (team: Team) =>
  (team.extraManifests ?? []).map(
    (e) => `${e.cluster ?? "*"} ${e.object.kind} ${carried(e).metadata.namespace}/${carried(e).metadata.name}`,
  );

describe("a team behind Flux substitution, with objects Berth does not render", () => {
  it("builds each cluster's Kustomization as Flux would and infers the team from the substituted objects", async () => {
    const plan = await adoption.plan(platformTree(), "ledger", request);
    expect(plan.team).toMatchObject({
      name: "ledger",
      description: "Ledger, double-entry bookkeeping",
      owners: ["3f2e1d0c-aaaa-4bbb-8ccc-ddddeeeeffff"],
      environments: ["dev", "prod"],
      // QUOTA_CPU "2000" from the Kustomization's substitute: carried as it is, however odd.
      quota: { cpu: "2000", memory: "64Gi", pods: 300 },
      containerLimits: { defaultRequest: { cpu: "100m", memory: "128Mi" }, default: { cpu: "500m", memory: "512Mi" } },
      roleAssignments: [{ role: "rg-contributor" }, { role: "servicebus-data-owner" }],
      labels: { team: "ledger", "platform.example.org/managed-by": "tenant-base" },
      azureNames: {
        resourceGroups: {
          "aks-dev-weu": "rg-ledger-dev-01",
          "aks-prod-weu": "rg-ledger-prod-01",
          "aks-prod-neu": "rg-ledger-prod-02",
        },
        identities: {
          "aks-dev-weu": "id-ledger-dev-01",
          "aks-prod-weu": "id-ledger-prod-01",
          "aks-prod-neu": "id-ledger-prod-02",
        },
      },
    });
    // Only the platform's own files besides: the cluster's root kustomization and variables are not objects to adopt.
    expect(plan.report.warnings.filter((w) => w.includes("cannot be read"))).toEqual([]);
    expect(plan.report.kustomizations.map((k) => [k.cluster, k.path, k.fate])).toEqual([
      ["aks-dev-weu", "clusters/aks-dev-weu/tenants/ledger.yaml", "suspended"],
      ["aks-prod-neu", "clusters/aks-prod-neu/tenants/ledger.yaml", "suspended"],
      ["aks-prod-weu", "clusters/aks-prod-weu/tenants/ledger.yaml", "suspended"],
    ]);
  });

  it("carries what Berth does not render, once for every cluster when they agree, per cluster when not", async () => {
    const { team } = await adoption.plan(platformTree(), "ledger", request);
    expect(extraRefs(team)).toEqual([
      "* FederatedIdentityCredential flux-config/ledger-db-admin",
      "* HelmRepository ledger/team-charts",
      "* NetworkPolicy ledger/allow-from-ingress",
      "* NetworkPolicy ledger/default-deny-ingress",
      "* RoleBinding ledger/db-admin-edit",
      "* RoleBinding ledger/sre-view",
      "* ServiceAccount ledger/db-admin",
      // ENVIRONMENT_ID differs per cluster, and production's overlay patches the LimitRange.
      "aks-dev-weu AzureAppConfigurationProvider ledger/app-settings",
      "aks-dev-weu LimitRange ledger/tenant-limits",
      "aks-prod-neu AzureAppConfigurationProvider ledger/app-settings",
      "aks-prod-neu LimitRange ledger/tenant-limits",
      "aks-prod-weu AzureAppConfigurationProvider ledger/app-settings",
      "aks-prod-weu LimitRange ledger/tenant-limits",
    ]);
    const extra = (kind: string, name: string, cluster = "aks-prod-neu") =>
      carried(
        team.extraManifests!.find(
          (e) =>
            e.object.kind === kind &&
            carried(e).metadata.name === name &&
            (e.cluster === undefined || e.cluster === cluster),
        )!,
      );
    // The LimitRange keeps what Berth's does not hold (min, max); Berth's container-defaults holds the defaults.
    expect(extra("LimitRange", "tenant-limits").spec.limits).toEqual([
      { type: "Container", min: { cpu: "10m", memory: "16Mi" }, max: { cpu: "4", memory: "8Gi" } },
    ]);
    // The credential follows the identity to Berth's object (same Azure identity); the issuer stays a variable.
    expect(extra("FederatedIdentityCredential", "ledger-db-admin").spec).toMatchObject({
      owner: { name: "ledger" },
      issuer: "${CLUSTER_OIDC_ISSUER_URL}",
      subject: "system:serviceaccount:ledger:db-admin",
    });
    // Team values resolved; a platform-vars key stays a variable for Berth's Kustomization to substitute.
    expect(extra("HelmRepository", "team-charts").spec.url).toBe(
      "oci://acrplatform${ENVIRONMENT}.azurecr.io/charts/ledger",
    );
    expect(extra("AzureAppConfigurationProvider", "app-settings").spec.endpoint).toBe(
      "https://appcs-ledger-${ENVIRONMENT}-02.azconfig.io",
    );
    expect(extra("LimitRange", "tenant-limits").metadata.annotations).toEqual({
      "platform.example.org/reviewed": "PLAT-2311",
    });
  });

  it("accounts for every object of the tree: mapped, carried, written by the controller, or left behind with advice", async () => {
    const tree = platformTree();
    const plan = await adoption.plan(tree, "ledger", request);
    const fates = new Map(plan.report.objects.filter((o) => o.cluster === "aks-prod-neu").map((o) => [o.ref, o.fate]));
    expect(Object.fromEntries(fates)).toEqual({
      "Namespace ledger": "updated",
      "ResourceQuota ledger/tenant-quota": "left-behind",
      "LimitRange ledger/tenant-limits": "carried",
      "RoleBinding ledger/tenant-admins": "left-behind",
      "RoleBinding ledger/sre-view": "carried",
      "RoleBinding ledger/db-admin-edit": "carried",
      "ServiceAccount ledger/workload": "updated",
      "ServiceAccount ledger/db-admin": "carried",
      "NetworkPolicy ledger/default-deny-ingress": "carried",
      "NetworkPolicy ledger/allow-from-ingress": "carried",
      "HelmRepository ledger/team-charts": "carried",
      "AzureAppConfigurationProvider ledger/app-settings": "carried",
      "Secret ledger/aso-credential": "controller",
      "ResourceGroup flux-config/ledger-rg": "left-behind",
      "UserAssignedIdentity flux-config/ledger-id": "left-behind",
      "FederatedIdentityCredential flux-config/ledger-aso": "left-behind",
      "FederatedIdentityCredential flux-config/ledger-workload": "left-behind",
      "FederatedIdentityCredential flux-config/ledger-db-admin": "carried",
      "RoleAssignment flux-config/ledger-rg-contributor": "left-behind",
      "RoleAssignment flux-config/ledger-servicebus": "left-behind",
    });
    // The shared-resource role: the catalog's ARM id with the cluster's SERVICEBUS_NAMESPACE, and the
    // subscription (which only the live cluster knows) matched as a pattern, said so.
    expect(plan.report.roles.filter((r) => r.cluster === "aks-prod-neu")).toEqual([
      {
        cluster: "aks-prod-neu",
        object: "tenant-azure/role-assignments.yaml#RoleAssignment/flux-config/ledger-rg-contributor",
        role: "rg-contributor",
        scope: "team-resource-group",
      },
      {
        cluster: "aks-prod-neu",
        object: "tenant-azure/role-assignments.yaml#RoleAssignment/flux-config/ledger-servicebus",
        role: "servicebus-data-owner",
        scope: "pattern",
        variables: { SUBSCRIPTION_ID: "${SUBSCRIPTION_ID}" },
      },
    ]);
    // Committed: the carried objects are in Berth's layout, applied by the team's Kustomization, and a
    // re-render (an update, a rollout) changes nothing.
    const after = tree.apply(plan.change);
    const base = parseAllDocuments(after.get("teams/ledger/base/extra.yaml")!).map((d) => d.toJS() as Carried);
    expect(base.map((o) => `${o.kind}/${o.metadata.name}`)).toContain("NetworkPolicy/allow-from-ingress");
    expect(after.get("teams/ledger/base/kustomization.yaml")).toContain("- extra.yaml");
    expect((await rerender(onboarding, after, "ledger")).files.size).toBe(0);
  });

  it("a variable Berth cannot resolve is a 422 that names it, the file and where Flux would take it from", async () => {
    const withoutId = platformWith({ ...VARS, "aks-prod-neu": { SERVICEBUS_NAMESPACE: "sb-shared-prod-02" } });
    const err = await new Adoption(new Onboarding(withoutId, loadCatalog("v3")))
      .plan(platformTree(), "ledger", request)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AdoptionUnmappableError);
    expect((err as AdoptionUnmappableError).issues).toEqual([
      {
        field: "clusters/aks-prod-neu/tenants/ledger.yaml (Flux Kustomization tenant-ledger)",
        rule: "${ENVIRONMENT_ID} cannot be resolved: its parent Kustomization substitutes it from the cluster's variables, and Berth's config for cluster aks-prod-neu has no value for it (platform.environments[].clusters[].vars); Berth never guesses a value",
      },
    ]);
    const tree = platformTree().apply(
      new Map([
        [
          "tenant-base/helm-repository.yaml",
          readFileSync(join(FIXTURE, "tenant-base/helm-repository.yaml"), "utf8").replace("charts/", "${CHART_PATH}/"),
        ],
      ]),
    );
    const err2 = (await adoption.plan(tree, "ledger", request).catch((e: unknown) => e)) as AdoptionUnmappableError;
    expect(err2.issues[0]).toEqual({
      field: "tenant-base/helm-repository.yaml#HelmRepository/${TEAM_NAMESPACE}/team-charts".replace(
        "${TEAM_NAMESPACE}/",
        "",
      ),
      rule: "${CHART_PATH} cannot be resolved: not in tenant-ledger's postBuild.substitute (clusters/aks-dev-weu/tenants/ledger.yaml); Flux would take it from ConfigMap flux-system/cluster-vars, and Berth's config for cluster aks-dev-weu has no value for it (platform.environments[].clusters[].vars); Berth never guesses a value",
    });
  });
});
