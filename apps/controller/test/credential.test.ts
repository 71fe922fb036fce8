import assert from "node:assert/strict";
import type { ManagedFieldsEntry } from "@berth/kube-runtime";
import { describe, expect, it } from "vitest";
import {
  classifyDrift,
  desiredTeamCredential,
  tamperMessage,
  teamCredentialSecret,
  workloadServiceAccountPatch,
} from "../src/reconcile/credential.js";
import type { SecretLike } from "../src/reconcile/objects.js";
import { CLIENT_A, CLIENT_B, decode, FACTS, SUBSCRIPTION, TENANT } from "./fixtures.js";

const identity = (data: Record<string, string>) => ({
  metadata: { name: "payments-identity", namespace: "flux-config" },
  data,
});
const cred = { tenantId: TENANT, subscriptionId: SUBSCRIPTION, clientId: CLIENT_A };

describe("desiredTeamCredential", () => {
  it("is known once ASO wrote the client id (tenant from the ConfigMap, subscription from the provider)", () => {
    expect(
      desiredTeamCredential(
        "payments",
        identity({ clientId: CLIENT_A, tenantId: TENANT, principalId: "p" }),
        FACTS,
        "flux-config",
      ),
    ).toEqual({ ok: true, value: cred });
  });

  it("falls back to the provider's tenant when ASO wrote none", () => {
    expect(desiredTeamCredential("payments", identity({ clientId: CLIENT_A }), FACTS, "flux-config")).toEqual({
      ok: true,
      value: cred,
    });
  });

  it.each([
    ["no ConfigMap", undefined, FACTS, "IdentityPending"],
    ["no clientId", identity({ tenantId: TENANT }), FACTS, "IdentityPending"],
    ["blank clientId", identity({ clientId: "  " }), FACTS, "IdentityPending"],
    ["clientId not a GUID", identity({ clientId: "not-a-guid" }), FACTS, "IdentityInvalid"],
    ["tenant of another directory", identity({ clientId: CLIENT_A, tenantId: CLIENT_B }), FACTS, "TenantMismatch"],
    ["no subscription known", identity({ clientId: CLIENT_A, tenantId: TENANT }), undefined, "SubscriptionUnknown"],
    ["no tenant at all", identity({ clientId: CLIENT_A }), undefined, "TenantUnknown"],
  ])("writes nothing with %s", (_what, cm, facts, reason) => {
    const d = desiredTeamCredential("payments", cm, facts, "flux-config");
    expect(d.ok).toBe(false);
    expect(d.ok ? "" : d.reason).toBe(reason);
  });
});

describe("teamCredentialSecret / workloadServiceAccountPatch", () => {
  it("is aso-credential in the team namespace, labelled, with the finalizer and base64 data", () => {
    const s = teamCredentialSecret("payments", cred);
    expect(s.metadata).toEqual({
      name: "aso-credential",
      namespace: "payments",
      labels: { "berth.dev/team": "payments", "app.kubernetes.io/managed-by": "berth" },
      finalizers: ["berth.dev/aso-credential"],
    });
    expect(decode(s.data)).toEqual({
      AZURE_CLIENT_ID: CLIENT_A,
      AZURE_SUBSCRIPTION_ID: SUBSCRIPTION,
      AZURE_TENANT_ID: TENANT,
      USE_WORKLOAD_IDENTITY_AUTH: "true",
    });
  });

  it("annotates only the client id on ServiceAccount workload", () => {
    expect(workloadServiceAccountPatch("payments", CLIENT_A)).toEqual({
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: {
        name: "workload",
        namespace: "payments",
        annotations: { "azure.workload.identity/client-id": CLIENT_A },
      },
    });
  });
});

describe("classifyDrift", () => {
  const want = teamCredentialSecret("payments", cred);
  const owners = new Map([
    [CLIENT_A, "payments"],
    [CLIENT_B, "orders"],
  ]);
  const ours = [
    {
      manager: "berth-controller",
      operation: "Apply",
      fieldsV1: { "f:data": { "f:AZURE_CLIENT_ID": {}, "f:AZURE_TENANT_ID": {} } },
    },
  ];
  const live = (data: Record<string, string>, managedFields: ManagedFieldsEntry[] = ours): SecretLike => ({
    metadata: { ...want.metadata, managedFields },
    data: {
      ...want.data,
      ...Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString("base64")])),
    },
  });

  it("missing, in sync, metadata-only", () => {
    expect(classifyDrift(undefined, want, owners, "payments")).toEqual({ kind: "missing" });
    expect(classifyDrift(live({}), want, owners, "payments")).toEqual({ kind: "in-sync" });
    expect(
      classifyDrift({ ...live({}), metadata: { ...live({}).metadata, finalizers: [] } }, want, owners, "payments"),
    ).toEqual({ kind: "metadata" });
  });

  it("our own older value is a rotation", () => {
    expect(
      classifyDrift(live({ AZURE_CLIENT_ID: CLIENT_B.replace("b", "c") }), want, new Map(), "payments"),
    ).toMatchObject({ kind: "rotated", toClientId: CLIENT_A });
  });

  it("another team's client id is tampering, even when berth-controller owns the field", () => {
    const d = classifyDrift(live({ AZURE_CLIENT_ID: CLIENT_B }), want, owners, "payments");
    expect(d).toMatchObject({ kind: "tampered", otherTeam: "orders", changed: ["AZURE_CLIENT_ID"] });
    assert(d.kind === "tampered");
    expect(tamperMessage("payments", d)).toMatch(/identity of team orders.*#4810/);
  });

  it("a value owned by another field manager is tampering", () => {
    const edited = [
      ...ours,
      { manager: "kubectl-edit", operation: "Update", fieldsV1: { "f:data": { "f:AZURE_TENANT_ID": {} } } },
    ];
    expect(classifyDrift(live({ AZURE_TENANT_ID: CLIENT_B }, edited), want, owners, "payments")).toMatchObject({
      kind: "tampered",
      owners: ["kubectl-edit"],
      changed: ["AZURE_TENANT_ID"],
    });
  });

  it("an added key is tampering (e.g. a client secret)", () => {
    expect(classifyDrift(live({ AZURE_CLIENT_SECRET: "s3cret" }), want, owners, "payments")).toMatchObject({
      kind: "tampered",
      extraKeys: ["AZURE_CLIENT_SECRET"],
    });
  });

  it("without managedFields a change cannot be attributed and counts as tampering", () => {
    expect(
      classifyDrift(live({ AZURE_CLIENT_ID: "cccccccc-cccc-4ccc-8ccc-cccccccccccc" }, []), want, owners, "payments"),
    ).toMatchObject({ kind: "tampered" });
  });
});
