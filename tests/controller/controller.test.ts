/**
 * The controller end to end on a REAL kube-apiserver + etcd (tests/support/kube-cluster.ts), running under the RBAC of
 * infra/controller/ as its ServiceAccount (not as admin). The test plays Flux and ASO: it writes the
 * Team objects, namespaces, ServiceAccounts and RoleBindings Flux would apply, the `<team>-identity`
 * ConfigMaps and Ready conditions ASO would write, and the Kustomizations' status.
 *
 * Two replicas run: A through a TCP proxy (so the test can cut it off like a crashed pod), B direct.
 */
// needs: cluster
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadControllerConfig, type ControllerConfig } from "@berth/config";
import type { Cluster, ClusterFacts, PlatformValuesProvider } from "@berth/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Controller, type ControllerTimings } from "../../apps/controller/src/controller.js";
import { StaticValuesProvider } from "../../apps/controller/src/providers/static.js";
import { REPO_ROOT, startKubeCluster, type KubeCluster } from "../support/kube-cluster.js";
import { captureLogs, parseLogLine, parseLogOutput } from "../support/logs.js";
import { eventually } from "../support/wait.js";
import {
  Admin,
  ASO_NS,
  CONTROLLER_GROUPS,
  CONTROLLER_USER,
  decode,
  INFRA,
  onboardTeam,
  readManifests,
  type Obj,
} from "./helpers.js";
import { TcpProxy } from "../support/tcp-proxy.js";

const TENANT = "11111111-1111-4111-8111-111111111111";
const SUBSCRIPTION = "22222222-2222-4222-8222-222222222222";
const PLATFORM_CLIENT = "33333333-3333-4333-8333-333333333333";
const OIDC = "https://westeurope.oic.prod-aks.azure.com/tenant/cluster/";
const clientId = (n: number) => `${String(n).padStart(8, "0")}-aaaa-4aaa-8aaa-aaaaaaaaaaaa`;

const TIMINGS: Partial<ControllerTimings> = {
  leaseDurationSec: 6,
  renewDeadlineSec: 4,
  retryPeriodSec: 1,
  retryMs: 1_000,
  offboardingPollMs: 500,
};

const CONFIG_YAML = `
platform:
  asoNamespace: ${ASO_NS}
  platformVars:
    SERVICEBUS_NAMESPACE: Shared Service Bus namespace
  environments:
    - name: dev
      clusters:
        - name: aks-dev-weu
          vars:
            TENANT_ID: "${TENANT}"
            SUBSCRIPTION_ID: "${SUBSCRIPTION}"
            CLUSTER_OIDC_ISSUER_URL: "${OIDC}"
            AZURE_LOCATION: westeurope
            PLATFORM_CLIENT_ID: "${PLATFORM_CLIENT}"
            SERVICEBUS_NAMESPACE: sb-dev-weu
`;

const V1 = "v1";
const TEAM_V = "berth.dev/v1alpha1";
const KUSTOMIZATION_V = "kustomize.toolkit.fluxcd.io/v1";
const RBAC = "rbac.authorization.k8s.io/v1";

/** The static provider with a gate: once armed, every clusterFacts call waits until open(). */
class GatedProvider extends StaticValuesProvider {
  waiting = 0;
  private gate: Promise<void> | undefined;
  private release: (() => void) | undefined;

  arm(): void {
    this.gate = new Promise((r) => (this.release = r));
  }

  open(): void {
    this.release?.();
    this.gate = undefined;
  }

  override async clusterFacts(cluster: Cluster): Promise<ClusterFacts> {
    if (this.gate) {
      this.waiting++;
      await this.gate;
    }
    return super.clusterFacts(cluster);
  }
}

describe("berth controller on a real apiserver, under its own RBAC", () => {
  let cluster: KubeCluster;
  let admin: Admin;
  let proxy: TcpProxy;
  let config: (identity: string) => ControllerConfig;
  let configFile: string;
  /** Every line each in-process replica logged, and what the main.ts process printed. */
  const replicaLogs: string[][] = [];
  const processOutput: string[] = [];
  const logs = {
    some: (f: (line: string) => boolean) => replicaLogs.some((l) => l.some(f)),
    findIndex: (f: (line: string) => boolean) => replicaLogs.flat().findIndex(f),
  };
  const controllers: Controller[] = [];
  let a: Controller;

  const startController = async (
    identity: string,
    kc = cluster.kubeConfigFor(CONTROLLER_USER, CONTROLLER_GROUPS),
    provider: PlatformValuesProvider = new StaticValuesProvider(),
  ) => {
    // The logger main.ts makes (base keys app + identity), into memory.
    const captured = captureLogs({ base: { app: "berth-controller", identity } });
    replicaLogs.push(captured.lines);
    const c = new Controller({
      kubeConfig: kc,
      config: config(identity),
      provider,
      logger: captured.logger,
      timings: TIMINGS,
    });
    controllers.push(c);
    await c.start();
    return c;
  };

  const onboard = (team: string) => onboardTeam(admin, team);

  /** What ASO writes once the team's identity exists. */
  const writeIdentity = async (team: string, id: string) => {
    const existing = await admin.get(V1, "ConfigMap", ASO_NS, `${team}-identity`);
    const data = { clientId: id, principalId: "99999999-9999-4999-8999-999999999999", tenantId: TENANT };
    if (existing) await admin.mergePatch(V1, "ConfigMap", ASO_NS, `${team}-identity`, { data }, "azureserviceoperator");
    else
      await admin.create({
        apiVersion: V1,
        kind: "ConfigMap",
        metadata: { name: `${team}-identity`, namespace: ASO_NS },
        data,
      });
  };

  const secretOf = (team: string) => admin.get(V1, "Secret", team, "aso-credential");
  const teamStatus = async (team: string) =>
    (await admin.get(TEAM_V, "Team", undefined, team))?.status as
      | {
          conditions?: Array<{ type: string; status: string; reason: string; message: string; severity?: string }>;
          identity?: { clientId: string };
          revision?: string;
        }
      | undefined;
  const condition = async (team: string, type: string) =>
    (await teamStatus(team))?.conditions?.find((c) => c.type === type);
  const credentialIs = (team: string, id: string) =>
    eventually(`aso-credential of ${team} with client id ${id}`, async () => {
      const s = await secretOf(team);
      return s && decode(s.data as Record<string, string>).AZURE_CLIENT_ID === id ? s : undefined;
    });

  beforeAll(async () => {
    const t0 = Date.now();
    cluster = await startKubeCluster({ crds: readManifests(join(INFRA, "crds")) });
    admin = new Admin(cluster.kubeConfig());
    await admin.create({ apiVersion: V1, kind: "Namespace", metadata: { name: ASO_NS } });
    // The controller's Namespace, ServiceAccount and RBAC exactly as infra/controller/ ships them.
    for (const obj of readManifests(INFRA, (f) => f === "namespace.yaml" || f.startsWith("rbac-")))
      await admin.create(obj);

    const dir = mkdtempSync(join(tmpdir(), "berth-controller-e2e-"));
    configFile = join(dir, "berth.yaml");
    writeFileSync(configFile, CONFIG_YAML);
    config = (identity) =>
      loadControllerConfig({
        BERTH_CONFIG_FILE: join(dir, "berth.yaml"),
        BERTH_CLUSTER_NAME: "aks-dev-weu",
        BERTH_POD_NAME: identity,
        BERTH_METRICS_PORT: "0",
      });

    const url = new URL(cluster.server);
    proxy = new TcpProxy({ host: url.hostname, port: Number(url.port) });
    await proxy.start();
    a = await startController("replica-a", proxy.kubeConfig(cluster.kubeConfigFor(CONTROLLER_USER, CONTROLLER_GROUPS)));
    await eventually("replica-a to lead", async () => a.isLeader());
    console.log(`[tests/controller] cluster ${cluster.startupMs} ms, controller leading after ${Date.now() - t0} ms`);
  });

  afterAll(async () => {
    if (process.env.BERTH_TEST_DEBUG)
      console.log(
        replicaLogs
          .flat()
          .filter((l) => /"level":(40|50)/.test(l))
          .slice(-30)
          .join(""),
      );
    const timeout = (p: Promise<unknown>) => Promise.race([p, new Promise((r) => setTimeout(r, 5_000))]);
    await Promise.all(controllers.map((c) => timeout(c.stop())));
    proxy?.kill();
    await cluster?.stop();
  });

  it("writes platform-vars and the platform aso-credential, and restores them when deleted or edited", async () => {
    const cm = await eventually("platform-vars", () => admin.get(V1, "ConfigMap", ASO_NS, "platform-vars"));
    expect(cm.data).toEqual({
      AZURE_LOCATION: "westeurope",
      CLUSTER_NAME: "aks-dev-weu",
      CLUSTER_OIDC: OIDC,
      CLUSTER_OIDC_ISSUER_URL: OIDC,
      ENVIRONMENT: "dev",
      SERVICEBUS_NAMESPACE: "sb-dev-weu",
      SUBSCRIPTION_ID: SUBSCRIPTION,
      TENANT_ID: TENANT,
    });
    const secret = await eventually("platform aso-credential", () => admin.get(V1, "Secret", ASO_NS, "aso-credential"));
    expect(decode(secret.data as Record<string, string>)).toEqual({
      AZURE_TENANT_ID: TENANT,
      AZURE_SUBSCRIPTION_ID: SUBSCRIPTION,
      AZURE_CLIENT_ID: PLATFORM_CLIENT,
      USE_WORKLOAD_IDENTITY_AUTH: "true",
    });

    // Written once each at start: no pass writes an object whose content would not change (the platform
    // credential used to be applied twice, 12 ms apart, when a second pass ran before the watch echo).
    const writes = (msg: string) => replicaLogs[0]!.filter((l) => parseLogLine(l).msg === msg).length;
    // The object can be read before its log line has come through the replica's stdout pipe.
    await eventually("the platform writes logged", async () =>
      writes("platform aso-credential written") > 0 && writes("platform-vars written") > 0 ? true : undefined,
    );
    expect(writes("platform aso-credential written")).toBe(1);
    expect(writes("platform-vars written")).toBe(1);

    const uid = (cm.metadata as { uid: string }).uid;
    await admin.delete(V1, "ConfigMap", ASO_NS, "platform-vars");
    const again = await eventually("platform-vars re-created", async () => {
      const o = await admin.get(V1, "ConfigMap", ASO_NS, "platform-vars");
      return o && (o.metadata as { uid: string }).uid !== uid ? o : undefined;
    });
    expect(again.data).toEqual(cm.data);

    await admin.mergePatch(V1, "ConfigMap", ASO_NS, "platform-vars", { data: { AZURE_LOCATION: "eastus" } });
    const reverted = await eventually("platform-vars edit reverted", async () => {
      const o = await admin.get(V1, "ConfigMap", ASO_NS, "platform-vars");
      return (o?.data as Record<string, string> | undefined)?.AZURE_LOCATION === "westeurope" ? o : undefined;
    });
    expect(reverted.data).toEqual(cm.data);

    await admin.delete(V1, "Secret", ASO_NS, "aso-credential");
    const restored = await eventually("platform aso-credential re-created", () =>
      admin.get(V1, "Secret", ASO_NS, "aso-credential"),
    );
    expect(decode(restored.data as Record<string, string>)).toEqual(decode(secret.data as Record<string, string>));
    // Written once per deletion: the controller's own write does not bring it back to write again.
    expect(restored.metadata.managedFields?.map((m) => `${m.manager}/${m.operation}`)).toEqual([
      "berth-controller/Apply",
    ]);
  });

  it("writes no credential (never an empty one) until ASO has exported the identity", async () => {
    await onboard("pending");
    const cond = await eventually("CredentialWritten=False on Team pending", async () => {
      const c = await condition("pending", "CredentialWritten");
      return c?.status === "False" ? c : undefined;
    });
    expect(cond.reason).toBe("IdentityPending");
    expect(await secretOf("pending")).toBeUndefined();
    // An identity ConfigMap without a clientId is still not enough.
    await admin.create({
      apiVersion: V1,
      kind: "ConfigMap",
      metadata: { name: "pending-identity", namespace: ASO_NS },
      data: { principalId: "p" },
    });
    await eventually("the controller to look at the clientId-less ConfigMap", async () =>
      (await condition("pending", "CredentialWritten"))?.message.includes("no clientId"),
    );
    expect(await secretOf("pending")).toBeUndefined();
  });

  it("onboards a team: credential Secret and ServiceAccount annotation once the identity appears; restores a deleted Secret", async () => {
    await onboard("payments");
    await writeIdentity("payments", clientId(1));
    const secret = await credentialIs("payments", clientId(1));
    expect(decode(secret.data as Record<string, string>)).toEqual({
      AZURE_TENANT_ID: TENANT,
      AZURE_SUBSCRIPTION_ID: SUBSCRIPTION,
      AZURE_CLIENT_ID: clientId(1),
      USE_WORKLOAD_IDENTITY_AUTH: "true",
    });
    expect(secret.metadata).toMatchObject({
      labels: { "berth.dev/team": "payments", "app.kubernetes.io/managed-by": "berth" },
      finalizers: ["berth.dev/aso-credential"],
    });
    const managers = (secret.metadata as { managedFields: Array<{ manager: string; operation: string }> })
      .managedFields;
    expect(managers.map((m) => `${m.manager}/${m.operation}`)).toEqual(["berth-controller/Apply"]);
    await eventually("SA annotated", async () => {
      const sa = await admin.get(V1, "ServiceAccount", "payments", "workload");
      return (
        (sa?.metadata as { annotations?: Record<string, string> }).annotations?.[
          "azure.workload.identity/client-id"
        ] === clientId(1)
      );
    });

    // Deleted (no ASO resource in the namespace, so the finalizer is released): written again.
    const uid = (secret.metadata as { uid: string }).uid;
    await admin.delete(V1, "Secret", "payments", "aso-credential");
    await eventually("credential re-created", async () => {
      const s = await secretOf("payments");
      return (
        s &&
        (s.metadata as { uid: string }).uid !== uid &&
        decode(s.data as Record<string, string>).AZURE_CLIENT_ID === clientId(1)
      );
    });
  });

  it("reverts a credential pointed at another team's identity and records a Warning event (ASO #4810)", async () => {
    await onboard("orders");
    await writeIdentity("orders", clientId(2));
    await credentialIs("orders", clientId(2));
    await credentialIs("payments", clientId(1));

    await admin.mergePatch(V1, "Secret", "payments", "aso-credential", {
      data: { AZURE_CLIENT_ID: Buffer.from(clientId(2)).toString("base64") },
    });
    await credentialIs("payments", clientId(1));
    const warning = await eventually("CredentialTampered Warning event", async () =>
      (await admin.list(V1, "Event", "payments")).find(
        (e) => e.reason === "CredentialTampered" && e.type === "Warning",
      ),
    );
    expect(warning.message).toContain("identity of team orders");
    expect(warning.involvedObject).toMatchObject({ kind: "Secret", name: "aso-credential", namespace: "payments" });

    // A key someone adds (e.g. a client secret, which ASO would prefer) is removed too.
    await admin.mergePatch(V1, "Secret", "payments", "aso-credential", {
      data: { AZURE_CLIENT_SECRET: Buffer.from("hunter2").toString("base64") },
    });
    await eventually("added key removed", async () => {
      const s = await secretOf("payments");
      return (
        s &&
        !("AZURE_CLIENT_SECRET" in (s.data as Record<string, string>)) &&
        decode(s.data as Record<string, string>).AZURE_CLIENT_ID === clientId(1)
      );
    });
  });

  it("rotates the credential and the annotation when the identity's client id changes", async () => {
    await writeIdentity("payments", clientId(11));
    await credentialIs("payments", clientId(11));
    await eventually("SA annotation rotated", async () => {
      const sa = await admin.get(V1, "ServiceAccount", "payments", "workload");
      return (
        (sa?.metadata as { annotations?: Record<string, string> }).annotations?.[
          "azure.workload.identity/client-id"
        ] === clientId(11)
      );
    });
    const events = await admin.list(V1, "Event", "payments");
    expect(events.some((e) => e.reason === "CredentialRotated")).toBe(true);
    // The status write follows the credential's in the same pass, so it may land a moment after the Event.
    await eventually(
      "Team status names the new client id",
      async () => (await teamStatus("payments"))?.identity?.clientId === clientId(11),
    );
    expect((await teamStatus("payments"))?.identity).toEqual({ clientId: clientId(11) });
  });

  it("reports Flux and ASO readiness (reason and severity) as chained Team conditions", async () => {
    const ks: Obj = {
      apiVersion: KUSTOMIZATION_V,
      kind: "Kustomization",
      metadata: { name: "team-payments", namespace: ASO_NS, labels: { "berth.dev/team": "payments" } },
      spec: {
        interval: "10m",
        path: "./teams/payments/clusters/aks-dev-weu",
        prune: true,
        sourceRef: { kind: "GitRepository", name: "flux-system", namespace: "flux-system" },
      },
    };
    await admin.create(ks);
    await admin.setStatus(ks, {
      lastAppliedRevision: "main@sha1:0123abcd",
      conditions: [
        {
          type: "Ready",
          status: "True",
          reason: "ReconciliationSucceeded",
          message: "Applied revision: main@sha1:0123abcd",
          lastTransitionTime: new Date().toISOString(),
        },
      ],
    });
    const aso = (apiVersion: string, kind: string, name: string, spec: Record<string, unknown>): Obj => ({
      apiVersion,
      kind,
      metadata: { name, namespace: ASO_NS, labels: { "berth.dev/team": "payments" } },
      spec,
    });
    const asoReady = (status: string, extra: Record<string, unknown> = {}) => ({
      conditions: [
        {
          type: "Ready",
          status,
          observedGeneration: 1,
          lastTransitionTime: new Date().toISOString(),
          reason: status === "True" ? "Succeeded" : "Reconciling",
          ...extra,
        },
      ],
    });
    const rg = aso("resources.azure.com/v1api20200601", "ResourceGroup", "payments", { location: "westeurope" });
    const id = aso("managedidentity.azure.com/v1api20230131", "UserAssignedIdentity", "payments", {
      location: "westeurope",
      owner: { name: "payments" },
    });
    const fic = aso(
      "managedidentity.azure.com/v1api20230131",
      "FederatedIdentityCredential",
      "payments--aso-controller",
      {
        owner: { name: "payments" },
        audiences: ["api://AzureADTokenExchange"],
        issuer: OIDC,
        subject: "system:serviceaccount:azureserviceoperator-system:azureserviceoperator-default",
      },
    );
    for (const o of [rg, id, fic]) await admin.create(o);
    await admin.setStatus(rg, asoReady("True"));
    await admin.setStatus(id, asoReady("True"));
    await admin.setStatus(
      fic,
      asoReady("False", { severity: "Error", reason: "BadRequest", message: "The issuer is not a valid URL" }),
    );

    const failed = await eventually("FederatedCredentialsReady=False/Error", async () => {
      const c = await condition("payments", "FederatedCredentialsReady");
      if (process.env.BERTH_TEST_DEBUG)
        console.log(
          JSON.stringify(await teamStatus("payments")),
          JSON.stringify((await admin.get(fic.apiVersion, fic.kind, ASO_NS, fic.metadata.name))?.status),
        );
      return c?.status === "False" && c.severity === "Error" ? c : undefined;
    });
    expect(failed).toMatchObject({
      reason: "BadRequest",
      message: "payments--aso-controller: The issuer is not a valid URL",
    });
    const status = await teamStatus("payments");
    const byType = Object.fromEntries((status?.conditions ?? []).map((c) => [c.type, c]));
    expect(Object.keys(byType)).toEqual([
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
    expect(byType.Rendered).toMatchObject({
      status: "True",
      reason: "Applied",
      message: "Flux applied revision main@sha1:0123abcd",
    });
    expect(byType.KustomizationReady).toMatchObject({ status: "True", reason: "ReconciliationSucceeded" });
    expect(byType.ResourceGroupReady).toMatchObject({ status: "True", reason: "Succeeded" });
    expect(byType.RoleAssignmentsReady).toMatchObject({ status: "True", reason: "NoneRequested" });
    // The credential carries the issuer of the cluster's values (static provider: the cluster's vars).
    expect(byType.FederationMatchesIssuer).toMatchObject({ status: "True", reason: "IssuerMatches" });
    expect(byType.CredentialWritten).toMatchObject({ status: "True", reason: "Written" });
    expect(byType.Ready).toMatchObject({ status: "False", reason: "Failed" });
    expect(status?.revision).toBe("main@sha1:0123abcd");

    // ASO recovers (a Warning on the way), then everything is Ready.
    await admin.setStatus(fic, asoReady("False", { severity: "Warning", reason: "Reconciling", message: "retrying" }));
    await eventually(
      "Warning severity carried",
      async () => (await condition("payments", "FederatedCredentialsReady"))?.severity === "Warning",
    );
    await admin.setStatus(fic, asoReady("True", { severity: null, message: null }));
    await eventually("Team Ready", async () => (await condition("payments", "Ready"))?.status === "True");
  });

  it("wakes a chained credential Azure accepted by annotating its issuer ConfigMap, once per state; changes nothing else there", async () => {
    const ficV = "managedidentity.azure.com/v1api20230131";
    const issuerConfigMap = "payments--aso-controller-issuer";
    // ASO's ConfigMap of the credential before, with the issuer Azure holds (as ASO writes it: its own field manager).
    await admin.create({
      apiVersion: V1,
      kind: "ConfigMap",
      metadata: { name: issuerConfigMap, namespace: ASO_NS, labels: { exported: "by-aso" } },
      data: { issuer: OIDC },
    });
    const workload: Obj = {
      apiVersion: ficV,
      kind: "FederatedIdentityCredential",
      metadata: { name: "payments--workload", namespace: ASO_NS, labels: { "berth.dev/team": "payments" } },
      spec: {
        owner: { name: "payments" },
        audiences: ["api://AzureADTokenExchange"],
        issuerFromConfig: { name: issuerConfigMap, key: "issuer" },
        subject: "system:serviceaccount:payments:workload",
      },
    };
    await admin.create(workload);
    const warning = (reason: string, message: string) => ({
      conditions: [
        {
          type: "Ready",
          status: "False",
          severity: "Warning",
          reason,
          message,
          observedGeneration: 1,
          lastTransitionTime: new Date().toISOString(),
        },
      ],
    });
    const woken = async () =>
      (await admin.get(V1, "ConfigMap", ASO_NS, issuerConfigMap))?.metadata.annotations?.["berth.dev/woke-credential"];
    const credentialVersion = async () =>
      (await admin.get(ficV, "FederatedIdentityCredential", ASO_NS, "payments--workload"))!.metadata
        .resourceVersion as string;
    try {
      // Azure answered the PUT 201 with a relative Location; ASO's poller refused it and waits out its backoff.
      const accepted = "failed to create poller: invalid polling URL";
      await admin.setStatus(workload, warning("UnknownError", accepted));
      const first = await credentialVersion();
      expect(await eventually("the issuer ConfigMap annotated", async () => await woken())).toBe(
        `payments--workload@${first}`,
      );
      // The next state of the credential (ASO tried again, same answer) is woken once more.
      await admin.setStatus(workload, warning("UnknownError", `${accepted} (again)`));
      const second = await credentialVersion();
      expect(second).not.toBe(first);
      await eventually("woken for the new state", async () => (await woken()) === `payments--workload@${second}`);
      // A credential Azure refused is not woken: a PUT sooner would only fail sooner. The Team's status shows the
      // controller saw the 409 before the ConfigMap is read again.
      const refused = "ConcurrentFederatedIdentityCredentialsWritesForSingleManagedIdentity: written concurrently";
      await admin.setStatus(workload, warning("Conflict", refused));
      await eventually("the 409 in the Team's status", async () =>
        (await condition("payments", "FederatedCredentialsReady"))?.message?.includes("written concurrently"),
      );
      expect(await woken()).toBe(`payments--workload@${second}`);
      const cm = (await admin.get(V1, "ConfigMap", ASO_NS, issuerConfigMap))!;
      expect(cm.data).toEqual({ issuer: OIDC });
      expect(cm.metadata.labels).toEqual({ exported: "by-aso" });

      // As the controller's ServiceAccount: that annotation, and nothing else of the ConfigMap (the policy
      // berth-controller-configmap-wake), and no create or delete (RBAC).
      const asController = new Admin(cluster.kubeConfigFor(CONTROLLER_USER, CONTROLLER_GROUPS));
      const cmPath = `/api/v1/namespaces/${ASO_NS}/configmaps/${issuerConfigMap}`;
      const patch = (body: unknown) =>
        asController.req("PATCH", `${cmPath}?dryRun=All`, body, "application/merge-patch+json");
      expect((await patch({ metadata: { annotations: { "berth.dev/woke-credential": "x@1" } } })).status).toBe(200);
      for (const [what, body] of [
        ["the issuer", { data: { issuer: "https://attacker.example/" } }],
        ["a label", { metadata: { labels: { exported: null } } }],
        ["another annotation", { metadata: { annotations: { "other.dev/x": "1" } } }],
        ["an owner", { metadata: { ownerReferences: [], finalizers: ["berth.dev/x"] } }],
      ] as const) {
        const r = await patch(body);
        expect(r.status, `${what}: ${r.body}`).toBe(403);
        expect(r.body, what).toContain("berth-controller-configmap-wake");
      }
      expect((await asController.req("DELETE", `${cmPath}?dryRun=All`)).status).toBe(403);
      const create = await asController.req("POST", `/api/v1/namespaces/${ASO_NS}/configmaps?dryRun=All`, {
        apiVersion: V1,
        kind: "ConfigMap",
        metadata: { name: "payments--other-issuer", namespace: ASO_NS },
        data: { issuer: "https://attacker.example/" },
      });
      expect(create.status).toBe(403);
    } finally {
      await admin.delete(ficV, "FederatedIdentityCredential", ASO_NS, "payments--workload");
      await admin.delete(V1, "ConfigMap", ASO_NS, issuerConfigMap);
    }
    await eventually("Team Ready again", async () => (await condition("payments", "Ready"))?.status === "True");
  });

  it("forbids the controller's identity to write outside team namespaces (and in a namespace without the RoleBinding)", async () => {
    const asController = new Admin(cluster.kubeConfigFor(CONTROLLER_USER, CONTROLLER_GROUPS));
    const secret = (ns: string) => ({
      apiVersion: V1,
      kind: "Secret",
      metadata: { name: "aso-credential", namespace: ns },
      data: { AZURE_CLIENT_ID: "eA==" },
    });
    const post = await asController.req("POST", "/api/v1/namespaces/default/secrets", secret("default"));
    expect(post.status).toBe(403);
    const apply = await asController.req(
      "PATCH",
      "/api/v1/namespaces/default/secrets/aso-credential?fieldManager=berth-controller",
      secret("default"),
      "application/apply-patch+yaml",
    );
    expect(apply.status).toBe(403);
    await admin.create({ apiVersion: V1, kind: "Namespace", metadata: { name: "not-a-team" } });
    expect(
      (
        await asController.req(
          "PATCH",
          "/api/v1/namespaces/not-a-team/secrets/aso-credential?fieldManager=berth-controller",
          secret("not-a-team"),
          "application/apply-patch+yaml",
        )
      ).status,
    ).toBe(403);
    // ...while the same apply in a team namespace is allowed (the control case).
    const ok = await asController.req(
      "PATCH",
      "/api/v1/namespaces/payments/secrets/aso-credential?fieldManager=rbac-probe&force=true&dryRun=All",
      secret("payments"),
      "application/apply-patch+yaml",
    );
    expect(ok.status).toBe(200);
    // Other secrets of a team namespace are not the controller's either.
    expect(
      (
        await asController.req("POST", "/api/v1/namespaces/payments/secrets", {
          ...secret("payments"),
          metadata: { name: "other", namespace: "payments" },
        })
      ).status,
    ).toBe(403);
  });

  it("holds the credential's finalizer while an ASO resource remains in the team namespace, then lets it go and never re-creates it", async () => {
    await onboard("leaving");
    await writeIdentity("leaving", clientId(3));
    await credentialIs("leaving", clientId(3));
    // A resource the team made in its own namespace with its credential.
    const rg: Obj = {
      apiVersion: "resources.azure.com/v1api20200601",
      kind: "ResourceGroup",
      metadata: { name: "leaving-data", namespace: "leaving" },
      spec: { location: "westeurope" },
    };
    await admin.create(rg);

    // Offboarding: Flux prunes the Team and the namespace's content; the Secret is deleted.
    await admin.delete(TEAM_V, "Team", undefined, "leaving");
    await admin.delete(V1, "Secret", "leaving", "aso-credential");
    await eventually("the controller to hold the finalizer", async () =>
      logs.some((l) => l.includes("keeping aso-credential") && l.includes('"team":"leaving"')),
    );
    await new Promise((r) => setTimeout(r, 1_500)); // several offboarding polls
    const held = await secretOf("leaving");
    expect(held?.metadata).toMatchObject({ finalizers: ["berth.dev/aso-credential"] });
    expect((held?.metadata as { deletionTimestamp?: string }).deletionTimestamp).toBeTruthy();

    await admin.delete(rg.apiVersion, rg.kind, "leaving", "leaving-data");
    await eventually("credential gone", async () => (await secretOf("leaving")) === undefined).catch((err: Error) => {
      // Seen once in 11 CI runs: say what the controller was doing with the team.
      throw new Error(
        `${err.message}\ncontroller log for team leaving:\n${replicaLogs
          .flat()
          .filter((l) => l.includes("leaving"))
          .slice(-30)
          .join("\n")}`,
      );
    });
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await secretOf("leaving")).toBeUndefined();

    // The controller's RoleBinding, not being deleted, kept its finalizer; deleted now (the namespace goes
    // after the credential), it has nothing left to wait for and is let go at once.
    expect((await admin.get(RBAC, "RoleBinding", "leaving", "berth-controller"))?.metadata).toMatchObject({
      finalizers: ["berth.dev/controller-access"],
    });
    await admin.delete(RBAC, "RoleBinding", "leaving", "berth-controller");
    await eventually(
      "RoleBinding of leaving released",
      async () => (await admin.get(RBAC, "RoleBinding", "leaving", "berth-controller")) === undefined,
      10_000,
    );
  });

  it("when the team namespace is deleted, its RoleBinding outlives the credential's finalizer and goes last: nothing is stuck", async () => {
    await onboard("departing");
    await writeIdentity("departing", clientId(4));
    await credentialIs("departing", clientId(4));
    const rg: Obj = {
      apiVersion: "resources.azure.com/v1api20200601",
      kind: "ResourceGroup",
      metadata: { name: "departing-data", namespace: "departing" },
      spec: { location: "westeurope" },
    };
    await admin.create(rg);
    const binding = () => admin.get(RBAC, "RoleBinding", "departing", "berth-controller");

    // Watch the order things go in. Binding first, then credential: a credential seen after its binding was
    // already gone is one nobody could release any more (no namespace controller here to hide that).
    const goneAt: { binding?: number; secret?: number } = {};
    const violations: string[] = [];
    let watching = true;
    const monitor = (async () => {
      while (watching) {
        try {
          const rb = await binding();
          const secret = await secretOf("departing");
          const now = performance.now();
          if (!rb) goneAt.binding ??= now;
          if (!secret) goneAt.secret ??= now;
          if (!rb && secret)
            violations.push(
              `aso-credential (finalizers ${JSON.stringify(secret.metadata.finalizers)}) outlived the RoleBinding`,
            );
        } catch (err) {
          if (watching) violations.push(`monitor: ${(err as Error).message}`);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    try {
      // Offboarding as Kubernetes may order it: the namespace is deleted (here it stays Terminating for good),
      // the controller's RoleBinding goes first, then the Team (Flux prunes it), then the credential; the
      // team's ASO resource is still there.
      await admin.delete(V1, "Namespace", undefined, "departing");
      await admin.delete(RBAC, "RoleBinding", "departing", "berth-controller");
      await admin.delete(TEAM_V, "Team", undefined, "departing");
      await admin.delete(V1, "Secret", "departing", "aso-credential");
      await eventually("the controller to hold the credential", async () =>
        logs.some((l) => l.includes("keeping aso-credential") && l.includes('"team":"departing"')),
      );
      await new Promise((r) => setTimeout(r, 1_500)); // several offboarding polls

      const secret = await secretOf("departing");
      expect(secret?.metadata).toMatchObject({ finalizers: ["berth.dev/aso-credential"] });
      expect(secret?.metadata.deletionTimestamp).toBeTruthy();
      const rb = await binding();
      expect(rb?.metadata).toMatchObject({ finalizers: ["berth.dev/controller-access"] });
      expect(rb?.metadata.deletionTimestamp).toBeTruthy();
      // The binding being deleted still authorizes the controller: it can still patch the credential and the binding.
      const asController = new Admin(cluster.kubeConfigFor(CONTROLLER_USER, CONTROLLER_GROUPS));
      const probe = { metadata: { annotations: { "berth.dev/rbac-probe": "x" } } };
      expect(
        (
          await asController.req(
            "PATCH",
            "/api/v1/namespaces/departing/secrets/aso-credential?dryRun=All",
            probe,
            "application/merge-patch+json",
          )
        ).status,
      ).toBe(200);
      const unfinalize = { metadata: { finalizers: null } };
      expect(
        (
          await asController.req(
            "PATCH",
            "/apis/rbac.authorization.k8s.io/v1/namespaces/departing/rolebindings/berth-controller?dryRun=All",
            unfinalize,
            "application/merge-patch+json",
          )
        ).status,
      ).toBe(200);

      // ASO deletes the last resource: the credential's finalizer is released, then the binding's.
      await admin.delete(rg.apiVersion, rg.kind, "departing", "departing-data");
      await eventually("credential released", async () => (await secretOf("departing")) === undefined);
      await eventually("RoleBinding released", async () => (await binding()) === undefined, 10_000);
      // The monitor has looked at least once since both went.
      await eventually(
        "the monitor to see both gone",
        async () => goneAt.secret !== undefined && goneAt.binding !== undefined,
      );
    } finally {
      watching = false;
      await monitor;
    }
    expect(violations).toEqual([]);
    expect(goneAt.secret).toBeLessThanOrEqual(goneAt.binding!);
    const line = (text: string) => logs.findIndex((l) => l.includes(text) && l.includes('"team":"departing"'));
    expect(line("offboarding: finalizer released")).toBeGreaterThanOrEqual(0);
    expect(line("RoleBinding berth-controller released")).toBeGreaterThan(line("offboarding: finalizer released"));

    // Nothing stuck: no object of the namespace still carries a finalizer, so a namespace controller would finish.
    const left = [
      ...(await admin.list(V1, "Secret", "departing")),
      ...(await admin.list(V1, "ServiceAccount", "departing")),
      ...(await admin.list(RBAC, "RoleBinding", "departing")),
      ...(await admin.list(rg.apiVersion, rg.kind, "departing")),
    ].filter((o) => ((o.metadata.finalizers as string[] | undefined) ?? []).length > 0);
    expect(left.map((o) => `${o.kind ?? "?"}/${o.metadata.name}`)).toEqual([]);
    expect(await admin.get(TEAM_V, "Team", undefined, "departing")).toBeUndefined();
  });

  it("with two replicas exactly one leads and writes; when the leader dies abruptly the other takes over within 15 s", async () => {
    const b = await startController("replica-b");
    await new Promise((r) => setTimeout(r, 2_500)); // several retry periods
    expect([a.isLeader(), b.isLeader()]).toEqual([true, false]);
    const lease = await admin.get("coordination.k8s.io/v1", "Lease", "berth-system", "berth-controller");
    expect((lease?.spec as { holderIdentity: string }).holderIdentity).toBe("replica-a");

    // Only the leader reconciles (and so writes).
    await admin.delete(V1, "Secret", ASO_NS, "aso-credential");
    await eventually("restored by the leader", () => admin.get(V1, "Secret", ASO_NS, "aso-credential"));
    const reconciles = async (c: Controller) =>
      (await c.metrics.reconcileTotal.get()).values.reduce((n, v) => n + v.value, 0);
    expect(await reconciles(a)).toBeGreaterThan(0);
    expect(await reconciles(b)).toBe(0);

    // Replica A loses the apiserver (crash, partition): no release of the Lease.
    const killedAt = Date.now();
    proxy.kill();
    await eventually("replica-b to lead", async () => b.isLeader(), 20_000);
    const takeover = Date.now() - killedAt;
    console.log(`[tests/controller] takeover after ${takeover} ms`);
    expect(takeover).toBeLessThan(15_000);
    await eventually("replica-a to step down", async () => !a.isLeader(), 10_000);

    // B keeps reconciling: a deleted credential comes back, a rotation happens.
    await admin.delete(V1, "Secret", ASO_NS, "aso-credential");
    await eventually("restored by the new leader", () => admin.get(V1, "Secret", ASO_NS, "aso-credential"));
    await writeIdentity("orders", clientId(22));
    await credentialIs("orders", clientId(22));
    expect(await reconciles(b)).toBeGreaterThan(0);
  });

  it("releases the Lease on a graceful stop so the successor need not wait it out", async () => {
    const c = await startController("replica-c");
    const b = controllers.find((x) => x.isLeader())!;
    expect(b).toBeDefined();
    const stoppedAt = Date.now();
    await b.stop();
    await eventually("replica-c to lead", async () => c.isLeader(), 10_000);
    expect(Date.now() - stoppedAt).toBeLessThan(4_000); // well under the 6 s lease
  });

  it("runs as a process (main.ts): probes and metrics, takes over, and releases the Lease on SIGTERM", async () => {
    const port = await new Promise<number>((res) => {
      const srv = createServer().listen(0, "127.0.0.1", () => {
        const p = (srv.address() as { port: number }).port;
        srv.close(() => res(p));
      });
    });
    const kubeconfig = await cluster.writeKubeconfigFile(CONTROLLER_USER, CONTROLLER_GROUPS);
    const child = spawn(
      join(REPO_ROOT, "node_modules", ".bin", "tsx"),
      ["--tsconfig", "apps/controller/tsconfig.json", "apps/controller/src/main.ts"],
      {
        cwd: REPO_ROOT,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          KUBECONFIG: kubeconfig,
          BERTH_CONFIG_FILE: configFile,
          BERTH_CLUSTER_NAME: "aks-dev-weu",
          BERTH_POD_NAME: "replica-process",
          BERTH_METRICS_PORT: String(port),
          BERTH_LOG_LEVEL: "info",
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let output = "";
    child.stdout.on("data", (c: Buffer) => {
      output += String(c);
      processOutput.push(String(c));
    });
    child.stderr.on("data", (c: Buffer) => (output += String(c)));
    const exited = new Promise<number | null>((res) => child.on("exit", (code) => res(code)));
    try {
      await eventually(
        "/readyz of the process",
        async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200,
        30_000,
      );
      const leader = controllers.find((c) => c.isLeader())!;
      await leader.stop(); // graceful: the process, a standby, takes over at once
      await eventually(
        "the process to hold the Lease",
        async () => {
          const lease = await admin.get("coordination.k8s.io/v1", "Lease", "berth-system", "berth-controller");
          return (lease?.spec as { holderIdentity?: string }).holderIdentity === "replica-process";
        },
        10_000,
      );
      await admin.delete(V1, "Secret", ASO_NS, "aso-credential");
      await eventually("restored by the process", () => admin.get(V1, "Secret", ASO_NS, "aso-credential"));
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).toMatch(/^berth_controller_is_leader 1$/m);
      // One queue, and one set of metric labels, per reconciler.
      expect(metrics).toMatch(
        /berth_controller_reconcile_total\{controller="platform",result="(success|requeue)"\} [1-9]/,
      );
      expect(metrics).toMatch(/berth_controller_workqueue_depth\{queue="team"\} \d/);

      child.kill("SIGTERM");
      expect(await exited).toBe(0);
      const lease = await admin.get("coordination.k8s.io/v1", "Lease", "berth-system", "berth-controller");
      expect((lease?.spec as { holderIdentity?: string }).holderIdentity ?? "").toBe("");
    } catch (err) {
      console.log(output);
      throw err;
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  });

  it("a leader that loses its Lease mid-reconcile makes no further write (the apiserver's resourceVersions stay as they were)", async () => {
    const provider = new GatedProvider();
    const d = await startController("replica-d", undefined, provider);
    await eventually("replica-d to lead", async () => d.isLeader(), 20_000);
    await eventually("replica-d to have reconciled every team", async () =>
      (await d.metrics.reconcileTotal.get()).values.some((v) => v.labels.controller === "team" && v.value > 0),
    );

    // Every reconcile from now on stops at the provider, before its first write.
    provider.arm();
    await onboard("fenced");
    await writeIdentity("fenced", clientId(5));
    await eventually("a reconcile of team fenced waiting at the provider", async () => provider.waiting > 0);
    const rv = async () => ({
      team: (await admin.get(TEAM_V, "Team", undefined, "fenced"))?.metadata.resourceVersion,
      sa: (await admin.get(V1, "ServiceAccount", "fenced", "workload"))?.metadata.resourceVersion,
      secret: (await secretOf("fenced"))?.metadata.resourceVersion,
      events: (await admin.list(V1, "Event", "fenced")).length,
    });
    const before = await rv();
    expect(before.secret).toBeUndefined();

    // Someone else takes the Lease (as a successor would once it expired): replica-d steps down...
    const lease = (await admin.get("coordination.k8s.io/v1", "Lease", "berth-system", "berth-controller"))!;
    const put = await admin.req("PUT", "/apis/coordination.k8s.io/v1/namespaces/berth-system/leases/berth-controller", {
      ...lease,
      spec: { ...(lease.spec as object), holderIdentity: "thief", leaseDurationSeconds: 3600 },
    });
    expect(put.status).toBe(200);
    await eventually("replica-d to step down", async () => !d.isLeader(), 10_000);
    // ...and the reconciles it had in flight go on only now: each must stop before its next write.
    const sum = async (m: typeof d.metrics.reconcileTotal | typeof d.metrics.reconcileErrors, reason?: string) =>
      (await m.get()).values
        .filter((v) => reason === undefined || (v.labels as Record<string, unknown>).reason === reason)
        .reduce((n, v) => n + v.value, 0);
    const finished = await sum(d.metrics.reconcileTotal);
    const waiting = provider.waiting;
    provider.open();
    await eventually(
      "the reconciles in flight to end",
      async () => (await sum(d.metrics.reconcileTotal)) >= finished + waiting,
    );
    // Team fenced's pass had writes to make: it was aborted, not finished.
    expect(await sum(d.metrics.reconcileErrors, "aborted")).toBeGreaterThanOrEqual(1);
    expect(await rv()).toEqual(before);
    await d.stop();
    expect(await rv()).toEqual(before);
  });

  it("prints every log line as JSON with each key once (a duplicate-key-refusing parser reads them all)", () => {
    // The parser is strict: the kind of line child loggers used to print is refused.
    expect(() => parseLogLine('{"level":30,"component":"berth-controller","component":"events","msg":"x"}')).toThrow(
      /duplicate key "component"/,
    );
    const lines = replicaLogs.flat();
    expect(lines.length).toBeGreaterThan(50);
    const entries = lines.map((l) => parseLogLine(l));
    // Lines from every part that logs with bindings: informers, queues, reconcilers, leader election, events.
    for (const key of ["informer", "queue", "reconciler", "lease"])
      expect(
        entries.some((e) => key in e),
        `a line with "${key}"`,
      ).toBe(true);
    const printed = parseLogOutput(processOutput.join(""));
    expect(printed.other).toEqual([]);
    expect(printed.entries.length).toBeGreaterThan(0);
  });
});
