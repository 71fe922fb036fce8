/** Derived names: within their limits for the longest inputs, stable, and never shared by two teams. */
import { describe, expect, it } from "vitest";
import {
  azureNames,
  CLUSTER_NAME_MAX,
  FEDERATED_CREDENTIAL_NAME,
  LIMITS,
  Onboarding,
  roleAssignmentUuid,
  TEAM_NAME_MAX,
  teamNames,
  validateTeam,
  type Platform,
} from "@berth/core";
import { loadTemplates, makePlatform, OWNERS, platformWithSubjectMode } from "./fixtures.js";
import { parseManifests } from "./yaml-helpers.js";

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
/** Azure: resource group names 1-90 of alphanumerics, `-_.()`, not ending in `.`. */
const AZURE_RESOURCE_GROUP = /^[-\w.()]{1,90}$/;
/** Azure: user-assigned identity names 3-128, starting alphanumeric, then alphanumerics, `-` and `_`. */
const AZURE_IDENTITY = /^[a-zA-Z0-9][a-zA-Z0-9_-]{2,127}$/;
/** The FederatedIdentityCredential CRD's own pattern for spec.azureName. */
const ASO_FIC_AZURE_NAME = /^[a-zA-Z0-9]{1}[a-zA-Z0-9-_]{2,119}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const LONG_TEAM = `t${"x".repeat(TEAM_NAME_MAX - 3)}-9`;
const LONG_CLUSTER = `c${"y".repeat(CLUSTER_NAME_MAX - 3)}-9`;
const LONG_ROLE = `r${"z".repeat(28)}9`;

function longPlatform(mode: "aso-controller" | "aso-workload" | "both"): Platform {
  return platformWithSubjectMode(mode, {
    asoNamespace: `a${"s".repeat(62)}`,
    environments: [{ name: `e${"n".repeat(29)}`, clusters: [{ name: LONG_CLUSTER }, { name: "c" }] }],
    roleCatalog: [
      { id: LONG_ROLE, roleDefinitionId: "b24988ac-6180-42a0-ab88-20f7382dd24c", scope: { kind: "teamResourceGroup" } },
      {
        id: "r",
        roleDefinitionId: "acdd72a7-3385-48ef-bd42-f606fba81ae7",
        scope: { kind: "armId", armId: "/subscriptions/${SUBSCRIPTION_ID}/resourceGroups/x" },
      },
    ],
  });
}

describe("for the longest team and cluster names", () => {
  it("the inputs are as long as allowed", () => {
    expect(LONG_TEAM).toHaveLength(40);
    expect(LONG_CLUSTER).toHaveLength(40);
    expect(LONG_ROLE).toHaveLength(30);
    expect(TEAM_NAME_MAX).toBe(40);
    expect(CLUSTER_NAME_MAX).toBe(40);
  });

  it("every derived name fits its limit", () => {
    for (const team of [LONG_TEAM, "ab"]) {
      for (const cluster of [LONG_CLUSTER, "c"]) {
        const names = teamNames(team);
        const azure = azureNames(team, cluster);
        expect(names.namespace.length).toBeLessThanOrEqual(LIMITS.namespace);
        expect(names.namespace).toMatch(DNS1123_LABEL);
        for (const n of [
          names.resourceGroup,
          names.identity,
          names.identityConfigMap,
          names.fluxKustomization,
          names.serviceAccount,
          names.asoWorkloadServiceAccount,
          names.asoCredentialSecret,
          names.ownersRoleBinding,
          names.federatedCredential("aso-controller"),
          names.federatedCredential("aso-workload"),
          names.roleAssignment(LONG_ROLE),
          names.roleAssignment("r"),
        ]) {
          expect(n.length, n).toBeLessThanOrEqual(LIMITS.kubernetesObject);
          expect(n, n).toMatch(DNS1123_SUBDOMAIN);
        }
        // Flux labels everything it applies with kustomize.toolkit.fluxcd.io/name: the Kustomization's name.
        expect(names.fluxKustomization.length).toBeLessThanOrEqual(63);
        expect(azure.resourceGroup.length).toBeLessThanOrEqual(LIMITS.resourceGroup);
        expect(azure.resourceGroup).toMatch(AZURE_RESOURCE_GROUP);
        expect(azure.resourceGroup.endsWith(".")).toBe(false);
        expect(azure.identity.length).toBeGreaterThanOrEqual(LIMITS.identityMin);
        expect(azure.identity.length).toBeLessThanOrEqual(LIMITS.identityMax);
        expect(azure.identity).toMatch(AZURE_IDENTITY);
        for (const kind of ["aso-controller", "aso-workload"] as const) {
          expect(azure.federatedCredential(kind)).toMatch(FEDERATED_CREDENTIAL_NAME);
          expect(azure.federatedCredential(kind)).toMatch(ASO_FIC_AZURE_NAME);
        }
      }
    }
  });

  it.each(["aso-controller", "aso-workload", "both"] as const)("every rendered name fits (subject mode %s)", (mode) => {
    const platform = longPlatform(mode);
    const team = validateTeam(
      {
        name: LONG_TEAM,
        owners: [OWNERS.payments],
        environments: [platform.environments[0]!.name],
        roleAssignments: [{ role: LONG_ROLE }, { role: "r" }],
        labels: { [`k${"x".repeat(62)}`]: "v".repeat(63) },
      },
      platform,
    );
    const files = new Onboarding(platform, loadTemplates()).render(team);
    let objects = 0;
    for (const [path, text] of files) {
      for (const o of parseManifests(text, "1.1")) {
        if (o.apiVersion === "kustomize.config.k8s.io/v1beta1" || o.kind === "Team") continue;
        objects++;
        const name: string = o.metadata.name;
        if (o.kind === "Namespace") {
          expect(name.length, path).toBeLessThanOrEqual(63);
          expect(name, path).toMatch(DNS1123_LABEL);
        } else {
          expect(name.length, path).toBeLessThanOrEqual(253);
          expect(name, path).toMatch(DNS1123_SUBDOMAIN);
          expect(o.metadata.namespace, path).toMatch(DNS1123_LABEL);
          expect(o.metadata.namespace!.length, path).toBeLessThanOrEqual(63);
        }
        for (const [k, v] of Object.entries(o.metadata.labels ?? {})) {
          expect(v, `${path} label ${k}`).toMatch(LABEL_VALUE);
          expect((v as string).length, `${path} label ${k}`).toBeLessThanOrEqual(63);
        }
        if (o.kind === "ResourceGroup") {
          expect(o.spec!.azureName!.length, path).toBeLessThanOrEqual(90);
          expect(o.spec!.azureName, path).toMatch(AZURE_RESOURCE_GROUP);
        }
        if (o.kind === "UserAssignedIdentity") expect(o.spec!.azureName, path).toMatch(AZURE_IDENTITY);
        if (o.kind === "FederatedIdentityCredential") expect(o.spec!.azureName, path).toMatch(ASO_FIC_AZURE_NAME);
        if (o.kind === "RoleAssignment") expect(o.spec!.azureName, path).toMatch(UUID);
        if (o.kind === "UserAssignedIdentity") {
          for (const ref of Object.values(
            (o.spec!.operatorSpec as { configMaps: Record<string, { name: string }> }).configMaps,
          ))
            expect(ref.name).toMatch(DNS1123_SUBDOMAIN);
        }
      }
    }
    expect(objects).toBeGreaterThan(10);
  });
});

describe("RoleAssignment azureName", () => {
  const scope = "resourceGroup:rg-payments--aks-dev-weu";

  it("is a name-based (v5) UUID, the same for the same inputs", () => {
    const a = roleAssignmentUuid("payments", "aks-dev-weu", "rg-contributor", scope);
    expect(a).toMatch(UUID);
    expect(roleAssignmentUuid("payments", "aks-dev-weu", "rg-contributor", scope)).toBe(a);
    // Pinned: a different value means every existing assignment would be recreated in Azure.
    expect(a).toBe("a550566d-1173-5cdf-ab85-93652670579e");
  });

  it("differs when the team, cluster, role or scope differs, including where plain joining would collide", () => {
    const base = ["payments", "aks-dev-weu", "rg-contributor", scope] as const;
    const variants: Array<readonly [string, string, string, string]> = [
      base,
      ["orders", base[1], base[2], base[3]],
      [base[0], "aks-prod-weu", base[2], base[3]],
      [base[0], base[1], "postgres-reader", base[3]],
      [base[0], base[1], base[2], "/subscriptions/x/resourceGroups/y"],
      // Boundaries move between fields: a naive concatenation would give the same string.
      ["payments-aks", "dev-weu", base[2], base[3]],
      [base[0], "aks-dev-weu-rg", "contributor", base[3]],
      [base[0], base[1], "rg", `contributor${base[3]}`],
    ];
    const ids = variants.map((v) => roleAssignmentUuid(...v));
    expect(new Set(ids).size).toBe(variants.length);
  });

  it("differs per cluster and per role in rendered output, for both scope kinds", () => {
    const platform = makePlatform();
    const team = validateTeam(
      {
        name: "payments",
        owners: [OWNERS.payments],
        environments: ["prod"],
        roleAssignments: [{ role: "rg-contributor" }, { role: "servicebus-data-owner" }],
      },
      platform,
    );
    const files = new Onboarding(platform, loadTemplates()).render(team);
    const ids: string[] = [];
    for (const cluster of ["aks-prod-weu", "aks-prod-neu"]) {
      for (const ra of parseManifests(files.get(`teams/payments/clusters/${cluster}/role-assignment.yaml`)!, "1.1"))
        ids.push(ra.spec!.azureName!);
    }
    expect(ids).toHaveLength(4);
    expect(new Set(ids).size).toBe(4);
    const again = new Onboarding(platform, loadTemplates()).render(team);
    expect(again.get("teams/payments/clusters/aks-prod-weu/role-assignment.yaml")).toBe(
      files.get("teams/payments/clusters/aks-prod-weu/role-assignment.yaml"),
    );
  });
});

describe("no two teams share a name", () => {
  // Team and cluster names whose hyphens make naive `${team}-${cluster}` joins collide.
  const TEAMS = ["ab", "ab-c", "ab-c-d", "c-d", "ab-cd", "abc"];
  const CLUSTERS = ["c", "c-d", "d", "cd", "c-d-e"];
  const ROLES = ["c", "c-d", "d", "reader", "rg-reader"];

  it("in Azure: resource group and identity names are unique per (team, cluster)", () => {
    const rgs = new Map<string, string>();
    const ids = new Map<string, string>();
    for (const team of TEAMS) {
      for (const cluster of CLUSTERS) {
        const { resourceGroup, identity } = azureNames(team, cluster);
        const who = `${team}@${cluster}`;
        expect(rgs.get(resourceGroup), `${who} and ${rgs.get(resourceGroup)} share ${resourceGroup}`).toBeUndefined();
        expect(ids.get(identity), `${who} and ${ids.get(identity)} share ${identity}`).toBeUndefined();
        rgs.set(resourceGroup, who);
        ids.set(identity, who);
      }
    }
  });

  it("in the ASO namespace: object names are unique per kind across teams and roles", () => {
    const seen = new Map<string, string>();
    for (const team of TEAMS) {
      const n = teamNames(team);
      const objects: Array<[string, string]> = [
        ["ResourceGroup", n.resourceGroup],
        ["UserAssignedIdentity", n.identity],
        ["ConfigMap", n.identityConfigMap],
        ["Kustomization", n.fluxKustomization],
        ["FederatedIdentityCredential", n.federatedCredential("aso-controller")],
        ["FederatedIdentityCredential", n.federatedCredential("aso-workload")],
        ...ROLES.map((r) => ["RoleAssignment", n.roleAssignment(r)] as [string, string]),
      ];
      for (const [kind, name] of objects) {
        const key = `${kind}/${name}`;
        expect(seen.get(key), `${team} and ${seen.get(key)} both own ${key}`).toBeUndefined();
        seen.set(key, team);
      }
    }
  });

  it("in rendered output of several teams on one cluster", () => {
    const platform = makePlatform({
      environments: [{ name: "dev", clusters: [{ name: "c" }, { name: "b-c" }] }],
      roleCatalog: ["reader", "rg-reader", "c", "b-c"].map((id) => ({
        id,
        roleDefinitionId: "acdd72a7-3385-48ef-bd42-f606fba81ae7",
        scope: { kind: "teamResourceGroup" as const },
      })),
    });
    const onboarding = new Onboarding(platform, loadTemplates());
    const k8s = new Map<string, string>();
    const azure = new Map<string, string>();
    for (const name of ["ab", "ab-rg", "ab-b"]) {
      const team = validateTeam(
        {
          name,
          owners: [OWNERS.payments],
          environments: ["dev"],
          roleAssignments: platform.roleCatalog.map((r) => ({ role: r.id })),
        },
        platform,
      );
      for (const [path, text] of onboarding.render(team)) {
        const cluster = /clusters\/([^/]+)\//.exec(path)?.[1] ?? "all";
        for (const o of parseManifests(text, "1.1")) {
          if (!o.metadata) continue;
          for (const c of cluster === "all" ? ["c", "b-c"] : [cluster]) {
            const key = `${c}:${o.apiVersion.split("/")[0]}/${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;
            if (o.kind !== "Team") {
              expect(k8s.get(key), `${name} and ${k8s.get(key)} both render ${key}`).toBeUndefined();
              k8s.set(key, name);
            }
          }
          if (o.spec?.azureName && o.kind !== "FederatedIdentityCredential") {
            expect(
              azure.get(o.spec.azureName),
              `${name} and ${azure.get(o.spec.azureName)} share Azure name ${o.spec.azureName}`,
            ).toBeUndefined();
            azure.set(o.spec.azureName, name);
          }
        }
      }
    }
    expect(azure.size).toBe(3 * 2 * (2 + 4)); // per team and cluster: RG, identity, four role assignments
  });
});
