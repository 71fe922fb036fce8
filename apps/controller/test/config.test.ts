import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError, loadControllerConfig } from "@berth/config";
import { describe, expect, it } from "vitest";

const dir = mkdtempSync(join(tmpdir(), "berth-controller-config-"));
const file = join(dir, "berth.yaml");
writeFileSync(
  file,
  `logLevel: warn
templatesDir: ./templates
api: { auth: { mode: dev, token: "0123456789abcdef" } }
platform:
  asoNamespace: aso
  environments:
    - name: dev
      clusters:
        - name: aks-dev-weu
          vars: { TENANT_ID: t }
`,
);

describe("loadControllerConfig", () => {
  it("reads the platform section of the shared file, env for the rest, with defaults", () => {
    const c = loadControllerConfig({
      BERTH_CONFIG_FILE: file,
      BERTH_CLUSTER_NAME: "aks-dev-weu",
      BERTH_POD_NAME: "pod-1",
    });
    expect(c).toMatchObject({
      logLevel: "warn",
      namespace: "berth-system",
      metricsPort: 8081,
      leaderElection: true,
      identity: "pod-1",
      provider: "static",
      cluster: { name: "aks-dev-weu", environment: "dev", vars: { TENANT_ID: "t" } },
    });
    expect(c.platform.asoNamespace).toBe("aso");
  });

  it("takes overrides from env", () => {
    const c = loadControllerConfig({
      BERTH_CONFIG_FILE: file,
      BERTH_CLUSTER_NAME: "aks-dev-weu",
      BERTH_CONTROLLER_NAMESPACE: "ops",
      BERTH_METRICS_PORT: "9090",
      BERTH_LEADER_ELECTION: "false",
      BERTH_LOG_LEVEL: "debug",
    });
    expect(c).toMatchObject({ namespace: "ops", metricsPort: 9090, leaderElection: false, logLevel: "debug" });
  });

  it("fails with every problem at once", () => {
    let err: unknown;
    try {
      loadControllerConfig({
        BERTH_CONFIG_FILE: file,
        BERTH_CLUSTER_NAME: "nope",
        BERTH_METRICS_PORT: "x",
        BERTH_LEADER_ELECTION: "maybe",
        BERTH_PROVIDER: "gcp",
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const message = (err as Error).message;
    expect(message).toMatch(/BERTH_METRICS_PORT/);
    expect(message).toMatch(/BERTH_LEADER_ELECTION/);
    expect(message).toMatch(/BERTH_PROVIDER/);
  });

  it("names the known clusters when BERTH_CLUSTER_NAME is not one of them", () => {
    expect(() => loadControllerConfig({ BERTH_CONFIG_FILE: file, BERTH_CLUSTER_NAME: "aks-prod" })).toThrow(
      /"aks-prod" is not a cluster of platform config \(known: aks-dev-weu\)/,
    );
  });

  it("requires the config file and the cluster name", () => {
    expect(() => loadControllerConfig({})).toThrow(/BERTH_CONFIG_FILE[\s\S]*BERTH_CLUSTER_NAME/);
  });

  describe("BERTH_PROVIDER=azure", () => {
    const withAzure = join(dir, "azure.yaml");
    writeFileSync(
      withAzure,
      `platform:
  platformVars: { SERVICEBUS_NAMESPACE: Shared Service Bus namespace }
  environments:
    - name: prod
      clusters:
        - name: aks-prod-weu
          vars: { SERVICEBUS_NAMESPACE: sb-prod }
          azure:
            subscriptionId: 22222222-2222-4222-8222-222222222222
            resourceGroup: rg-aks-prod-weu
            managedClusterName: aks-prod-weu
            platformIdentity: { resourceGroup: rg-platform, name: id-berth-aso }
        - name: aks-prod-neu
`,
    );

    it("reads the cluster's Azure coordinates (and keeps its vars for what Azure cannot tell)", () => {
      const c = loadControllerConfig({
        BERTH_CONFIG_FILE: withAzure,
        BERTH_CLUSTER_NAME: "aks-prod-weu",
        BERTH_PROVIDER: "azure",
      });
      expect(c.provider).toBe("azure");
      expect(c.cluster.azure).toEqual({
        subscriptionId: "22222222-2222-4222-8222-222222222222",
        resourceGroup: "rg-aks-prod-weu",
        managedClusterName: "aks-prod-weu",
        platformIdentity: { resourceGroup: "rg-platform", name: "id-berth-aso" },
      });
      expect(c.cluster.vars).toEqual({ SERVICEBUS_NAMESPACE: "sb-prod" });
      expect(c.azureTuning).toEqual({});
    });

    it("refuses to start without them for this cluster (the static provider does not need them)", () => {
      expect(() =>
        loadControllerConfig({
          BERTH_CONFIG_FILE: withAzure,
          BERTH_CLUSTER_NAME: "aks-prod-neu",
          BERTH_PROVIDER: "azure",
        }),
      ).toThrow(/BERTH_PROVIDER=azure: cluster "aks-prod-neu" has no Azure coordinates/);
      expect(loadControllerConfig({ BERTH_CONFIG_FILE: withAzure, BERTH_CLUSTER_NAME: "aks-prod-neu" }).provider).toBe(
        "static",
      );
    });

    it("validates the coordinates", () => {
      const bad = join(dir, "azure-bad.yaml");
      writeFileSync(
        bad,
        `platform:
  environments:
    - name: prod
      clusters:
        - name: aks-prod-weu
          azure:
            subscriptionId: not-a-guid
            resourceGroup: "rg/../other"
            managedClusterName: aks-prod-weu
            platformIdentity: { resourceGroup: rg-platform }
`,
      );
      let message = "";
      try {
        loadControllerConfig({ BERTH_CONFIG_FILE: bad, BERTH_CLUSTER_NAME: "aks-prod-weu", BERTH_PROVIDER: "azure" });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(/azure\.subscriptionId: must be a GUID/);
      expect(message).toMatch(/azure\.resourceGroup: must be an Azure resource group name/);
      expect(message).toMatch(/azure\.platformIdentity\.name/);
    });

    it("takes BERTH_AZURE_TUNING as JSON with known keys only", () => {
      const env = { BERTH_CONFIG_FILE: withAzure, BERTH_CLUSTER_NAME: "aks-prod-weu", BERTH_PROVIDER: "azure" };
      const c = loadControllerConfig({
        ...env,
        BERTH_AZURE_TUNING:
          '{"cacheTtlMs":{"cluster":2000},"retry":{"baseDelayMs":50},"breaker":{"halfOpenAfterMs":1000}}',
      });
      expect(c.azureTuning).toEqual({
        cacheTtlMs: { cluster: 2000 },
        retry: { baseDelayMs: 50 },
        breaker: { halfOpenAfterMs: 1000 },
      });
      expect(() => loadControllerConfig({ ...env, BERTH_AZURE_TUNING: "{cluster: 2}" })).toThrow(
        /BERTH_AZURE_TUNING: not JSON/,
      );
      expect(() => loadControllerConfig({ ...env, BERTH_AZURE_TUNING: '{"cacheTtlMs":{"clustr":2000}}' })).toThrow(
        /BERTH_AZURE_TUNING\.cacheTtlMs/,
      );
      expect(() => loadControllerConfig({ ...env, BERTH_AZURE_TUNING: '{"retry":{"maxAttempts":0}}' })).toThrow(
        /BERTH_AZURE_TUNING\.retry\.maxAttempts/,
      );
    });
  });
});
