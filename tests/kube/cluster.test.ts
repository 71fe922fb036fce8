/**
 * Proves the test-cluster harness (tests/support/kube-cluster.ts): a real kube-apiserver 1.20 +
 * etcd on 127.0.0.1 with the shared CRDs loaded, RBAC on, and the dry-run helper catching fields a
 * 1.20 server silently prunes, and "" in custom resources kept as "" (a Go >= 1.16 build of 1.20 refused it
 * as null until ensure-binaries.sh patched go-openapi/validate).
 *
 * Skips (with a message) only when the binaries are missing AND CI is not set; in CI a missing
 * binary fails: `.ci/run` must have called `bash infra/test-cluster/ensure-binaries.sh`.
 */
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  VersionApi,
} from "@kubernetes/client-node";
import {
  skipWithoutKubeBinaries,
  startKubeCluster,
  withoutConversionWebhook,
  type KubeCluster,
} from "../support/kube-cluster.js";
import { installCrd, kubeRequest } from "../support/kube-http.js";
import { compareSentAndReturned, formatDryRunProblems, serverSideDryRunApply } from "../support/kube-dry-run.js";

const skip = skipWithoutKubeBinaries();

const EXPECTED_CRDS = [
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

/**
 * A Team-like CRD whose schema allows "" everywhere: plain strings, a `default: ""`, a nullable string
 * (where a decoder turning "" into null would show as a stored null), string list items and map values.
 */
const EMPTY_GROUP = "empty-strings.berth-tests.dev";
const EMPTY_TEAM_CRD = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: `teams.${EMPTY_GROUP}` },
  spec: {
    group: EMPTY_GROUP,
    scope: "Namespaced",
    names: { kind: "Team", listKind: "TeamList", plural: "teams", singular: "team" },
    versions: [
      {
        name: "v1",
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: "object",
            properties: {
              spec: {
                type: "object",
                required: ["owners"],
                properties: {
                  description: { type: "string" },
                  displayName: { type: "string", default: "" },
                  nickname: { type: "string", nullable: true },
                  owners: { type: "array", items: { type: "string" } },
                  labels: { type: "object", additionalProperties: { type: "string" } },
                },
              },
            },
          },
        },
      },
    ],
  },
};
const EMPTY_TEAMS = `/apis/${EMPTY_GROUP}/v1/namespaces/${NS}/teams`;

function emptyTeam(name: string) {
  return {
    apiVersion: `${EMPTY_GROUP}/v1`,
    kind: "Team",
    metadata: { name, namespace: NS },
    spec: { description: "", nickname: "", owners: ["alice", ""], labels: { tier: "" } },
  };
}

function resourceGroup(name: string, azureName: string) {
  return {
    apiVersion: "resources.azure.com/v1api20200601",
    kind: "ResourceGroup",
    metadata: { name, namespace: NS },
    spec: { location: "westeurope", azureName },
  };
}

/** The refusal of a test apiserver built without the go-openapi/validate fix (ensure-binaries.sh, patch level berth2). */
const EMPTY_STRING_AS_NULL = /Invalid value: "null": \S+ in body must be of type string: "null"/;

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
  it("switches a conversion webhook to strategy None", () => {
    const crd = {
      kind: "CustomResourceDefinition",
      metadata: { name: "x.example.com" },
      spec: { conversion: { strategy: "Webhook", webhook: { conversionReviewVersions: ["v1"], clientConfig: { service: { name: "w", namespace: "n" } } } } },
    };
    expect(withoutConversionWebhook(crd).spec.conversion).toEqual({ strategy: "None" });
    expect(crd.spec.conversion.strategy).toBe("Webhook"); // not mutated
  });

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

describe.skipIf(skip)(`test cluster: real kube-apiserver 1.20 + etcd${skip ? " (SKIPPED: binaries missing)" : ""}`, () => {
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

  it("serves /readyz and reports v1.20", async () => {
    const ready = await kubeRequest(admin, { method: "GET", path: "/readyz" });
    expect(ready.status).toBe(200);
    expect(ready.body).toBe("ok");
    const version = await admin.makeApiClient(VersionApi).getCode();
    expect(version.gitVersion).toMatch(/^v1\.20\./);
    expect(cluster.server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
  });

  it("has all 6 shared CRDs established and every served version listable", async () => {
    expect(cluster.crdNames).toEqual(EXPECTED_CRDS);
    for (const name of EXPECTED_CRDS) {
      const res = await kubeRequest(admin, { method: "GET", path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}` });
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
        const list = await kubeRequest(admin, { method: "GET", path: `/apis/${crd.spec.group}/${v.name}/namespaces/${NS}/${crd.spec.names.plural}` });
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
      body: { metadata: { name: "secret-reader" }, rules: [{ apiGroups: [""], resources: ["secrets"], verbs: ["list"] }] },
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
    await vi.waitFor(async () => expect(await statusOf(tester.listNamespacedSecret({ namespace: NS }))).toBe(200), { timeout: 10_000, interval: 100 });
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
    await vi.waitFor(async () => expect(await statusOf(alice.listNamespacedSecret({ namespace: NS }))).toBe(200), { timeout: 10_000, interval: 100 });
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

  it("dry-run: an unknown field is reported as pruned (a 1.20 server drops it silently)", async () => {
    const [result] = await serverSideDryRunApply(
      admin,
      [identity({ location: "westeurope", owner: { name: "team-a-rg", nmae: "typo" }, tagz: { team: "a" } }, "typo")],
      "berth-tests",
    );
    expect(result?.ok).toBe(false);
    const pruned = result?.problems.filter((p) => p.kind === "pruned").map((p) => p.path).sort();
    expect(pruned, formatDryRunProblems(result ? [result] : [])).toEqual(["spec.owner.nmae", "spec.tagz"]);
    expect(result?.problems).toHaveLength(2);
    // Why the helper exists: a plain (dry-run) create accepts the object and silently drops the fields.
    const typo = identity({ location: "westeurope", owner: { name: "team-a-rg", nmae: "typo" }, tagz: { team: "a" } }, "typo");
    const created = await kubeRequest(admin, {
      method: "POST",
      path: `/apis/managedidentity.azure.com/v1api20230131/namespaces/${NS}/userassignedidentities?dryRun=All`,
      body: typo,
    });
    expect(created.status).toBe(201);
    expect((created.json as { spec: unknown }).spec).toEqual({ location: "westeurope", owner: { name: "team-a-rg" } });
  });

  it("dry-run: a missing required field is rejected", async () => {
    const [result] = await serverSideDryRunApply(admin, [identity({ owner: { name: "team-a-rg" } }, "no-location")], "berth-tests");
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
    const [good, bad] = await serverSideDryRunApply(admin, [kustomization("GitRepository"), kustomization("HelmRepository")], "berth-tests");
    expect(good?.problems, formatDryRunProblems(good ? [good] : [])).toEqual([]);
    expect(bad?.problems[0]?.kind).toBe("rejected");
    expect(bad?.problems[0]?.message).toMatch(/sourceRef\.kind/);
  });

  // Regression: upstream 1.20 built with Go >= 1.16 refuses "" in custom resources as null (go-openapi/validate's
  // zero-value check, see ensure-binaries.sh). A released 1.20 (Go 1.15) keeps "", and so must this build.
  it('custom resources keep "": create, read back, server-side apply, `default: ""` (regression)', async () => {
    expect(await installCrd(admin, EMPTY_TEAM_CRD), 'CRD with `default: ""`').toBeUndefined();
    const expected = { ...emptyTeam("x").spec, displayName: "" };

    const created = await kubeRequest(admin, { method: "POST", path: EMPTY_TEAMS, body: emptyTeam("empty-create") });
    expect(created.status, created.body).toBe(201);
    expect((created.json as { spec: unknown }).spec).toEqual(expected);
    const read = await kubeRequest(admin, { method: "GET", path: `${EMPTY_TEAMS}/empty-create` });
    expect(read.status).toBe(200);
    expect((read.json as { spec: unknown }).spec).toEqual(expected);

    const applied = await kubeRequest(admin, {
      method: "PATCH",
      path: `${EMPTY_TEAMS}/empty-apply?fieldManager=berth-tests&force=true`,
      contentType: "application/apply-patch+yaml",
      body: emptyTeam("empty-apply"),
    });
    expect(applied.status, applied.body).toBe(201);
    const readApplied = await kubeRequest(admin, { method: "GET", path: `${EMPTY_TEAMS}/empty-apply` });
    expect((readApplied.json as { spec: unknown }).spec).toEqual(expected);

    // Clearing a field to "" on update keeps "" too.
    const updated = await kubeRequest(admin, {
      method: "PATCH",
      path: `${EMPTY_TEAMS}/empty-create`,
      contentType: "application/merge-patch+json",
      body: { spec: { displayName: "Team X" } },
    });
    expect(updated.status, updated.body).toBe(200);
    const cleared = await kubeRequest(admin, {
      method: "PATCH",
      path: `${EMPTY_TEAMS}/empty-create`,
      contentType: "application/merge-patch+json",
      body: { spec: { displayName: "" } },
    });
    expect(cleared.status, cleared.body).toBe(200);
    expect((cleared.json as { spec: { displayName: unknown } }).spec.displayName).toBe("");

    // The dry-run helper sees no problem either.
    const [result] = await serverSideDryRunApply(admin, [emptyTeam("empty-dry-run")], "berth-tests");
    expect(result?.problems, formatDryRunProblems(result ? [result] : [])).toEqual([]);
  });

  it('ResourceGroup with azureName "" is refused for minLength only, never as null (regression)', async () => {
    const path = `/apis/resources.azure.com/v1api20200601/namespaces/${NS}/resourcegroups`;
    const created = await kubeRequest(admin, { method: "POST", path, body: resourceGroup("rg-empty", "") });
    const message = (created.json as { message?: string } | undefined)?.message ?? created.body;
    expect(created.status, message).toBe(422);
    expect(message).not.toMatch(EMPTY_STRING_AS_NULL);
    expect(message).toMatch(/spec\.azureName in body should be at least 1 chars long/);
    const causes = (created.json as { details?: { causes?: Array<{ field: string; message: string }> } } | undefined)?.details?.causes ?? [];
    expect(causes, message).toEqual([expect.objectContaining({ field: "spec.azureName", message: expect.stringMatching(/^Invalid value: "": /) })]);

    // Server-side apply (through the dry-run helper): the same single refusal.
    const [applied] = await serverSideDryRunApply(admin, [resourceGroup("rg-empty", "")], "berth-tests");
    expect(applied?.ok).toBe(false);
    expect(applied?.problems.map((p) => p.kind)).toEqual(["rejected"]);
    expect(applied?.problems[0]?.message).not.toMatch(EMPTY_STRING_AS_NULL);
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
