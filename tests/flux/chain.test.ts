/**
 * The whole chain with real Flux, on one cluster set up as docs/install.md sets it up
 * (tests/support/flux-platform.ts): Berth's API commits over smart HTTP → source-controller pulls →
 * kustomize-controller applies clusters/<cluster> as flux/ wires it (berth-crds → berth-controller → berth-teams
 * → one Kustomization per team, dependsOn, health checks, prune, substitution from platform-vars) → Berth's
 * controller fills the credential → the Team status and `berth status` show Flux's own Kustomization status.
 * Azure Service Operator is the real one (`aso: "real"`), against the fake Azure (tests/flux/aso.test.ts has ASO's
 * own scenarios).
 *
 *   1. onboard: namespace, quota, RBAC, ASO objects on the cluster; the credential written; Ready;
 *   2. update: the change applied, no other object of the team touched;
 *   3. a template change that adds an object and removes one: Flux prunes the removed one;
 *   4. offboard: Flux prunes; the team's ASO resources go before its credential, its binding last, then the
 *      namespace.
 */
// needs: cluster aso dist
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { teamShard } from "@berth/core";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CliHarness } from "../support/cli.js";
import { watchDeletions } from "../support/deletion-watch.js";
import { ASO_NAMESPACE, startFluxPlatform, type FluxPlatform } from "../support/flux-platform.js";
import { DEV_TOKEN, REPO_ROOT } from "../support/berth.js";
import { kustomizeFiles, normalizeRepoPath, parseYamlObjects, substituteFluxVars } from "../support/flux-build.js";
import { inspectRemote } from "../support/git-remotes.js";
import { compareSentAndReturned } from "../support/kube-dry-run.js";
import { eventually } from "../support/wait.js";
import type { Obj } from "../controller/helpers.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const TEAM = "payments";

describe("the chain with real Flux: POST → commit → Flux → controller → status", () => {
  let platform: FluxPlatform;
  let templates: string;
  const timings: Record<string, number> = {};

  beforeAll(async () => {
    // A template version v3 beside the repo's: v1 without the LimitRange, plus a NetworkPolicy (scenario 3).
    templates = await mkdtemp(join(tmpdir(), "berth-templates-"));
    await cp(join(REPO_ROOT, "templates"), templates, { recursive: true });
    await cp(join(templates, "v1"), join(templates, "v3"), { recursive: true });
    await rm(join(templates, "v3", "limit-range.yaml"));
    await writeFile(
      join(templates, "v3", "default-deny.yaml"),
      stringify({
        apiVersion: "networking.k8s.io/v1",
        kind: "NetworkPolicy",
        metadata: {
          name: "default-deny-ingress",
          namespace: "{{ names.namespace }}",
          labels: { "berth.dev/team": "{{ team.name }}" },
        },
        spec: { podSelector: {}, policyTypes: ["Ingress"] },
      }),
    );
    const set = await readFile(join(templates, "v3", "templateset.yaml"), "utf8");
    await writeFile(
      join(templates, "v3", "templateset.yaml"),
      set.replace("name: v1", "name: v3").replace("- template: limit-range.yaml", "- template: default-deny.yaml"),
    );
    const t0 = Date.now();
    platform = await startFluxPlatform({ aso: "real", berthConfig: (raw) => (raw.templatesDir = templates) });
    timings.platformMs = Date.now() - t0;
  }, 300_000);

  afterAll(async () => {
    console.log(`[tests/flux/chain] ${JSON.stringify(timings)}`);
    await platform?.stop();
    if (templates) await rm(templates, { recursive: true, force: true });
    // ASO asked the fake Azure nothing it has no answer for.
    platform?.azure?.stats.assertAllAnswered();
  });

  const get = (apiVersion: string, kind: string, namespace: string | undefined, name: string) =>
    platform.admin.get(apiVersion, kind, namespace, name);
  const teamStatus = async () => (await platform.request("GET", `/v1/teams/${TEAM}/status`)).json;

  it("onboards: POST → Flux applies the team → the controller writes its credential → Ready", async () => {
    const t0 = Date.now();
    const res = await platform.request("POST", "/v1/teams", {
      name: TEAM,
      owners: [OWNER],
      environments: ["dev"],
      roleAssignments: [{ role: "rg-contributor" }],
      quota: { cpu: "4", memory: "8Gi", pods: 20 },
    });
    expect(res.statusCode, res.body).toBe(201);
    const revision = res.json.revision as string;
    await eventually("namespace payments on the cluster", () => get("v1", "Namespace", undefined, TEAM), 120_000);
    timings.postToNamespaceMs = Date.now() - t0;
    // Flux applies namespaces first, then the rest.
    const quota = await eventually(
      "ResourceQuota team-quota",
      () => get("v1", "ResourceQuota", TEAM, "team-quota"),
      60_000,
    );
    expect((quota.spec as { hard: Record<string, string> }).hard).toMatchObject({
      "requests.cpu": "4",
      "limits.memory": "8Gi",
      pods: "20",
    });
    // Flux applies the rest one object at a time, in kustomize's kind order: ResourceQuota before RoleBinding.
    await eventually(
      "RoleBinding berth-controller",
      () => get("rbac.authorization.k8s.io/v1", "RoleBinding", TEAM, "berth-controller"),
      60_000,
    );
    for (const [apiVersion, kind] of [
      ["resources.azure.com/v1api20200601", "ResourceGroup"],
      ["managedidentity.azure.com/v1api20230131", "UserAssignedIdentity"],
      ["managedidentity.azure.com/v1api20230131", "FederatedIdentityCredential"],
      ["authorization.azure.com/v1api20220401", "RoleAssignment"],
    ] as const) {
      const objects = await eventually(
        `${kind} of ${TEAM} applied`,
        async () => {
          const list = await platform.admin.list(
            apiVersion,
            kind,
            ASO_NAMESPACE,
            `?labelSelector=berth.dev/team%3D${TEAM}`,
          );
          return list.length ? list : undefined;
        },
        60_000,
      );
      // Flux applied them, substituted from platform-vars: no ${VAR} is left.
      expect(JSON.stringify(objects.map((o) => o.spec))).not.toContain("${");
    }
    const ks = await platform.waitKustomizationReady(ASO_NAMESPACE, `team-${TEAM}`, revision);
    // Applied by its slice's Kustomization (ADR 0022: by the team name's first letter).
    expect((ks.metadata.labels as Record<string, string>)["kustomize.toolkit.fluxcd.io/name"]).toBe(
      `berth-teams-${TEAM[0]}`,
    );
    timings.postToKustomizationReadyMs = Date.now() - t0;
    const secret = await eventually(
      "the credential aso-credential",
      () => get("v1", "Secret", TEAM, "aso-credential"),
      60_000,
    );
    expect(Object.keys(secret.data as object).sort()).toEqual([
      "AZURE_CLIENT_ID",
      "AZURE_SUBSCRIPTION_ID",
      "AZURE_TENANT_ID",
      "USE_WORKLOAD_IDENTITY_AUTH",
    ]);
    const status = await eventually(
      "Team payments Ready through the API",
      async () => {
        const s = await teamStatus();
        return s.clusters?.[0]?.ready ? s : undefined;
      },
      60_000,
    );
    timings.postToReadyMs = Date.now() - t0;
    // The status chain shows Flux's own view: the revision it applied, its Ready condition.
    expect(status.clusters[0].revision).toBe(`main@sha1:${revision}`);
    expect(status.clusters[0].conditions).toContainEqual(
      expect.objectContaining({ type: "KustomizationReady", status: "True", reason: "ReconciliationSucceeded" }),
    );
  }, 300_000);

  it("the render dry-run's stand-in build (tests/support/flux-build.ts) equals what Flux applied, object for object", async () => {
    // tests/kube/render-dry-run.test.ts builds every rendered team with flux-build.ts (fast, no Flux); this holds it
    // to real Flux: the same files, built and substituted, give exactly the objects kustomize-controller put on the cluster.
    const remote = await inspectRemote(platform.repoUrl, "main", platform.gitEnv);
    const vars = (await get("v1", "ConfigMap", ASO_NAMESPACE, "platform-vars"))!.data as Record<string, string>;
    const fluxFile = parseYamlObjects(
      remote.files.get(`clusters/aks-dev-weu/teams/${teamShard(TEAM)}/${TEAM}.yaml`)!,
    )[0]!;
    const built = kustomizeFiles(remote.files, normalizeRepoPath(String(fluxFile.spec.path))).flatMap((f) =>
      parseYamlObjects(substituteFluxVars(remote.files.get(f)!, vars, f)),
    );
    expect(built.length).toBeGreaterThan(8);
    const inventory = (
      (await platform.kustomization(ASO_NAMESPACE, `team-${TEAM}`))!.status as { inventory: { entries: unknown[] } }
    ).inventory.entries;
    expect(inventory).toHaveLength(built.length);
    for (const object of built) {
      const live = await get(object.apiVersion, object.kind, object.metadata.namespace, object.metadata.name);
      expect(live, `${object.kind} ${object.metadata.name} on the cluster`).toBeDefined();
      const { metadata, ...rest } = object;
      const problems = compareSentAndReturned(
        { ...rest, metadata: { labels: metadata.labels, annotations: metadata.annotations } },
        live,
      );
      expect(problems, `${object.kind} ${object.metadata.name}`).toEqual([]);
    }
  }, 300_000);

  it("`berth status` shows Flux's Kustomization status: the revision Flux applied, its Ready and reason", async () => {
    const cli = await CliHarness.create();
    const head = await platform.head();
    const human = await cli.run(["status", TEAM, "--server", platform.berth.url, "--token", DEV_TOKEN]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain(`commit ${head.slice(0, 7)}`);
    expect(human.stdout).toMatch(/✔ commit › ✔ flux › /);
    const json = await cli.run(["status", TEAM, "-o", "json", "--server", platform.berth.url, "--token", DEV_TOKEN]);
    const status = JSON.parse(json.stdout) as {
      clusters: Array<{
        revision: string;
        conditions: Array<{ type: string; status: string; reason: string; message: string }>;
      }>;
    };
    expect(status.clusters[0]!.revision).toBe(`main@sha1:${head}`);
    // The team's Kustomization reads its own artifact (ADR 0019): Flux reports the artifact's revision, cut from `head`.
    const ks = (await platform.kustomization(ASO_NAMESPACE, `team-${TEAM}`))!.status as {
      lastAppliedRevision: string;
      lastAppliedOriginRevision: string;
    };
    expect(ks.lastAppliedOriginRevision).toBe(`main@sha1:${head}`);
    expect(status.clusters[0]!.conditions.find((c) => c.type === "KustomizationReady")).toMatchObject({
      status: "True",
      reason: "ReconciliationSucceeded",
      message: `Applied revision: ${ks.lastAppliedRevision}`,
    });
  }, 300_000);

  it("updates: the change is applied, no other object of the team is touched", async () => {
    const before = await objectVersions(platform, TEAM);
    const res = await platform.request("PUT", `/v1/teams/${TEAM}`, {
      owners: [OWNER],
      environments: ["dev"],
      roleAssignments: [{ role: "rg-contributor" }],
      quota: { cpu: "6", memory: "8Gi", pods: 20 },
    });
    expect(res.statusCode, res.body).toBe(200);
    await platform.waitKustomizationReady(ASO_NAMESPACE, `team-${TEAM}`, res.json.revision);
    const quota = await get("v1", "ResourceQuota", TEAM, "team-quota");
    expect((quota!.spec as { hard: Record<string, string> }).hard["requests.cpu"]).toBe("6");
    const after = await objectVersions(platform, TEAM);
    const changed = [...after].filter(([key, version]) => before.get(key) !== version).map(([key]) => key);
    // The quota, and the Team object (its spec changed); nothing else was written.
    expect(changed.sort()).toEqual([`berth.dev/v1alpha1/Team//${TEAM}`, `v1/ResourceQuota/${TEAM}/team-quota`]);
  }, 300_000);

  it("a template change that adds an object and removes one: Flux applies the new one and prunes the old", async () => {
    expect(await get("v1", "LimitRange", TEAM, "container-defaults")).toBeDefined();
    const res = await platform.request("POST", "/v1/rollouts", {
      description: "v3: default-deny instead of limits",
      target: { templateVersion: "v3" },
      selector: { names: [TEAM] },
    });
    expect(res.statusCode, res.body).toBe(201);
    await platform.waitKustomizationReady(ASO_NAMESPACE, `team-${TEAM}`, res.json.revision);
    expect(await get("networking.k8s.io/v1", "NetworkPolicy", TEAM, "default-deny-ingress")).toBeDefined();
    await eventually(
      "LimitRange container-defaults pruned",
      async () => (await get("v1", "LimitRange", TEAM, "container-defaults")) === undefined,
      60_000,
    );
    const pruned = (await platform.cluster.deletes()).filter(
      (d) => d.resource === "limitranges" && d.namespace === TEAM,
    );
    expect(pruned.map((d) => d.user)).toEqual(["admin"]); // kustomize-controller (it runs with the admin kubeconfig here)
  }, 300_000);

  it("offboards: Flux prunes the team; ASO resources go first, then the credential, then the binding, then the namespace", async () => {
    // A resource the team declared in its own namespace, which ASO deletes with the namespace's credential.
    await platform.admin.create({
      apiVersion: "resources.azure.com/v1api20200601",
      kind: "ResourceGroup",
      metadata: { name: "team-data", namespace: TEAM },
      spec: { location: "westeurope", azureName: "rg-payments-data" },
    } as Obj);
    await eventually(
      "ASO holds its finalizer on the team's own resource group",
      async () => {
        const rg = await get("resources.azure.com/v1api20200601", "ResourceGroup", TEAM, "team-data");
        return ((rg?.metadata.finalizers as string[] | undefined) ?? []).length > 0;
      },
      60_000,
    );
    const watch = await watchDeletions(platform.cluster.kubeConfig(), [
      "/apis/resources.azure.com/v1api20200601/resourcegroups",
      "/api/v1/secrets",
      "/apis/rbac.authorization.k8s.io/v1/rolebindings",
      "/api/v1/namespaces",
    ]);
    try {
      const res = await platform.request("DELETE", `/v1/teams/${TEAM}`);
      expect(res.statusCode, res.body).toBe(200);
      await eventually("namespace payments gone", async () => watch.goneAt("/api/v1/namespaces", TEAM), 180_000);
    } finally {
      watch.stop();
    }
    // Flux pruned the team's Kustomization (its slice no longer holds it), and it pruned what it had applied.
    const deletes = await platform.cluster.deletes();
    expect(deletes).toContainEqual(
      expect.objectContaining({
        resource: "kustomizations.kustomize.toolkit.fluxcd.io",
        name: `team-${TEAM}`,
        namespace: ASO_NAMESPACE,
      }),
    );
    expect(deletes).toContainEqual(expect.objectContaining({ resource: "namespaces", name: TEAM }));
    // The order the finalizers enforce: the team's ASO resource (ASO deleting it in Azure) before its credential,
    // the binding that lets the controller release the credential after it, the namespace last.
    const rgGone = watch.goneAt("/apis/resources.azure.com/v1api20200601/resourcegroups", "team-data", TEAM)!;
    const secretGone = watch.goneAt("/api/v1/secrets", "aso-credential", TEAM)!;
    const bindingGone = watch.goneAt("/apis/rbac.authorization.k8s.io/v1/rolebindings", "berth-controller", TEAM)!;
    const namespaceGone = watch.goneAt("/api/v1/namespaces", TEAM)!;
    expect([rgGone, secretGone, bindingGone, namespaceGone].every(Boolean), JSON.stringify(watch.deletions)).toBe(true);
    expect(rgGone).toBeLessThanOrEqual(secretGone);
    expect(secretGone).toBeLessThanOrEqual(bindingGone);
    expect(bindingGone).toBeLessThanOrEqual(namespaceGone);
    // The ASO objects in the ASO namespace went too (the Kustomization's prune).
    expect(
      await platform.admin.list(
        "managedidentity.azure.com/v1api20230131",
        "UserAssignedIdentity",
        ASO_NAMESPACE,
        `?labelSelector=berth.dev/team%3D${TEAM}`,
      ),
    ).toEqual([]);
  }, 300_000);
});

/** Every object of the team on the cluster (its namespace's, its ASO objects, its Team) with its resourceVersion. */
async function objectVersions(platform: FluxPlatform, team: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const kinds: Array<[string, string, string | undefined]> = [
    ["v1", "ResourceQuota", team],
    ["v1", "LimitRange", team],
    ["v1", "ServiceAccount", team],
    ["rbac.authorization.k8s.io/v1", "RoleBinding", team],
    ["resources.azure.com/v1api20200601", "ResourceGroup", ASO_NAMESPACE],
    ["managedidentity.azure.com/v1api20230131", "UserAssignedIdentity", ASO_NAMESPACE],
    ["managedidentity.azure.com/v1api20230131", "FederatedIdentityCredential", ASO_NAMESPACE],
    ["authorization.azure.com/v1api20220401", "RoleAssignment", ASO_NAMESPACE],
  ];
  for (const [apiVersion, kind, namespace] of kinds) {
    for (const o of await platform.admin.list(apiVersion, kind, namespace!)) {
      const labels = (o.metadata.labels ?? {}) as Record<string, string>;
      if (namespace === ASO_NAMESPACE && labels["berth.dev/team"] !== team) continue;
      if (o.metadata.name === "default" && kind === "ServiceAccount") continue;
      out.set(`${apiVersion}/${kind}/${namespace}/${o.metadata.name}`, String(o.metadata.resourceVersion));
    }
  }
  const ns = await platform.admin.get("v1", "Namespace", undefined, team);
  if (ns) out.set(`v1/Namespace//${team}`, String(ns.metadata.resourceVersion));
  const t = await platform.admin.get("berth.dev/v1alpha1", "Team", undefined, team);
  if (t) out.set(`berth.dev/v1alpha1/Team//${team}`, String(t.metadata.resourceVersion));
  return out;
}
