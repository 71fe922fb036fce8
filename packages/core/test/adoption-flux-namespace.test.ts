/**
 * Adoption of a team written the way a platform that keeps its Flux objects in one Flux namespace writes it
 * (tests/fixtures/adoption/flux-namespace): the team's HelmRepository `<team>-helm-repo` sits in flux-config beside
 * its Flux Kustomization, and `${clientId}` comes from the ConfigMap ASO exports the team identity's ids to
 * (`<team>-mi-credential`, listed in substituteFrom). Issue 37, "the last refusals on a real platform's tree".
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { Adoption, AdoptionUnmappableError, adoptionRequestSchema, Onboarding, platformSchema } from "@berth/core";
import { loadCatalog, REPO_ROOT, rerender, treeFromFolder } from "./fixtures.js";

const FIXTURE = join(REPO_ROOT, "tests/fixtures/adoption/flux-namespace");
type RawPlatform = { environments: Array<{ clusters: Array<{ name: string; vars?: Record<string, string> }> }> };
const raw = (parse(readFileSync(join(REPO_ROOT, "infra/local/berth.yaml"), "utf8")) as { platform: RawPlatform })
  .platform;
// What the platform keeps in cluster-vars, in Berth's config (the rest of its keys are Berth's own).
for (const env of raw.environments)
  for (const c of env.clusters)
    if (c.name === "aks-dev-weu")
      c.vars = { ...c.vars, ENVIRONMENT_ID: "01", APPLICATION_ACR_NAME: "acrplatformdev01" };
const onboarding = new Onboarding(platformSchema.parse(raw), loadCatalog("v3"));
const adoption = new Adoption(onboarding);
const request = adoptionRequestSchema.parse({ keepAzureNames: true });

async function refusal(p: Promise<unknown>): Promise<AdoptionUnmappableError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AdoptionUnmappableError);
  return err as AdoptionUnmappableError;
}

describe("a team whose Flux source and identity ConfigMap live in the platform's Flux namespace", () => {
  it("accounts for every object: the team's HelmRepository moves into its namespace, ${clientId} maps to Berth's identity", async () => {
    const tree = treeFromFolder(FIXTURE);
    const plan = await adoption.plan(tree, "grants", request);
    const { report } = plan;
    const fate = (ref: string) => report.objects.find((o) => o.ref === ref);
    // Every object of the build, each with a fate.
    expect(report.objects.map((o) => `${o.ref}: ${o.fate}`).sort()).toEqual([
      "FederatedIdentityCredential flux-config/grants-mi-aso: left-behind",
      "HelmRepository flux-config/grants-helm-repo: carried",
      "Namespace grants: updated",
      "ResourceGroup flux-config/grants-rg: left-behind",
      "ResourceQuota grants/grants-quota: left-behind",
      "RoleAssignment flux-config/grants-rg-contributor: left-behind",
      "RoleBinding grants/grants-admins: left-behind",
      "Secret grants/aso-credential: controller",
      "ServiceAccount grants/workload: updated",
      "UserAssignedIdentity flux-config/grants-mi: left-behind",
    ]);
    expect(fate("HelmRepository flux-config/grants-helm-repo")?.note).toContain(
      "moved to HelmRepository grants/grants-helm-repo",
    );
    expect(plan.team.extraManifests).toEqual([
      {
        object: {
          apiVersion: "source.toolkit.fluxcd.io/v1",
          kind: "HelmRepository",
          metadata: {
            name: "grants-helm-repo",
            namespace: "grants",
            labels: { "backstage.io/kubernetes-team": "grants" },
          },
          spec: { type: "oci", interval: "5m", url: "oci://acrplatformdev01.azurecr.io/helm", provider: "azure" },
        },
      },
    ]);
    expect(report.warnings).toContainEqual(
      expect.stringMatching(
        /^\$\{clientId\} is the client id of the team's identity \(ConfigMap flux-config\/grants-mi-credential, key clientId, where UserAssignedIdentity grants-mi exports its client id/,
      ),
    );
    expect(report.cleanup).toEqual([
      "clusters/aks-dev-weu/services/grants.yaml",
      "services/grants/dev/01/kustomization.yaml",
    ]);
    // Committed, the repo holds Berth's render of the adopted team.
    const after = tree.apply(plan.change);
    expect((await rerender(onboarding, after, "grants")).files.size).toBe(0);
  });

  it("written for Flux 2.9's strict substitution (`${clientId:=}`, a default until ASO exports the id), maps the same", async () => {
    const edits = new Map<string, string>();
    for (const f of ["services/base/team-secret.yaml", "services/base/service-account.yaml"])
      edits.set(f, readFileSync(join(FIXTURE, f), "utf8").replaceAll("${clientId}", "${clientId:=}"));
    const plan = await adoption.plan(treeFromFolder(FIXTURE).apply(edits), "grants", request);
    expect(plan.report.objects.map((o) => `${o.ref}: ${o.fate}`)).toEqual(
      expect.arrayContaining(["Secret grants/aso-credential: controller", "ServiceAccount grants/workload: updated"]),
    );
    expect(plan.report.warnings).toContainEqual(
      expect.stringMatching(/^\$\{clientId\} is the client id of the team's identity/),
    );
  });

  it("the client id anywhere Berth's controller does not write it, and another exported value, stay refusals naming them", async () => {
    const tree = treeFromFolder(FIXTURE).apply(
      new Map([
        [
          "services/base/app-settings.yaml",
          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-settings\n  namespace: ${TEAM_NAMESPACE}\ndata:\n  AZURE_CLIENT_ID: ${clientId}\n  PRINCIPAL: ${principalId}\n",
        ],
        [
          "services/base/kustomization.yaml",
          readFileSync(join(FIXTURE, "services/base/kustomization.yaml"), "utf8") + "  - app-settings.yaml\n",
        ],
      ]),
    );
    const err = await refusal(adoption.plan(tree, "grants", request));
    expect(err.issues).toEqual([
      {
        // (named as written: its namespace is a variable there too)
        field: "services/base/app-settings.yaml#ConfigMap/app-settings",
        rule: expect.stringContaining("${principalId} cannot be resolved"),
      },
      {
        field: "services/base/app-settings.yaml#ConfigMap/grants/app-settings",
        rule: expect.stringMatching(
          /^uses \$\{clientId\}, the client id of the team's identity .*Berth's Kustomization has no value for it here$/,
        ),
      },
    ]);
  });

  it("a Flux source named after another team, or in a namespace that is not a Flux namespace, is still not the team's", async () => {
    const source = readFileSync(join(FIXTURE, "services/base/helm-repository.yaml"), "utf8");
    for (const [edit, where] of [
      [source.replace("${TEAM_NAMESPACE}-helm-repo", "charts"), "HelmRepository/flux-config/charts"],
      [
        source.replace("namespace: flux-config", "namespace: kube-system"),
        "HelmRepository/kube-system/grants-helm-repo",
      ],
    ] as const) {
      const err = await refusal(
        adoption.plan(
          treeFromFolder(FIXTURE).apply(new Map([["services/base/helm-repository.yaml", edit]])),
          "grants",
          request,
        ),
      );
      expect(err.issues.map((i) => i.field)).toEqual([`services/base/helm-repository.yaml#${where}`]);
    }
  });
});
