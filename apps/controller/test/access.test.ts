import { describe, expect, it } from "vitest";
import { Caches } from "../src/caches.js";
import type { Store, WatchName } from "../src/watches.js";
import type { ClusterWriter } from "../src/kube.js";
import { StaticValuesProvider } from "../src/providers/static.js";
import type { KubeObject, ObjectRef } from "../src/reconcile/objects.js";
import { TeamReconciler } from "../src/reconcile/team/reconciler.js";
import { silentLogger } from "@berth/logging";
import { CLIENT_A, clusterOf, platform, TENANT } from "./fixtures.js";

/**
 * The team reconciler's handling of its own RoleBinding berth-controller (finalizer
 * berth.dev/controller-access), on fake caches and a recording writer. The real-apiserver version, with
 * the RBAC that makes it necessary, is in tests/controller.
 */

const DELETING = "2026-01-01T00:00:00Z";
const meta = (name: string, namespace: string | undefined, extra: Record<string, unknown> = {}) => ({
  metadata: { name, ...(namespace ? { namespace } : {}), resourceVersion: "7", ...extra },
});
const teamObj = () => ({ apiVersion: "berth.dev/v1alpha1", kind: "Team", ...meta("payments", undefined) });
const secret = (extra: Record<string, unknown> = {}) => ({
  apiVersion: "v1",
  kind: "Secret",
  ...meta("aso-credential", "payments", { finalizers: ["berth.dev/aso-credential"], ...extra }),
});
const binding = (deleting: boolean, finalizers = ["berth.dev/controller-access"]) => ({
  apiVersion: "rbac.authorization.k8s.io/v1",
  kind: "RoleBinding",
  ...meta("berth-controller", "payments", {
    labels: { "berth.dev/team": "payments" },
    finalizers,
    ...(deleting ? { deletionTimestamp: DELETING } : {}),
  }),
});
const identity = () => ({
  ...meta("payments-identity", "flux-config"),
  data: { clientId: CLIENT_A, tenantId: TENANT },
});

function store(objects: KubeObject[]): Store<KubeObject> {
  return {
    get: (ns, name) => objects.find((o) => o.metadata?.name === name && (o.metadata?.namespace ?? undefined) === ns),
    list: () => objects,
  };
}

function setup(world: {
  team?: KubeObject;
  secret?: KubeObject;
  binding?: KubeObject;
  identity?: KubeObject;
  serverSecret?: KubeObject | "same";
  aso?: string[];
}) {
  const p = platform();
  const stores = new Proxy({} as Record<WatchName, Store<KubeObject>>, {
    get: (_t, name: string) =>
      store(
        {
          teams: world.team ? [world.team] : [],
          teamSecrets: world.secret ? [world.secret] : [],
          roleBindings: world.binding ? [world.binding] : [],
          asoConfigMaps: world.identity ? [world.identity] : [],
        }[name] ?? [],
      ),
  });
  const caches = new Caches(p, stores);
  const writes: string[] = [];
  const writer: ClusterWriter = {
    apply: async (o) => void writes.push(`apply ${o.kind}`),
    applyStatus: async () => void writes.push("status"),
    delete: async (r: ObjectRef) => void writes.push(`delete ${r.kind}`),
    read: async (r: ObjectRef) => {
      writes.push(`read ${r.kind}`);
      return world.serverSecret === "same" ? world.secret : world.serverSecret;
    },
    setFinalizers: async (r: ObjectRef, f: string[], rv) =>
      void writes.push(`finalizers ${r.kind}/${r.name} ${JSON.stringify(f)} rv=${rv}`),
    replaceSecretData: async () => void writes.push("replace"),
    annotate: async (r: ObjectRef) => void writes.push(`annotate ${r.kind}/${r.name}`),
    listAsoResources: async () => world.aso ?? [],
  };
  const reconciler = new TeamReconciler({
    platform: p,
    cluster: clusterOf(p),
    provider: new StaticValuesProvider(),
    caches,
    writer,
    events: { warning: () => {}, normal: () => {} },
    logger: silentLogger,
    resyncMs: 300_000,
    retryMs: 15_000,
    offboardingPollMs: 5_000,
  });
  return { caches, writes, reconcile: () => reconciler.reconcile("payments") };
}

describe("the controller's RoleBinding during offboarding", () => {
  it("keeps the binding while an ASO resource holds the credential", async () => {
    const w = setup({
      secret: secret({ deletionTimestamp: DELETING }),
      binding: binding(true),
      aso: ["ResourceGroup/data"],
    });
    expect(await w.reconcile()).toEqual({ requeueAfterMs: 5_000 });
    expect(w.writes).toEqual([]);
  });

  it("releases the credential's finalizer first, and the binding's only once the credential is gone", async () => {
    const first = setup({ secret: secret({ deletionTimestamp: DELETING }), binding: binding(true) });
    await first.reconcile();
    expect(first.writes).toEqual([`finalizers Secret/aso-credential [] rv=7`]);

    const then = setup({ binding: binding(true, ["other", "berth.dev/controller-access"]) });
    expect(await then.reconcile()).toEqual({});
    expect(then.writes).toEqual(["read Secret", `finalizers RoleBinding/berth-controller ["other"] rv=7`]);
  });

  it("does not release the binding while the server still has a credential with its finalizer (the cache lags)", async () => {
    const w = setup({ binding: binding(true), serverSecret: secret() });
    expect(await w.reconcile()).toEqual({ requeueAfterMs: 5_000 });
    expect(w.writes).toEqual(["read Secret"]);
  });

  it("leaves a binding that is not being deleted alone, and stops looking once nothing of the team is left", async () => {
    const kept = setup({ binding: binding(false) });
    expect(await kept.reconcile()).toEqual({ requeueAfterMs: 300_000 });
    expect(kept.writes).toEqual([]);
    const gone = setup({});
    expect(await gone.reconcile()).toEqual({});
    expect(gone.writes).toEqual([]);
  });

  it("writes no credential while the binding is being deleted, even for an active team, and lets the binding go", async () => {
    const w = setup({ team: teamObj(), identity: identity(), binding: binding(true) });
    await w.reconcile();
    expect(w.writes.filter((x) => x.startsWith("apply"))).toEqual([]);
    expect(w.writes).toContain(`finalizers RoleBinding/berth-controller [] rv=7`);
  });

  it("keeps updating an existing credential of an active team while the binding waits for it", async () => {
    const w = setup({ team: teamObj(), identity: identity(), secret: secret(), binding: binding(true) });
    await w.reconcile();
    expect(w.writes.some((x) => x.startsWith("finalizers"))).toBe(false);
    expect(w.writes).toContain("apply Secret"); // the fake secret has no data: drift, rewritten
  });

  it("lists a team whose binding still waits for its finalizer to be released, so a restart finishes the job", () => {
    expect(setup({ binding: binding(true) }).caches.teamNames()).toEqual(["payments"]);
    expect(setup({ binding: binding(false) }).caches.teamNames()).toEqual([]);
  });
});
