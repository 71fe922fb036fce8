// needs: cluster
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { statusResponse } from "@berth/api-contract";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DEV_TOKEN, REPO_ROOT, startBerth, type RunningBerth } from "../support/berth.js";
import { readAnswer } from "../support/contract.js";
import { createBareRepo } from "../support/git-remotes.js";
import { startKubeCluster, type KubeCluster } from "../support/kube-cluster.js";
import { kubeRequest } from "../support/kube-http.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const auth = { authorization: `Bearer ${DEV_TOKEN}` };

describe("GET /v1/teams/{name}/status reads what the controller wrote on each cluster", () => {
  let cluster: KubeCluster;
  let berth: RunningBerth;

  beforeAll(async () => {
    cluster = await startKubeCluster();
    const kc = cluster.kubeConfig();
    const crd = parse(readFileSync(join(REPO_ROOT, "infra/controller/crds/berth.dev_teams.yaml"), "utf8"));
    expect(
      (
        await kubeRequest(kc, {
          method: "POST",
          path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
          body: crd,
        })
      ).status,
    ).toBe(201);
    for (let i = 0; i < 100; i++) {
      const res = await kubeRequest(kc, { method: "GET", path: "/apis/berth.dev/v1alpha1/teams" });
      if (res.status === 200) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    // The API reads with a user that may only get teams (least privilege), not as admin.
    const reader = "berth-api";
    await kubeRequest(kc, {
      method: "POST",
      path: "/apis/rbac.authorization.k8s.io/v1/clusterroles",
      body: {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRole",
        metadata: { name: "berth-api-status" },
        rules: [{ apiGroups: ["berth.dev"], resources: ["teams"], verbs: ["get"] }],
      },
    });
    await kubeRequest(kc, {
      method: "POST",
      path: "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
      body: {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: "berth-api-status" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "berth-api-status" },
        subjects: [{ kind: "User", name: reader, apiGroup: "rbac.authorization.k8s.io" }],
      },
    });
    const kubeconfig = await cluster.writeKubeconfigFile(reader);
    berth = await startBerth({
      remoteUrl: (await createBareRepo()).url,
      env: { BERTH_STATUS_KUBECONFIGS: `aks-dev-weu=${kubeconfig}` },
    });
    const created = await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: auth,
      payload: { name: "payments", owners: [OWNER], environments: ["dev", "prod"] },
    });
    expect(created.statusCode).toBe(201);
  });
  afterAll(async () => {
    await berth?.stop();
    await cluster?.stop();
  });

  const status = async () => {
    const res = await berth.server.inject({ url: "/v1/teams/payments/status", headers: auth });
    expect(res.statusCode).toBe(200);
    return readAnswer(res, statusResponse);
  };

  it("reports absent before Flux applied the Team, and not-configured for clusters it cannot read", async () => {
    const body = await status();
    expect(body.ready).toBe(false);
    expect(body.clusters.map((c) => [c.cluster, c.state])).toEqual([
      ["aks-dev-weu", "absent"],
      ["aks-prod-weu", "not-configured"],
      ["aks-prod-neu", "not-configured"],
    ]);
  });

  it("shows the controller's conditions once it reports them", async () => {
    const kc = cluster.kubeConfig();
    const team = {
      apiVersion: "berth.dev/v1alpha1",
      kind: "Team",
      metadata: { name: "payments" },
      spec: { description: "x", owners: [OWNER], environments: ["dev", "prod"], roleAssignments: [], labels: {} },
    };
    const created = await kubeRequest(kc, { method: "POST", path: "/apis/berth.dev/v1alpha1/teams", body: team });
    expect(created.status).toBe(201);
    // Status is read through the API's per-cluster cache: a change shows within api.statusCacheSeconds.
    await vi.waitFor(async () => expect((await status()).clusters[0]!.state).toBe("pending"), {
      timeout: 20_000,
      interval: 250,
    });

    const now = new Date().toISOString();
    const conditions = [
      {
        type: "Rendered",
        status: "True",
        reason: "Rendered",
        message: "revision main@sha1:abc",
        lastTransitionTime: now,
        observedGeneration: 1,
      },
      {
        type: "IdentityReady",
        status: "False",
        reason: "AzureError",
        severity: "Error",
        message: "ASO: quota exceeded",
        lastTransitionTime: now,
        observedGeneration: 1,
      },
      {
        type: "Ready",
        status: "False",
        reason: "IdentityReady",
        message: "IdentityReady is False",
        lastTransitionTime: now,
        observedGeneration: 1,
      },
    ];
    const current = created.json as { metadata: { resourceVersion: string } };
    const put = await kubeRequest(kc, {
      method: "PUT",
      path: "/apis/berth.dev/v1alpha1/teams/payments/status",
      body: {
        ...team,
        metadata: { name: "payments", resourceVersion: current.metadata.resourceVersion },
        status: {
          conditions,
          revision: "main@sha1:abc",
          identity: { clientId: "11111111-2222-3333-4444-555555555555" },
          observedGeneration: 1,
        },
      },
    });
    expect(put.status).toBe(200);

    const dev = await vi.waitFor(
      async () => {
        const c = (await status()).clusters[0]!;
        expect(c.state).toBe("reported");
        return c;
      },
      { timeout: 20_000, interval: 250 },
    );
    expect(dev).toMatchObject({
      cluster: "aks-dev-weu",
      state: "reported",
      ready: false,
      revision: "main@sha1:abc",
      clientId: "11111111-2222-3333-4444-555555555555",
    });
    expect(dev.conditions.find((c) => c.type === "IdentityReady")).toMatchObject({
      status: "False",
      reason: "AzureError",
      severity: "Error",
    });
  });

  it("answers 404 for a team that is not in the repo", async () => {
    const res = await berth.server.inject({ url: "/v1/teams/nobody/status", headers: auth });
    expect(res.statusCode).toBe(404);
  });
});
