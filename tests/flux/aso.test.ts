/**
 * Real Azure Service Operator in the loop (issue 21): the platform of tests/support/flux-platform.ts with
 * `aso: "real"`: Berth's API commits, real Flux applies, ASO v2 (tests/support/aso.ts) creates the team's resource
 * group, identity, federated credentials and role assignment in the fake Azure (tests/fake-azure, the only part
 * that is not real) with the platform credential Berth's controller writes, exports the identity's ids to
 * `<team>-identity`, and Berth's controller writes the team's credential, which ASO then uses for the team's own
 * resources. Each scenario shows Berth's status as `berth status --watch` prints it, and asserts what ASO asked
 * Azure. Figures (time to Ready) are printed, not asserted.
 *
 *   1. the chain: POST → Ready; the team's credential works (ASO creates a resource in the team's namespace as the
 *      team's identity, with a token the fake Entra issued for ASO's ServiceAccount token: issuer, subject, audience);
 *   2. two federated credentials on one identity written at once: 409 ConcurrentFederatedIdentityCredentialsWrites…,
 *      ASO retries, Ready later (the delay measured);
 *  2b. the same with templates v3, which chain the credentials (ADR 0021): no 409, Ready sooner (measured); Berth's
 *      controller wakes the second credential once Azure accepted it (ADR 0035);
 *  2d. templates v6, whose first credential reads the cluster's issuer from a ConfigMap Flux writes: the controller
 *      wakes it too, and Ready comes sooner (measured);
 *  2c. a rollout from v1 to v3 on a live identity: the credentials re-PUT in place, no 409, nothing deleted;
 *  2e. a rollout of 2b's team from v3 to v6: the first credential's issuer moves into a ConfigMap in place;
 *   3. PrincipalNotFound while the new identity replicates: the role assignment waits (Warning), not Failed;
 *   4. AuthorizationFailed that persists: status and a rollout gate report ASO's reason and severity;
 *   5. offboarding: ASO deletes in Azure in Berth's order, the credential outlives every ASO object, nothing is
 *      stuck; a v6 team's too (its cluster issuer ConfigMap pruned beside its credentials); with detach-on-delete
 *      (ASO's default reconcile policy) nothing in Azure is deleted.
 */
// needs: cluster aso dist
import { loadavg } from "node:os";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CliHarness, type CliResult } from "../support/cli.js";
import { watchDeletions } from "../support/deletion-watch.js";
import { DEV_TOKEN } from "../support/berth.js";
import { ASO_SUBJECT, identityWrites as identityWritesIn } from "../support/aso.js";
import { ASO_API_VERSIONS } from "../support/aso-stand-in.js";
import { ASO_NAMESPACE, startFluxPlatform, type FluxPlatform } from "../support/flux-platform.js";
import { eventually } from "../support/wait.js";
import type { Obj } from "../controller/helpers.js";
import type { AsoKindName } from "@berth/core";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const CONCURRENT_FIC_WRITES = "ConcurrentFederatedIdentityCredentialsWritesForSingleManagedIdentity";
const figures: Record<string, number | string> = {};
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");

describe("real ASO in the loop: POST → Flux → ASO → fake Azure → credential → Ready", () => {
  let platform: FluxPlatform;
  let cli: CliHarness;

  beforeAll(async () => {
    const t0 = Date.now();
    platform = await startFluxPlatform({
      aso: "real",
      berthConfig: (raw) => (raw.api.rollouts = { pollIntervalMs: 500, gateTimeoutSeconds: 300 }),
    });
    figures.platformMs = Date.now() - t0;
    cli = await CliHarness.create();
  }, 300_000);

  afterEach(() => {
    // Every request ASO (or anyone) made was one the fake answers as Azure does.
    platform.azure!.stats.assertAllAnswered();
  });

  afterAll(async () => {
    console.log(`[tests/flux/aso] ${JSON.stringify({ ...figures, aso: platform?.realAso?.usage(), load: load() })}`);
    if (platform?.azure)
      console.log(`[tests/flux/aso] fake Azure: ${JSON.stringify(platform.azure.stats.byOperation())}`);
    await platform?.stop();
  });

  const onboard = async (name: string, templateVersion?: string) => {
    const res = await platform.request("POST", "/v1/teams", {
      name,
      owners: [OWNER],
      environments: ["dev"],
      roleAssignments: [{ role: "rg-contributor" }],
      ...(templateVersion ? { templateVersion } : {}),
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json.revision as string;
  };
  /** `berth status <team> --watch` without a terminal: one line per change, exit 0 once Ready. */
  const watchStatus = (team: string, timeout = "5m"): Promise<CliResult> =>
    cli.run(
      [
        "status",
        team,
        "--watch",
        "--timeout",
        timeout,
        "--interval",
        "1s",
        "--server",
        platform.berth.url,
        "--token",
        DEV_TOKEN,
      ],
      { timeoutMs: 330_000 },
    );
  const aso = (apiVersion: string, kind: string, name: string, namespace = ASO_NAMESPACE) =>
    platform.admin.get(apiVersion, kind, namespace, name);
  const readyCondition = (o: Obj | undefined) =>
    ((o?.status as { conditions?: Array<Record<string, unknown>> } | undefined)?.conditions ?? []).find(
      (c) => c.type === "Ready",
    );
  /** What the fake Azure answered for a team's resources since `since` (ms), e.g. ["PUT .../federatedIdentityCredentials/workload 409"]. */
  const azureCalls = (team: string, since: number) =>
    platform
      .azure!.stats.requests.filter((r) => r.at >= since && r.path.toLowerCase().includes(`-${team}`))
      .map((r) => `${r.method} ${r.path.split("/").slice(-2).join("/")} ${r.status}`);
  /** Waits until no ASO object of `kinds` (default: every kind Berth renders) is left for `team` in the ASO namespace. */
  const asoObjectsGone = async (team: string, kinds = Object.keys(ASO_API_VERSIONS) as AsoKindName[]) => {
    for (const kind of kinds)
      await eventually(
        `${kind} of ${team} gone`,
        async () =>
          (
            await platform.admin.list(
              ASO_API_VERSIONS[kind],
              kind,
              ASO_NAMESPACE,
              `?labelSelector=berth.dev/team%3D${team}`,
            )
          ).length === 0,
        120_000,
      );
  };
  const identityWrites = (team: string, since: number) => identityWritesIn(platform.azure!, team, since);
  /**
   * Runs `fn` while the fake Azure holds the identity for 2 s on each federated-credential write, about as long as one
   * takes in Azure (a concurrent write on it gets 409), and lifts the window after.
   */
  const withFicWriteWindow = async (fn: () => Promise<void>) => {
    platform.azure!.arm.opts.ficWriteLatencyMs = 2_000;
    try {
      await fn();
    } finally {
      platform.azure!.arm.opts.ficWriteLatencyMs = 0;
    }
  };
  const identityOf = (team: string) =>
    [...platform.azure!.arm.identities.values()].find((i) => i.name === `id-${team}--aks-dev-weu`);
  /** ASO's writes of a team's two credentials since `since`, printed with the identity's: "+13.8s PUT workload 201". */
  const credentialWritesOf = (team: string, label: string, since: number) => {
    const writes = identityWrites(team, since);
    console.log(
      `[tests/flux/aso] ${label}: ASO's writes to the identity and its credentials:\n  ${writes.join("\n  ")}`,
    );
    return writes.filter((w) => / PUT (aso-controller|workload) /.test(w));
  };
  /** Seconds from a credential's first PUT (201) to ASO's next one (200), from credentialWritesOf's lines. */
  const rePutAfterS = (credentialWrites: string[], credential: string) => {
    const at = (status: number) =>
      Number(/^\+([\d.]+)s/.exec(credentialWrites.find((w) => w.includes(` PUT ${credential} ${status}`)) ?? "")?.[1]);
    return Number((at(200) - at(201)).toFixed(1));
  };
  const expectIssuerMatches = async (team: string) => {
    const status = (await platform.request("GET", `/v1/teams/${team}/status`)).json;
    expect(status.clusters[0].conditions).toContainEqual(
      expect.objectContaining({ type: "FederationMatchesIssuer", status: "True", reason: "IssuerMatches" }),
    );
  };
  /** Azure trusts the cluster's issuer on both of the team's credentials (ASO's and the team's workload's). */
  const expectBothTrustTheClusterIssuer = (team: string) => {
    const issuer = platform.cluster.serviceAccountIssuer;
    expect([...identityOf(team)!.fics.values()].map((f) => [f.subject, f.issuer]).sort()).toEqual([
      [ASO_SUBJECT, issuer],
      [`system:serviceaccount:${team}:workload`, issuer],
    ]);
    return issuer;
  };
  /** Onboards a team and follows it with `berth status --watch` to the end; the time to Ready is a figure. */
  const onboardAndWatch = async (team: string, figure: string, timeout = "5m", templateVersion?: string) => {
    const t0 = Date.now();
    await onboard(team, templateVersion);
    const watched = await watchStatus(team, timeout);
    figures[figure] = Date.now() - t0;
    figures[`${figure}Load`] = load();
    console.log(
      `[tests/flux/aso] berth status ${team} --watch (exit ${watched.code}):\n${watched.stdout}${watched.stderr}`,
    );
    return { watched, since: t0 };
  };

  it("1. POST → Flux → ASO creates the team in Azure → the controller writes the credential → berth status --watch ends Ready; the credential works", async () => {
    // No write window on federated credentials here: the baseline without the 409 (scenario 2 has it).
    platform.azure!.arm.opts.ficWriteLatencyMs = 0;
    const { watched, since } = await onboardAndWatch("payments", "readyWithout409Ms");
    expect(watched.code, watched.stderr).toBe(0);
    expect(azureCalls("payments", since).filter((c) => c.endsWith(" 409"))).toEqual([]);
    expect(watched.stdout).toMatch(/aks-dev-weu: Ready: Ready$/m);

    // What Azure now holds, as ASO created it with the platform credential.
    const fake = platform.azure!;
    const identity = [...fake.arm.identities.values()].find((i) => i.name === "id-payments--aks-dev-weu");
    expect(identity, "the team's identity in Azure").toBeDefined();
    expect(identity!.resourceGroup).toBe("rg-payments--aks-dev-weu");
    expect([...identity!.fics.values()].map((f) => f.subject).sort()).toEqual([
      "system:serviceaccount:azureserviceoperator-system:azureserviceoperator-default",
      "system:serviceaccount:payments:workload",
    ]);
    expect(
      [...fake.arm.roleAssignments.values()].filter((ra) => ra.principalId === identity!.principalId),
    ).toHaveLength(1);
    // ASO exported the ids from Azure; the controller wrote them into the team's credential.
    const ids = (await platform.admin.get("v1", "ConfigMap", ASO_NAMESPACE, "payments-identity"))!.data as Record<
      string,
      string
    >;
    expect(ids).toEqual({
      clientId: identity!.clientId,
      principalId: identity!.principalId,
      tenantId: identity!.tenantId,
    });
    const secret = (await platform.admin.get("v1", "Secret", "payments", "aso-credential"))!;
    expect(Buffer.from((secret.data as Record<string, string>).AZURE_CLIENT_ID!, "base64").toString()).toBe(
      identity!.clientId,
    );
    // Only the platform identity asked for tokens so far, with ASO's ServiceAccount token from this cluster.
    const issuer = platform.cluster.serviceAccountIssuer;
    expect(fake.entra.issued.map((t) => t.clientId)).not.toContain(identity!.clientId);

    // The credential works: a resource the team declares in its own namespace is created by ASO as the team's identity.
    await platform.admin.create({
      apiVersion: "resources.azure.com/v1api20200601",
      kind: "ResourceGroup",
      metadata: { name: "team-data", namespace: "payments" },
      spec: { location: "westeurope", azureName: "rg-payments-data" },
    } as Obj);
    await eventually(
      "team-data Ready",
      async () =>
        readyCondition(await aso("resources.azure.com/v1api20200601", "ResourceGroup", "team-data", "payments"))
          ?.status === "True",
      120_000,
    );
    expect(fake.arm.resourceGroups.has(`${fake.subscriptionId}/rg-payments-data`)).toBe(true);
    const teamToken = fake.entra.issued.find((t) => t.clientId === identity!.clientId);
    expect(teamToken, "a token for the team's identity").toBeDefined();
    expect(teamToken!.assertion).toEqual({ issuer, subject: ASO_SUBJECT, audiences: ["api://AzureADTokenExchange"] });
  }, 400_000);

  it("2. two federated credentials written at once: Azure answers the second 409, ASO retries it, Ready comes later", async () => {
    await withFicWriteWindow(async () => {
      const { watched, since } = await onboardAndWatch("orders", "readyWith409Ms");
      expect(watched.code, watched.stderr).toBe(0);
      console.log(
        `[tests/flux/aso] orders: ASO's writes to the identity and its credentials:\n  ${identityWrites("orders", since).join("\n  ")}`,
      );
      const conflicts = azureCalls("orders", since).filter(
        (c) => c.includes("federatedIdentityCredentials/") && c.endsWith(" 409"),
      );
      figures.conflicts409 = conflicts.length;
      expect(conflicts.length).toBeGreaterThan(0);
      // Berth's status said what held the team, with ASO's severity: a retry, not a failure. The credential that got
      // the 409 is named with its reason even when the other one waits on another Warning at the same time (ASO
      // reports Azure's relative Location on a 201 as "invalid polling URL" and retries; the recordings show it).
      expect(watched.stdout).toMatch(
        new RegExp(
          `FederatedCredentialsReady: (${CONCURRENT_FIC_WRITES} \\(severity Warning\\)|\\w+ \\(severity Warning\\): .*; orders--\\S+ \\(${CONCURRENT_FIC_WRITES}\\))`,
        ),
      );
      expect(watched.stdout).not.toMatch(/aks-dev-weu: Failed/);
      expect([...identityOf("orders")!.fics.values()]).toHaveLength(2);
    });
  }, 400_000);

  it("2b. the same with templates v3, which chain the credentials through the issuer each exports: no 409, Ready sooner", async () => {
    await withFicWriteWindow(async () => {
      const { watched, since } = await onboardAndWatch("invoices", "readyChainedMs", "5m", "v3");
      expect(watched.code, watched.stderr).toBe(0);
      const credentialWrites = credentialWritesOf("invoices", "invoices (v3)", since);
      const conflicts = credentialWrites.filter((w) => w.endsWith(" 409"));
      figures.chainedConflicts409 = conflicts.length;
      expect(conflicts).toEqual([]);
      // One after another: ASO wrote `workload` only once `aso-controller` was in Azure.
      const firstWorkload = credentialWrites.findIndex((w) => w.includes(" PUT workload "));
      expect(credentialWrites.slice(0, firstWorkload).some((w) => / PUT aso-controller 20[01]$/.test(w))).toBe(true);
      expect(watched.stdout).not.toMatch(/aks-dev-weu: Failed/);
      // Azure trusts the cluster's issuer on both; the chain's ConfigMap holds what Azure has.
      const issuer = expectBothTrustTheClusterIssuer("invoices");
      const exported = await platform.admin.get("v1", "ConfigMap", ASO_NAMESPACE, "invoices--aso-controller-issuer");
      expect(exported?.data).toEqual({ issuer });
      // Azure accepted `workload` (201) and ASO's poller refused the relative Location: Berth's controller annotated
      // the ConfigMap `workload` reads its issuer from, and ASO wrote it again at once instead of after its backoff
      // (34 s without the wake, with this write window: docs/controller.md). ADR 0035.
      expect(exported?.metadata.annotations?.["berth.dev/woke-credential"]).toMatch(/^invoices--workload@\d+$/);
      figures.chainedWorkloadRePutAfterS = rePutAfterS(credentialWrites, "workload");
      expect(figures.chainedWorkloadRePutAfterS).toBeLessThan(10);
      await expectIssuerMatches("invoices");
    });
  }, 400_000);

  it("2d. templates v6: the first credential reads the cluster's issuer from a ConfigMap too, and is woken like the next one", async () => {
    await withFicWriteWindow(async () => {
      const { watched, since } = await onboardAndWatch("billing", "readyV6Ms", "5m", "v6");
      expect(watched.code, watched.stderr).toBe(0);
      const credentialWrites = credentialWritesOf("billing", "billing (v6)", since);
      expect(credentialWrites.filter((w) => w.endsWith(" 409"))).toEqual([]);
      const issuer = expectBothTrustTheClusterIssuer("billing");
      // Flux wrote the cluster's issuer from platform-vars; the first credential read it from there, and Berth's
      // controller annotated it once Azure had accepted that credential (ADR 0035), as it does for the next one.
      const clusterIssuer = await platform.admin.get("v1", "ConfigMap", ASO_NAMESPACE, "billing--cluster-issuer");
      expect(clusterIssuer?.data).toEqual({ issuer });
      expect(clusterIssuer?.metadata.annotations?.["berth.dev/woke-credential"]).toMatch(
        /^billing--aso-controller@\d+$/,
      );
      const exported = await platform.admin.get("v1", "ConfigMap", ASO_NAMESPACE, "billing--aso-controller-issuer");
      expect(exported?.metadata.annotations?.["berth.dev/woke-credential"]).toMatch(/^billing--workload@\d+$/);
      for (const credential of ["aso-controller", "workload"]) {
        const after = rePutAfterS(credentialWrites, credential);
        figures[`v6${credential === "workload" ? "Workload" : "AsoController"}RePutAfterS`] = after;
        // Without the wake ASO writes it again only after its backoff: 10 s for the first (scenario 2b), more after.
        expect(after, credential).toBeLessThan(5);
      }
      await expectIssuerMatches("billing");
    });
  }, 400_000);

  /**
   * Rolls one live team to `version` with the 2 s write window on, and checks that nothing in Azure was replaced: no
   * DELETE, no 409, the same subjects and issuers. Returns its FederatedIdentityCredential `<team>--<credential>`.
   */
  const rollInPlace = async (team: string, version: string, figure: string, credential: string) => {
    const fake = platform.azure!;
    const before = [...identityOf(team)!.fics.values()].map((f) => [f.subject, f.issuer]).sort();
    const since = Date.now();
    await withFicWriteWindow(async () => {
      const created = await platform.request("POST", "/v1/rollouts", {
        description: `${team} to ${version}`,
        target: { templateVersion: version },
        selector: { names: [team] },
        waves: [{ name: "only" }],
      });
      expect(created.statusCode, created.body).toBe(201);
      const id = created.json.rollout.metadata.name as string;
      const done = await eventually(
        `the rollout Completed (its gate saw ${team} Ready on ${version})`,
        async () => {
          const r = (await platform.request("GET", `/v1/rollouts/${id}`)).json.rollout;
          return r.status.phase === "Completed" || r.status.phase === "Halted" ? r : undefined;
        },
        300_000,
      );
      figures[figure] = Date.now() - since;
      expect(done.status.phase, JSON.stringify(done.status)).toBe("Completed");
    });
    console.log(`[tests/flux/aso] ${team} → ${version}: ASO's writes:\n  ${identityWrites(team, since).join("\n  ")}`);
    const writes = fake.stats.requests.filter((r) => r.at >= since && r.path.includes(`id-${team}--`));
    expect(
      writes.filter((r) => r.method === "DELETE" || r.status === 409).map((r) => `${r.method} ${r.status}`),
    ).toEqual([]);
    expect([...identityOf(team)!.fics.values()].map((f) => [f.subject, f.issuer]).sort()).toEqual(before);
    return aso("managedidentity.azure.com/v1api20230131", "FederatedIdentityCredential", `${team}--${credential}`);
  };

  it("2c. a rollout from v1 to v3 turns side-by-side credentials into a chain in place: nothing in Azure replaced, no 409", async () => {
    const workload = await rollInPlace("orders", "v3", "rolloutToV3Ms", "workload");
    expect((workload?.spec as Record<string, unknown>).issuerFromConfig).toEqual({
      name: "orders--aso-controller-issuer",
      key: "issuer",
    });
    // Flux's server-side apply dropped the field v1 had set, so ASO reads the issuer from the chain only.
    expect(workload?.spec).not.toHaveProperty("issuer");
  }, 400_000);

  it("2e. a rollout from the chain of v3 to v6 moves the first credential's issuer into a ConfigMap in place: nothing replaced", async () => {
    const first = await rollInPlace("invoices", "v6", "rolloutV3ToV6Ms", "aso-controller");
    expect((first?.spec as Record<string, unknown>).issuerFromConfig).toEqual({
      name: "invoices--cluster-issuer",
      key: "issuer",
    });
    // Flux's server-side apply dropped the issuer v3 had set; Azure was given the same one again.
    expect(first?.spec).not.toHaveProperty("issuer");
    await expectIssuerMatches("invoices");
  }, 400_000);

  it("3. PrincipalNotFound while the new identity replicates: the role assignment waits (Warning), Ready after ASO's retries", async () => {
    platform.azure!.arm.opts.principalReplicationMs = 20_000;
    try {
      const { watched, since } = await onboardAndWatch("ledger", "readyWithPrincipalNotFoundMs");
      expect(watched.code, watched.stderr).toBe(0);
      const refused = azureCalls("ledger", since).filter((c) => c.includes("roleAssignments/") && c.endsWith(" 400"));
      figures.principalNotFoundRetries = refused.length;
      expect(refused.length).toBeGreaterThan(0);
      expect(watched.stdout).toContain("RoleAssignmentsReady: PrincipalNotFound (severity Warning)");
      expect(watched.stdout).not.toMatch(/aks-dev-weu: Failed/);
    } finally {
      platform.azure!.arm.opts.principalReplicationMs = 0;
    }
  }, 400_000);

  it("4. AuthorizationFailed that persists: Berth's status and a rollout gate report ASO's reason and severity", async () => {
    const fake = platform.azure!;
    const scope = `/subscriptions/${fake.subscriptionId}/resourceGroups/rg-audit--aks-dev-weu`;
    const platformClientId = platform.azure!.entra.apps.values().next().value!.clientId;
    const restore = fake.arm.withhold({
      principal: platformClientId,
      action: "Microsoft.Authorization/roleAssignments/write",
      scope,
    });
    try {
      const { watched } = await onboardAndWatch("audit", "auditWatchMs", "90s");
      // It never turns Ready, and never Failed: ASO keeps retrying a Warning.
      expect(watched.code).toBe(8);
      expect(watched.stdout).toContain("RoleAssignmentsReady: AuthorizationFailed (severity Warning)");
      expect(watched.stdout).not.toMatch(/aks-dev-weu: Failed/);
      expect(watched.stderr).toContain("error: timed out after 1:30 waiting for team audit to be Ready");
      expect(watched.stderr).toContain("AuthorizationFailed");
      const status = (await platform.request("GET", "/v1/teams/audit/status")).json;
      expect(status.clusters[0].conditions).toContainEqual(
        expect.objectContaining({
          type: "RoleAssignmentsReady",
          status: "False",
          reason: "AuthorizationFailed",
          severity: "Warning",
          message: expect.stringContaining("Microsoft.Authorization/roleAssignments/write"),
        }),
      );
      expect(status.clusters[0].conditions).toContainEqual(expect.objectContaining({ type: "Ready", status: "False" }));

      // A rollout whose wave holds the team: the gate waits naming ASO's reason and severity, then halts at its timeout.
      const created = await platform.request("POST", "/v1/rollouts", {
        description: "audit to v3",
        target: { templateVersion: "v3" },
        selector: { names: ["audit"] },
        waves: [{ name: "only" }],
        gate: { timeoutSeconds: 20 },
      });
      expect(created.statusCode, created.body).toBe(201);
      const id = created.json.rollout.metadata.name as string;
      const waiting = await eventually(
        "the gate waiting on audit with ASO's reason",
        async () => {
          const r = (await platform.request("GET", `/v1/rollouts/${id}`)).json;
          return r.progress?.verdict === "wait" &&
            r.progress.teams.some((t: { reason?: string }) => t.reason === "AuthorizationFailed")
            ? r.progress
            : undefined;
        },
        120_000,
      );
      expect(waiting.teams).toContainEqual(
        expect.objectContaining({
          team: "audit",
          cluster: "aks-dev-weu",
          result: "waiting",
          condition: "RoleAssignmentsReady",
          reason: "AuthorizationFailed",
          severity: "Warning",
        }),
      );
      const halted = await eventually(
        "the rollout halted at its gate timeout",
        async () => {
          const r = (await platform.request("GET", `/v1/rollouts/${id}`)).json.rollout;
          return r.status.phase === "Halted" ? r : undefined;
        },
        120_000,
      );
      expect(halted.status.halt).toMatchObject({ wave: "only", reason: "Timeout" });
      expect(halted.status.halt.teams).toEqual([
        expect.objectContaining({
          team: "audit",
          condition: "RoleAssignmentsReady",
          reason: "AuthorizationFailed",
          severity: "Warning",
        }),
      ]);
      // Why the gate never saw the wave's commit: Flux still runs the health checks of the revision it applied
      // (kustomize-controller's default: until the Kustomization's timeout, 15 min), so the new one waits.
      const ks = (await platform.kustomization(ASO_NAMESPACE, "team-audit"))!.status as {
        lastAttemptedRevision?: string;
        conditions?: Array<{ type: string; reason: string; message: string }>;
      };
      console.log(
        `[tests/flux/aso] team-audit while halted: lastAttemptedRevision ${ks.lastAttemptedRevision}, fleet head ${await platform.head()}; ${JSON.stringify(ks.conditions?.map((c) => `${c.type}: ${c.reason}`))}`,
      );
      console.log(`[tests/flux/aso] halt report: ${JSON.stringify(halted.status.halt.teams[0])}`);
      expect((await platform.request("POST", `/v1/rollouts/${id}/abort`)).statusCode).toBe(200);
    } finally {
      restore();
    }
  }, 400_000);

  it("5. offboarding: ASO deletes in Azure in Berth's order, the credential outlives every ASO object, nothing is stuck", async () => {
    const fake = platform.azure!;
    const watch = await watchDeletions(platform.cluster.kubeConfig(), [
      "/apis/resources.azure.com/v1api20200601/resourcegroups",
      "/api/v1/secrets",
      "/apis/rbac.authorization.k8s.io/v1/rolebindings",
      "/api/v1/namespaces",
    ]);
    const since = Date.now();
    try {
      const res = await platform.request("DELETE", "/v1/teams/payments");
      expect(res.statusCode, res.body).toBe(200);
      await eventually("namespace payments gone", async () => watch.goneAt("/api/v1/namespaces", "payments"), 240_000);
    } finally {
      watch.stop();
    }
    figures.offboardMs = Date.now() - since;
    const gone = (resource: string, name: string, namespace?: string) => watch.goneAt(resource, name, namespace)!;
    const teamData = gone("/apis/resources.azure.com/v1api20200601/resourcegroups", "team-data", "payments");
    const credential = gone("/api/v1/secrets", "aso-credential", "payments");
    const binding = gone("/apis/rbac.authorization.k8s.io/v1/rolebindings", "berth-controller", "payments");
    const namespace = gone("/api/v1/namespaces", "payments");
    expect([teamData, credential, binding, namespace].every(Boolean), JSON.stringify(watch.deletions)).toBe(true);
    expect(teamData).toBeLessThanOrEqual(credential);
    expect(credential).toBeLessThanOrEqual(binding);
    expect(binding).toBeLessThanOrEqual(namespace);
    // Nothing of the team is left on the cluster, nothing stuck deleting.
    await asoObjectsGone("payments");
    // In Azure: the team's identity (its credentials and role assignment with it) and its own resource group are
    // deleted; the team's resource group is kept (Berth renders it detach-on-delete: the team's data stays).
    const deletes = fake.stats.requests
      .filter((r) => r.at >= since && r.method === "DELETE")
      .map((r) => `${r.operation} ${r.status}`);
    console.log(`[tests/flux/aso] offboarding payments, ASO's deletes: ${JSON.stringify(deletes)}`);
    expect(identityOf("payments")).toBeUndefined();
    expect(fake.arm.resourceGroups.has(`${fake.subscriptionId}/rg-payments-data`)).toBe(false);
    expect(fake.arm.resourceGroups.has(`${fake.subscriptionId}/rg-payments--aks-dev-weu`)).toBe(true);
    expect(
      fake.stats.requests.filter(
        (r) => r.at >= since && r.method === "DELETE" && r.path.endsWith("/resourceGroups/rg-payments--aks-dev-weu"),
      ),
    ).toEqual([]);
  }, 400_000);

  it("5c. offboarding a v6 team: Flux prunes its cluster issuer ConfigMap, and ASO still deletes every credential", async () => {
    const since = Date.now();
    const res = await platform.request("DELETE", "/v1/teams/billing");
    expect(res.statusCode, res.body).toBe(200);
    await eventually(
      "namespace billing gone",
      async () => !(await platform.admin.get("v1", "Namespace", undefined, "billing")),
      240_000,
    );
    await asoObjectsGone("billing");
    figures.offboardV6Ms = Date.now() - since;
    expect(await platform.admin.get("v1", "ConfigMap", ASO_NAMESPACE, "billing--cluster-issuer")).toBeUndefined();
    expect(identityOf("billing")).toBeUndefined();
  }, 400_000);

  it("5b. offboarding with ASO's default reconcile policy detach-on-delete: nothing in Azure is deleted", async () => {
    const fake = platform.azure!;
    await platform.realAso!.updateSettings({ DEFAULT_RECONCILE_POLICY: "detach-on-delete" });
    const identity = identityOf("orders")!;
    const since = Date.now();
    const res = await platform.request("DELETE", "/v1/teams/orders");
    expect(res.statusCode, res.body).toBe(200);
    await eventually(
      "namespace orders gone",
      async () => (await platform.admin.get("v1", "Namespace", undefined, "orders")) === undefined,
      240_000,
    );
    await asoObjectsGone("orders", ["UserAssignedIdentity", "FederatedIdentityCredential"]);
    expect(fake.stats.requests.filter((r) => r.at >= since && r.method === "DELETE")).toEqual([]);
    expect(identityOf("orders")).toMatchObject({ clientId: identity.clientId });
    expect(identity.fics.size).toBe(2);
    expect([...fake.arm.roleAssignments.values()].filter((ra) => ra.principalId === identity.principalId)).toHaveLength(
      1,
    );
  }, 400_000);
});
