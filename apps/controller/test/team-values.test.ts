import {
  ValueUnavailableError,
  type Cluster,
  type ClusterFacts,
  type PlatformValuesProvider,
  type TeamIdentity,
} from "@berth/core";
import { describe, expect, it } from "vitest";
import { Caches } from "../src/caches.js";
import type { Store, WatchName } from "../src/watches.js";
import { observeFacts } from "../src/controller.js";
import type { ClusterWriter } from "../src/kube.js";
import type { KubeObject } from "../src/reconcile/objects.js";
import { TeamReconciler } from "../src/reconcile/team/reconciler.js";
import { silentLogger } from "@berth/logging";
import {
  CLIENT_A,
  CLIENT_B,
  clusterOf,
  decode,
  FACTS,
  PLATFORM_CLIENT,
  platform,
  SUBSCRIPTION,
  TENANT,
} from "./fixtures.js";

/**
 * The team reconciler's use of the platform values provider, on fake caches and a recording writer:
 * identity ids from ASO's ConfigMap, Azure only as the fallback (never an empty or partial credential),
 * and the OIDC issuer check with its events. The same on a real apiserver against the fake Azure:
 * tests/controller/azure.test.ts.
 */

const NEW_ISSUER = "https://oidc.example/issuer-2/";
const PRINCIPAL = "99999999-9999-4999-8999-999999999999";
const meta = (name: string, namespace: string | undefined, extra: Record<string, unknown> = {}) => ({
  metadata: { name, ...(namespace ? { namespace } : {}), resourceVersion: "7", ...extra },
});

interface World {
  identity?: KubeObject;
  fics?: KubeObject[];
  team?: KubeObject;
}

class FakeProvider implements PlatformValuesProvider {
  facts: ClusterFacts = { ...FACTS };
  team: TeamIdentity | undefined | Error = { clientId: CLIENT_B, principalId: PRINCIPAL, tenantId: TENANT };
  calls: string[] = [];
  async clusterFacts(): Promise<ClusterFacts> {
    this.calls.push("clusterFacts");
    return this.facts;
  }
  async platformCredential() {
    return { tenantId: TENANT, subscriptionId: SUBSCRIPTION, clientId: PLATFORM_CLIENT };
  }
  async teamIdentity(team: string, cluster: Cluster): Promise<TeamIdentity | undefined> {
    this.calls.push(`teamIdentity ${team} ${cluster.name}`);
    if (this.team instanceof Error) throw this.team;
    return this.team;
  }
}

function setup(world: World, provider: PlatformValuesProvider) {
  const p = platform();
  const team = world.team ?? {
    apiVersion: "berth.dev/v1alpha1",
    kind: "Team",
    ...meta("payments", undefined, { uid: "u-1", generation: 1 }),
  };
  const lists: Partial<Record<string, KubeObject[]>> = {
    teams: [team],
    asoConfigMaps: world.identity ? [world.identity] : [],
    serviceAccounts: [{ apiVersion: "v1", kind: "ServiceAccount", ...meta("workload", "payments") }],
    "aso:FederatedIdentityCredential": world.fics ?? [],
  };
  const stores = new Proxy({} as Record<WatchName, Store<KubeObject>>, {
    get: (_t, name: string): Store<KubeObject> => {
      const objects = lists[name] ?? [];
      return {
        get: (ns, n) => objects.find((o) => o.metadata?.name === n && (o.metadata?.namespace ?? undefined) === ns),
        list: () => objects,
      };
    },
  });
  const applied: KubeObject[] = [];
  const statuses: Array<{ conditions: Array<{ type: string; status: string; reason: string; message: string }> }> = [];
  const events: string[] = [];
  const writer: ClusterWriter = {
    apply: async (o) => void applied.push(o),
    applyStatus: async (o) => void statuses.push((o as { status: (typeof statuses)[number] }).status),
    delete: async () => {},
    read: async () => undefined,
    setFinalizers: async () => {},
    replaceSecretData: async () => {},
    annotate: async () => {},
    listAsoResources: async () => [],
  };
  const reconciler = new TeamReconciler({
    platform: p,
    cluster: clusterOf(p),
    provider,
    caches: new Caches(p, stores),
    writer,
    events: {
      warning: (ref, reason, message) => void events.push(`Warning ${ref.kind}/${ref.name} ${reason}: ${message}`),
      normal: (ref, reason) => void events.push(`Normal ${ref.kind}/${ref.name} ${reason}`),
    },
    logger: silentLogger,
    resyncMs: 300_000,
    retryMs: 15_000,
    offboardingPollMs: 5_000,
  });
  const secrets = () => applied.filter((o) => o.kind === "Secret");
  const condition = (type: string) => statuses.at(-1)?.conditions.find((c) => c.type === type);
  return {
    applied,
    secrets,
    statuses,
    events,
    condition,
    team,
    lists,
    reconcile: () => reconciler.reconcile("payments"),
  };
}

const identityConfigMap = (data: Record<string, string>) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  ...meta("payments-identity", "flux-config"),
  data,
});
const fic = (name: string, issuer: string) => ({
  ...meta(name, "flux-config", { labels: { "berth.dev/team": "payments" } }),
  spec: { issuer },
  status: { conditions: [{ type: "Ready", status: "True" }] },
});

describe("team identity: ASO's ConfigMap first, Azure only when it is missing", () => {
  it("takes the ids from the ConfigMap and never asks Azure (steady state)", async () => {
    const provider = new FakeProvider();
    const w = setup({ identity: identityConfigMap({ clientId: CLIENT_A, tenantId: TENANT }) }, provider);
    expect(await w.reconcile()).toEqual({ requeueAfterMs: 300_000 });
    expect(provider.calls.filter((c) => c.startsWith("teamIdentity"))).toEqual([]);
    expect(w.secrets()).toHaveLength(1);
    expect(decode((w.secrets()[0] as { data?: Record<string, string> }).data).AZURE_CLIENT_ID).toBe(CLIENT_A);
  });

  it("a ConfigMap without clientId yet is waited for, not replaced by Azure", async () => {
    const provider = new FakeProvider();
    const w = setup({ identity: identityConfigMap({ principalId: PRINCIPAL }) }, provider);
    expect(await w.reconcile()).toEqual({ requeueAfterMs: 15_000 });
    expect(provider.calls.filter((c) => c.startsWith("teamIdentity"))).toEqual([]);
    expect(w.secrets()).toEqual([]);
    expect(w.condition("CredentialWritten")).toMatchObject({ status: "False", reason: "IdentityPending" });
  });

  it("without the ConfigMap, writes the credential from the identity Azure reports (complete and checked)", async () => {
    const provider = new FakeProvider();
    const w = setup({}, provider);
    expect(await w.reconcile()).toEqual({ requeueAfterMs: 300_000 });
    expect(provider.calls).toContain("teamIdentity payments aks-dev-weu");
    expect(decode((w.secrets()[0] as { data?: Record<string, string> }).data)).toEqual({
      AZURE_CLIENT_ID: CLIENT_B,
      AZURE_SUBSCRIPTION_ID: SUBSCRIPTION,
      AZURE_TENANT_ID: TENANT,
      USE_WORKLOAD_IDENTITY_AUTH: "true",
    });
    expect(w.condition("CredentialWritten")).toMatchObject({ status: "True", reason: "Written" });
    expect(w.condition("CredentialWritten")!.message).toContain("from Azure");
    expect(w.statuses.at(-1)).toMatchObject({ identity: { clientId: CLIENT_B } });
  });

  it.each([
    ["the identity does not exist in Azure yet", undefined, "IdentityPending"],
    ["Azure cannot be read", new ValueUnavailableError("ManagedClusters_Get: 429"), "IdentityUnavailable"],
    [
      "Azure reports another tenant",
      { clientId: CLIENT_B, principalId: PRINCIPAL, tenantId: "44444444-4444-4444-8444-444444444444" },
      "TenantMismatch",
    ],
    [
      "Azure reports a malformed client id",
      { clientId: "not-a-guid", principalId: PRINCIPAL, tenantId: TENANT },
      "IdentityInvalid",
    ],
    [
      "Azure reports an empty client id",
      { clientId: " ", principalId: PRINCIPAL, tenantId: TENANT },
      "IdentityPending",
    ],
  ] as const)("writes nothing when %s", async (_what, answer, reason) => {
    const provider = new FakeProvider();
    provider.team = answer as TeamIdentity | undefined | Error;
    const w = setup({}, provider);
    expect(await w.reconcile()).toEqual({ requeueAfterMs: 15_000 });
    expect(w.applied).toEqual([]);
    expect(w.condition("CredentialWritten")).toMatchObject({ status: "False", reason });
  });

  it("a provider without teamIdentity (static) waits for ASO's ConfigMap", async () => {
    const provider = new FakeProvider();
    const { teamIdentity: _none, ...rest } = {
      clusterFacts: () => provider.clusterFacts(),
      platformCredential: () => provider.platformCredential(),
      teamIdentity: undefined,
    };
    const w = setup({}, rest as PlatformValuesProvider);
    expect(await w.reconcile()).toEqual({ requeueAfterMs: 15_000 });
    expect(w.applied).toEqual([]);
    expect(w.condition("CredentialWritten")).toMatchObject({ status: "False", reason: "IdentityPending" });
  });
});

describe("OIDC issuer change", () => {
  it("FederationMatchesIssuer goes False with one Warning event on the Team, and back to True with a Normal one", async () => {
    const provider = new FakeProvider();
    const w = setup(
      {
        identity: identityConfigMap({ clientId: CLIENT_A, tenantId: TENANT }),
        fics: [fic("payments--aso-controller", FACTS.oidcIssuerUrl)],
      },
      provider,
    );
    await w.reconcile();
    expect(w.condition("FederationMatchesIssuer")).toMatchObject({ status: "True", reason: "IssuerMatches" });
    expect(w.events.filter((e) => e.includes("Issuer"))).toEqual([]);

    // Discovery sees the new issuer; the credential still carries the old one (as Flux applied it).
    provider.facts = { ...FACTS, oidcIssuerUrl: NEW_ISSUER };
    await w.reconcile();
    const c = w.condition("FederationMatchesIssuer")!;
    expect(c).toMatchObject({ status: "False", reason: "IssuerChanged" });
    expect(c.message).toContain(`from ${FACTS.oidcIssuerUrl} to ${NEW_ISSUER}`);
    expect(w.condition("Ready")).toMatchObject({ status: "False", reason: "Waiting" });
    expect(w.events.filter((e) => e.includes("Issuer"))).toEqual([`Warning Team/payments IssuerChanged: ${c.message}`]);

    // The stored status now says so: no second Warning for the same state.
    (w.team as { status?: unknown }).status = w.statuses.at(-1);
    await w.reconcile();
    expect(w.events.filter((e) => e.startsWith("Warning"))).toHaveLength(1);

    // Flux re-applies the credential with the new issuer.
    w.lists["aso:FederatedIdentityCredential"] = [fic("payments--aso-controller", NEW_ISSUER)];
    await w.reconcile();
    expect(w.condition("FederationMatchesIssuer")).toMatchObject({ status: "True", reason: "IssuerMatches" });
    expect(w.events.at(-1)).toBe("Normal Team/payments IssuerMatches");
  });
});

describe("observeFacts", () => {
  it("reports a change of the cluster's facts once, whichever caller saw it, and passes everything else through", async () => {
    const provider = new FakeProvider();
    const changes: string[] = [];
    const observed = observeFacts(
      provider,
      (before, after) =>
        void changes.push(`${before?.oidcIssuerUrl ?? "unavailable"} -> ${after?.oidcIssuerUrl ?? "unavailable"}`),
    );
    const cluster = clusterOf(platform());
    await observed.clusterFacts(cluster);
    await observed.clusterFacts(cluster);
    expect(changes).toEqual([]);
    provider.facts = { ...FACTS, oidcIssuerUrl: NEW_ISSUER };
    await observed.clusterFacts(cluster);
    await observed.clusterFacts(cluster);
    expect(changes).toEqual([`${FACTS.oidcIssuerUrl} -> ${NEW_ISSUER}`]);
    expect(await observed.teamIdentity!("payments", cluster)).toMatchObject({ clientId: CLIENT_B });
    expect(
      observeFacts(
        {
          clusterFacts: provider.clusterFacts.bind(provider),
          platformCredential: provider.platformCredential.bind(provider),
        },
        () => {},
      ).teamIdentity,
    ).toBeUndefined();
  });

  it("reports the provider going away and coming back once each (every team's status says whether values are fresh)", async () => {
    const provider = new FakeProvider();
    const changes: string[] = [];
    const observed = observeFacts(
      provider,
      (before, after) =>
        void changes.push(`${before?.oidcIssuerUrl ?? "unavailable"} -> ${after?.oidcIssuerUrl ?? "unavailable"}`),
    );
    const cluster = clusterOf(platform());
    await observed.clusterFacts(cluster);
    const real = provider.clusterFacts.bind(provider);
    provider.clusterFacts = async () => {
      throw new ValueUnavailableError("ARM answers 503", { reason: "AzureUnavailable" });
    };
    await expect(observed.clusterFacts(cluster)).rejects.toBeInstanceOf(ValueUnavailableError);
    await expect(observed.clusterFacts(cluster)).rejects.toBeInstanceOf(ValueUnavailableError);
    expect(changes).toEqual([`${FACTS.oidcIssuerUrl} -> unavailable`]);
    provider.clusterFacts = real;
    await observed.clusterFacts(cluster);
    await observed.clusterFacts(cluster);
    expect(changes).toEqual([
      `${FACTS.oidcIssuerUrl} -> unavailable`,
      `${FACTS.oidcIssuerUrl} -> ${FACTS.oidcIssuerUrl}`,
    ]);
  });
});

describe("the steady-state memo", () => {
  it("remembers a pass that changed nothing, and runs the next one when anything that pass read changes", async () => {
    const provider = new FakeProvider();
    const w = setup({ identity: identityConfigMap({ clientId: CLIENT_A, tenantId: TENANT }) }, provider);
    const kustomizations: KubeObject[] = (w.lists.kustomizations = []);
    let version = 100;
    // What the writes left on the cluster, as the informers would cache it.
    const settle = () => {
      for (const o of w.applied.splice(0)) {
        const list = (w.lists[o.kind === "Secret" ? "teamSecrets" : "serviceAccounts"] ??= []);
        const cached = { ...o, metadata: { ...o.metadata, resourceVersion: String(++version) } };
        const at = list.findIndex((x) => x.metadata?.name === o.metadata?.name);
        if (at >= 0) list[at] = cached;
        else list.push(cached);
      }
      (w.team as { status?: unknown }).status = w.statuses.at(-1);
    };
    await w.reconcile();
    settle();
    await w.reconcile(); // everything in place: nothing written, and the pass is remembered
    expect(w.applied).toEqual([]);
    const statuses = w.statuses.length;

    // The team's Flux Kustomization fails to apply: only the status step reads it.
    kustomizations.push({
      apiVersion: "kustomize.toolkit.fluxcd.io/v1",
      kind: "Kustomization",
      ...meta("team-payments", "flux-config"),
      status: { conditions: [{ type: "Ready", status: "False", reason: "HealthCheckFailed", message: "timeout" }] },
    } as KubeObject);
    await w.reconcile();
    expect(w.statuses).toHaveLength(statuses + 1);
    expect(w.condition("KustomizationReady")).toMatchObject({ status: "False" });
  });
});
