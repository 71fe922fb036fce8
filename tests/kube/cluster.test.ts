/**
 * Proves the test-cluster harness (tests/support/kube-cluster.ts): the kube-apiserver and etcd built from the
 * versions infra/test-cluster/go names, on 127.0.0.1, with the CRDs of the Flux and ASO module versions the tests
 * run, RBAC on, CEL validation rules enforced, the dry-run helper catching fields the server drops, and
 * kube-controller-manager finishing a namespace's deletion when asked for.
 *
 * A missing binary fails these tests (naming infra/test-cluster/ensure-binaries.sh); nothing here skips.
 */
// needs: cluster
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ApiException, CoreV1Api, KubeConfig, RbacAuthorizationV1Api, VersionApi } from "@kubernetes/client-node";
import { defaultCrdDirs, readCrds, startKubeCluster, type KubeCluster } from "../support/kube-cluster.js";
import { componentVersion } from "../support/test-cluster-binaries.js";
import { kubeRequest } from "../support/kube-http.js";
import { compareSentAndReturned, formatDryRunProblems, serverSideDryRunApply } from "../support/kube-dry-run.js";

/** What Berth renders and Flux needs: every test cluster must serve these. */
const REQUIRED_CRDS = [
  "federatedidentitycredentials.managedidentity.azure.com",
  "gitrepositories.source.toolkit.fluxcd.io",
  "kustomizations.kustomize.toolkit.fluxcd.io",
  "resourcegroups.resources.azure.com",
  "roleassignments.authorization.azure.com",
  "userassignedidentities.managedidentity.azure.com",
];

const NS = "harness";

async function statusOf(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (err) {
    if (err instanceof ApiException) return err.code;
    throw err;
  }
}

function resourceGroup(name: string, azureName: string) {
  return {
    apiVersion: "resources.azure.com/v1api20200601",
    kind: "ResourceGroup",
    metadata: { name, namespace: NS },
    spec: { location: "westeurope", azureName },
  };
}

function identity(spec: Record<string, unknown>, name = "team-a-identity") {
  return {
    apiVersion: "managedidentity.azure.com/v1api20230131",
    kind: "UserAssignedIdentity",
    metadata: { name, namespace: NS, labels: { "berth.io/team": "team-a" } },
    spec,
  };
}

// Pure helpers: run even without the binaries.
describe("test cluster helpers", () => {
  it("compares sent and returned objects field by field", () => {
    const sent = { spec: { a: 1, b: { c: "x", typo: true }, list: [{ n: 1, extra: 2 }], gone: null } };
    const returned = { spec: { a: 1, b: { c: "y" }, list: [{ n: 1 }], defaulted: "z" } };
    expect(compareSentAndReturned(sent, returned).map((p) => `${p.kind} ${p.path}`)).toEqual([
      "changed spec.b.c",
      "pruned spec.b.typo",
      "pruned spec.list[0].extra",
    ]);
  });
});

describe(`test cluster: real kube-apiserver ${componentVersion("kubernetes")} + etcd ${componentVersion("etcd")}`, () => {
  let cluster: KubeCluster;
  let admin: KubeConfig;

  beforeAll(async () => {
    cluster = await startKubeCluster();
    admin = cluster.kubeConfig();
    console.log(`[tests/kube] cluster ready at ${cluster.server} in ${cluster.startupMs} ms`);
    await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  it("serves /readyz and reports the version infra/test-cluster/go/kubernetes builds", async () => {
    const ready = await kubeRequest(admin, { method: "GET", path: "/readyz" });
    expect(ready.status).toBe(200);
    expect(ready.body).toBe("ok");
    const version = await admin.makeApiClient(VersionApi).getCode();
    expect(version.gitVersion).toBe(componentVersion("kubernetes"));
    expect(cluster.server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
  });

  it("has the built modules' CRDs established and every served version listable", async () => {
    const expected = (await readCrds(defaultCrdDirs())).map((c) => c.metadata?.name).sort();
    expect(cluster.crdNames).toEqual(expected);
    expect(expected).toEqual(expect.arrayContaining(REQUIRED_CRDS));
    for (const name of cluster.crdNames) {
      const res = await kubeRequest(admin, {
        method: "GET",
        path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`,
      });
      expect(res.status).toBe(200);
      const crd = res.json as {
        spec: { group: string; names: { plural: string }; versions: Array<{ name: string; served: boolean }> };
        status: { conditions: Array<{ type: string; status: string }> };
      };
      expect(crd.status.conditions).toContainEqual(expect.objectContaining({ type: "Established", status: "True" }));
      for (const v of crd.spec.versions.filter((v) => v.served)) {
        const discovery = await kubeRequest(admin, { method: "GET", path: `/apis/${crd.spec.group}/${v.name}` });
        expect(discovery.status, `${name} ${v.name} discovery`).toBe(200);
        const resources = (discovery.json as { resources: Array<{ name: string }> }).resources.map((r) => r.name);
        expect(resources).toContain(crd.spec.names.plural);
        const list = await kubeRequest(admin, {
          method: "GET",
          path: `/apis/${crd.spec.group}/${v.name}/namespaces/${NS}/${crd.spec.names.plural}`,
        });
        expect(list.status, `${name} ${v.name} list`).toBe(200);
      }
    }
  });

  it("enforces RBAC: 'tester' gets 403 on secrets until bound, then 200", async () => {
    const tester = cluster.kubeConfigFor("tester").makeApiClient(CoreV1Api);
    expect(await statusOf(tester.listNamespacedSecret({ namespace: NS }))).toBe(403);
    expect(await statusOf(admin.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace: NS }))).toBe(200);

    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: NS,
      body: {
        metadata: { name: "secret-reader" },
        rules: [{ apiGroups: [""], resources: ["secrets"], verbs: ["list"] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: NS,
      body: {
        metadata: { name: "tester-secret-reader" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "secret-reader" },
        subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "tester" }],
      },
    });
    // The RBAC authorizer reads from an informer cache: a new binding takes a moment to apply.
    await vi.waitFor(async () => expect(await statusOf(tester.listNamespacedSecret({ namespace: NS }))).toBe(200), {
      timeout: 10_000,
      interval: 100,
    });
    // Still nothing outside the binding.
    expect(await statusOf(tester.listNamespacedSecret({ namespace: "default" }))).toBe(403);
  });

  it("authenticates any user/groups pair through an issued client certificate", async () => {
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRoleBinding({
      namespace: NS,
      body: {
        metadata: { name: "readers-secret-reader" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "secret-reader" },
        subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: "berth:readers" }],
      },
    });
    const alice = cluster.kubeConfigFor("alice", ["berth:readers"]).makeApiClient(CoreV1Api);
    const bob = cluster.kubeConfigFor("bob").makeApiClient(CoreV1Api);
    await vi.waitFor(async () => expect(await statusOf(alice.listNamespacedSecret({ namespace: NS }))).toBe(200), {
      timeout: 10_000,
      interval: 100,
    });
    expect(await statusOf(bob.listNamespacedSecret({ namespace: NS }))).toBe(403);
  });

  it("writes a kubeconfig file usable by other clients", async () => {
    const file = await cluster.writeKubeconfigFile("controller");
    const kc = new KubeConfig();
    kc.loadFromFile(file);
    expect(kc.getCurrentUser()?.name).toBe("controller");
    const version = await kc.makeApiClient(VersionApi).getCode();
    expect(version.major).toBe("1");
  });

  it("dry-run: a valid ASO UserAssignedIdentity passes", async () => {
    const [result] = await serverSideDryRunApply(
      admin,
      [identity({ location: "westeurope", owner: { name: "team-a-rg" }, azureName: "id-team-a", tags: { team: "a" } })],
      "berth-tests",
    );
    expect(result?.problems, formatDryRunProblems(result ? [result] : [])).toEqual([]);
    expect(result?.ok).toBe(true);
    // Dry run: nothing was stored.
    const get = await kubeRequest(admin, {
      method: "GET",
      path: `/apis/managedidentity.azure.com/v1api20230131/namespaces/${NS}/userassignedidentities/team-a-identity`,
    });
    expect(get.status).toBe(404);
  });

  it("dry-run: an unknown field is reported as pruned (a create drops it with only a warning)", async () => {
    const [result] = await serverSideDryRunApply(
      admin,
      [identity({ location: "westeurope", owner: { name: "team-a-rg", nmae: "typo" }, tagz: { team: "a" } }, "typo")],
      "berth-tests",
    );
    expect(result?.ok).toBe(false);
    const pruned = result?.problems
      .filter((p) => p.kind === "pruned")
      .map((p) => p.path)
      .sort();
    expect(pruned, formatDryRunProblems(result ? [result] : [])).toEqual(["spec.owner.nmae", "spec.tagz"]);
    expect(result?.problems).toHaveLength(2);
    // Why the helper exists: a plain (dry-run) create accepts the object and silently drops the fields.
    const typo = identity(
      { location: "westeurope", owner: { name: "team-a-rg", nmae: "typo" }, tagz: { team: "a" } },
      "typo",
    );
    const created = await kubeRequest(admin, {
      method: "POST",
      path: `/apis/managedidentity.azure.com/v1api20230131/namespaces/${NS}/userassignedidentities?dryRun=All`,
      body: typo,
    });
    expect(created.status).toBe(201);
    expect((created.json as { spec: unknown }).spec).toEqual({ location: "westeurope", owner: { name: "team-a-rg" } });
  });

  it("dry-run: a missing required field is rejected", async () => {
    const [result] = await serverSideDryRunApply(
      admin,
      [identity({ owner: { name: "team-a-rg" } }, "no-location")],
      "berth-tests",
    );
    expect(result?.ok).toBe(false);
    expect(result?.problems[0]?.kind).toBe("rejected");
    expect(result?.problems[0]?.message).toMatch(/location/);
  });

  it("dry-run: a Flux Kustomization (kustomize.toolkit.fluxcd.io/v1) validates; a bad enum is rejected", async () => {
    const kustomization = (sourceKind: string) => ({
      apiVersion: "kustomize.toolkit.fluxcd.io/v1",
      kind: "Kustomization",
      metadata: { name: `team-a-${sourceKind.toLowerCase()}`, namespace: NS },
      spec: {
        interval: "10m",
        path: "./teams/team-a",
        prune: true,
        sourceRef: { kind: sourceKind, name: "platform" },
        targetNamespace: "team-a",
        postBuild: { substitute: { team: "team-a" } },
      },
    });
    const [good, bad] = await serverSideDryRunApply(
      admin,
      [kustomization("GitRepository"), kustomization("HelmRepository")],
      "berth-tests",
    );
    expect(good?.problems, formatDryRunProblems(good ? [good] : [])).toEqual([]);
    expect(bad?.problems[0]?.kind).toBe("rejected");
    expect(bad?.problems[0]?.message).toMatch(/sourceRef\.kind/);
  });

  it("enforces the CEL validation rules a CRD carries (Flux's Kustomization spec.kubeConfig)", async () => {
    const path = `/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/${NS}/kustomizations`;
    const body = (kubeConfig: Record<string, unknown>) => ({
      apiVersion: "kustomize.toolkit.fluxcd.io/v1",
      kind: "Kustomization",
      metadata: { name: `cel-${Object.keys(kubeConfig).length}`, namespace: NS },
      spec: { interval: "10m", prune: true, sourceRef: { kind: "GitRepository", name: "platform" }, kubeConfig },
    });
    const refused = await kubeRequest(admin, { method: "POST", path: `${path}?dryRun=All`, body: body({}) });
    expect(refused.status, refused.body).toBe(422);
    expect((refused.json as { message: string }).message).toMatch(
      /exactly one of spec\.kubeConfig\.configMapRef or spec\.kubeConfig\.secretRef must be specified/,
    );
    const accepted = await kubeRequest(admin, {
      method: "POST",
      path: `${path}?dryRun=All`,
      body: body({ secretRef: { name: "kubeconfig" } }),
    });
    expect(accepted.status, accepted.body).toBe(201);
  });

  it('ResourceGroup with azureName "" is refused for minLength, on create and on apply', async () => {
    const path = `/apis/resources.azure.com/v1api20200601/namespaces/${NS}/resourcegroups`;
    const created = await kubeRequest(admin, { method: "POST", path, body: resourceGroup("rg-empty", "") });
    const message = (created.json as { message?: string } | undefined)?.message ?? created.body;
    expect(created.status, message).toBe(422);
    expect(message).toMatch(/spec\.azureName in body should be at least 1 chars long/);
    const causes =
      (created.json as { details?: { causes?: Array<{ field: string; message: string }> } } | undefined)?.details
        ?.causes ?? [];
    expect(causes, message).toEqual([
      expect.objectContaining({ field: "spec.azureName", message: expect.stringMatching(/^Invalid value: "": /) }),
    ]);

    // Server-side apply (through the dry-run helper): the same single refusal.
    const [applied] = await serverSideDryRunApply(admin, [resourceGroup("rg-empty", "")], "berth-tests");
    expect(applied?.ok).toBe(false);
    expect(applied?.problems.map((p) => p.kind)).toEqual(["rejected"]);
    expect(applied?.problems[0]?.message).toMatch(/spec\.azureName in body should be at least 1 chars long/);

    // Control: a non-empty name is fine.
    const [good] = await serverSideDryRunApply(admin, [resourceGroup("rg-named", "rg-team-a")], "berth-tests");
    expect(good?.problems, formatDryRunProblems(good ? [good] : [])).toEqual([]);
  });

  it("stop() kills both processes and removes the temp folder", async () => {
    const { pids, dir } = cluster;
    await cluster.stop();
    for (const pid of [pids.etcd, pids.kubeApiserver]) {
      expect(() => process.kill(pid, 0), `pid ${pid} still alive`).toThrow();
    }
    expect(existsSync(dir)).toBe(false);
  });
});

describe("test cluster with kube-controller-manager (namespace and garbage-collector controllers)", () => {
  let cluster: KubeCluster;
  let core: CoreV1Api;

  beforeAll(async () => {
    cluster = await startKubeCluster({ controllers: true, crdDirs: false });
    core = cluster.kubeConfig().makeApiClient(CoreV1Api);
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  it("a deleted namespace empties and goes once its objects' finalizers are released", async () => {
    await core.createNamespace({ body: { metadata: { name: "leaving" } } });
    await core.createNamespacedSecret({
      namespace: "leaving",
      body: { metadata: { name: "held", finalizers: ["berth.dev/test"] } },
    });
    await core.createNamespacedConfigMap({ namespace: "leaving", body: { metadata: { name: "plain" } } });
    await core.deleteNamespace({ name: "leaving" });
    // The namespace controller deletes the contents, one resource type after another (ConfigMaps can go before
    // Secrets are reached); the Secret waits for its finalizer, so the namespace stays.
    await vi.waitFor(
      async () => {
        expect(await statusOf(core.readNamespacedConfigMap({ name: "plain", namespace: "leaving" }))).toBe(404);
        const held = await core.readNamespacedSecret({ name: "held", namespace: "leaving" });
        expect(held.metadata?.deletionTimestamp).toBeDefined();
      },
      { timeout: 30_000, interval: 200 },
    );
    expect((await core.readNamespace({ name: "leaving" })).status?.phase).toBe("Terminating");
    const released = await kubeRequest(cluster.kubeConfig(), {
      method: "PATCH",
      path: "/api/v1/namespaces/leaving/secrets/held",
      contentType: "application/merge-patch+json",
      body: { metadata: { finalizers: null } },
    });
    expect(released.status, released.body).toBe(200);
    await vi.waitFor(async () => expect(await statusOf(core.readNamespace({ name: "leaving" }))).toBe(404), {
      timeout: 30_000,
      interval: 200,
    });
  });

  it("an object goes with its owner", async () => {
    await core.createNamespace({ body: { metadata: { name: "owners" } } });
    const owner = await core.createNamespacedConfigMap({ namespace: "owners", body: { metadata: { name: "owner" } } });
    await core.createNamespacedConfigMap({
      namespace: "owners",
      body: {
        metadata: {
          name: "owned",
          ownerReferences: [{ apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: owner.metadata!.uid! }],
        },
      },
    });
    await core.deleteNamespacedConfigMap({ name: "owner", namespace: "owners" });
    await vi.waitFor(
      async () =>
        expect(await statusOf(core.readNamespacedConfigMap({ name: "owned", namespace: "owners" }))).toBe(404),
      { timeout: 30_000, interval: 200 },
    );
  });

  it("stop() kills the controller manager too", async () => {
    const { pids } = cluster;
    expect(pids.controllerManager).toBeGreaterThan(0);
    await cluster.stop();
    for (const pid of [pids.etcd, pids.kubeApiserver, pids.controllerManager!])
      expect(() => process.kill(pid, 0), `pid ${pid} still alive`).toThrow();
  });
});
