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
    const c = loadControllerConfig({ BERTH_CONFIG_FILE: file, BERTH_CLUSTER_NAME: "aks-dev-weu", BERTH_POD_NAME: "pod-1" });
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
      loadControllerConfig({ BERTH_CONFIG_FILE: file, BERTH_CLUSTER_NAME: "nope", BERTH_METRICS_PORT: "x", BERTH_LEADER_ELECTION: "maybe", BERTH_PROVIDER: "gcp" });
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
    expect(() => loadControllerConfig({ BERTH_CONFIG_FILE: file, BERTH_CLUSTER_NAME: "aks-prod" })).toThrow(/"aks-prod" is not a cluster of platform config \(known: aks-dev-weu\)/);
  });

  it("requires the config file and the cluster name", () => {
    expect(() => loadControllerConfig({})).toThrow(/BERTH_CONFIG_FILE[\s\S]*BERTH_CLUSTER_NAME/);
  });
});
