import { describe, expect, it } from "vitest";
import { watchSpecs } from "../src/watches.js";
import { platform } from "./fixtures.js";

const specs = watchSpecs(platform());
const meta = (name: string, namespace?: string, labels?: Record<string, string>) => ({
  metadata: { name, ...(namespace ? { namespace } : {}), ...(labels ? { labels } : {}) },
});

describe("watch → queue key mapping", () => {
  it("maps each watched object to the keys whose reconcile reads it", () => {
    expect(specs.teams.keys(meta("payments"))).toEqual(["team/payments"]);
    expect(specs.asoConfigMaps.keys(meta("payments-identity", "flux-config"))).toEqual(["team/payments"]);
    expect(specs.asoConfigMaps.keys(meta("platform-vars", "flux-config"))).toEqual(["platform"]);
    expect(specs.asoConfigMaps.keys(meta("kube-root-ca.crt", "flux-config"))).toEqual([]);
    expect(specs.asoSecrets.keys(meta("aso-credential", "flux-config"))).toEqual(["platform"]);
    expect(specs.serviceAccounts.keys(meta("workload", "payments", { "berth.dev/team": "payments" }))).toEqual([
      "team/payments",
    ]);
    expect(specs.serviceAccounts.keys(meta("default", "payments", { "berth.dev/team": "payments" }))).toEqual([]);
    expect(specs.kustomizations.keys(meta("team-payments", "flux-config", { "berth.dev/team": "payments" }))).toEqual([
      "team/payments",
    ]);
    expect(specs.roleBindings.keys(meta("berth-controller", "payments", { "berth.dev/team": "payments" }))).toEqual([
      "team/payments",
    ]);
    expect(specs.roleBindings.keys(meta("berth-controller", "flux-config"))).toEqual([]);
    expect(specs["aso:ResourceGroup"]!.keys(meta("payments", "flux-config", { "berth.dev/team": "payments" }))).toEqual(
      ["team/payments"],
    );
  });

  it("looks at both teams when a credential's label names another team", () => {
    expect(specs.teamSecrets.keys(meta("aso-credential", "payments", { "berth.dev/team": "orders" }))).toEqual([
      "team/payments",
      "team/orders",
    ]);
    expect(specs.teamSecrets.keys(meta("other", "payments", { "berth.dev/team": "payments" }))).toEqual([]);
  });

  it("watches label-selected collections where it can", () => {
    expect(specs.teamSecrets).toMatchObject({ path: "/api/v1/secrets", labelSelector: "berth.dev/team" });
    expect(specs.serviceAccounts.labelSelector).toBe("berth.dev/team");
    expect(specs.asoSecrets.labelSelector).toBe("app.kubernetes.io/managed-by=berth");
    expect(specs.roleBindings).toMatchObject({
      path: "/apis/rbac.authorization.k8s.io/v1/rolebindings",
      fieldSelector: "metadata.name=berth-controller",
      labelSelector: "berth.dev/team",
    });
  });
});

describe("what the caches keep of a watched object", () => {
  it("keeps of a federated credential what it trusts: its issuer, or (chained) its ConfigMap and the issuer in Azure", () => {
    const keep = specs["aso:FederatedIdentityCredential"]?.keep;
    if (!keep) throw new Error("no watch of FederatedIdentityCredentials");
    const ready = { type: "Ready", status: "True" };
    const metadata = { name: "payments--workload", namespace: "flux-config", resourceVersion: "7" };
    const base = { metadata: { ...metadata, labels: { "berth.dev/team": "payments" } } };
    const status = { conditions: [ready, { type: "Other", status: "True" }], issuer: "https://old/", id: "/x" };
    // A watched object as the apiserver sends it (the cache's input type knows metadata only).
    const credential = (spec: object): Parameters<typeof keep>[0] =>
      ({ ...base, spec, status }) as Parameters<typeof keep>[0];
    expect(keep(credential({ issuer: "https://new/", subject: "s", audiences: ["a"] }))).toEqual({
      ...base,
      spec: { issuer: "https://new/" },
      status: { conditions: [ready] },
    });
    const issuerFromConfig = { name: "payments--aso-controller-issuer", key: "issuer" };
    expect(keep(credential({ issuerFromConfig, subject: "s" }))).toEqual({
      ...base,
      spec: { issuerFromConfig },
      status: { conditions: [ready], issuer: "https://old/" },
    });
  });
});

describe("what the caches keep of a team's Flux Kustomization", () => {
  it("keeps the source it reads (a failed apply is traced to the commit of that artifact) and the revisions", () => {
    const keep = specs.kustomizations.keep!;
    const kustomization = {
      metadata: { name: "team-payments", namespace: "flux-config", labels: { "berth.dev/team": "payments" } },
      spec: {
        path: "./teams/payments/clusters/aks-dev-weu",
        sourceRef: { kind: "ExternalArtifact", name: "team-files-payments" },
        healthCheckExprs: [{ apiVersion: "v1", kind: "X", current: "true" }],
      },
      status: {
        conditions: [{ type: "Ready", status: "False", reason: "BuildFailed" }],
        lastAttemptedRevision: "latest@sha256:b",
        lastAppliedRevision: "latest@sha256:a",
        inventory: { entries: [{ id: "x", v: "v1" }] },
      },
    };
    const kept = keep(kustomization) as { spec?: unknown; status?: Record<string, unknown> };
    expect(kept.spec).toEqual({ sourceRef: { kind: "ExternalArtifact", name: "team-files-payments" } });
    expect(kept.status).toEqual({
      conditions: [{ type: "Ready", status: "False", reason: "BuildFailed" }],
      lastAttemptedRevision: "latest@sha256:b",
      lastAppliedRevision: "latest@sha256:a",
    });
  });
});
