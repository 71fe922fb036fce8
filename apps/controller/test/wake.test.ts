import { silentLogger } from "@berth/logging";
import { describe, expect, it } from "vitest";
import { Caches } from "../src/caches.js";
import type { ClusterWriter } from "../src/kube.js";
import type { KubeObject, ObjectRef } from "../src/reconcile/objects.js";
import type { TeamPass, TeamReconcilerDeps } from "../src/reconcile/team/pass.js";
import { waitsOutBackoffAfterWrite, wakeWaitingCredentials } from "../src/reconcile/team/wake-credentials.js";
import type { Store, WatchName } from "../src/watches.js";
import { platform } from "./fixtures.js";

/**
 * The wake step on fake caches and a recording writer: which credential states it wakes, and that it wakes each
 * state once. The same with the real apiserver and its admission policy: tests/controller/controller.test.ts; with
 * real ASO: tests/flux/aso.test.ts (2b).
 */

const POLLER = "failed to create poller: invalid polling URL /subscriptions/…/workload?api-version=2023-01-31";
const ready = (status: string, severity: string | undefined, reason: string, message: string) => ({
  type: "Ready",
  status,
  reason,
  message,
  ...(severity ? { severity } : {}),
});

const credential = (
  rv: string,
  condition: ReturnType<typeof ready>,
  issuerFrom = "payments--aso-controller-issuer",
) => ({
  apiVersion: "managedidentity.azure.com/v1api20230131",
  kind: "FederatedIdentityCredential",
  metadata: {
    name: "payments--workload",
    namespace: "flux-config",
    resourceVersion: rv,
    labels: { "berth.dev/team": "payments" },
  },
  spec: issuerFrom ? { issuerFromConfig: { name: issuerFrom, key: "issuer" } } : { issuer: "https://issuer/" },
  status: { conditions: [condition] },
});

const issuerConfigMap = (annotations?: Record<string, string>) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: {
    name: "payments--aso-controller-issuer",
    namespace: "flux-config",
    resourceVersion: "3",
    ...(annotations ? { annotations } : {}),
  },
});

function pass(fics: KubeObject[], configMaps: KubeObject[], fail = false) {
  const p = platform();
  const lists: Partial<Record<string, KubeObject[]>> = {
    asoConfigMaps: configMaps,
    "aso:FederatedIdentityCredential": fics,
  };
  const stores = new Proxy({} as Record<WatchName, Store<KubeObject>>, {
    get: (_t, name: string): Store<KubeObject> => {
      const objects = lists[name] ?? [];
      return {
        get: (ns, n) => objects.find((o) => o.metadata?.name === n && o.metadata?.namespace === ns),
        list: () => objects,
      };
    },
  });
  const annotated: string[] = [];
  const writer = {
    annotate: async (r: ObjectRef, a: Record<string, string>) => {
      if (fail) throw new Error("forbidden");
      annotated.push(`${r.namespace}/${r.name} ${JSON.stringify(a)}`);
    },
  } as unknown as ClusterWriter;
  const warnings: string[] = [];
  const logger = { ...silentLogger, warn: (_o: unknown, msg: string) => void warnings.push(msg) };
  const deps = { platform: p, logger } as unknown as TeamReconcilerDeps;
  const teamPass: TeamPass = { team: "payments", deps, caches: new Caches(p, stores), writer };
  return { run: () => wakeWaitingCredentials(teamPass), annotated, warnings };
}

describe("waking a chained federated credential (ADR 0035)", () => {
  it("wakes only a credential Azure accepted whose poll ASO could not follow", () => {
    expect(waitsOutBackoffAfterWrite(ready("False", "Warning", "UnknownError", POLLER))).toBe(true);
    for (const refused of [
      ready("False", "Warning", "Conflict", "ConcurrentFederatedIdentityCredentialsWritesForSingleManagedIdentity"),
      ready("False", "Warning", "AuthorizationFailed", "does not have authorization"),
      ready("False", "Warning", "ConfigMapNotFound", "configmap payments--aso-controller-issuer not found"),
      ready("False", "Error", "BadRequest", "invalid polling URL, but a failure"),
      ready("True", undefined, "Succeeded", ""),
      ready("Unknown", "Info", "Reconciling", "invalid polling URL"),
    ])
      expect(waitsOutBackoffAfterWrite(refused), refused.reason).toBe(false);
    expect(waitsOutBackoffAfterWrite(undefined)).toBe(false);
  });

  it("annotates the credential's issuer ConfigMap with the credential's state, once per state", async () => {
    const waiting = credential("41", ready("False", "Warning", "UnknownError", POLLER));
    const first = pass([waiting], [issuerConfigMap()]);
    await first.run();
    expect(first.annotated).toEqual([
      `flux-config/payments--aso-controller-issuer {"berth.dev/woke-credential":"payments--workload@41"}`,
    ]);
    // Already woken for this state: nothing; a new state of the credential: once more.
    const same = pass([waiting], [issuerConfigMap({ "berth.dev/woke-credential": "payments--workload@41" })]);
    await same.run();
    expect(same.annotated).toEqual([]);
    const next = pass(
      [credential("45", ready("False", "Warning", "UnknownError", POLLER))],
      [issuerConfigMap({ "berth.dev/woke-credential": "payments--workload@41" })],
    );
    await next.run();
    expect(next.annotated).toEqual([
      `flux-config/payments--aso-controller-issuer {"berth.dev/woke-credential":"payments--workload@45"}`,
    ]);
  });

  it("leaves a credential without an issuer ConfigMap (the first of a chain) or whose ConfigMap is missing to ASO", async () => {
    const noConfigMapRef = pass(
      [credential("41", ready("False", "Warning", "UnknownError", POLLER), "")],
      [issuerConfigMap()],
    );
    await noConfigMapRef.run();
    expect(noConfigMapRef.annotated).toEqual([]);
    const missing = pass([credential("41", ready("False", "Warning", "UnknownError", POLLER))], []);
    await missing.run();
    expect(missing.annotated).toEqual([]);
  });

  it("a wake the apiserver refuses is logged, and the pass goes on", async () => {
    const refused = pass(
      [credential("41", ready("False", "Warning", "UnknownError", POLLER))],
      [issuerConfigMap()],
      true,
    );
    await expect(refused.run()).resolves.toBeUndefined();
    expect(refused.warnings).toEqual(["could not wake a federated credential; ASO retries it after its backoff"]);
  });
});
