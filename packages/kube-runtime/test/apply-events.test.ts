/**
 * Server-side apply, delete and typed errors, then Events with deduplication — against a real
 * kube-apiserver (one cluster for the file).
 */
// needs: cluster
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CoreV1Api,
  type KubeConfig,
  type KubernetesObject,
  type V1ConfigMap,
  type V1Secret,
} from "@kubernetes/client-node";
import { applyObject, applyStatus, deleteObject, getObject } from "../src/apply.js";
import { KubeApiError } from "../src/errors.js";
import { EventRecorder } from "../src/events.js";
import { recordingLogger, startKubeCluster, viaServer, type KubeCluster } from "./support.js";

const FM = "berth-controller";

/** A cluster-scoped custom resource with a status subresource, like the Team CRD. */
const WIDGET_CRD = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "widgets.runtime-test.berth.dev" },
  spec: {
    group: "runtime-test.berth.dev",
    scope: "Cluster",
    names: { plural: "widgets", singular: "widget", kind: "Widget", listKind: "WidgetList" },
    versions: [
      {
        name: "v1alpha1",
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: "object",
            properties: {
              spec: { type: "object", properties: { size: { type: "integer" } } },
              status: { type: "object", properties: { phase: { type: "string" }, observedSize: { type: "integer" } } },
            },
          },
        },
      },
    ],
  },
};

interface Widget extends KubernetesObject {
  spec?: { size?: number };
  status?: { phase?: string; observedSize?: number };
}

const b64 = (s: string) => Buffer.from(s).toString("base64");

describe("applyObject / deleteObject / EventRecorder (real kube-apiserver)", () => {
  let cluster: KubeCluster;
  let admin: KubeConfig;
  let core: CoreV1Api;
  const NS = "apply";

  beforeAll(async () => {
    cluster = await startKubeCluster({ crdDirs: false, crds: [WIDGET_CRD] });
    admin = cluster.kubeConfig();
    core = admin.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: NS } } });
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  async function expectKubeError(p: Promise<unknown>): Promise<KubeApiError> {
    try {
      await p;
    } catch (err) {
      expect(err).toBeInstanceOf(KubeApiError);
      return err as KubeApiError;
    }
    throw new Error("expected a KubeApiError, but the call succeeded");
  }

  describe("applyObject", () => {
    it("applies a Secret with `data` idempotently (second apply: same resourceVersion)", async () => {
      const secret: V1Secret = {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "aso-credential", namespace: NS, labels: { "app.kubernetes.io/managed-by": "berth" } },
        type: "Opaque",
        data: { AZURE_CLIENT_ID: b64("client"), USE_WORKLOAD_IDENTITY_AUTH: b64("true") },
      };
      const first = await applyObject(admin, secret, { fieldManager: FM, force: true });
      const second = await applyObject(admin, secret, { fieldManager: FM, force: true });
      expect(first.metadata?.resourceVersion).toBeTruthy();
      expect(second.metadata?.resourceVersion).toBe(first.metadata?.resourceVersion);
      const stored = await core.readNamespacedSecret({ name: "aso-credential", namespace: NS });
      expect(stored.data).toEqual(secret.data);
      expect(stored.metadata?.managedFields?.map((m) => [m.manager, m.operation])).toEqual([[FM, "Apply"]]);
    });

    it("folds a Secret's stringData into data, so this manager owns (and can prune) the keys", async () => {
      const secret: V1Secret = {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "from-string-data", namespace: NS },
        stringData: { token: "s3cret", extra: "x" },
      };
      const first = await applyObject(admin, secret, { fieldManager: FM });
      const second = await applyObject(admin, secret, { fieldManager: FM });
      expect(second.metadata?.resourceVersion).toBe(first.metadata?.resourceVersion);
      expect(first.data).toEqual({ token: b64("s3cret"), extra: b64("x") });
      const owned = first.metadata?.managedFields?.find((m) => m.manager === FM)?.fieldsV1 as Record<
        string,
        Record<string, unknown>
      >;
      expect(Object.keys(owned["f:data"] ?? {}).sort()).toEqual(["f:extra", "f:token"]);
      // A key no longer applied is removed (with raw stringData the server would keep it forever).
      const pruned = await applyObject(admin, { ...secret, stringData: { token: "s3cret" } }, { fieldManager: FM });
      expect(pruned.data).toEqual({ token: b64("s3cret") });
      expect(secret.stringData).toEqual({ token: "s3cret", extra: "x" }); // the caller's object is untouched
    });

    it("applies a ConfigMap idempotently and updates it on change", async () => {
      const cm: V1ConfigMap = {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "platform-vars", namespace: NS },
        data: { a: "1" },
      };
      const first = await applyObject(admin, cm, { fieldManager: FM });
      const again = await applyObject(admin, cm, { fieldManager: FM });
      expect(again.metadata?.resourceVersion).toBe(first.metadata?.resourceVersion);
      const changed = await applyObject(admin, { ...cm, data: { a: "2", b: "3" } }, { fieldManager: FM });
      expect(changed.metadata?.resourceVersion).not.toBe(first.metadata?.resourceVersion);
      expect(changed.data).toEqual({ a: "2", b: "3" });
      // SSA removes fields this manager applied before and no longer applies.
      const shrunk = await applyObject(admin, { ...cm, data: { a: "2" } }, { fieldManager: FM });
      expect(shrunk.data).toEqual({ a: "2" });
    });

    it("dryRun validates without persisting", async () => {
      const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "dry", namespace: NS }, data: { x: "1" } };
      const result = await applyObject(admin, cm, { fieldManager: FM, dryRun: true });
      expect(result.metadata?.name).toBe("dry");
      // Nothing was stored: the server answers 404 for it.
      expect(
        await getObject(admin, { apiVersion: "v1", kind: "ConfigMap", name: "dry", namespace: NS }),
      ).toBeUndefined();
    });

    it("applies a cluster-scoped custom resource and, separately, its status", async () => {
      const widget: Widget = {
        apiVersion: "runtime-test.berth.dev/v1alpha1",
        kind: "Widget",
        metadata: { name: "w1" },
        spec: { size: 3 },
      };
      const created = await applyObject(admin, widget, { fieldManager: FM });
      expect(created.metadata?.namespace).toBeUndefined();
      expect(created.spec).toEqual({ size: 3 });
      // The status subresource takes status only: the spec in the body is neither written nor owned.
      const statusFM = `${FM}-status`;
      const withStatus = await applyStatus(
        admin,
        { ...widget, spec: { size: 99 }, status: { phase: "Ready", observedSize: 3 } } as Widget,
        { fieldManager: statusFM },
      );
      expect(withStatus.status).toEqual({ phase: "Ready", observedSize: 3 });
      expect(withStatus.spec).toEqual({ size: 3 });
      const owned = withStatus.metadata?.managedFields?.find((m) => m.manager === statusFM)?.fieldsV1 as Record<
        string,
        unknown
      >;
      expect(Object.keys(owned)).toEqual(["f:status"]);
      const again = await applyStatus(admin, { ...widget, status: { phase: "Ready", observedSize: 3 } } as Widget, {
        fieldManager: statusFM,
      });
      expect(again.metadata?.resourceVersion).toBe(withStatus.metadata?.resourceVersion);
      const specAgain = await applyObject(admin, widget, { fieldManager: FM });
      expect(specAgain.metadata?.resourceVersion).toBe(withStatus.metadata?.resourceVersion);
    });

    it("sorts failures into KubeApiError kinds", async () => {
      const cm = (name: string, ns = NS, data: Record<string, string> = { k: "v" }) => ({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name, namespace: ns },
        data,
      });

      const forbidden = await expectKubeError(
        applyObject(cluster.kubeConfigFor("tester"), cm("nope"), { fieldManager: FM }),
      );
      expect(forbidden).toMatchObject({ kind: "forbidden", status: 403, reason: "Forbidden" });
      expect(forbidden.message).toMatch(/tester/);

      const invalid = await expectKubeError(
        applyObject(admin, cm("bad-key", NS, { "not a valid key!": "v" }), { fieldManager: FM }),
      );
      expect(invalid).toMatchObject({ kind: "invalid", status: 422, reason: "Invalid" });
      expect(invalid.details?.details?.causes?.[0]?.field).toMatch(/data/);
      const badName = await expectKubeError(applyObject(admin, cm("Not_A_Valid_Name"), { fieldManager: FM }));
      expect(badName.kind).toBe("invalid");

      const missingNs = await expectKubeError(applyObject(admin, cm("x", "no-such-namespace"), { fieldManager: FM }));
      expect(missingNs).toMatchObject({ kind: "not-found", status: 404, reason: "NotFound" });

      await applyObject(admin, cm("shared", NS, { owner: "a" }), { fieldManager: "manager-a" });
      const conflict = await expectKubeError(
        applyObject(admin, cm("shared", NS, { owner: "b" }), { fieldManager: "manager-b" }),
      );
      expect(conflict).toMatchObject({ kind: "conflict", status: 409, reason: "Conflict" });
      const forced = await applyObject(admin, cm("shared", NS, { owner: "b" }), {
        fieldManager: "manager-b",
        force: true,
      });
      expect((forced as V1ConfigMap).data).toEqual({ owner: "b" });

      const unknownKind = await expectKubeError(
        applyObject(
          admin,
          { apiVersion: "runtime-test.berth.dev/v1alpha1", kind: "Gadget", metadata: { name: "g" } },
          { fieldManager: FM },
        ),
      );
      expect(unknownKind.kind).toBe("not-found");

      const down = await expectKubeError(
        applyObject(viaServer(admin, "https://127.0.0.1:1"), cm("down"), { fieldManager: FM }),
      );
      expect(down).toMatchObject({ kind: "unavailable", status: 0 });
    });
  });

  describe("deleteObject", () => {
    it("deletes by reference or object and treats 404 as done", async () => {
      await applyObject(
        admin,
        { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "gone-soon", namespace: NS } },
        { fieldManager: FM },
      );
      expect(await deleteObject(admin, { apiVersion: "v1", kind: "ConfigMap", name: "gone-soon", namespace: NS })).toBe(
        true,
      );
      expect(
        await deleteObject(admin, {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: "gone-soon", namespace: NS },
        }),
      ).toBe(false);
      await applyObject(
        admin,
        { apiVersion: "runtime-test.berth.dev/v1alpha1", kind: "Widget", metadata: { name: "w-del" } },
        { fieldManager: FM },
      );
      expect(
        await deleteObject(admin, { apiVersion: "runtime-test.berth.dev/v1alpha1", kind: "Widget", name: "w-del" }),
      ).toBe(true);
      const forbidden = await expectKubeError(
        deleteObject(cluster.kubeConfigFor("tester"), {
          apiVersion: "v1",
          kind: "ConfigMap",
          name: "platform-vars",
          namespace: NS,
        }),
      );
      expect(forbidden.kind).toBe("forbidden");
    });
  });

  describe("EventRecorder", () => {
    const eventsFor = async (ns: string, name: string) =>
      (await core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${name}` })).items;

    it("records Events and merges identical ones into one with a count", async () => {
      const recorder = new EventRecorder(admin, { component: "berth-controller", instance: "pod-0" });
      const ref = { apiVersion: "v1", kind: "ConfigMap", name: "platform-vars", namespace: NS, uid: "1234" };
      await recorder.warning(ref, "ApplyFailed", "boom");
      await recorder.warning(ref, "ApplyFailed", "boom");
      await Promise.all([1, 2, 3].map(() => recorder.warning(ref, "ApplyFailed", "boom")));
      await recorder.warning(ref, "ApplyFailed", "another message");
      await recorder.normal(ref, "Applied", "ok");
      const events = await eventsFor(NS, "platform-vars");
      expect(events).toHaveLength(3);
      const boom = events.find((e) => e.message === "boom");
      expect(boom).toMatchObject({
        type: "Warning",
        reason: "ApplyFailed",
        count: 5,
        involvedObject: { kind: "ConfigMap", name: "platform-vars", namespace: NS, uid: "1234" },
        source: { component: "berth-controller", host: "pod-0" },
        reportingComponent: "berth-controller",
        reportingInstance: "pod-0",
      });
      expect(new Date(boom!.lastTimestamp!).getTime()).toBeGreaterThanOrEqual(
        new Date(boom!.firstTimestamp!).getTime(),
      );
      expect(events.find((e) => e.message === "another message")?.count).toBe(1);
      expect(events.find((e) => e.reason === "Applied")?.type).toBe("Normal");
    });

    it("puts Events about cluster-scoped objects into `default`", async () => {
      const recorder = new EventRecorder(admin, { component: "berth-controller", instance: "pod-0" });
      await recorder.normal(
        { apiVersion: "runtime-test.berth.dev/v1alpha1", kind: "Widget", name: "w1" },
        "Reconciled",
        "all good",
      );
      const events = await eventsFor("default", "w1");
      expect(events).toHaveLength(1);
      expect(events[0]?.involvedObject.namespace).toBeUndefined();
    });

    it("remembers at most maxCached distinct events: one evicted is recorded afresh", async () => {
      const recorder = new EventRecorder(admin, { component: "c", instance: "i", maxCached: 1 });
      const ref = { apiVersion: "v1", kind: "ConfigMap", name: "bounded", namespace: NS };
      await recorder.warning(ref, "R", "a");
      await recorder.warning(ref, "R", "a"); // merged: a is remembered
      await recorder.warning(ref, "R", "b"); // evicts a
      await recorder.warning(ref, "R", "a"); // a new Event
      const events = await eventsFor(NS, "bounded");
      expect(events.map((e) => `${e.message}×${e.count}`).sort()).toEqual(["a×1", "a×2", "b×1"]);
    });

    it("creates a fresh Event once the window has passed, and never throws", async () => {
      const recorder = new EventRecorder(admin, { component: "c", instance: "i", dedupeWindowMs: 0 });
      const ref = { apiVersion: "v1", kind: "ConfigMap", name: "windowed", namespace: NS };
      await recorder.warning(ref, "R", "m");
      await new Promise((r) => setTimeout(r, 5));
      await recorder.warning(ref, "R", "m");
      expect(await eventsFor(NS, "windowed")).toHaveLength(2);

      const log = recordingLogger();
      const forbidden = new EventRecorder(cluster.kubeConfigFor("tester"), {
        component: "c",
        instance: "i",
        logger: log,
      });
      await expect(forbidden.warning(ref, "R", "m")).resolves.toBeUndefined();
      expect(log.entries.find((e) => e.level === "warn")?.obj.kind).toBe("forbidden");
    });
  });
});
