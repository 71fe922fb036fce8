/**
 * A team's own manifests (spec.extraManifests): what the API accepts, how they are rendered and kept (Flux's
 * substitution as adoption evaluates it: packages/kustomize/test/flux-substitute.test.ts).
 */
import { parseAllDocuments } from "yaml";
import { describe, expect, it } from "vitest";
import { Onboarding, parseTemplateSet, TeamValidationError, validateTeam } from "@berth/core";
import { loadCatalog, MemoryRepoTree, PLATFORM, rerender, teamInput, templateFiles } from "./fixtures.js";

const policy = {
  apiVersion: "networking.k8s.io/v1",
  kind: "NetworkPolicy",
  metadata: { name: "deny", namespace: "orders" },
  spec: { podSelector: {}, policyTypes: ["Ingress"] },
};
const issuesOf = (input: unknown) => {
  try {
    validateTeam(input, PLATFORM);
    return [];
  } catch (err) {
    if (err instanceof TeamValidationError) return err.issues;
    throw err;
  }
};

describe("a team's extra manifests", () => {
  it("are namespaced objects of the team's namespace, or federated credentials of its identity in the ASO namespace", () => {
    const fic = (owner: string) => ({
      apiVersion: "managedidentity.azure.com/v1api20230131",
      kind: "FederatedIdentityCredential",
      metadata: { name: "db", namespace: "flux-config" },
      spec: {
        owner: { name: owner },
        issuer: "${CLUSTER_OIDC_ISSUER_URL}",
        subject: "system:serviceaccount:orders:db",
      },
    });
    expect(
      issuesOf(teamInput({ extraManifests: [{ object: policy }, { cluster: "aks-dev-weu", object: fic("orders") }] })),
    ).toEqual([]);
    expect(
      issuesOf(
        teamInput({
          extraManifests: [
            { object: { ...policy, metadata: { name: "x", namespace: "kube-system" } } },
            { object: fic("payments") },
            { object: { apiVersion: "v1", kind: "Secret", metadata: { name: "s", namespace: "orders" } } },
            {
              object: {
                apiVersion: "rbac.authorization.k8s.io/v1",
                kind: "ClusterRoleBinding",
                metadata: { name: "c", namespace: "orders" },
              },
            },
            {
              object: {
                apiVersion: "helm.toolkit.fluxcd.io/v2",
                kind: "HelmRelease",
                metadata: { name: "h", namespace: "orders" },
              },
            },
            { object: { ...policy, metadata: { name: "y", namespace: "orders", labels: { a: "${GITHUB_TOKEN}" } } } },
            { cluster: "aks-prod-weu", object: policy },
            { object: policy },
            { object: { kind: "NetworkPolicy" } },
          ],
        }),
      ),
    ).toEqual([
      {
        field: "extraManifests.0.object.metadata.namespace",
        rule: "is kube-system: a team's manifests live in its namespace orders",
      },
      {
        field: "extraManifests.1.object.metadata.namespace",
        rule: "is flux-config: a team's manifests live in its namespace orders (in flux-config only a FederatedIdentityCredential of the team's identity orders)",
      },
      {
        field: "extraManifests.2.object.kind",
        rule: "is Secret: a Secret does not belong in the team spec (the Team object is readable cluster-wide): keep secrets out of git",
      },
      {
        field: "extraManifests.3.object.kind",
        rule: "is ClusterRoleBinding, a cluster-scoped kind: a team's manifests stay in its namespace",
      },
      {
        field: "extraManifests.4.object.kind",
        rule: "is HelmRelease: a HelmRelease installs with Flux's own rights, beyond the team's namespace",
      },
      expect.objectContaining({
        field: "extraManifests.5.object",
        rule: expect.stringMatching(/^uses \$\{GITHUB_TOKEN\}: Flux substitutes only platform-vars keys here/),
      }),
      { field: "extraManifests.6.cluster", rule: "must name a cluster the team lands on: aks-dev-weu" },
      { field: "extraManifests.7", rule: "is NetworkPolicy orders/deny again (extraManifests.6)" },
      {
        field: "extraManifests.8.object",
        rule: "must be a Kubernetes object with apiVersion, kind, metadata.name and metadata.namespace",
      },
    ]);
  });

  it("are rendered into the base (every cluster) or a cluster folder, listed by its kustomization, kept by every re-render", async () => {
    const onboarding = new Onboarding(PLATFORM, loadCatalog("v3"));
    const team = teamInput({
      extraManifests: [
        { object: policy },
        { cluster: "aks-dev-weu", object: { ...policy, metadata: { name: "dev-only", namespace: "orders" } } },
      ],
    });
    const { change } = await onboarding.planCreate(new MemoryRepoTree(), team);
    const base = change.files.get("teams/orders/base/extra.yaml")!;
    expect(parseAllDocuments(base).map((d) => d.toJS())).toEqual([policy]);
    expect(change.files.get("teams/orders/base/kustomization.yaml")).toMatch(/- extra\.yaml\n$/);
    expect(change.files.get("teams/orders/clusters/aks-dev-weu/extra.yaml")).toContain("name: dev-only");
    expect(change.files.get("teams/orders/clusters/aks-dev-weu/kustomization.yaml")).toMatch(/- extra\.yaml\n$/);
    const tree = new MemoryRepoTree().apply(change);
    expect((await onboarding.readTeam(tree, "orders"))?.extraManifests).toEqual(team.extraManifests);
    expect((await rerender(onboarding, tree, "orders")).files.size).toBe(0);
    expect(
      (await rerender(onboarding, tree, "orders", "v1")).files.get("teams/orders/base/extra.yaml"),
    ).toBeUndefined();
  });

  it("may not be an object Berth renders itself, and no template may render into extra.yaml", async () => {
    const onboarding = new Onboarding(PLATFORM, loadCatalog("v3"));
    const quota = {
      apiVersion: "v1",
      kind: "ResourceQuota",
      metadata: { name: "team-quota", namespace: "orders" },
      spec: { hard: { pods: "1" } },
    };
    const err = await onboarding
      .planCreate(new MemoryRepoTree(), teamInput({ extraManifests: [{ object: quota }] }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TeamValidationError);
    expect((err as TeamValidationError).issues).toEqual([
      {
        field: "extraManifests.0.object",
        rule: "is ResourceQuota orders/team-quota, which Berth renders itself: change it through the team's fields",
      },
    ]);
    const files = templateFiles("v3");
    files.set(
      "templateset.yaml",
      files
        .get("templateset.yaml")!
        .replace("- template: namespace.yaml", "- template: namespace.yaml\n      output: extra.yaml"),
    );
    expect(() => parseTemplateSet("v3", files)).toThrow(/output extra.yaml is the file of a team's extra manifests/);
  });
});
