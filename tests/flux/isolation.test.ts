/**
 * Tenant isolation, proven by attack (issue 36, docs/security.md): flux/ as docs/install.md installs it, real Flux, real
 * Azure Service Operator against the fake Azure, which records which identity made every ARM call. ASO runs with a
 * global credential (the platform identity), the worst case a platform can choose: a namespace without aso-credential
 * would fall back to it.
 *
 * Every attack is made by a team owner: a user of the owners' group, authenticated by its own client certificate, with
 * no rights but the `admin` RoleBinding Berth renders in the team's namespace (aggregated as on AKS). Each is refused at
 * admission with a message saying why, or by Azure for a stated reason, and the fake's record shows no ARM call made
 * as another team's identity or as the platform's for an object of a team namespace.
 *
 *   1. an owner may declare Azure resources in its namespace; ASO creates them as the team's identity;
 *   2. `credential-from` naming a forged Secret with another team's client id, or the platform's, is refused;
 *   3. an ASO object before the team's credential exists is refused (else ASO would use the global credential);
 *      the owner can neither write, empty nor delete aso-credential;
 *   4. an ASO object cannot have ASO export over aso-credential;
 *   5. a team workload's token does not buy another team's identity (Entra's federated-credential check);
 *   6. a team's own Kustomization applies as a ServiceAccount of its namespace, from sources in it;
 *   7. the fake's record: nothing in Azure was done for a team namespace as anyone but that team's identity.
 */
// needs: cluster aso dist
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WorkloadIdentityCredential } from "@azure/identity";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { Admin, type Obj } from "../controller/helpers.js";
import { TOKEN_EXCHANGE_AUDIENCE } from "../support/aso.js";
import { ASO_API_VERSIONS } from "../support/aso-stand-in.js";
import {
  ASO_NAMESPACE,
  readyCondition,
  startFluxPlatform,
  testPlatform,
  type FluxPlatform,
} from "../support/flux-platform.js";
import { basicAuthEnv, createBareRepo, pushTree } from "../support/git-remotes.js";
import { startGitHttpServer, type GitHttpServer } from "../support/git-http-server.js";
import { eventually } from "../support/wait.js";

/** The owners of alpha and gamma (alice is one); beta has owners of its own. */
const OWNERS = "0b9a3c1e-1111-4222-8333-444455556666";
const BETA_OWNERS = "7c2e4f10-2222-4333-8444-555566667777";
const PLATFORM_VARS = testPlatform().environments[0]!.clusters[0]!.vars!;
const PLATFORM_CLIENT_ID = PLATFORM_VARS.PLATFORM_CLIENT_ID!;
const SUBSCRIPTION = PLATFORM_VARS.SUBSCRIPTION_ID!;
const IDENTITY_API = "managedidentity.azure.com/v1api20230131";
/** Every Azure name an owner gives its objects starts so: the record's check (7) finds the calls made for them. */
const TENANT_MARK = "tenant-";
const ATTACK_REPO_AUTH = { username: "attacker", password: "attacker-token" };

const b64 = (s: string) => Buffer.from(s).toString("base64");
const unb64 = (s: string | undefined) => Buffer.from(s ?? "", "base64").toString();

describe("tenant isolation with real ASO: a team owner acts only as its own team's identity", () => {
  let platform: FluxPlatform;
  /** alice: in the owners' group of alpha and gamma, and nothing else. */
  let owner: Admin;
  const clientIds: Record<string, string> = {};
  let attackStart = 0;
  let attackRepo: { server: GitHttpServer; remove: () => Promise<void>; url: string } | undefined;

  const onboard = async (name: string) => {
    const owners = [name === "beta" ? BETA_OWNERS : OWNERS];
    const res = await platform.request("POST", "/v1/teams", { name, owners, environments: ["dev"] });
    expect(res.statusCode, res.body).toBe(201);
    return res.json.revision as string;
  };
  const credentialOf = (team: string) => platform.admin.get("v1", "Secret", team, "aso-credential");
  const teamReady = async (team: string, revision: string) => {
    await platform.waitKustomizationReady(ASO_NAMESPACE, `team-${team}`, revision, 300_000).catch(async (err) => {
      throw new Error(`${(err as Error).message}; where the team stood: ${await standing(team)}`, { cause: err });
    });
    const ids = await eventually(
      `${team}'s identity ConfigMap and credential`,
      async () => {
        const ids = await platform.admin.get("v1", "ConfigMap", ASO_NAMESPACE, `${team}-identity`);
        return (await credentialOf(team)) ? (ids?.data as { clientId: string } | undefined) : undefined;
      },
      120_000,
    );
    clientIds[team] = ids.clientId.toLowerCase();
  };
  /** The team's Kustomization and ASO objects, each with its Ready condition: what a timeout says. */
  const standing = async (team: string) => {
    const ready = (o: Obj | undefined) => {
      const c = readyCondition(o);
      return c ? `${c.status} ${c.reason ?? ""}: ${c.message ?? ""}` : "no Ready condition";
    };
    const lines = [`Kustomization team-${team}: ${ready(await platform.kustomization(ASO_NAMESPACE, `team-${team}`))}`];
    for (const [kind, apiVersion] of Object.entries(ASO_API_VERSIONS))
      for (const o of await platform.admin.list(
        apiVersion,
        kind,
        ASO_NAMESPACE,
        `?labelSelector=berth.dev/team=${team}`,
      ))
        lines.push(`${kind} ${o.metadata.name}: ${ready(o)}`);
    return lines.join("; ");
  };
  /** A request as the owner, answered as it was (status and body), for refusals. */
  const asOwner = async (method: "POST" | "PUT" | "PATCH" | "DELETE", obj: Obj, patch?: unknown) => {
    const { apiVersion, kind, metadata } = obj;
    const collection = await owner.path(apiVersion, kind, metadata.namespace);
    const path = method === "POST" ? collection : `${collection}/${metadata.name}`;
    return owner.req(
      method,
      path,
      method === "DELETE" ? undefined : (patch ?? obj),
      patch ? "application/merge-patch+json" : undefined,
    );
  };
  /** An identity in the team's own resource group (the one Berth gave it, named by ARM id): what an owner may make. */
  const identityIn = (namespace: string, name: string, annotations: Record<string, string> = {}): Obj => ({
    apiVersion: IDENTITY_API,
    kind: "UserAssignedIdentity",
    metadata: { name, namespace, annotations },
    spec: {
      location: "westeurope",
      azureName: `id-${TENANT_MARK}${namespace}-${name}`,
      owner: { armId: `/subscriptions/${SUBSCRIPTION}/resourceGroups/rg-${namespace}--aks-dev-weu` },
    },
  });
  const asoReady = (apiVersion: string, kind: string, namespace: string, name: string) =>
    eventually(
      `${kind} ${namespace}/${name} Ready`,
      async () => readyCondition(await platform.admin.get(apiVersion, kind, namespace, name))?.status === "True",
      180_000,
    );
  /** What the fake Azure did for an object an owner declared, by whom: "PUT .../resourceGroups/rg-tenant-x as <appid>". */
  const tenantCalls = () =>
    platform
      .azure!.stats.requests.filter((r) => r.at >= attackStart && r.path.includes(TENANT_MARK))
      .map((r) => ({ call: `${r.method} ${r.path.split("/").slice(-2).join("/")} ${r.status}`, appid: r.appid }));

  beforeAll(async () => {
    platform = await startFluxPlatform({
      aso: "real",
      platform: (p) => (p.templateVersion = "v6"),
      realAso: {
        settings: {
          AZURE_CLIENT_ID: PLATFORM_CLIENT_ID,
          AZURE_TENANT_ID: PLATFORM_VARS.TENANT_ID!,
          AZURE_SUBSCRIPTION_ID: SUBSCRIPTION,
          USE_WORKLOAD_IDENTITY_AUTH: "true",
        },
      },
    });
    platform.azure!.arm.opts.ficWriteLatencyMs = 0;
    // One after the other: a team's artifact carries the commit Flux fetched it at, which a second POST could overtake.
    for (const team of ["alpha", "beta"]) await teamReady(team, await onboard(team));
    owner = new Admin(platform.cluster.kubeConfigFor("alice@example.test", [OWNERS]));
    attackStart = Date.now();
  }, 600_000);

  afterAll(async () => {
    if (platform?.azure) {
      const named = { ...clientIds, platform: PLATFORM_CLIENT_ID };
      const by = (appid?: string) => Object.entries(named).find(([, id]) => id === appid)?.[0] ?? appid ?? "nobody";
      console.log(
        `[tests/flux/isolation] ARM calls for owners' objects, by identity:\n  ${tenantCalls()
          .map((c) => `${c.call} as ${by(c.appid)}`)
          .join("\n  ")}`,
      );
    }
    await attackRepo?.server.stop();
    await attackRepo?.remove();
    await platform?.stop();
  });

  it("1. an owner may declare Azure resources in its namespace, and ASO creates them as the team's identity", async () => {
    const canI = async (namespace: string) => {
      const review = await owner.req("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SelfSubjectAccessReview",
        spec: {
          resourceAttributes: { namespace, verb: "create", group: "resources.azure.com", resource: "resourcegroups" },
        },
      });
      return (review.json as { status: { allowed: boolean } }).status.allowed;
    };
    expect(await canI("alpha")).toBe(true);
    expect(await canI("beta")).toBe(false);
    expect(await canI(ASO_NAMESPACE)).toBe(false);

    const created = await asOwner("POST", identityIn("alpha", "app"));
    expect(created.status, created.body).toBe(201);
    await asoReady(IDENTITY_API, "UserAssignedIdentity", "alpha", "app");
    expect(tenantCalls()).toContainEqual({
      call: `PUT userAssignedIdentities/id-${TENANT_MARK}alpha-app 201`,
      appid: clientIds.alpha,
    });
  }, 300_000);

  it("2. credential-from naming a forged Secret with another team's client id, or the platform's, is refused", async () => {
    for (const [name, clientId] of [
      ["as-beta", clientIds.beta!],
      ["as-platform", PLATFORM_CLIENT_ID],
    ] as const) {
      // A plain Secret: the owner may write it, as any Secret of its namespace.
      const secret = await asOwner("POST", {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name, namespace: "alpha" },
        data: {
          AZURE_CLIENT_ID: b64(clientId),
          AZURE_TENANT_ID: b64(PLATFORM_VARS.TENANT_ID!),
          AZURE_SUBSCRIPTION_ID: b64(SUBSCRIPTION),
          USE_WORKLOAD_IDENTITY_AUTH: b64("true"),
        },
      } as Obj);
      expect(secret.status, secret.body).toBe(201);
      const refused = await asOwner(
        "POST",
        identityIn("alpha", name, { "serviceoperator.azure.com/credential-from": name }),
      );
      expect(refused.status, refused.body).toBe(403);
      expect(refused.body).toContain(`credential-from may not name Secret ${name}`);
    }
    // Nor added to an object that already exists.
    const annotated = await asOwner(
      "PATCH",
      { apiVersion: IDENTITY_API, kind: "UserAssignedIdentity", metadata: { name: "app", namespace: "alpha" } },
      { metadata: { annotations: { "serviceoperator.azure.com/credential-from": "as-beta" } } },
    );
    expect(annotated.status, annotated.body).toBe(403);
    // Naming the team's own credential is what ASO does anyway: allowed.
    const own = await asOwner(
      "POST",
      identityIn("alpha", "own", { "serviceoperator.azure.com/credential-from": "aso-credential" }),
    );
    expect(own.status, own.body).toBe(201);
  }, 120_000);

  it("3. an ASO object before the team's credential exists is refused; the owner cannot write, empty or delete it", async () => {
    // Berth's controller held, so gamma's namespace exists (Flux applied it) without its credential yet.
    const controller = platform.controller.child;
    controller.kill("SIGSTOP");
    try {
      const revision = await onboard("gamma");
      await eventually(
        "gamma's namespace and its owners' RoleBinding",
        async () =>
          (await platform.admin.list("rbac.authorization.k8s.io/v1", "RoleBinding", "gamma")).some(
            (rb) => (rb.roleRef as { name: string }).name === "admin",
          ),
        180_000,
      );
      expect(await credentialOf("gamma")).toBeUndefined();
      // The apiserver answers a binding whose param is missing as a configuration error: 422, not 403.
      const early = await asOwner("POST", identityIn("gamma", "early"));
      expect(early.status, early.body).toBe(422);
      expect(early.body).toContain(
        "ValidatingAdmissionPolicy 'berth-team-azure-credential-exists' with binding 'berth-team-azure-credential-exists' denied request: failed to configure binding: no params found",
      );
      // Nor can the owner write the credential before the controller does.
      const forged = await asOwner("POST", {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "aso-credential", namespace: "gamma" },
        data: { AZURE_CLIENT_ID: b64(clientIds.beta!) },
      } as Obj);
      expect(forged.status, forged.body).toBe(403);
      expect(forged.body).toContain("only Berth's controller writes the team credential gamma/aso-credential");
      controller.kill("SIGCONT");
      await teamReady("gamma", revision);
    } finally {
      controller.kill("SIGCONT");
    }
    // Once it exists, the same object is admitted and made as gamma's identity (checked in 7).
    const admitted = await asOwner("POST", identityIn("gamma", "early"));
    expect(admitted.status, admitted.body).toBe(201);
    await asoReady(IDENTITY_API, "UserAssignedIdentity", "gamma", "early");

    // The credential as the controller wrote it: the owner can change, empty or delete none of it.
    const credential = (await credentialOf("alpha"))!;
    const ref = { apiVersion: "v1", kind: "Secret", metadata: { name: "aso-credential", namespace: "alpha" } } as Obj;
    const attempts = [
      await asOwner("PATCH", ref, { data: { AZURE_CLIENT_ID: b64(clientIds.beta!) } }),
      await asOwner("PATCH", ref, { data: { AZURE_CLIENT_SECRET: b64("a-secret-of-some-app") } }),
      await asOwner("PUT", { ...ref, data: {} } as Obj),
      await asOwner("DELETE", ref),
    ];
    expect(attempts.map((a) => a.status)).toEqual([403, 403, 403, 403]);
    expect((await credentialOf("alpha"))!.data).toEqual(credential.data);
  }, 600_000);

  it("4. an ASO object cannot have ASO export its ids over aso-credential", async () => {
    const before = (await credentialOf("alpha"))!.data as Record<string, string>;
    const exporter = identityIn("alpha", "exporter");
    exporter.spec = {
      ...(exporter.spec as object),
      operatorSpec: { secrets: { clientId: { name: "aso-credential", key: "AZURE_CLIENT_ID" } } },
    };
    const created = await asOwner("POST", exporter);
    expect(created.status, created.body).toBe(201);
    // ASO makes the identity (as alpha's), then refuses to write a Secret it does not own (ASO's NotOwnedError);
    // were it to try, the credential's policy refuses ASO's ServiceAccount too.
    const refusal = await eventually(
      "ASO refuses to export over aso-credential",
      async () => {
        const ready = readyCondition(
          await platform.admin.get(IDENTITY_API, "UserAssignedIdentity", "alpha", "exporter"),
        );
        return ready?.status === "False" && /aso-credential/.test(String(ready.message)) ? ready.message : undefined;
      },
      180_000,
    );
    expect(refusal).toMatch(/not owned by|denied|forbidden/i);
    expect((await credentialOf("alpha"))!.data).toEqual(before);
    expect(unb64(before.AZURE_CLIENT_ID)).toBe(clientIds.alpha);
  }, 300_000);

  it("5. a team workload's token does not buy another team's identity", async () => {
    const dir = await mkdtemp(join(tmpdir(), "berth-workload-"));
    try {
      // What the kubelet projects into a pod of alpha's running as ServiceAccount workload (admin may ask for it).
      const requested = await owner.req("POST", "/api/v1/namespaces/alpha/serviceaccounts/workload/token", {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: { audiences: [TOKEN_EXCHANGE_AUDIENCE], expirationSeconds: 3600 },
      });
      expect(requested.status, requested.body).toBe(201);
      const tokenFilePath = join(dir, "azure-identity");
      await writeFile(tokenFilePath, (requested.json as { status: { token: string } }).status.token);
      const credentialFor = (clientId: string) =>
        new WorkloadIdentityCredential({
          tenantId: PLATFORM_VARS.TENANT_ID!,
          clientId,
          tokenFilePath,
          ...platform.azure!.credentialOptions(),
        });
      const scope = "https://management.azure.com/.default";
      await expect(credentialFor(clientIds.alpha!).getToken(scope)).resolves.toHaveProperty("token");
      // Beta's identity trusts beta's workload and ASO, not alpha's workload: Entra says no (AADSTS70021).
      await expect(credentialFor(clientIds.beta!).getToken(scope)).rejects.toThrow(/AADSTS70021/);
      await expect(credentialFor(PLATFORM_CLIENT_ID).getToken(scope)).rejects.toThrow(/AADSTS70021/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("6. a team's own Kustomization applies as a ServiceAccount of its namespace, from sources in it", async () => {
    // The owner's own repository: a ClusterRoleBinding making its group cluster-admin, and a ConfigMap in beta.
    const bare = await createBareRepo();
    const server = await startGitHttpServer({ root: join(bare.dir, ".."), ...ATTACK_REPO_AUTH });
    attackRepo = { server, remove: () => bare.remove(), url: server.repoUrl(bare.dir.split("/").pop()!) };
    const tree = await mkdtemp(join(tmpdir(), "berth-attack-tree-"));
    await mkdir(join(tree, "deploy"));
    await writeFile(
      join(tree, "deploy", "escape.yaml"),
      [
        {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "ClusterRoleBinding",
          metadata: { name: "alpha-owners-escape" },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
          subjects: [{ kind: "Group", name: OWNERS, apiGroup: "rbac.authorization.k8s.io" }],
        },
        {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: "planted", namespace: "beta" },
          data: { by: "alpha" },
        },
      ]
        .map((o) => stringify(o))
        .join("---\n"),
    );
    const head = await pushTree({
      url: attackRepo.url,
      dir: tree,
      env: basicAuthEnv(ATTACK_REPO_AUTH.username, ATTACK_REPO_AUTH.password),
    });
    await rm(tree, { recursive: true, force: true });
    // The owner's source: a GitRepository of its namespace (Flux's install lets `admin` write Flux's kinds).
    for (const obj of [
      {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "attack-repo", namespace: "alpha" },
        stringData: ATTACK_REPO_AUTH,
      },
      {
        apiVersion: "source.toolkit.fluxcd.io/v1",
        kind: "GitRepository",
        metadata: { name: "attack", namespace: "alpha" },
        spec: { interval: "1m", url: attackRepo.url, ref: { branch: "main" }, secretRef: { name: "attack-repo" } },
      },
    ] as Obj[]) {
      const res = await asOwner("POST", obj);
      expect(res.status, res.body).toBe(201);
    }
    const kustomization = (spec: Record<string, unknown>): Obj => ({
      apiVersion: "kustomize.toolkit.fluxcd.io/v1",
      kind: "Kustomization",
      metadata: { name: "attack", namespace: "alpha" },
      spec: {
        interval: "1m",
        path: "./deploy",
        prune: false,
        sourceRef: { kind: "GitRepository", name: "attack" },
        ...spec,
      },
    });

    // Without serviceAccountName kustomize-controller would apply with its own rights: refused.
    const unnamed = await asOwner("POST", kustomization({}));
    expect(unnamed.status, unnamed.body).toBe(403);
    expect(unnamed.body).toContain("must name spec.serviceAccountName");
    // Another namespace's source (the fleet repository Flux itself reads): refused.
    const foreign = await asOwner(
      "POST",
      kustomization({
        serviceAccountName: "default",
        sourceRef: { kind: "GitRepository", name: "flux-system", namespace: "flux-system" },
      }),
    );
    expect(foreign.status, foreign.body).toBe(403);
    expect(foreign.body).toContain("reads sources in its own namespace only, not in flux-system");

    // As the namespace's default ServiceAccount, from its own source: admitted, and Flux is refused what alpha may not do.
    const admitted = await asOwner("POST", kustomization({ serviceAccountName: "default" }));
    expect(admitted.status, admitted.body).toBe(201);
    const failure = await eventually(
      "Kustomization alpha/attack fails as alpha's ServiceAccount",
      async () => {
        const ready = readyCondition(
          await platform.admin.get("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "alpha", "attack"),
        );
        return ready?.status === "False" && /forbidden/i.test(String(ready.message)) ? ready.message : undefined;
      },
      180_000,
    );
    expect(failure).toContain("system:serviceaccount:alpha:default");
    const source = await platform.admin.get("source.toolkit.fluxcd.io/v1", "GitRepository", "alpha", "attack");
    expect((source?.status as { artifact?: { revision?: string } }).artifact?.revision).toBe(`main@sha1:${head}`);
    expect(
      await platform.admin.get("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", undefined, "alpha-owners-escape"),
    ).toBeUndefined();
    expect(await platform.admin.get("v1", "ConfigMap", "beta", "planted")).toBeUndefined();

    // A HelmRelease (helm-controller's CRD; helm-controller itself does not run here): the same rules at admission.
    const release = (spec: Record<string, unknown>): Obj => ({
      apiVersion: "helm.toolkit.fluxcd.io/v2",
      kind: "HelmRelease",
      metadata: { name: "attack", namespace: "alpha" },
      spec: {
        interval: "1m",
        chart: { spec: { chart: "escape", sourceRef: { kind: "HelmRepository", name: "charts" } } },
        ...spec,
      },
    });
    const unnamedRelease = await asOwner("POST", release({}));
    expect(unnamedRelease.status, unnamedRelease.body).toBe(403);
    expect(unnamedRelease.body).toContain("must name spec.serviceAccountName");
    const foreignChart = await asOwner(
      "POST",
      release({
        serviceAccountName: "default",
        chart: {
          spec: { chart: "escape", sourceRef: { kind: "HelmRepository", name: "charts", namespace: "flux-system" } },
        },
      }),
    );
    expect(foreignChart.status, foreignChart.body).toBe(403);
    expect(foreignChart.body).toContain("reads sources in its own namespace only, not in flux-system");
    const ownRelease = await asOwner("POST", release({ serviceAccountName: "default" }));
    expect(ownRelease.status, ownRelease.body).toBe(201);
  }, 300_000);

  it("7. the fake Azure's record: nothing was done for a team namespace's object as anyone but that team's identity", async () => {
    // The owners' objects that were admitted reached Azure (1, 2, 3, 4): the check below is not over an empty record.
    const admitted = ["alpha-app", "alpha-own", "gamma-early", "alpha-exporter"].map(
      (name) => `PUT userAssignedIdentities/id-${TENANT_MARK}${name} 201`,
    );
    const calls = await eventually(
      "every admitted object's PUT in the record",
      async () => {
        const calls = tenantCalls();
        return admitted.every((call) => calls.some((c) => c.call === call)) ? calls : undefined;
      },
      120_000,
    );
    const wrong = calls.filter((c) => {
      const team = c.call.includes(`${TENANT_MARK}gamma-`) ? "gamma" : "alpha";
      return c.appid !== clientIds[team];
    });
    expect(wrong).toEqual([]);
    // No token for beta's identity or the platform's was issued to anyone since the attacks began but for ASO's own
    // objects in flux-config (which use the platform credential there): none for beta at all.
    expect(platform.azure!.entra.issued.filter((t) => t.at >= attackStart && t.clientId === clientIds.beta)).toEqual(
      [],
    );
    expect(platform.azure!.stats.actingAs(clientIds.beta!, attackStart)).toEqual([]);
  }, 150_000);
});
