/**
 * Flux's multi-tenancy lockdown with real Flux (ADR 0023), on flux/ as docs/install.md installs it, with
 * kustomize-controller refusing cross-namespace references (--no-cross-namespace-refs=true) and teams rendered with
 * templates v6 (the newest; v4 was the first), whose Kustomizations impersonate ServiceAccount
 * flux-config/berth-team-applier:
 *
 *   1. teams onboarded through the API are applied as that account and become Ready, the ConfigMap of the cluster's
 *      issuer in flux-config included (v6);
 *   2. a hand edit of one team's folder cannot write into another team: the admission policy refuses a kind RBAC
 *      allows outside the team's names, an ASO object of the team's own name under another team's owner, and ASO
 *      objects that read or export another team's ConfigMap (a role for bravo's identity, ids written over bravo's), and
 *      a ConfigMap of the team's own name in flux-config but the cluster's issuer (one ASO exports); RBAC
 *      refuses a kind a team never holds; the other team stays Ready, and reverting the edit makes the team Ready;
 *   3. offboarding prunes the team's objects as that account (the apiserver's audit log of deletes names it), and the
 *      account stays for the other teams.
 */
// needs: cluster dist
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { ASO_NAMESPACE, readyCondition, startFluxPlatform, type FluxPlatform } from "../support/flux-platform.js";
import { handEdit } from "../support/git-remotes.js";
import { eventually } from "../support/wait.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const APPLIER = `system:serviceaccount:${ASO_NAMESPACE}:berth-team-applier`;
const CLUSTER_DIR = "teams/alpha/clusters/aks-dev-weu";

describe("Flux's multi-tenancy lockdown with real Flux: a team's folder is applied with a team's rights", () => {
  let platform: FluxPlatform;

  beforeAll(async () => {
    platform = await startFluxPlatform({
      platform: (p) => (p.templateVersion = "v6"),
      flux: { extraArgs: { "kustomize-controller": ["--no-cross-namespace-refs=true"] } },
    });
  }, 300_000);

  afterAll(async () => {
    await platform?.stop();
  });

  const INDEX = `${CLUSTER_DIR}/kustomization.yaml`;
  const unlisted = (index: string, file: string) => index.replace(`  - ${file}\n`, "");
  /** A hand edit of alpha's cluster folder: `file` holds `object` and is listed once by its kustomization.yaml. */
  const alphaWith = (file: string, object: Record<string, unknown>) =>
    handEdit(
      platform.repoUrl,
      {
        [`${CLUSTER_DIR}/${file}`]: stringify(object),
        [INDEX]: (index) => unlisted(index, file).replace("resources:\n", `resources:\n  - ${file}\n`),
      },
      { env: platform.gitEnv },
    );
  const failureOf = (team: string, pattern: RegExp) =>
    eventually(
      `team-${team} fails with ${pattern}`,
      async () => {
        const ready = readyCondition(await platform.kustomization(ASO_NAMESPACE, `team-${team}`));
        return ready?.status === "False" && pattern.test(ready.message ?? "") ? ready.message : undefined;
      },
      180_000,
    );

  it("teams onboarded through the API are applied as the team applier and become Ready", async () => {
    for (const name of ["alpha", "bravo"]) {
      const res = await platform.request("POST", "/v1/teams", { name, owners: [OWNER], environments: ["dev"] });
      expect(res.statusCode, res.body).toBe(201);
      await platform.waitKustomizationReady(ASO_NAMESPACE, `team-${name}`, res.json.revision as string, 180_000);
      const ks = await platform.kustomization(ASO_NAMESPACE, `team-${name}`);
      expect((ks!.spec as { serviceAccountName?: string }).serviceAccountName).toBe("berth-team-applier");
      expect(await platform.admin.get("v1", "Namespace", undefined, name)).toBeDefined();
      // Flux substituted the cluster's issuer from platform-vars.
      const vars = (await platform.admin.get("v1", "ConfigMap", ASO_NAMESPACE, "platform-vars"))?.data as
        Record<string, string> | undefined;
      const issuer = await platform.admin.get("v1", "ConfigMap", ASO_NAMESPACE, `${name}--cluster-issuer`);
      expect(vars?.CLUSTER_OIDC_ISSUER_URL).toMatch(/^https:/);
      expect(issuer?.data).toEqual({ issuer: vars?.CLUSTER_OIDC_ISSUER_URL });
    }
  }, 400_000);

  it("a hand edit cannot write into another team: the policy refuses another team's names, RBAC other kinds", async () => {
    // A ServiceAccount: a kind the team applier may write, in bravo's namespace.
    await alphaWith("hijack.yaml", {
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: "hijack", namespace: "bravo" },
    });
    await platform.reconcileSource();
    const refused = await failureOf("alpha", /berth-team-applier/);
    expect(refused).toMatch(/team alpha may write only its namespace.*not ServiceAccount bravo\/hijack/s);
    expect(await platform.admin.get("v1", "ServiceAccount", "bravo", "hijack")).toBeUndefined();

    // An identity with alpha's own name, hung under bravo's resource group: ASO would act on bravo's.
    await alphaWith("hijack.yaml", {
      apiVersion: "managedidentity.azure.com/v1api20230131",
      kind: "UserAssignedIdentity",
      metadata: { name: "alpha--stolen", namespace: ASO_NAMESPACE },
      spec: { location: "westeurope", owner: { name: "bravo" } },
    });
    await platform.reconcileSource();
    expect(await failureOf("alpha", /own ASO objects as owner/)).toMatch(/not bravo/);
    expect(
      await platform.admin.get(
        "managedidentity.azure.com/v1api20230131",
        "UserAssignedIdentity",
        ASO_NAMESPACE,
        "alpha--stolen",
      ),
    ).toBeUndefined();

    // A role assignment of alpha's own name, under alpha's resource group, whose principal ASO would read from bravo's
    // identity ConfigMap: it would grant bravo's identity a role. Then an identity of alpha's whose ids ASO would write
    // over bravo's ConfigMap, which bravo's assignments read.
    const roleDefinition =
      "/subscriptions/3f2b1c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c";
    await alphaWith("hijack.yaml", {
      apiVersion: "authorization.azure.com/v1api20220401",
      kind: "RoleAssignment",
      metadata: { name: "alpha--granted", namespace: ASO_NAMESPACE },
      spec: {
        owner: { name: "alpha" },
        principalIdFromConfig: { name: "bravo-identity", key: "principalId" },
        roleDefinitionReference: { armId: roleDefinition },
      },
    });
    await platform.reconcileSource();
    expect(await failureOf("alpha", /own ConfigMaps and Secrets/)).toMatch(/not bravo-identity/);
    await alphaWith("hijack.yaml", {
      apiVersion: "managedidentity.azure.com/v1api20230131",
      kind: "UserAssignedIdentity",
      metadata: { name: "alpha--exporter", namespace: ASO_NAMESPACE },
      spec: {
        location: "westeurope",
        owner: { name: "alpha" },
        operatorSpec: { configMaps: { principalId: { name: "bravo-identity", key: "principalId" } } },
      },
    });
    await platform.reconcileSource();
    // The failure above names bravo-identity too: wait for this edit's object in the message.
    expect(await failureOf("alpha", /alpha--exporter/)).toMatch(/own ConfigMaps and Secrets.*not bravo-identity/s);
    expect(
      await platform.admin.get(
        "authorization.azure.com/v1api20220401",
        "RoleAssignment",
        ASO_NAMESPACE,
        "alpha--granted",
      ),
    ).toBeUndefined();
    expect(
      await platform.admin.get(
        "managedidentity.azure.com/v1api20230131",
        "UserAssignedIdentity",
        ASO_NAMESPACE,
        "alpha--exporter",
      ),
    ).toBeUndefined();

    // A ConfigMap of alpha's own name in flux-config, the issuer ASO exports from alpha's first credential for the
    // next one to trust: RBAC lets the team applier write ConfigMaps there (templates v6's cluster issuer), the
    // policy that one name alone, so no folder writes what ASO exports.
    await alphaWith("hijack.yaml", {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "alpha--aso-controller-issuer", namespace: ASO_NAMESPACE },
      data: { issuer: "https://issuer.attacker.example/" },
    });
    await platform.reconcileSource();
    expect(await failureOf("alpha", /alpha--aso-controller-issuer/)).toMatch(
      /may write only the ConfigMap alpha--cluster-issuer in flux-config, not alpha--aso-controller-issuer/,
    );
    expect(await platform.admin.get("v1", "ConfigMap", ASO_NAMESPACE, "alpha--aso-controller-issuer")).toBeUndefined();

    // A ClusterRoleBinding: no team folder holds one, so RBAC refuses it before the policy is asked.
    await alphaWith("hijack.yaml", {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "alpha-hijack" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
      subjects: [{ kind: "Group", name: "alpha-owners", apiGroup: "rbac.authorization.k8s.io" }],
    });
    await platform.reconcileSource();
    const forbidden = await failureOf("alpha", /clusterrolebindings/);
    expect(forbidden).toContain(APPLIER);
    expect(
      await platform.admin.get("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", undefined, "alpha-hijack"),
    ).toBeUndefined();
    expect(readyCondition(await platform.kustomization(ASO_NAMESPACE, "team-bravo"))?.status).toBe("True");

    // The edit reverted: alpha is Ready again at that commit.
    const revert = await handEdit(
      platform.repoUrl,
      { [INDEX]: (index) => unlisted(index, "hijack.yaml"), [`${CLUSTER_DIR}/hijack.yaml`]: null },
      { env: platform.gitEnv },
    );
    await platform.reconcileSource();
    await platform.waitKustomizationReady(ASO_NAMESPACE, "team-alpha", revert, 180_000);
  }, 600_000);

  it("offboarding prunes the team's objects as the team applier, which stays for the other teams", async () => {
    const res = await platform.request("DELETE", "/v1/teams/alpha");
    expect(res.statusCode, res.body).toBe(200);
    await platform.reconcileSource();
    await eventually(
      "namespace alpha and Team alpha gone",
      async () =>
        !(await platform.admin.get("v1", "Namespace", undefined, "alpha")) &&
        !(await platform.admin.get("berth.dev/v1alpha1", "Team", undefined, "alpha")),
      300_000,
    );
    const pruned = (await platform.cluster.deletes()).filter(
      (d) => (d.namespace === "alpha" || d.name === "alpha") && d.code < 300,
    );
    const byApplier = (resource: string) =>
      pruned.find((d) => d.resource === resource && d.name === "alpha" && d.impersonatedUser === APPLIER);
    expect(byApplier("namespaces"), JSON.stringify(pruned)).toBeDefined();
    expect(byApplier("teams.berth.dev"), JSON.stringify(pruned)).toBeDefined();
    expect(byApplier("resourcegroups.resources.azure.com"), JSON.stringify(pruned)).toBeDefined();
    const issuerPruned = (await platform.cluster.deletes()).find(
      (d) => d.resource === "configmaps" && d.name === "alpha--cluster-issuer" && d.code < 300,
    );
    expect(issuerPruned?.impersonatedUser).toBe(APPLIER);
    expect(await platform.admin.get("v1", "ServiceAccount", ASO_NAMESPACE, "berth-team-applier")).toBeDefined();
    expect(await platform.admin.get("v1", "Namespace", undefined, "bravo")).toBeDefined();
  }, 400_000);
});
