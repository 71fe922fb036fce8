import { describe, expect, it } from "vitest";
import {
  failedArtifactAttempt,
  sameStatus,
  statusBody,
  teamStatusView,
  type TeamStatusInputs,
} from "../src/reconcile/status.js";
import { CLIENT_A } from "./fixtures.js";

const now = new Date("2026-03-01T10:00:00Z");
const ready = (status = "True", extra: Record<string, unknown> = {}) => ({
  status: { conditions: [{ type: "Ready", status, ...extra }] },
});
const obj = (name: string, r: object) => ({ metadata: { name, labels: { "berth.dev/team": "payments" } }, ...r });
const ISSUER = "https://westeurope.oic.prod-aks.azure.com/tenant/cluster-1/";
const NEW_ISSUER = "https://westeurope.oic.prod-aks.azure.com/tenant/cluster-2/";
const fic = (name: string, issuer: string | undefined, r: object = ready()) => ({
  ...obj(name, r),
  spec: { ...(issuer ? { issuer } : {}), subject: "system:serviceaccount:x:y" },
});

function allGood(): TeamStatusInputs {
  return {
    team: { metadata: { name: "payments", generation: 3 }, spec: { roleAssignments: [{ role: "rg-contributor" }] } },
    kustomization: {
      metadata: { name: "team-payments" },
      status: {
        lastAppliedRevision: "main@sha1:abc",
        conditions: [
          {
            type: "Ready",
            status: "True",
            reason: "ReconciliationSucceeded",
            message: "Applied revision: main@sha1:abc",
          },
        ],
      },
    },
    asoObjects: {
      ResourceGroup: [obj("payments", ready())],
      UserAssignedIdentity: [obj("payments", ready())],
      FederatedIdentityCredential: [fic("payments--aso-controller", ISSUER)],
      RoleAssignment: [obj("payments--rg-contributor", ready())],
    },
    identity: { data: { clientId: CLIENT_A } },
    credential: { written: true, reason: "Written", message: "ok" },
    clusterIssuer: ISSUER,
    now,
  };
}

const cond = (v: ReturnType<typeof teamStatusView>, type: string) => v.conditions.find((c) => c.type === type)!;

describe("teamStatusView", () => {
  it("chains every condition in order and is Ready when all are True", () => {
    const v = teamStatusView(allGood());
    expect(v.conditions.map((c) => c.type)).toEqual([
      "Rendered",
      "ResourceGroupReady",
      "IdentityReady",
      "FederatedCredentialsReady",
      "FederationMatchesIssuer",
      "RoleAssignmentsReady",
      "KustomizationReady",
      "PlatformValuesFresh",
      "CredentialWritten",
      "Ready",
    ]);
    expect(
      v.conditions.every(
        (c) => c.status === "True" && c.observedGeneration === 3 && c.lastTransitionTime === now.toISOString(),
      ),
    ).toBe(true);
    expect(v).toMatchObject({ ready: true, revision: "main@sha1:abc", identity: { clientId: CLIENT_A } });
    expect(cond(v, "Rendered").message).toContain("main@sha1:abc");
  });

  it("reports a provider outage as PlatformValuesFresh=False with its severity, and stays Ready on the last known values", () => {
    const i = allGood();
    i.values = {
      fresh: false,
      reason: "AzureUnavailable",
      severity: "Warning",
      message: "ManagedClusters_Get: 503",
      lastKnownFrom: "flux-config/platform-vars",
    };
    const v = teamStatusView(i);
    expect(cond(v, "PlatformValuesFresh")).toMatchObject({
      status: "False",
      reason: "AzureUnavailable",
      severity: "Warning",
    });
    expect(cond(v, "PlatformValuesFresh").message).toContain("last known values (ConfigMap flux-config/platform-vars)");
    expect(cond(v, "CredentialWritten").status).toBe("True");
    expect(cond(v, "Ready")).toMatchObject({ status: "True", reason: "Ready" });
    expect(v.ready).toBe(true);

    // Without a stand-in (an authoritative "no"), the condition says so; Ready follows the credential, not this condition.
    i.values = { fresh: false, reason: "OIDCIssuerNotEnabled", severity: "Error", message: "no OIDC issuer" };
    i.credential = { written: false, reason: "ProviderUnavailable", message: "no OIDC issuer" };
    const broken = teamStatusView(i);
    expect(cond(broken, "PlatformValuesFresh")).toMatchObject({ status: "False", severity: "Error" });
    expect(cond(broken, "Ready")).toMatchObject({ status: "False", reason: "Waiting" });
    expect(cond(broken, "Ready").message).toMatch(/^CredentialWritten: ProviderUnavailable/);
  });

  it("a revision Flux failed to build before anything was applied: that revision, failed (severity Error)", () => {
    const i = allGood();
    i.kustomization = {
      status: {
        lastAttemptedRevision: "main@sha1:def",
        conditions: [{ type: "Ready", status: "False", reason: "BuildFailed", message: "boom" }],
      },
    };
    const v = teamStatusView(i);
    expect(v.revision).toBe("main@sha1:def");
    expect(cond(v, "KustomizationReady")).toMatchObject({
      status: "False",
      reason: "BuildFailed",
      message: "boom",
      severity: "Error",
    });
    expect(cond(v, "Ready")).toMatchObject({ status: "False", reason: "Failed" });
  });

  it("a newer revision Flux failed to apply: the status describes that revision, failed, not the older one still running", () => {
    const i = allGood();
    i.kustomization = {
      status: {
        lastAppliedRevision: "main@sha1:abc",
        lastAttemptedRevision: "main@sha1:def",
        conditions: [
          {
            type: "Ready",
            status: "False",
            reason: "ReconciliationFailed",
            message: 'LimitRange/payments/container-defaults dry-run failed: Unsupported value: "Containers"',
          },
        ],
      },
    };
    const v = teamStatusView(i);
    expect(v.revision).toBe("main@sha1:def");
    expect(cond(v, "KustomizationReady")).toMatchObject({
      status: "False",
      reason: "ReconciliationFailed",
      severity: "Error",
    });
    expect(cond(v, "Rendered")).toMatchObject({ status: "False", reason: "ReconciliationFailed", severity: "Error" });
    expect(cond(v, "Rendered").message).toContain(
      "Flux could not apply revision main@sha1:def: LimitRange/payments/container-defaults dry-run failed",
    );
    expect(cond(v, "Ready")).toMatchObject({ status: "False", reason: "Failed" });
    expect(cond(v, "Ready").message).toContain("Rendered: ReconciliationFailed");
  });

  it("a Kustomization that reads the team's ExternalArtifact: the commit the applied artifact was cut from (ADR 0019)", () => {
    const i = allGood();
    const artifact = "latest@sha256:4f5e2a0c9d1b7e3f6a8c0b2d4e6f8a1c3e5b7d9f0a2c4e6b8d0f1a3c5e7b9d2f";
    i.kustomization = {
      status: {
        lastAppliedRevision: artifact,
        lastAttemptedRevision: artifact,
        lastAppliedOriginRevision: "main@sha1:abc",
        conditions: [
          {
            type: "Ready",
            status: "True",
            reason: "ReconciliationSucceeded",
            message: `Applied revision: ${artifact}`,
          },
        ],
      },
    };
    const v = teamStatusView(i);
    expect(v.revision).toBe("main@sha1:abc");
    expect(cond(v, "Rendered").message).toBe("Flux applied revision main@sha1:abc");
  });

  it("an artifact Flux failed to apply: described by the commit it was cut from, when the reconciler read it; else by the artifact", () => {
    const failed = {
      status: {
        lastAppliedRevision: "latest@sha256:0000000000000000000000000000000000000000000000000000000000000001",
        lastAttemptedRevision: "latest@sha256:0000000000000000000000000000000000000000000000000000000000000002",
        lastAppliedOriginRevision: "main@sha1:abc",
        conditions: [
          {
            type: "Ready",
            status: "False",
            reason: "ReconciliationFailed",
            message: "LimitRange/payments/container-defaults dry-run failed",
          },
        ],
      },
    };
    expect(failedArtifactAttempt(failed)).toBe(failed.status.lastAttemptedRevision);
    const read = teamStatusView({ ...allGood(), kustomization: failed, attemptedOrigin: "main@sha1:def" });
    expect(read.revision).toBe("main@sha1:def");
    expect(cond(read, "Rendered")).toMatchObject({
      status: "False",
      severity: "Error",
      message: expect.stringContaining("Flux could not apply revision main@sha1:def"),
    });
    // Not read (the artifact moved on meanwhile): the artifact's own revision, which no gate takes for a commit.
    expect(teamStatusView({ ...allGood(), kustomization: failed }).revision).toBe(failed.status.lastAttemptedRevision);
    // A commit Flux failed to apply needs no artifact read.
    expect(
      failedArtifactAttempt({ status: { ...failed.status, lastAttemptedRevision: "main@sha1:def" } }),
    ).toBeUndefined();
  });

  it("applied while Flux's health checks run: Rendered is True, KustomizationReady waits for the ASO objects", () => {
    const i = allGood();
    i.asoObjects.ResourceGroup = [
      obj("payments", ready("False", { reason: "Reconciling", severity: "Info", message: "creating" })),
    ];
    const running = "Running health checks for revision main@sha1:def with a timeout of 15m0s";
    i.kustomization = {
      status: {
        lastAttemptedRevision: "main@sha1:def",
        conditions: [
          { type: "Reconciling", status: "True", reason: "Progressing", message: running },
          { type: "Ready", status: "Unknown", reason: "Progressing", message: "Reconciliation in progress" },
          { type: "Healthy", status: "Unknown", reason: "Progressing", message: running },
        ],
      },
    };
    const v = teamStatusView(i);
    expect(cond(v, "Rendered")).toMatchObject({
      status: "True",
      reason: "Applied",
      message: "Flux applied revision main@sha1:def",
    });
    expect(cond(v, "KustomizationReady")).toMatchObject({ status: "Unknown", reason: "Progressing" });
    expect(cond(v, "Ready").message).toMatch(/^ResourceGroupReady: Reconciling/);
  });

  it("a newer revision that waits (a dependency, the source) is a wait at the revision Flux runs", () => {
    const i = allGood();
    i.kustomization = {
      status: {
        lastAppliedRevision: "main@sha1:abc",
        lastAttemptedRevision: "main@sha1:def",
        conditions: [{ type: "Ready", status: "False", reason: "DependencyNotReady", message: "dependency not ready" }],
      },
    };
    const v = teamStatusView(i);
    expect(v.revision).toBe("main@sha1:abc");
    expect(cond(v, "KustomizationReady")).toMatchObject({ status: "False", reason: "DependencyNotReady" });
    expect(cond(v, "KustomizationReady").severity).toBeUndefined();
    expect(cond(v, "Ready")).toMatchObject({ status: "False", reason: "Waiting" });
  });

  it("carries ASO's reason and severity; Error wins over Warning and names the object", () => {
    const i = allGood();
    i.asoObjects.FederatedIdentityCredential = [
      obj("payments--a", ready("False", { severity: "Warning", reason: "Reconciling", message: "retrying" })),
      obj("payments--b", ready("False", { severity: "Error", reason: "BadRequest", message: "issuer is invalid" })),
    ];
    const v = teamStatusView(i);
    expect(cond(v, "FederatedCredentialsReady")).toMatchObject({
      status: "False",
      severity: "Error",
      reason: "BadRequest",
      message: "2/2 not Ready; payments--b: issuer is invalid",
    });
    expect(cond(v, "Ready")).toMatchObject({ status: "False", reason: "Failed" });
    expect(cond(v, "Ready").message).toContain("FederatedCredentialsReady: BadRequest");
  });

  it("names every object as bad as the worst, each with its reason, so one Warning does not hide another", () => {
    const i = allGood();
    i.asoObjects.FederatedIdentityCredential = [
      obj("payments--b", ready("False", { severity: "Warning", reason: "Conflict", message: "written concurrently" })),
      obj(
        "payments--a",
        ready("False", { severity: "Warning", reason: "UnknownError", message: "invalid polling URL" }),
      ),
      obj("payments--c", ready("True")),
    ];
    const v = teamStatusView(i);
    expect(cond(v, "FederatedCredentialsReady")).toMatchObject({
      status: "False",
      severity: "Warning",
      reason: "UnknownError",
      message: "2/3 not Ready; payments--a: invalid polling URL; payments--b (Conflict): written concurrently",
    });
    // Beyond three, the rest are counted, not listed.
    i.asoObjects.RoleAssignment = ["a", "b", "c", "d", "e"].map((n) =>
      obj(
        `payments--${n}`,
        ready("False", { severity: "Warning", reason: "PrincipalNotFound", message: "replicating" }),
      ),
    );
    expect(cond(teamStatusView(i), "RoleAssignmentsReady").message).toMatch(
      /^5\/5 not Ready; payments--a: replicating(; payments--[bcd] \(PrincipalNotFound\): replicating){3}; and 1 more$/,
    );
  });

  it("a Warning is reported with its severity and the team is not Ready", () => {
    const i = allGood();
    i.asoObjects.ResourceGroup = [
      obj(
        "payments",
        ready("False", { severity: "Warning", reason: "SubscriptionNotRegistered", message: "register" }),
      ),
    ];
    const v = teamStatusView(i);
    expect(cond(v, "ResourceGroupReady")).toMatchObject({
      status: "False",
      severity: "Warning",
      reason: "SubscriptionNotRegistered",
    });
    expect(v.ready).toBe(false);
  });

  it("missing objects are Unknown/NotFound; no role assignment requested is True", () => {
    const i = allGood();
    i.kustomization = undefined;
    i.asoObjects = {};
    i.team = { metadata: { name: "payments", generation: 1 }, spec: { roleAssignments: [] } };
    i.credential = { written: false, reason: "IdentityPending", message: "waiting" };
    const v = teamStatusView(i);
    expect(cond(v, "Rendered")).toMatchObject({ status: "False", reason: "KustomizationNotFound" });
    expect(cond(v, "IdentityReady")).toMatchObject({ status: "Unknown", reason: "NotFound" });
    expect(cond(v, "RoleAssignmentsReady")).toMatchObject({ status: "True", reason: "NoneRequested" });
    expect(cond(v, "CredentialWritten")).toMatchObject({ status: "False", reason: "IdentityPending" });
    expect(v.ready).toBe(false);
  });

  it("a Ready condition for an older generation is Unknown (Reconciling)", () => {
    const i = allGood();
    i.asoObjects.UserAssignedIdentity = [
      {
        metadata: { name: "payments", generation: 4 },
        status: { conditions: [{ type: "Ready", status: "True", observedGeneration: 3 }] },
      },
    ];
    expect(cond(teamStatusView(i), "IdentityReady")).toMatchObject({ status: "Unknown", reason: "Reconciling" });
  });

  it("FederationMatchesIssuer: False (IssuerChanged, Warning) naming old and new issuer while a credential trusts the old one; Ready waits", () => {
    const i = allGood();
    i.asoObjects.FederatedIdentityCredential = [
      fic("payments--aso-controller", ISSUER),
      fic("payments--workload", NEW_ISSUER),
    ];
    i.clusterIssuer = NEW_ISSUER;
    const v = teamStatusView(i);
    const c = cond(v, "FederationMatchesIssuer");
    expect(c).toMatchObject({ status: "False", reason: "IssuerChanged", severity: "Warning" });
    expect(c.message).toContain(`from ${ISSUER} to ${NEW_ISSUER}`);
    expect(c.message).toContain("payments--aso-controller");
    expect(c.message).not.toContain("payments--workload");
    // ASO still reports the credentials Ready (Azure has what the object says): only this condition sees it.
    expect(cond(v, "FederatedCredentialsReady").status).toBe("True");
    expect(cond(v, "Ready")).toMatchObject({ status: "False", reason: "Waiting" });
    expect(cond(v, "Ready").message).toMatch(/^FederationMatchesIssuer: IssuerChanged: /);
    expect(v.ready).toBe(false);

    // Flux re-applied both with the new issuer.
    i.asoObjects.FederatedIdentityCredential = [
      fic("payments--aso-controller", NEW_ISSUER),
      fic("payments--workload", NEW_ISSUER),
    ];
    const after = teamStatusView(i);
    expect(cond(after, "FederationMatchesIssuer")).toMatchObject({ status: "True", reason: "IssuerMatches" });
    expect(after.ready).toBe(true);
  });

  it("FederationMatchesIssuer of chained credentials (templates v3): what ASO wrote to Azure counts; one not written yet does not", () => {
    // The next credential reads its issuer from the ConfigMap ASO exports from the one before it.
    const chained = (name: string, inAzure: string | undefined, r: object = ready()) => {
      const o = obj(name, r) as { status?: Record<string, unknown> };
      return {
        ...o,
        spec: { issuerFromConfig: { name: "payments--aso-controller-issuer", key: "issuer" }, subject: "s" },
        ...(inAzure ? { status: { ...o.status, issuer: inAzure } } : {}),
      };
    };
    const i = allGood();
    // Onboarding: the first is in Azure, the next waits for its ConfigMap (ASO: ConfigMapNotFound, Warning).
    const waiting = ready("False", { reason: "ConfigMapNotFound", severity: "Warning" });
    i.asoObjects.FederatedIdentityCredential = [
      fic("payments--aso-controller", ISSUER),
      chained("payments--workload", undefined, waiting),
    ];
    const onboarding = cond(teamStatusView(i), "FederationMatchesIssuer");
    expect(onboarding).toMatchObject({ status: "True", reason: "IssuerMatches" });
    expect(onboarding.message).toContain("1 wait(s) for the one before them");
    expect(cond(teamStatusView(i), "FederatedCredentialsReady")).toMatchObject({ reason: "ConfigMapNotFound" });

    // The issuer changed: Flux re-applied the first, ASO has not carried it to the next one yet.
    i.clusterIssuer = NEW_ISSUER;
    i.asoObjects.FederatedIdentityCredential = [
      fic("payments--aso-controller", NEW_ISSUER),
      chained("payments--workload", ISSUER),
    ];
    const changed = cond(teamStatusView(i), "FederationMatchesIssuer");
    expect(changed).toMatchObject({ status: "False", reason: "IssuerChanged", severity: "Warning" });
    expect(changed.message).toContain(
      `from ${ISSUER} to ${NEW_ISSUER}: FederatedIdentityCredential payments--workload`,
    );
    expect(changed.message).toContain("follows once ASO has updated that one");

    // ASO wrote the new issuer to Azure.
    i.asoObjects.FederatedIdentityCredential = [
      fic("payments--aso-controller", NEW_ISSUER),
      chained("payments--workload", NEW_ISSUER),
    ];
    expect(cond(teamStatusView(i), "FederationMatchesIssuer")).toMatchObject({
      status: "True",
      reason: "IssuerMatches",
      message: `all 2 federated credentials trust the cluster's OIDC issuer ${NEW_ISSUER}`,
    });
  });

  it("FederationMatchesIssuer: Unknown without credentials or without a known issuer; an issuer-less credential does not match", () => {
    const i = allGood();
    i.clusterIssuer = undefined;
    expect(cond(teamStatusView(i), "FederationMatchesIssuer")).toMatchObject({
      status: "Unknown",
      reason: "IssuerUnknown",
    });
    i.clusterIssuer = ISSUER;
    i.asoObjects.FederatedIdentityCredential = [];
    expect(cond(teamStatusView(i), "FederationMatchesIssuer")).toMatchObject({ status: "Unknown", reason: "NotFound" });
    i.asoObjects.FederatedIdentityCredential = [fic("payments--aso-controller", undefined)];
    expect(cond(teamStatusView(i), "FederationMatchesIssuer")).toMatchObject({
      status: "False",
      reason: "IssuerChanged",
    });
    // Exact match: a trailing slash is a different issuer for Entra ID.
    i.asoObjects.FederatedIdentityCredential = [fic("payments--aso-controller", ISSUER.replace(/\/$/, ""))];
    expect(cond(teamStatusView(i), "FederationMatchesIssuer").status).toBe("False");
  });

  it("keeps lastTransitionTime while a status stays the same, moves it on a change", () => {
    const before = "2026-02-01T00:00:00.000Z";
    const i = allGood();
    i.previous = [
      { type: "Rendered", status: "True", lastTransitionTime: before },
      { type: "CredentialWritten", status: "False", lastTransitionTime: before },
    ];
    const v = teamStatusView(i);
    expect(cond(v, "Rendered").lastTransitionTime).toBe(before);
    expect(cond(v, "CredentialWritten").lastTransitionTime).toBe(now.toISOString());
  });

  it("sameStatus compares with the stored status regardless of key order", () => {
    const v = teamStatusView(allGood());
    const stored = JSON.parse(
      JSON.stringify(statusBody(v), (_k, x) =>
        x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).reverse()) : x,
      ),
    );
    expect(sameStatus(v, stored)).toBe(true);
    expect(sameStatus(v, { ...stored, revision: "other" })).toBe(false);
    expect(sameStatus(v, undefined)).toBe(false);
  });
});
