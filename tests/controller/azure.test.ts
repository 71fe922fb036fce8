/**
 * The controller with live Azure discovery (BERTH_PROVIDER=azure), end to end, all parts real: the
 * controller as a process (apps/controller/src/main.ts) under the RBAC of infra/controller/ on a REAL
 * kube-apiserver (tests/support/kube-cluster.ts), and the real Azure SDK (`new DefaultAzureCredential()`, default endpoints) reaching
 * the HTTPS fake Azure (tests/fake-azure) only through HTTPS_PROXY + NODE_EXTRA_CA_CERTS, authenticated
 * with a federated service-account token (AZURE_FEDERATED_TOKEN_FILE), as the workload-identity webhook
 * sets it up in the pod.
 *
 * Only the provider's TTLs and backoffs are shortened, through BERTH_AZURE_TUNING (the documented shapes:
 * 4 attempts per read, a circuit per operation opening after 5 failed reads, the retry budget, unchanged).
 *
 * 1. acceptance: platform-vars and the platform aso-credential from Azure; a team without ASO's identity
 *    ConfigMap gets its credential from the identity Azure reports; a team with it costs no ARM call.
 * 2. OIDC issuer change: platform-vars follows; teams whose FederatedIdentityCredential objects still
 *    carry the old issuer get FederationMatchesIssuer=False + a Warning; it clears once they are re-applied.
 * 3. storms (429 with and without Retry-After, a 5xx burst) on ManagedClusters_Get and
 *    UserAssignedIdentities_Get: every version of every object the controller writes, as a watch sees it,
 *    is complete and correct; ARM requests stay within the documented worst case; each storm's failures are
 *    retried or refused by the (process-wide) retry budget; then everything converges.
 */
// needs: cluster
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Watch } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUILT_IN_ROLES, createServiceAccountIssuer, type RequestRecord } from "../fake-azure/index.js";
import { CLUSTER_NAME, CLUSTER_RG, PLATFORM_IDENTITY, startWorld, type World } from "../azure/support.js";
import { DEFAULT_TIMINGS } from "../../apps/controller/src/controller.js";
import { REPO_ROOT, startKubeCluster, type KubeCluster } from "../support/kube-cluster.js";
import { parseLogOutput } from "../support/logs.js";
import { metricSum } from "../support/prometheus.js";
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

const V1 = "v1";
const TEAM_V = "berth.dev/v1alpha1";
const FIC_V = "managedidentity.azure.com/v1api20230131";
const READER_ID = BUILT_IN_ROLES.find((r) => r.roleName === "Reader")!.id;
/** A custom role of the platform's, in the role catalog by name and id. */
const DEPLOYER = { id: "7a1e0000-0000-4000-8000-0000000000d1", roleName: "Berth Test Deployer" };

/** Test tuning (BERTH_AZURE_TUNING): short TTLs and backoffs; attempts, breaker threshold and retry budget as in production. */
const TUNING = {
  // maxStale: last good values are served 4 s past their TTL (6 h in production), so an outage shows within a test.
  cacheTtlMs: {
    cluster: 2_000,
    identity: 3_000,
    roleDefinition: 3_000,
    negative: 1_000,
    retryStaleAfter: 1_000,
    maxStale: 4_000,
  },
  retry: { baseDelayMs: 100, maxDelayMs: 1_000, throttleBaseDelayMs: 250, maxWaitMs: 5_000 },
  breaker: { halfOpenAfterMs: 1_000, maxHalfOpenAfterMs: 4_000 },
  callTimeoutMs: 3_000,
};
const MAX_ATTEMPTS = 4; // DEFAULT_RETRY.maxAttempts
const CONSECUTIVE_FAILURES = 5; // DEFAULT_BREAKER.consecutiveFailures

/** Reads of one operation that can be under way at once here: the platform reconciler + 4 team workers. */
const CONCURRENT_READS = 5;

/**
 * docs/azure.md, "worst case per operation in an outage": ≤ 4 requests per read; reads fail until the
 * circuit opens after 5 consecutive failures (plus those already under way: concurrent reads), then ≤ 4
 * per half-open probe (after halfOpenAfter, doubling up to its cap).
 */
function outageBudget(windowMs: number): number {
  let probes = 0;
  let t = 0;
  let wait = TUNING.breaker.halfOpenAfterMs;
  while (t + wait <= windowMs) {
    t += wait;
    probes++;
    wait = Math.min(wait * 2, TUNING.breaker.maxHalfOpenAfterMs);
  }
  return MAX_ATTEMPTS * (CONSECUTIVE_FAILURES - 1 + CONCURRENT_READS + probes);
}

describe("controller with live Azure discovery (child process, HTTPS_PROXY, DefaultAzureCredential)", () => {
  let cluster: KubeCluster;
  let admin: Admin;
  let world: World;
  let child: ChildProcess | undefined;
  let output = "";
  /** The process's stdout alone: its log lines. */
  let stdout = "";
  let metricsPort = 0;
  let issuer = "";
  const allIssuers = new Set<string>();
  const fallbackTeam = "fallback";
  const steadyTeam = "steady";
  /** More teams without ASO's ConfigMap: concurrent identity reads during the storms. */
  const moreTeams = ["team-b", "team-c", "team-d", "team-e", "team-f"];
  let fallbackClientId = "";
  const steadyClientId = "0f0f0f0f-0000-4000-8000-00000000beef";
  let started = 0;

  const platformVars = async () =>
    (await admin.get(V1, "ConfigMap", ASO_NS, "platform-vars")) as
      (Obj & { data?: Record<string, string> }) | undefined;
  const condition = async (team: string, type: string) =>
    (
      (await admin.get(TEAM_V, "Team", undefined, team))?.status as
        { conditions?: Array<{ type: string; status: string; reason: string; message: string }> } | undefined
    )?.conditions?.find((c) => c.type === type);

  /** What platform-vars must hold, whatever the moment: every key, the OIDC issuer one Azure has reported. */
  const platformVarsProblem = (data: Record<string, string> | undefined): string | undefined => {
    const want = {
      AZURE_LOCATION: "westeurope",
      CLUSTER_NAME,
      ENVIRONMENT: "prod",
      SERVICEBUS_NAMESPACE: "sb-prod",
      SUBSCRIPTION_ID: world.fake.subscriptionId,
      TENANT_ID: world.fake.tenantId,
    };
    const d = data ?? {};
    const keys = Object.keys(d).sort().join(",");
    if (keys !== [...Object.keys(want), "CLUSTER_OIDC", "CLUSTER_OIDC_ISSUER_URL"].sort().join(","))
      return `keys ${keys}`;
    for (const [k, v] of Object.entries(want)) if (d[k] !== v) return `${k}=${JSON.stringify(d[k])}`;
    if (!allIssuers.has(d.CLUSTER_OIDC_ISSUER_URL!) || d.CLUSTER_OIDC !== d.CLUSTER_OIDC_ISSUER_URL)
      return `issuer ${d.CLUSTER_OIDC_ISSUER_URL} / ${d.CLUSTER_OIDC}`;
    return undefined;
  };
  const credential = (clientId: string) => ({
    AZURE_CLIENT_ID: clientId,
    AZURE_SUBSCRIPTION_ID: world.fake.subscriptionId,
    AZURE_TENANT_ID: world.fake.tenantId,
    USE_WORKLOAD_IDENTITY_AUTH: "true",
  });

  /** ARM requests (not Entra) of `operation` that arrived in [from, to]. */
  const armRequests = (operation: string, from: number, to = Date.now()): RequestRecord[] =>
    world.fake.stats.requests.filter(
      (r) => r.service === "arm" && r.operation === operation && r.at >= from && r.at <= to,
    );

  const metricsText = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  /** Reads that went past the cache to the ARM call path (one per cache miss, stale answer or error). */
  const loads = (text: string, kind: string) =>
    ["miss", "stale", "error"].reduce(
      (n, result) => n + metricSum(text, "berth_azure_discovery_cache_total", { kind, result }),
      0,
    );
  let spawnedAt = 0;
  /** Starts main.ts as a process (again, after a restart) with the environment of the pod. */
  let spawnController: () => void = () => {};

  const onboard = (team: string) => onboardTeam(admin, team, ["prod"]);

  /** A team's FederatedIdentityCredential as Flux applies it (issuer substituted from platform-vars), Ready in ASO. */
  const fic = (team: string, issuerUrl: string): Obj => ({
    apiVersion: FIC_V,
    kind: "FederatedIdentityCredential",
    metadata: { name: `${team}--aso-controller`, namespace: ASO_NS, labels: { "berth.dev/team": team } },
    spec: {
      azureName: "aso-controller",
      owner: { name: team },
      audiences: ["api://AzureADTokenExchange"],
      issuer: issuerUrl,
      subject: "system:serviceaccount:azureserviceoperator-system:azureserviceoperator-default",
    },
  });

  beforeAll(async () => {
    started = Date.now();
    const [kube, w] = await Promise.all([
      startKubeCluster({ crds: readManifests(join(INFRA, "crds")) }),
      startWorld({ teams: [fallbackTeam, ...moreTeams], proxy: true }),
    ]);
    cluster = kube;
    world = w;
    issuer = world.issuer;
    allIssuers.add(issuer);
    fallbackClientId = world.teams.get(fallbackTeam)!.clientId;
    admin = new Admin(cluster.kubeConfig());
    await admin.create({ apiVersion: V1, kind: "Namespace", metadata: { name: ASO_NS } });
    for (const obj of readManifests(INFRA, (f) => f === "namespace.yaml" || f.startsWith("rbac-")))
      await admin.create(obj);

    // Berth's own identity in Azure, federated with the cluster's service-account issuer (workload identity).
    const sa = await createServiceAccountIssuer(world.fake, issuer);
    const berth = await world.msi.userAssignedIdentities.createOrUpdate(CLUSTER_RG, "id-berth-controller", {
      location: "westeurope",
    });
    await world.msi.federatedIdentityCredentials.createOrUpdate(CLUSTER_RG, "id-berth-controller", "berth-controller", {
      issuer,
      subject: "system:serviceaccount:berth-system:berth-controller",
      audiences: ["api://AzureADTokenExchange"],
    });
    const tokenFile = await sa.tokenFile({ namespace: "berth-system", serviceAccount: "berth-controller" });

    world.fake.arm.addRoleDefinition({
      ...DEPLOYER,
      type: "CustomRole",
      assignableScopes: [`/subscriptions/${world.fake.subscriptionId}`],
    });
    // Teams: `fallback` has an identity in Azure but no ConfigMap from ASO; `steady` has ASO's ConfigMap (and no identity in Azure).
    await Promise.all([fallbackTeam, steadyTeam, ...moreTeams].map((t) => onboard(t)));
    await admin.create({
      apiVersion: V1,
      kind: "ConfigMap",
      metadata: { name: `${steadyTeam}-identity`, namespace: ASO_NS },
      data: { clientId: steadyClientId, tenantId: world.fake.tenantId },
    });

    const dir = mkdtempSync(join(tmpdir(), "berth-controller-azure-"));
    const configFile = join(dir, "berth.yaml");
    // No TENANT_ID, SUBSCRIPTION_ID, CLUSTER_OIDC_ISSUER_URL, AZURE_LOCATION or PLATFORM_CLIENT_ID: those come from Azure.
    writeFileSync(
      configFile,
      `platform:
  asoNamespace: ${ASO_NS}
  platformVars:
    SERVICEBUS_NAMESPACE: Shared Service Bus namespace
  # Checked in Azure by name: 'mislabelled' names Contributor but grants Reader's id.
  roleCatalog:
    - { id: reader, roleDefinitionId: ${READER_ID}, roleName: Reader, scope: { kind: teamResourceGroup } }
    - { id: deployer, roleDefinitionId: ${DEPLOYER.id}, roleName: ${DEPLOYER.roleName}, scope: { kind: teamResourceGroup } }
    - { id: mislabelled, roleDefinitionId: ${READER_ID}, roleName: Contributor, scope: { kind: teamResourceGroup } }
  environments:
    - name: prod
      clusters:
        - name: ${CLUSTER_NAME}
          vars:
            SERVICEBUS_NAMESPACE: sb-prod
          azure:
            subscriptionId: "${world.fake.subscriptionId}"
            resourceGroup: ${CLUSTER_RG}
            managedClusterName: ${CLUSTER_NAME}
            platformIdentity: { resourceGroup: ${PLATFORM_IDENTITY.resourceGroup}, name: ${PLATFORM_IDENTITY.name} }
`,
    );
    metricsPort = await new Promise<number>((res) => {
      const srv = createServer().listen(0, "127.0.0.1", () => {
        const p = (srv.address() as { port: number }).port;
        srv.close(() => res(p));
      });
    });
    const kubeconfig = await cluster.writeKubeconfigFile(CONTROLLER_USER, CONTROLLER_GROUPS);
    world.fake.stats.reset();
    spawnedAt = Date.now();
    spawnController = () => {
      child = spawn(
        join(REPO_ROOT, "node_modules", ".bin", "tsx"),
        ["--tsconfig", "apps/controller/tsconfig.json", "apps/controller/src/main.ts"],
        {
          cwd: REPO_ROOT,
          env: {
            PATH: process.env.PATH,
            HOME: process.env.HOME,
            KUBECONFIG: kubeconfig,
            BERTH_CONFIG_FILE: configFile,
            BERTH_CLUSTER_NAME: CLUSTER_NAME,
            BERTH_POD_NAME: "berth-controller-azure",
            BERTH_METRICS_PORT: String(metricsPort),
            BERTH_LOG_LEVEL: "info",
            BERTH_PROVIDER: "azure",
            BERTH_AZURE_TUNING: JSON.stringify(TUNING),
            // What the workload-identity webhook injects into the pod...
            AZURE_TENANT_ID: world.fake.tenantId,
            AZURE_CLIENT_ID: berth.clientId!,
            AZURE_FEDERATED_TOKEN_FILE: tokenFile,
            // ...and the only thing pointing the process at the fake: the proxy and its CA.
            ...world.fake.proxyEnv(),
          },
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      child.stdout!.on("data", (c: Buffer) => {
        output += String(c);
        stdout += String(c);
      });
      child.stderr!.on("data", (c: Buffer) => (output += String(c)));
    };
    spawnController();
    try {
      await eventually("platform-vars from Azure", async () => platformVars(), 45_000);
    } catch (err) {
      console.log(output.slice(-6_000));
      throw err;
    }
    console.log(
      `[tests/controller/azure] cluster ${cluster.startupMs} ms; platform-vars written ${Date.now() - started} ms after the start`,
    );
  });

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child!.once("exit", r));
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
      if (child.exitCode === null) child.kill("SIGKILL");
    }
    if (process.env.BERTH_TEST_DEBUG) console.log(output.slice(-20_000));
    await world?.close();
    await cluster?.stop();
    console.log(`[tests/controller/azure] total ${Date.now() - started} ms`);
  });

  it("refuses to start with BERTH_PROVIDER=azure when the cluster has no Azure coordinates (exit 2, clear message)", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "berth-controller-azure-")), "berth.yaml");
    writeFileSync(
      file,
      `platform:\n  environments:\n    - name: prod\n      clusters:\n        - name: ${CLUSTER_NAME}\n          vars: { TENANT_ID: x }\n`,
    );
    const p = spawn(
      join(REPO_ROOT, "node_modules", ".bin", "tsx"),
      ["--tsconfig", "apps/controller/tsconfig.json", "apps/controller/src/main.ts"],
      {
        cwd: REPO_ROOT,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          BERTH_CONFIG_FILE: file,
          BERTH_CLUSTER_NAME: CLUSTER_NAME,
          BERTH_PROVIDER: "azure",
          KUBECONFIG: "/nonexistent",
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let stderr = "";
    p.stderr.on("data", (c: Buffer) => (stderr += String(c)));
    const code = await new Promise<number | null>((res) => p.on("exit", (c) => res(c)));
    expect(code).toBe(2);
    expect(stderr).toContain(`BERTH_PROVIDER=azure: cluster "${CLUSTER_NAME}" has no Azure coordinates`);
  });

  it("discovers tenant, subscription, OIDC issuer and the platform identity through the proxy, and writes them under its own RBAC", async () => {
    const cm = await platformVars();
    expect(cm?.data).toEqual({
      AZURE_LOCATION: "westeurope",
      CLUSTER_NAME,
      CLUSTER_OIDC: issuer,
      CLUSTER_OIDC_ISSUER_URL: issuer,
      ENVIRONMENT: "prod",
      SERVICEBUS_NAMESPACE: "sb-prod", // not discoverable: from the cluster's vars
      SUBSCRIPTION_ID: world.fake.subscriptionId,
      TENANT_ID: world.fake.tenantId,
    });
    const secret = await eventually("platform aso-credential", () => admin.get(V1, "Secret", ASO_NS, "aso-credential"));
    expect(decode(secret.data as Record<string, string>)).toEqual(credential(world.platformIdentity.clientId));
    for (const o of [cm!, secret])
      expect(o.metadata.managedFields!.map((m) => m.manager)).toEqual(["berth-controller"]);

    // Every request reached the fake through the proxy, under the real host names, with a token from the federated credential.
    const hosts = new Set(world.fake.stats.requests.map((r) => r.host));
    expect([...hosts].sort()).toEqual(["login.microsoftonline.com", "management.azure.com"]);
    expect(world.fake.proxy!.countByTarget()["management.azure.com:443"]).toBeGreaterThan(0);
    expect(world.fake.stats.count("Entra_Token", 200)).toBeGreaterThanOrEqual(1);
    expect(world.fake.stats.count(/./, 401)).toBe(0);
  });

  it("gives a team without ASO's identity ConfigMap its credential from the identity ids in Azure; a team with one costs no ARM call", async () => {
    const s = await eventually("aso-credential of the fallback team", async () => {
      const x = await admin.get(V1, "Secret", fallbackTeam, "aso-credential");
      return x && decode(x.data as Record<string, string>).AZURE_CLIENT_ID === fallbackClientId ? x : undefined;
    });
    expect(decode(s.data as Record<string, string>)).toEqual(credential(fallbackClientId));
    await eventually("workload annotated with the Azure client id", async () => {
      const sa = await admin.get(V1, "ServiceAccount", fallbackTeam, "workload");
      return sa?.metadata.annotations?.["azure.workload.identity/client-id"] === fallbackClientId;
    });
    await eventually("CredentialWritten says the identity came from Azure", async () =>
      (await condition(fallbackTeam, "CredentialWritten"))?.message.includes("from Azure"),
    );

    for (const t of moreTeams) {
      await eventually(
        `aso-credential of ${t}`,
        async () =>
          decode((await admin.get(V1, "Secret", t, "aso-credential"))?.data as Record<string, string>)
            .AZURE_CLIENT_ID === world.teams.get(t)!.clientId,
      );
    }
    const steady = await eventually("aso-credential of the steady team", () =>
      admin.get(V1, "Secret", steadyTeam, "aso-credential"),
    );
    expect(decode(steady.data as Record<string, string>)).toEqual(credential(steadyClientId));
    // Per-team ARM reads: only the fallback team's identity, never the steady team's.
    const identityReads = armRequests("UserAssignedIdentities_Get", 0).map((r) => r.path.toLowerCase());
    expect(identityReads.filter((p) => p.includes(`/id-${steadyTeam}--`))).toEqual([]);
    expect(identityReads.filter((p) => p.includes(`/id-${fallbackTeam}--`)).length).toBeGreaterThanOrEqual(1);
    console.log(
      `[tests/controller/azure] ARM/Entra requests so far (${Math.round((Date.now() - started) / 1000)} s in): ${JSON.stringify(world.fake.stats.byOperation())}`,
    );
  });

  it("follows an OIDC issuer change: platform-vars updated, teams with stale federated credentials flagged until Flux re-applies them", async () => {
    for (const team of [fallbackTeam, steadyTeam]) {
      const o = await admin.create(fic(team, issuer));
      await admin.setStatus(o, {
        conditions: [
          {
            type: "Ready",
            status: "True",
            reason: "Succeeded",
            observedGeneration: 1,
            lastTransitionTime: new Date().toISOString(),
          },
        ],
      });
    }
    await eventually(
      "FederationMatchesIssuer=True",
      async () => (await condition(steadyTeam, "FederationMatchesIssuer"))?.status === "True",
    );

    const next = `https://westeurope.oic.prod-aks.azure.com/${world.fake.tenantId}/rebuilt-1/`;
    allIssuers.add(next);
    const changedAt = Date.now();
    world.fake.setOidcIssuer({ resourceGroup: CLUSTER_RG, name: CLUSTER_NAME, issuerURL: next });
    const cm = await eventually("new issuer in platform-vars", async () => {
      const c = await platformVars();
      return c?.data?.CLUSTER_OIDC_ISSUER_URL === next ? c : undefined;
    });
    const landedMs = Date.now() - changedAt;
    expect(cm.data?.CLUSTER_OIDC).toBe(next);
    expect(platformVarsProblem(cm.data)).toBeUndefined();
    // Within the cluster TTL plus one refresh (and a loaded machine's slack).
    expect(landedMs).toBeLessThan(TUNING.cacheTtlMs.cluster * 2 + 6_000);

    for (const team of [fallbackTeam, steadyTeam]) {
      const c = await eventually(`FederationMatchesIssuer=False on ${team}`, async () => {
        const x = await condition(team, "FederationMatchesIssuer");
        return x?.status === "False" ? x : undefined;
      });
      expect(c.reason).toBe("IssuerChanged");
      expect(c.message).toContain(`from ${issuer} to ${next}`);
      expect(await condition(team, "Ready")).toMatchObject({ status: "False" });
    }
    const warning = await eventually("IssuerChanged Warning event", async () =>
      (await admin.list(V1, "Event", "default")).find(
        (e) => e.reason === "IssuerChanged" && (e.involvedObject as { name: string }).name === steadyTeam,
      ),
    );
    expect(warning).toMatchObject({ type: "Warning", involvedObject: { kind: "Team", name: steadyTeam } });
    expect(warning.message).toContain(next);

    // Flux re-applies the steady team's credential with the substituted new issuer: its condition clears; the other's stays.
    await admin.mergePatch(
      FIC_V,
      "FederatedIdentityCredential",
      ASO_NS,
      `${steadyTeam}--aso-controller`,
      { spec: { issuer: next } },
      "kustomize-controller",
    );
    await eventually(
      "FederationMatchesIssuer=True again",
      async () => (await condition(steadyTeam, "FederationMatchesIssuer"))?.status === "True",
    );
    expect((await condition(fallbackTeam, "FederationMatchesIssuer"))?.status).toBe("False");
    await admin.mergePatch(
      FIC_V,
      "FederatedIdentityCredential",
      ASO_NS,
      `${fallbackTeam}--aso-controller`,
      { spec: { issuer: next } },
      "kustomize-controller",
    );
    await eventually(
      "FederationMatchesIssuer=True on the fallback team",
      async () => (await condition(fallbackTeam, "FederationMatchesIssuer"))?.status === "True",
    );
    issuer = next;
    console.log(`[tests/controller/azure] issuer change in platform-vars after ${landedMs} ms`);
  });

  it("through 429 storms and a 5xx burst never writes an empty or partial value, stays within the retry budget, then converges", async () => {
    // Every version of every object the controller writes, as watches see them.
    const violations: string[] = [];
    const seen = { platformVars: 0, platformSecret: 0, teamSecrets: 0 };
    const check = (what: string, problem: string | undefined) => {
      if (problem) violations.push(`${what}: ${problem}`);
    };
    const watch = new Watch(cluster.kubeConfig());
    const watches = await Promise.all([
      watch.watch(
        `/api/v1/namespaces/${ASO_NS}/configmaps`,
        { fieldSelector: "metadata.name=platform-vars" },
        (_type, o: Obj & { data?: Record<string, string> }) => {
          seen.platformVars++;
          check(`platform-vars rv ${String(o.metadata.resourceVersion)}`, platformVarsProblem(o.data));
        },
        () => {},
      ),
      watch.watch(
        `/api/v1/namespaces/${ASO_NS}/secrets`,
        { fieldSelector: "metadata.name=aso-credential" },
        (_type, o: Obj & { data?: Record<string, string> }) => {
          seen.platformSecret++;
          const d = decode(o.data);
          check(
            `platform aso-credential rv ${String(o.metadata.resourceVersion)}`,
            JSON.stringify(d) === JSON.stringify(credential(world.platformIdentity.clientId))
              ? undefined
              : JSON.stringify(d),
          );
        },
        () => {},
      ),
      watch.watch(
        `/api/v1/secrets`,
        { labelSelector: "berth.dev/team" },
        (_type, o: Obj & { data?: Record<string, string> }) => {
          seen.teamSecrets++;
          const d = decode(o.data);
          const ns = String(o.metadata.namespace);
          const id = ns === steadyTeam ? steadyClientId : (world.teams.get(ns)?.clientId ?? "(no such team)");
          check(
            `aso-credential of ${String(o.metadata.namespace)} rv ${String(o.metadata.resourceVersion)}`,
            JSON.stringify(d) === JSON.stringify(credential(id)) ? undefined : JSON.stringify(d),
          );
        },
        () => {},
      ),
    ]);

    const ops = ["ManagedClusters_Get", "UserAssignedIdentities_Get"];
    const kindOf: Record<string, string> = { ManagedClusters_Get: "cluster", UserAssignedIdentities_Get: "identity" };
    const stormsFrom = Date.now();
    const before = await metricsText();
    // The identity storm spares ManagedClusters_Get, so the teams' reconciles (cluster facts first) get to their identity reads.
    const phases = [
      {
        name: "429 with Retry-After: 1",
        reason: "throttled",
        ops,
        start: () => world.fake.faults.throttle({ operation: ops }, { retryAfterSeconds: 1 }),
      },
      {
        name: "bare 429 on identities",
        reason: "throttled",
        ops: ["UserAssignedIdentities_Get"],
        start: () =>
          world.fake.faults.throttle({ operation: "UserAssignedIdentities_Get" }, { retryAfterSeconds: null }),
      },
      {
        name: "503 burst",
        reason: "transient",
        ops,
        start: () => world.fake.faults.serverError({ operation: ops }, { status: 503 }),
      },
    ];
    const report: string[] = [];
    let lastStormEnd = 0;
    try {
      let n = 1;
      for (const phase of phases) {
        const next = `https://westeurope.oic.prod-aks.azure.com/${world.fake.tenantId}/rebuilt-${++n}/`;
        allIssuers.add(next);
        const t0 = Date.now();
        const atStart = await metricsText();
        const rule = phase.start();
        // The issuer changes once requests that arrived before the storm have been answered.
        await new Promise((r) => setTimeout(r, 300));
        world.fake.setOidcIssuer({ resourceGroup: CLUSTER_RG, name: CLUSTER_NAME, issuerURL: next });
        // Mid-storm, the fallback team's credential is deleted: it must come back complete (the identity read fails: last good value).
        // Others reconcile too (a Team edit): their identity reads (distinct keys) run concurrently.
        await new Promise((r) => setTimeout(r, 1_200));
        await admin.delete(V1, "Secret", fallbackTeam, "aso-credential");
        for (const t of moreTeams)
          await admin.mergePatch(TEAM_V, "Team", undefined, t, {
            metadata: { annotations: { "berth.dev/poke": String(n) } },
          });
        await new Promise((r) => setTimeout(r, 4_000));
        // Still the old issuer while the managed cluster cannot be read (the last good value, never a blank).
        if (phase.ops.includes("ManagedClusters_Get"))
          expect((await platformVars())?.data?.CLUSTER_OIDC_ISSUER_URL).toBe(issuer);
        const midStorm = await admin.get(V1, "Secret", fallbackTeam, "aso-credential");
        report.push(
          `${phase.name}: fallback credential ${midStorm && !midStorm.metadata.deletionTimestamp ? "re-created during the storm (last good identity read)" : "not yet re-created when the storm ended"}`,
        );
        rule.remove();
        const t1 = Date.now();
        lastStormEnd = t1;
        const fired = rule.fired;

        await eventually(
          `${phase.name}: the new issuer lands`,
          async () => (await platformVars())?.data?.CLUSTER_OIDC_ISSUER_URL === next,
          20_000,
        );
        const convergedMs = Date.now() - t1;
        // Its identity read may still fail once the storm is over (the circuit stays open up to
        // maxHalfOpenAfterMs): the team then waits for its retry period (the process runs with the default timings).
        await eventually(
          `${phase.name}: fallback credential back`,
          async () => {
            const s = await admin.get(V1, "Secret", fallbackTeam, "aso-credential");
            return (
              s &&
              !s.metadata.deletionTimestamp &&
              decode(s.data as Record<string, string>).AZURE_CLIENT_ID === fallbackClientId
            );
          },
          DEFAULT_TIMINGS.retryMs + TUNING.breaker.maxHalfOpenAfterMs + 5_000,
        );
        issuer = next;
        // Every failure of the storm was classified as the storm's kind: retried, or refused by the retry
        // budget (process-wide: the storms before this one may have spent it).
        const atEnd = await metricsText();
        const handled = (name: string) =>
          metricSum(atEnd, name, { reason: phase.reason }) - metricSum(atStart, name, { reason: phase.reason });
        const retried = handled("berth_azure_discovery_retries_total");
        const refused = handled("berth_azure_discovery_retry_budget_exhausted_total");
        expect(
          retried + refused,
          `${phase.name}: ${phase.reason} failures retried or refused by the budget`,
        ).toBeGreaterThan(0);
        report.push(`${phase.name}: ${retried} ${phase.reason} retries, ${refused} refused by the retry budget`);

        const counts = Object.fromEntries(ops.map((op) => [op, armRequests(op, t0, t1)]));
        const budget = outageBudget(t1 - t0);
        for (const op of phase.ops) {
          const failed = counts[op]!.filter((r) => r.fault).length;
          expect(counts[op]!.length, `${phase.name}: ${op} requests in ${t1 - t0} ms`).toBeLessThanOrEqual(budget);
          report.push(
            `${phase.name}: ${op} ${counts[op]!.length} requests (${failed} faulted) in ${((t1 - t0) / 1000).toFixed(1)} s, worst case ${budget}`,
          );
        }
        // Reads of identities may all fall between storms' faults when the managed cluster is faulted too
        // (a pass reads the cluster first); the identity-only storm hits them for sure.
        expect(fired, `${phase.name}: the storm hit ARM`).toBeGreaterThan(0);
        report.push(
          `${phase.name}: ${fired} faults answered; new issuer in platform-vars ${convergedMs} ms after the storm`,
        );
      }
    } finally {
      world.fake.faults.clear();
      for (const w of watches) w.abort();
    }
    expect(violations).toEqual([]);
    // The watches saw every phase's writes (so the check above is not vacuous).
    expect(seen.platformVars).toBeGreaterThanOrEqual(1 + phases.length);
    expect(seen.teamSecrets).toBeGreaterThanOrEqual(2 + moreTeams.length + 2 * phases.length);

    // Past the longest backoff of the tuning (1 s) after the last fault: no read is left between two attempts.
    await new Promise((r) => setTimeout(r, Math.max(0, lastStormEnd + 2_500 - Date.now())));
    // The controller's own ARM metric agrees with what the fake answered (every attempt counted, once), at a
    // moment when no request is under way (the fake counts an answer when it sends it, the metric when it arrives).
    const armOps = [...ops, "Subscriptions_Get"];
    const counts = () => armOps.map((op) => world.fake.stats.count(op)).join(",");
    const { after, armTotal } = await eventually(
      "berth_arm_requests_total to match the fake's count",
      async () => {
        const c1 = counts();
        const text = await metricsText();
        const c2 = counts();
        const fromMetric = armOps.map((op) => metricSum(text, "berth_arm_requests_total", { operation: op })).join(",");
        return c1 === c2 && c2 === fromMetric
          ? { after: text, armTotal: world.fake.stats.requests.filter((r) => r.service === "arm").length }
          : undefined;
      },
      10_000,
    );
    const elapsed = Date.now() - spawnedAt;
    // The first storm meets an unspent budget (no failure before it in this process): its 429s are retried.
    expect(metricSum(after, "berth_azure_discovery_retries_total", { reason: "throttled" })).toBeGreaterThan(0);

    // ≤ 4 requests per read (no second retry layer under ours), over the storms.
    for (const op of ops) {
      const requests = armRequests(op, stormsFrom).length;
      const reads = loads(after, kindOf[op]!) - loads(before, kindOf[op]!);
      report.push(`${op}: ${requests} requests for ${reads} reads during the storms`);
      expect(requests, `${op}: requests per read`).toBeLessThanOrEqual(MAX_ATTEMPTS * (reads + 1));
    }
    // The retry budget (process-wide, 10 + 20 % of first attempts per 60 s): every ARM request since the
    // process started is a first attempt (at most one per read) or a retry within the budget.
    const allArm = armTotal;
    const allReads = ["cluster", "subscription", "identity", "roleDefinition", "resourceProvider"].reduce(
      (n, k) => n + loads(after, k),
      0,
    );
    const windows = Math.ceil(elapsed / 60_000);
    // Reads that went to ARM (each at most one first attempt) + retries (≤ 10 + 20 % of first attempts per
    // window; a sliding window spanning two of ours counts both) + rounding.
    const budget = allReads + windows * 10 + (windows === 1 ? 0.2 : 0.4) * allReads + 2;
    report.push(
      `all ARM requests since start (${Math.round(elapsed / 1000)} s): ${allArm} for ${allReads} reads; first attempts + retry budget ≤ ${Math.floor(budget)}`,
    );
    console.log(`[tests/controller/azure] storms:\n  ${report.join("\n  ")}`);
    expect(allArm).toBeLessThanOrEqual(budget);
    console.log(
      `[tests/controller/azure] ARM/Entra requests in total: ${JSON.stringify(world.fake.stats.byOperation())}`,
    );
  });

  it("keeps every credential in place through an Azure outage, across a restart too: CredentialWritten=True, the outage its own condition", async () => {
    const teams = [fallbackTeam, steadyTeam, ...moreTeams];
    const versions = async () => {
      const out: Record<string, unknown> = {};
      for (const t of teams) out[t] = (await admin.get(V1, "Secret", t, "aso-credential"))?.metadata.resourceVersion;
      return out;
    };
    for (const t of teams)
      await eventually(
        `${t}: CredentialWritten=True before the outage`,
        async () => (await condition(t, "CredentialWritten"))?.status === "True",
      );
    const before = await versions();
    const teamReconciles = async () =>
      metricSum(await metricsText(), "berth_controller_reconcile_total", { controller: "team" });

    // Azure Resource Manager answers 503 to everything (Entra still issues tokens).
    const outage = world.fake.faults.serverError({ service: "arm" }, { status: 503 });
    try {
      const expectHonest = async (when: string) => {
        for (const t of teams) {
          const fresh = await eventually(
            `${when}: PlatformValuesFresh=False on ${t}`,
            async () => {
              const c = await condition(t, "PlatformValuesFresh");
              return c?.status === "False" ? c : undefined;
            },
            30_000,
          );
          expect(fresh).toMatchObject({ reason: "AzureUnavailable", severity: "Warning" });
          expect(fresh.message).toContain("last known values");
          expect(await condition(t, "CredentialWritten"), `${when}: ${t}`).toMatchObject({
            status: "True",
            reason: "Written",
          });
        }
        expect(await metricsText()).toMatch(/^berth_controller_platform_values_fresh 0$/m);
      };
      await expectHonest("outage");

      // A restart in the middle of it: nothing cached, Azure unreachable. The last known values are the
      // platform-vars and the credentials the controller wrote: every team keeps its credential and says so.
      const exited = new Promise((r) => child!.once("exit", r));
      child!.kill("SIGTERM");
      await exited;
      spawnController();
      await eventually(
        "the restarted process to reconcile every team",
        async () => (await teamReconciles().catch(() => 0)) >= teams.length,
        60_000,
      );
      await expectHonest("after a restart");
      // Every credential as it was: not rewritten, not removed.
      expect(await versions()).toEqual(before);
    } finally {
      outage.remove();
    }
    for (const t of teams)
      await eventually(
        `PlatformValuesFresh=True on ${t} once Azure answers`,
        async () => (await condition(t, "PlatformValuesFresh"))?.status === "True",
        30_000,
      );
    expect(await versions()).toEqual(before);
  });

  it("writes no workload-identity credential for a cluster without an OIDC issuer, and says why in a Warning Event", async () => {
    const platformPasses = async () =>
      metricSum(await metricsText(), "berth_controller_reconcile_total", { controller: "platform" });
    world.fake.setOidcIssuer({ resourceGroup: CLUSTER_RG, name: CLUSTER_NAME, enabled: false });
    try {
      // Azure says so for sure (not an outage): severity Error, and no last known values stand in.
      const c = await eventually(
        "PlatformValuesFresh=False (OIDCIssuerNotEnabled)",
        async () => {
          const x = await condition(steadyTeam, "PlatformValuesFresh");
          return x?.reason === "OIDCIssuerNotEnabled" ? x : undefined;
        },
        30_000,
      );
      expect(c).toMatchObject({ status: "False", severity: "Error" });
      const warning = await eventually("WorkloadIdentityUnavailable Warning event", async () =>
        (await admin.list(V1, "Event", ASO_NS)).find((e) => e.reason === "WorkloadIdentityUnavailable"),
      );
      expect(warning).toMatchObject({
        type: "Warning",
        involvedObject: { kind: "Secret", name: "aso-credential", namespace: ASO_NS },
      });
      expect(warning.message).toContain("no OIDC issuer");

      // The platform credential, deleted, is not written again while there is no issuer.
      await admin.delete(V1, "Secret", ASO_NS, "aso-credential");
      const passes = await platformPasses();
      await eventually("two more platform passes", async () => (await platformPasses()) >= passes + 2, 60_000);
      expect(await admin.get(V1, "Secret", ASO_NS, "aso-credential")).toBeUndefined();
    } finally {
      world.fake.setOidcIssuer({ resourceGroup: CLUSTER_RG, name: CLUSTER_NAME, enabled: true, issuerURL: issuer });
    }
    await eventually(
      "platform aso-credential written again once the issuer is back",
      () => admin.get(V1, "Secret", ASO_NS, "aso-credential"),
      60_000,
    );
  });

  it("checks the role catalog and the resource providers in Azure: each problem a Warning Event on platform-vars, counted on /metrics", async () => {
    // An unlabelled gauge: `name value`.
    const findings = async () =>
      Number(/^berth_controller_platform_findings (\S+)$/m.exec(await metricsText())?.[1] ?? NaN);
    const warnings = async (reason: string) =>
      (await admin.list(V1, "Event", ASO_NS)).filter(
        (e) => e.reason === reason && (e.involvedObject as { name?: string } | undefined)?.name === "platform-vars",
      );
    // From the start (of each process: the restart above recorded it again): the catalog entry whose id is not its role's.
    const mismatches = await eventually("RoleCatalogMismatch Warning event", async () => {
      const w = await warnings("RoleCatalogMismatch");
      return w.length ? w : undefined;
    });
    const mismatch = mismatches.at(-1)!;
    expect(mismatch).toMatchObject({ type: "Warning", involvedObject: { kind: "ConfigMap", namespace: ASO_NS } });
    const contributorId = BUILT_IN_ROLES.find((r) => r.roleName === "Contributor")!.id;
    expect(mismatch.message).toBe(
      `role catalog entry 'mislabelled' grants roleDefinitionId ${READER_ID}, but 'Contributor' is ${contributorId} in subscription ${world.fake.subscriptionId} (cluster ${CLUSTER_NAME}): teams get another role than the catalog names`,
    );
    expect(
      await eventually("berth_controller_platform_findings 1", async () => ((await findings()) === 1 ? 1 : undefined)),
    ).toBe(1);
    expect(await warnings("RoleNotFound")).toEqual([]);
    expect(await warnings("ResourceProviderNotRegistered")).toEqual([]);

    // The custom role is deleted and Microsoft.ManagedIdentity unregistered: both are found once the cache expires.
    const deployer = world.fake.arm.roleDefinitions.get(DEPLOYER.id)!;
    world.fake.arm.roleDefinitions.delete(DEPLOYER.id);
    world.fake.arm.setResourceProviderState({ namespace: "Microsoft.ManagedIdentity", state: "NotRegistered" });
    try {
      const notFound = await eventually(
        "RoleNotFound Warning event",
        async () => (await warnings("RoleNotFound"))[0],
        30_000,
      );
      expect(notFound.message).toContain(
        `role catalog entry 'deployer': no role named '${DEPLOYER.roleName}' in subscription ${world.fake.subscriptionId}`,
      );
      const unregistered = await eventually(
        "ResourceProviderNotRegistered Warning event",
        async () => (await warnings("ResourceProviderNotRegistered"))[0],
        30_000,
      );
      expect(unregistered.message).toContain("Microsoft.ManagedIdentity is NotRegistered in subscription");
      expect(
        await eventually(
          "berth_controller_platform_findings 3",
          async () => ((await findings()) === 3 ? 3 : undefined),
          30_000,
        ),
      ).toBe(3);
    } finally {
      world.fake.arm.roleDefinitions.set(DEPLOYER.id, deployer);
      world.fake.arm.providerStates.clear();
    }
    // Fixed in Azure: the count falls back to the one finding the catalog itself must fix.
    expect(
      await eventually(
        "berth_controller_platform_findings back to 1",
        async () => ((await findings()) === 1 ? 1 : undefined),
        30_000,
      ),
    ).toBe(1);
    // One Warning when a finding appears, not one per pass: the mismatch, there all along, was not recorded again.
    const identities = (events: Obj[]) => events.map((e) => `${e.metadata.name} ×${String(e.count)}`);
    expect(identities(await warnings("RoleCatalogMismatch"))).toEqual(identities(mismatches));
  });

  it("printed every log line as JSON with each key once (a duplicate-key-refusing parser reads them all)", () => {
    const printed = parseLogOutput(stdout);
    expect(printed.other).toEqual([]);
    // The Azure discovery's lines too (its child logger binds `component`, as the runtime's parts do).
    expect(printed.entries.some((e) => e.component === "azure-discovery" || e.informer !== undefined)).toBe(true);
  });
});
