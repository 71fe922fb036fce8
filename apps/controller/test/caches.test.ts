/**
 * The caches' recording view: what a pass was handed, and whether the stores would hand it the same again. The
 * team reconciler's memo is keyed on it, so a step that starts reading something is in the memo at once.
 */
import { describe, expect, it } from "vitest";
import { Caches } from "../src/caches.js";
import type { KubeObject } from "../src/reconcile/objects.js";
import type { Store, WatchName } from "../src/watches.js";
import { CLIENT_A, platform } from "./fixtures.js";

/** Stores over plain arrays that a test edits in place, with the clientId index the informer would keep. */
function memoryStores() {
  const lists: Partial<Record<WatchName, KubeObject[]>> = {};
  const objects = (watch: WatchName) => (lists[watch] ??= []);
  const stores = new Proxy({} as Record<WatchName, Store<KubeObject>>, {
    get: (_t, watch: WatchName): Store<KubeObject> => ({
      get: (ns, name) => objects(watch).find((o) => o.metadata?.name === name && o.metadata?.namespace === ns),
      list: () => objects(watch),
      byIndex: (_index, value) =>
        objects(watch).filter((o) => (o as { data?: Record<string, string> }).data?.clientId === value),
    }),
  });
  return { stores, objects };
}

const object = (kind: string, namespace: string, name: string, resourceVersion: string, data = {}): KubeObject =>
  ({ apiVersion: "v1", kind, metadata: { namespace, name, resourceVersion }, data }) as KubeObject;

describe("the caches' recording view", () => {
  const p = platform();
  const setup = () => {
    const { stores, objects } = memoryStores();
    objects("teamSecrets").push(object("Secret", "payments", "aso-credential", "10"));
    objects("serviceAccounts").push(object("ServiceAccount", "payments", "workload", "11"));
    objects("asoConfigMaps").push(object("ConfigMap", p.asoNamespace, "orders-identity", "12", { clientId: CLIENT_A }));
    return { caches: new Caches(p, stores), objects };
  };

  it("records what a pass read, and sees a change to any of it, and only to it", () => {
    const { caches, objects } = setup();
    const { caches: view, reads } = caches.recording();
    view.teamSecret("payments");
    view.identity("payments"); // absent: its appearance is a change too
    expect(reads.size).toBe(2);
    expect(reads.unchanged()).toBe(true);

    // Not read by the pass: no change to it.
    objects("serviceAccounts")[0]!.metadata!.resourceVersion = "21";
    expect(reads.unchanged()).toBe(true);

    objects("teamSecrets")[0]!.metadata!.resourceVersion = "20";
    expect(reads.unchanged()).toBe(false);
    objects("teamSecrets")[0]!.metadata!.resourceVersion = "10";
    expect(reads.unchanged()).toBe(true);
    objects("asoConfigMaps").push(object("ConfigMap", p.asoNamespace, "payments-identity", "22"));
    expect(reads.unchanged()).toBe(false);
  });

  it("a read a pass adds is in the memo without anyone listing it: an index lookup", () => {
    const { caches, objects } = setup();
    const pass = (view: Caches, withOwnerLookup: boolean) => {
      view.teamSecret("payments");
      if (withOwnerLookup) view.clientIdOwner(CLIENT_A);
    };
    const before = caches.recording();
    pass(before.caches, false);
    const after = caches.recording();
    pass(after.caches, true);
    expect(after.reads.size).toBe(before.reads.size + 1);

    // Another identity takes the client id: only the pass that looked owners up has seen something change.
    objects("asoConfigMaps").push(object("ConfigMap", p.asoNamespace, "ledger-identity", "30", { clientId: CLIENT_A }));
    expect(before.reads.unchanged()).toBe(true);
    expect(after.reads.unchanged()).toBe(false);
  });

  it("reads through the plain caches record nothing", () => {
    const { caches } = setup();
    const { caches: view, reads } = caches.recording();
    caches.teamSecret("payments");
    caches.clientIdOwner(CLIENT_A);
    expect(reads.size).toBe(0);
    view.teamSecret("payments");
    expect(reads.size).toBe(1);
  });
});
