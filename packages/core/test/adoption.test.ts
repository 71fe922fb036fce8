/**
 * Adoption of hand-written tenants (tests/fixtures/adoption/repo, written as a platform team would have,
 * not by Berth) against the platform of infra/local/berth.yaml.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse, parseAllDocuments } from "yaml";
import { describe, expect, it } from "vitest";
import {
  Adoption,
  AdoptionRecreatesError,
  AdoptionUnmappableError,
  adoptionRequestSchema,
  Onboarding,
  platformSchema,
  TeamExistsError,
  validateTeam,
  type AdoptionRequest,
} from "@berth/core";
import { loadCatalog, MemoryRepoTree, REPO_ROOT, rerender, treeFromFolder } from "./fixtures.js";

const FIXTURE = join(REPO_ROOT, "tests/fixtures/adoption/repo");
const PLATFORM = platformSchema.parse(
  (parse(readFileSync(join(REPO_ROOT, "infra/local/berth.yaml"), "utf8")) as { platform: unknown }).platform,
);
const onboarding = new Onboarding(PLATFORM, loadCatalog("v3"));
const adoption = new Adoption(onboarding);

const handWritten = (): MemoryRepoTree => treeFromFolder(FIXTURE);
const request = (r: Partial<AdoptionRequest> = {}) => adoptionRequestSchema.parse(r);
type Obj = { spec: Record<string, unknown> };

async function failure<T extends Error>(p: Promise<unknown>, type: new (...a: never[]) => T): Promise<T> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(type);
  return err as T;
}

describe("adopting the hand-written payments tenant", () => {
  it("refuses, loudly, to rename its resource groups and identities in Azure", async () => {
    const err = await failure(adoption.plan(handWritten(), "payments", request()), AdoptionRecreatesError);
    expect(err.changes.map((c) => [c.cluster, c.kind, c.from, c.to])).toEqual([
      ["aks-dev-weu", "ResourceGroup", "rg-payments-dev-weu", "rg-payments--aks-dev-weu"],
      ["aks-dev-weu", "UserAssignedIdentity", "id-payments-dev-aks-dev-weu", "id-payments--aks-dev-weu"],
      ["aks-prod-neu", "ResourceGroup", "rg-payments-prod-neu", "rg-payments--aks-prod-neu"],
      ["aks-prod-neu", "UserAssignedIdentity", "id-payments-prod-aks-prod-neu", "id-payments--aks-prod-neu"],
      ["aks-prod-weu", "ResourceGroup", "rg-payments-prod-weu", "rg-payments--aks-prod-weu"],
      ["aks-prod-weu", "UserAssignedIdentity", "id-payments-prod-aks-prod-weu", "id-payments--aks-prod-weu"],
    ]);
    expect(err.message).toContain("keepAzureNames");
  });

  it("keeping the names: infers the team, renders Berth's layout with those names, and suspends the old Kustomizations", async () => {
    const tree = handWritten();
    const plan = await adoption.plan(tree, "payments", request({ keepAzureNames: true }));
    expect(plan.team).toEqual({
      name: "payments",
      description: "Payments: card and SEPA processing",
      owners: ["0b9a3c1e-1111-4222-8333-444455556666"],
      environments: ["dev", "prod"],
      quota: { cpu: "8", memory: "16Gi", pods: 100 },
      containerLimits: { defaultRequest: { cpu: "100m", memory: "128Mi" }, default: { cpu: "500m", memory: "512Mi" } },
      roleAssignments: [{ role: "rg-contributor" }],
      labels: { "cost-center": "cc-4711", team: "payments" },
      azureNames: {
        resourceGroups: {
          "aks-dev-weu": "rg-payments-dev-weu",
          "aks-prod-neu": "rg-payments-prod-neu",
          "aks-prod-weu": "rg-payments-prod-weu",
        },
        identities: {
          "aks-dev-weu": "id-payments-dev-aks-dev-weu",
          "aks-prod-neu": "id-payments-prod-aks-prod-neu",
          "aks-prod-weu": "id-payments-prod-aks-prod-weu",
        },
      },
      templateVersion: "v3",
    });
    const files = plan.change.files;
    expect(files.get("teams/payments/clusters/aks-dev-weu/identity.yaml")).toContain(
      "azureName: id-payments-dev-aks-dev-weu",
    );
    expect(files.get("teams/payments/clusters/aks-prod-neu/resource-group.yaml")).toContain(
      "azureName: rg-payments-prod-neu",
    );
    expect(files.get("teams/payments/base/team.yaml")).toContain("rg-payments-prod-weu");
    // The hand-written Kustomizations: kept, comments and all, but suspended and no longer pruning.
    for (const c of ["aks-dev-weu", "aks-prod-weu", "aks-prod-neu"]) {
      const text = files.get(`clusters/${c}/tenants/payments.yaml`)!;
      expect(text).toContain("# Onboarded by hand, PLAT-1423. Owners: #team-payments.");
      expect(text).toMatch(/\n {2}suspend: true\n/);
      expect(text).toMatch(/\n {2}prune: false\n/);
      expect(text).toContain("deleting this file deletes nothing");
      expect(text).toContain(`path: ./tenants/payments/${c.slice(4)}`);
    }
    // Nothing of the hand-written tree is deleted or edited, apart from the three Kustomizations.
    const touched = [...files.keys()].filter((p) => tree.get(p) !== undefined);
    expect(touched.sort()).toEqual([
      "clusters/aks-dev-weu/tenants/payments.yaml",
      "clusters/aks-prod-neu/tenants/payments.yaml",
      "clusters/aks-prod-weu/tenants/payments.yaml",
    ]);
    expect([...files.values()].every((c) => c !== null)).toBe(true);

    const { report } = plan;
    expect(report.kustomizations.map((k) => [k.cluster, k.name, k.fate])).toEqual([
      ["aks-dev-weu", "tenant-payments", "suspended"],
      ["aks-prod-neu", "tenant-payments", "suspended"],
      ["aks-prod-weu", "tenant-payments", "suspended"],
    ]);
    expect(report.mapped.find((m) => m.field === "quota")?.from).toBe(
      "tenants/payments/base/quota.yaml#ResourceQuota/payments/payments-quota",
    );
    expect(report.azureNames.every((a) => a.kept)).toBe(true);
    const fate = (ref: string, cluster = "aks-dev-weu") =>
      report.objects.find((o) => o.ref === ref && o.cluster === cluster);
    expect(fate("Namespace payments")?.fate).toBe("updated");
    expect(fate("ServiceAccount payments/workload")?.fate).toBe("updated");
    // The old resource group detaches on delete already; the old identity would take the identity with it.
    expect(fate("ResourceGroup flux-config/payments-rg")).toMatchObject({
      fate: "left-behind",
      note: expect.stringContaining("detaches, so deleting it leaves"),
    });
    expect(fate("UserAssignedIdentity flux-config/payments-identity")).toMatchObject({
      fate: "left-behind",
      note: expect.stringContaining("or ASO deletes"),
    });
    expect(fate("ResourceQuota payments/payments-quota")).toMatchObject({
      fate: "left-behind",
      note: expect.stringContaining("delete it"),
    });
    expect(report.warnings).toEqual([
      "values only the live cluster knows (platform-vars written by Berth's controller): ${CLUSTER_OIDC_ISSUER_URL}, ${SUBSCRIPTION_ID}; kept as variables",
      "9 hand-written ASO object(s) would delete their Azure resource if deleted as they are (UserAssignedIdentity flux-config/payments-identity, FederatedIdentityCredential flux-config/payments-workload, RoleAssignment flux-config/payments-rg-contributor): see objects[].note",
    ]);
    expect(report.cleanup).toContain("tenants/payments/base/quota.yaml");
    expect(report.cleanup).toContain("clusters/aks-dev-weu/tenants/payments.yaml");
    expect(report.cleanup).not.toContain("tenants/search/base/quota.yaml");

    // Committed, the repo holds exactly Berth's render of the adopted team: re-rendering changes nothing.
    const after = tree.apply(plan.change);
    expect(await onboarding.readTeam(after, "payments")).toEqual(plan.team);
    expect((await rerender(onboarding, after, "payments")).files.size).toBe(0);
    await failure(adoption.plan(after, "payments", request({ keepAzureNames: true })), TeamExistsError);
  });

  it("a Kustomization file shared with another team's: only the team's document is suspended, and the advice names that document, not the file (issue 37, N1)", async () => {
    // Platforms often keep every tenant's Kustomization of a cluster in one file: search's stays live (prune: true).
    const shared = handWritten();
    const clusters = ["aks-dev-weu", "aks-prod-neu", "aks-prod-weu"];
    const change = new Map<string, string | null>();
    for (const c of clusters) {
      const own = (t: string) => shared.get(`clusters/${c}/tenants/${t}.yaml`);
      const search = own("search") ?? own("payments")!.replaceAll("payments", "search");
      change.set(`clusters/${c}/tenants.yaml`, `${own("payments")!}---\n${search}`);
      for (const t of ["payments", "search"]) if (own(t)) change.set(`clusters/${c}/tenants/${t}.yaml`, null);
    }
    const tree = shared.apply(change);
    const plan = await adoption.plan(tree, "payments", request({ keepAzureNames: true }));
    for (const c of clusters) {
      const path = `clusters/${c}/tenants.yaml`;
      expect(plan.report.cleanup).not.toContain(path);
      expect(plan.report.cleanupDocuments).toContainEqual({
        path,
        kind: "Kustomization",
        namespace: "flux-system",
        name: "tenant-payments",
      });
      const [payments, search] = parseAllDocuments(plan.change.files.get(path)!).map((d) => d.toJS() as Obj);
      expect(payments!.spec).toMatchObject({ suspend: true, prune: false });
      expect(search!.spec).toMatchObject({ prune: true });
      expect(search!.spec.suspend).toBeUndefined();
      const text = plan.change.files.get(path)!;
      expect(text).not.toContain("deleting this file");
      expect(text).not.toContain("Delete it");
      expect(text).toContain("remove this document (not the file, which holds other documents)");
    }
    // The team's own files are still advised whole.
    expect(plan.report.cleanup).toContain("tenants/payments/base/quota.yaml");
  });

  it("the preview shows every file with its status and a unified diff", async () => {
    const preview = await adoption.preview(handWritten(), "payments", request({ keepAzureNames: true }));
    expect(preview.files.map((f) => f.path).sort()).toEqual([...preview.change.files.keys()].sort());
    expect(preview.files.find((f) => f.path === "clusters/aks-dev-weu/tenants/payments.yaml")?.status).toBe("modified");
    expect(preview.files.find((f) => f.path === "teams/payments/base/team.yaml")?.status).toBe("added");
    expect(preview.diff).toContain("+  suspend: true");
    expect(preview.diff).toContain("-  prune: true");
  });

  it("fields given in the request win over what is inferred", async () => {
    const plan = await adoption.plan(
      handWritten(),
      "payments",
      request({ keepAzureNames: true, spec: { description: "Payments", roleAssignments: [] } }),
    );
    expect(plan.team.description).toBe("Payments");
    expect(plan.team.roleAssignments).toEqual([]);
    expect(plan.report.mapped.find((m) => m.field === "description")?.from).toBe("the request");
  });
});

describe("kept Azure names in the team spec", () => {
  it("must name clusters the team lands on, with valid Azure names", () => {
    const base = { name: "ledger", owners: ["0b9a3c1e-1111-4222-8333-444455556666"], environments: ["dev"] };
    expect(() =>
      validateTeam({ ...base, azureNames: { identities: { "aks-prod-weu": "id-ledger" } } }, PLATFORM),
    ).toThrow(/azureNames.identities.aks-prod-weu must name a cluster the team lands on: aks-dev-weu/);
    expect(() =>
      validateTeam({ ...base, azureNames: { resourceGroups: { "aks-dev-weu": "rg/../x" } } }, PLATFORM),
    ).toThrow(/must be an Azure resource group name/);
    expect(
      validateTeam({ ...base, azureNames: { resourceGroups: { "aks-dev-weu": "rg-ledger" } } }, PLATFORM).azureNames,
    ).toEqual({ resourceGroups: { "aks-dev-weu": "rg-ledger" } });
  });
});

describe("what adoption cannot map is a report, never a guess", () => {
  it("search: a quota with different requests and limits, a PVC limit, a role outside the catalog (its view binding and NetworkPolicy are carried)", async () => {
    const err = await failure(
      adoption.plan(handWritten(), "search", request({ keepAzureNames: true })),
      AdoptionUnmappableError,
    );
    expect(err.issues).toEqual([
      {
        field: "tenants/search/base/quota.yaml#ResourceQuota/search/search-quota spec.hard.persistentvolumeclaims",
        rule: "Berth's quota has cpu, memory and pods only",
      },
      {
        field: "tenants/search/base/quota.yaml#ResourceQuota/search/search-quota spec.hard",
        rule: "requests.cpu and limits.cpu differ (2 vs 4); Berth sets them equal",
      },
      {
        field: "tenants/search/dev-weu/azure.yaml#RoleAssignment/flux-config/search-owner spec.roleDefinitionReference",
        rule: "role definition 8e3af657-a8ff-443c-a75c-2fe8c4bcb635 on the team's resource group is not in the platform's role catalog",
      },
    ]);
  });

  it("a team with no hand-written manifests, and unsupported kustomize features", async () => {
    const none = await failure(adoption.plan(handWritten(), "orders", request()), AdoptionUnmappableError);
    expect(none.issues[0]!.rule).toContain("builds a Namespace named orders: nothing to adopt");
    const patched = handWritten().apply(
      new Map([
        [
          "tenants/payments/base/kustomization.yaml",
          "resources:\n  - namespace.yaml\nconfigMapGenerator:\n  - name: settings\n    literals: [a=b]\n",
        ],
      ]),
    );
    const err = await failure(
      adoption.plan(patched, "payments", request({ keepAzureNames: true })),
      AdoptionUnmappableError,
    );
    expect(err.issues).toContainEqual({
      field: "clusters/aks-dev-weu/tenants/payments.yaml",
      rule: "cannot build tenants/payments/dev-weu: tenants/payments/base/kustomization.yaml: uses configMapGenerator, which adoption does not build (it builds resources, namespace, namePrefix, nameSuffix, commonLabels, labels, commonAnnotations, patches, patchesStrategicMerge, patchesJson6902)",
    });
  });

  it("owners nobody named: the request must give them", async () => {
    const tree = handWritten().apply(
      new Map([
        ["tenants/payments/base/rbac.yaml", null],
        [
          "tenants/payments/base/kustomization.yaml",
          "resources:\n  - namespace.yaml\n  - quota.yaml\n  - limitrange.yaml\n  - serviceaccount.yaml\n",
        ],
      ]),
    );
    const err = await failure(
      adoption.plan(tree, "payments", request({ keepAzureNames: true })),
      AdoptionUnmappableError,
    );
    expect(err.issues).toEqual([
      { field: "spec.owners", rule: expect.stringContaining("give spec.owners in the request") },
    ]);
    const plan = await adoption.plan(
      tree,
      "payments",
      request({ keepAzureNames: true, spec: { owners: ["9c8b7a65-4321-4fed-8cba-0987654321fe"] } }),
    );
    expect(plan.team.owners).toEqual(["9c8b7a65-4321-4fed-8cba-0987654321fe"]);
  });
});
