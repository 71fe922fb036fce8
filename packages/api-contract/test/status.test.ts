import { describe, expect, it } from "vitest";
import {
  blockingCondition,
  describeClusterStatus,
  phaseOf,
  statusChain,
  type ClusterStatus,
  type Condition,
} from "../src/status.js";

const CHAIN = [
  "Rendered",
  "KustomizationReady",
  "ResourceGroupReady",
  "IdentityReady",
  "FederatedCredentialsReady",
  "FederationMatchesIssuer",
  "RoleAssignmentsReady",
  "CredentialWritten",
];

/** A reported status whose conditions before `blockedAt` are True, `blockedAt` is `blocked`, the rest Unknown. */
function reported(blockedAt?: string, blocked: Partial<Condition> = {}): ClusterStatus {
  const index = blockedAt ? CHAIN.indexOf(blockedAt) : CHAIN.length;
  const conditions: Condition[] = CHAIN.map((type, i) =>
    i < index
      ? { type, status: "True", reason: "Succeeded" }
      : i === index
        ? { type, status: "Unknown", reason: "Pending", ...blocked }
        : { type, status: "Unknown", reason: "Pending" },
  );
  const ready = index === CHAIN.length;
  conditions.push(
    ready
      ? { type: "Ready", status: "True", reason: "Ready" }
      : { type: "Ready", status: "False", reason: blocked.severity === "Error" ? "Failed" : "Waiting" },
  );
  return { cluster: "aks-dev-weu", environment: "dev", state: "reported", ready, stale: false, conditions };
}

const base = { cluster: "aks-dev-weu", environment: "dev", ready: false, stale: false, conditions: [] };
const states = (s: ClusterStatus) => statusChain(s).map((step) => `${step.step}=${step.state}`);

describe("phaseOf", () => {
  it("names one phase per cluster from the API's state and the controller's conditions", () => {
    expect(phaseOf(reported())).toBe("ready");
    expect(phaseOf(reported("IdentityReady"))).toBe("progressing");
    expect(phaseOf(reported("IdentityReady", { status: "False", severity: "Warning", reason: "Reconciling" }))).toBe(
      "progressing",
    );
    expect(
      phaseOf(reported("IdentityReady", { status: "False", severity: "Error", reason: "AuthorizationFailed" })),
    ).toBe("failed");
    expect(phaseOf({ ...reported(), stale: true })).toBe("progressing");
    // PlatformValuesFresh only informs: an Error there does not turn a Ready team into a failed one.
    const valuesStale: Condition = {
      type: "PlatformValuesFresh",
      status: "False",
      reason: "OIDCIssuerNotEnabled",
      severity: "Error",
    };
    const readyWithStaleValues = reported();
    readyWithStaleValues.conditions.splice(-1, 0, valuesStale);
    expect(phaseOf(readyWithStaleValues)).toBe("ready");
    expect(describeClusterStatus(readyWithStaleValues)).toBe("Ready");
    expect(phaseOf({ ...base, state: "absent" })).toBe("waiting");
    expect(phaseOf({ ...base, state: "pending" })).toBe("waiting");
    expect(phaseOf({ ...base, state: "unreachable" })).toBe("unreachable");
    expect(phaseOf({ ...base, state: "not-configured" })).toBe("unobserved");
  });
});

describe("statusChain", () => {
  it("walks committed → Flux applied → each ASO kind → credential → Ready", () => {
    expect(states(reported())).toEqual([
      "committed=done",
      "flux=done",
      "resource-group=done",
      "identity=done",
      "federation=done",
      "role-assignments=done",
      "credential=done",
      "ready=done",
    ]);
    expect(states(reported("IdentityReady"))).toEqual([
      "committed=done",
      "flux=done",
      "resource-group=done",
      "identity=active",
      "federation=waiting",
      "role-assignments=waiting",
      "credential=waiting",
      "ready=waiting",
    ]);
  });

  it("marks the step whose ASO object reports an Error as failed, with that condition", () => {
    const chain = statusChain(
      reported("IdentityReady", {
        status: "False",
        severity: "Error",
        reason: "AuthorizationFailed",
        message: "no access",
      }),
    );
    const identity = chain.find((s) => s.step === "identity")!;
    expect(identity).toMatchObject({
      state: "failed",
      condition: { reason: "AuthorizationFailed", severity: "Error" },
    });
    expect(chain.filter((s) => s.state === "active")).toEqual([]);
  });

  it("needs both federation conditions for the federated-credential step", () => {
    const status = reported("FederationMatchesIssuer", { status: "False", reason: "IssuerChanged" });
    expect(statusChain(status).find((s) => s.step === "federation")).toMatchObject({
      state: "active",
      condition: { type: "FederationMatchesIssuer" },
    });
  });

  it("treats a missing condition as not done", () => {
    const status = reported();
    status.conditions = status.conditions.filter((c) => c.type !== "CredentialWritten");
    expect(statusChain(status).find((s) => s.step === "credential")!.state).toBe("active");
  });

  it("shows Flux as the step under way before the controller reports, and nothing under way on a cluster it cannot read", () => {
    expect(states({ ...base, state: "absent" }).slice(0, 3)).toEqual([
      "committed=done",
      "flux=active",
      "resource-group=waiting",
    ]);
    expect(states({ ...base, state: "not-configured" }).filter((s) => s.endsWith("=active"))).toEqual([]);
    expect(states({ ...base, state: "unreachable" }).filter((s) => s.endsWith("=active"))).toEqual([]);
  });

  it("keeps Ready under way while the status describes an older generation", () => {
    expect(statusChain({ ...reported(), stale: true }).at(-1)!.state).toBe("active");
  });
});

describe("describeClusterStatus", () => {
  it("says why a cluster is not Ready, with ASO's reason and severity first", () => {
    const failed = reported("IdentityReady", {
      status: "False",
      severity: "Error",
      reason: "AuthorizationFailed",
      message: "no access",
    });
    expect(blockingCondition(failed)?.type).toBe("IdentityReady");
    expect(describeClusterStatus(failed)).toBe("IdentityReady: AuthorizationFailed (severity Error): no access");
    expect(describeClusterStatus(reported("ResourceGroupReady"))).toBe("ResourceGroupReady: Pending");
    expect(describeClusterStatus(reported())).toBe("Ready");
    expect(describeClusterStatus({ ...base, state: "absent" })).toBe("waiting for Flux to apply the team");
  });
});
