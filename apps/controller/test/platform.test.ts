import { ValueUnavailableError } from "@berth/core";
import { describe, expect, it } from "vitest";
import { StaticValuesProvider } from "../src/providers/static.js";
import {
  foreignDataOwners,
  platformCredentialSecret,
  platformVarsConfigMap,
  platformVarsData,
  satisfies,
} from "../src/reconcile/platform.js";
import { clusterOf, decode, FACTS, platform, PLATFORM_CLIENT, SUBSCRIPTION, TENANT } from "./fixtures.js";

describe("platform-vars", () => {
  it("holds every core key and every declared platformVars key, from facts and the cluster's vars", () => {
    const p = platform();
    const d = platformVarsData(p, clusterOf(p), FACTS);
    expect(d).toEqual({
      ok: true,
      value: {
        AZURE_LOCATION: "westeurope",
        CLUSTER_NAME: "aks-dev-weu",
        CLUSTER_OIDC: "https://oidc.example/issuer/",
        CLUSTER_OIDC_ISSUER_URL: "https://oidc.example/issuer/",
        ENVIRONMENT: "dev",
        SERVICEBUS_NAMESPACE: "sb-dev",
        SUBSCRIPTION_ID: SUBSCRIPTION,
        TENANT_ID: TENANT,
      },
    });
    const cm = platformVarsConfigMap(p, (d as { value: Record<string, string> }).value);
    expect(cm.metadata).toMatchObject({ name: "platform-vars", namespace: "flux-config" });
  });

  it("is not written at all when a declared key has no value, and says which", () => {
    const p = platform({ platformVars: { SERVICEBUS_NAMESPACE: "x", POSTGRES_SERVER: "y" } });
    const d = platformVarsData(p, clusterOf(p), FACTS);
    expect(d.ok).toBe(false);
    expect(d.ok ? "" : d.message).toContain("POSTGRES_SERVER");
  });

  it("treats a blank value as missing", () => {
    const p = platform();
    const d = platformVarsData(p, clusterOf(p), { ...FACTS, location: " " });
    expect(d.ok ? "" : d.message).toContain("AZURE_LOCATION");
  });
});

describe("platform aso-credential", () => {
  it("carries the platform identity with workload identity auth", () => {
    const d = platformCredentialSecret(platform(), {
      tenantId: TENANT,
      subscriptionId: SUBSCRIPTION,
      clientId: PLATFORM_CLIENT,
    });
    expect(d.ok).toBe(true);
    if (!d.ok) return;
    expect(d.value.metadata).toMatchObject({ name: "aso-credential", namespace: "flux-config" });
    expect(decode(d.value.data)).toEqual({
      AZURE_CLIENT_ID: PLATFORM_CLIENT,
      AZURE_SUBSCRIPTION_ID: SUBSCRIPTION,
      AZURE_TENANT_ID: TENANT,
      USE_WORKLOAD_IDENTITY_AUTH: "true",
    });
  });

  it("refuses an empty value", () => {
    expect(
      platformCredentialSecret(platform(), { tenantId: TENANT, subscriptionId: SUBSCRIPTION, clientId: "" }).ok,
    ).toBe(false);
  });
});

describe("static provider", () => {
  const provider = new StaticValuesProvider();
  it("answers from the cluster's vars", async () => {
    const p = platform();
    await expect(provider.clusterFacts(clusterOf(p))).resolves.toEqual(FACTS);
    await expect(provider.platformCredential(clusterOf(p))).resolves.toEqual({
      tenantId: TENANT,
      subscriptionId: SUBSCRIPTION,
      clientId: PLATFORM_CLIENT,
    });
  });

  it("throws ValueUnavailableError naming every missing key, never returns empty", async () => {
    const cluster = { name: "c1", environment: "dev", vars: { TENANT_ID: TENANT, AZURE_LOCATION: "" } };
    const err = await provider.clusterFacts(cluster).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValueUnavailableError);
    expect((err as Error).message).toMatch(/SUBSCRIPTION_ID, CLUSTER_OIDC_ISSUER_URL, AZURE_LOCATION/);
    await expect(provider.platformCredential(cluster)).rejects.toThrow(/PLATFORM_CLIENT_ID/);
  });
});

describe("satisfies / foreignDataOwners", () => {
  const desired = { data: { A: "1" }, metadata: { labels: { l: "v" }, finalizers: ["f"] } };
  it("is true only when every desired field is present with its value", () => {
    expect(satisfies(undefined, desired)).toBe(false);
    expect(
      satisfies(
        { data: { A: "1", B: "2" }, metadata: { labels: { l: "v", x: "y" }, finalizers: ["f", "g"] } },
        desired,
      ),
    ).toBe(true);
    expect(satisfies({ data: { A: "2" }, metadata: { labels: { l: "v" }, finalizers: ["f"] } }, desired)).toBe(false);
    expect(satisfies({ data: { A: "1" }, metadata: { labels: { l: "v" } } }, desired)).toBe(false);
  });

  it("names managers other than berth-controller that own data keys", () => {
    const current = {
      metadata: {
        managedFields: [
          { manager: "berth-controller", fieldsV1: { "f:data": { "f:A": {} } } },
          { manager: "kubectl-edit", fieldsV1: { "f:data": { "f:A": {} } } },
          { manager: "other", fieldsV1: { "f:metadata": {} } },
        ],
      },
    };
    expect(foreignDataOwners(current, ["A"])).toEqual(["kubectl-edit"]);
    expect(foreignDataOwners(current, ["B"])).toEqual([]);
  });
});
