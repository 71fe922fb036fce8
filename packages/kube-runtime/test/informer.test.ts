/**
 * The informer against a real kube-apiserver: cache + events, label selectors on list and watch,
 * handler exceptions contained, and recovery from cut connections, a blocked apiserver, silent
 * watches (watchdog), forbidden lists/watches (any error, not only 410), with synthetic DELETEDs; and
 * resyncs replayed from the cache (no LIST, the same watch), counted at an HTTP proxy in front of the apiserver.
 */
// needs: cluster
import { createServer, type IncomingHttpHeaders } from "node:http";
import { request as httpsRequest, type RequestOptions } from "node:https";
import type { Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { CoreV1Api, RbacAuthorizationV1Api, type KubeConfig, type V1ConfigMap } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { listPath } from "../src/client.js";
import { KubeApiError } from "../src/errors.js";
import { InformerError, startInformer, type Informer, type InformerEvent } from "../src/informer.js";
import type { KubeConfigLike } from "../src/kubeconfig.js";
import { createControllerMetrics, type ControllerMetrics } from "../src/metrics.js";
import { recordingLogger, sleep, startKubeCluster, TcpProxy, viaServer, type KubeCluster } from "./support.js";

type CM = V1ConfigMap;

/**
 * A plain-HTTP proxy to the apiserver that adds `kc`'s credentials: every request it forwards is recorded,
 * so a test counts what the apiserver was asked (LISTs, WATCHes) rather than what the informer says it did.
 * Its `kubeConfig` holds no credentials (client-node's KubeConfig refuses plain HTTP): the proxy adds them.
 */
async function countingProxy(kc: KubeConfig) {
  const target = new URL(kc.getCurrentCluster()!.server);
  const requests: Array<{ method: string; path: string; watch: boolean }> = [];
  const sockets = new Set<Socket>();
  const hopByHop = ["connection", "keep-alive", "transfer-encoding", "host"];
  const pass = (headers: IncomingHttpHeaders) =>
    Object.fromEntries(Object.entries(headers).filter(([k, v]) => v !== undefined && !hopByHop.includes(k)));
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://proxy");
    requests.push({ method: req.method ?? "", path: url.pathname, watch: url.searchParams.get("watch") === "true" });
    const opts: RequestOptions = { headers: {} };
    void kc.applyToHTTPSOptions(opts).then(() => {
      const up = httpsRequest(
        {
          hostname: target.hostname,
          port: target.port,
          path: req.url,
          method: req.method,
          headers: { ...pass(req.headers), ...(opts.headers as Record<string, string>) },
          ca: opts.ca,
          cert: opts.cert,
          key: opts.key,
          agent: false,
        },
        (upRes) => {
          res.writeHead(upRes.statusCode ?? 502, pass(upRes.headers));
          upRes.pipe(res);
        },
      );
      up.on("error", () => res.destroy());
      // A watch the client closed must end upstream too.
      res.on("close", () => {
        if (!res.writableFinished) up.destroy();
      });
      req.pipe(up);
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  const count = (path: string, watch: boolean) =>
    requests.filter((r) => r.method === "GET" && r.path === path && r.watch === watch).length;
  const kubeConfig: KubeConfigLike = {
    getCurrentCluster: () => ({ server: `http://127.0.0.1:${port}` }),
    applyToHTTPSOptions: () => Promise.resolve(),
  };
  return {
    kubeConfig,
    lists: (path: string) => count(path, false),
    watches: (path: string) => count(path, true),
    stop: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        for (const s of sockets) s.destroy();
      }),
  };
}

// Concurrent: every test has its own namespace, and most of their time is spent waiting.
describe.concurrent("startInformer (real kube-apiserver)", () => {
  let cluster: KubeCluster;
  let admin: KubeConfig;
  let core: CoreV1Api;
  const informers: Informer<CM>[] = [];
  const unhandled: unknown[] = [];
  const onUnhandled = (err: unknown) => unhandled.push(err);

  beforeAll(async () => {
    process.on("unhandledRejection", onUnhandled);
    cluster = await startKubeCluster({ crdDirs: false });
    admin = cluster.kubeConfig();
    core = admin.makeApiClient(CoreV1Api);
  });

  afterAll(async () => {
    for (const i of informers) i.stop();
    process.off("unhandledRejection", onUnhandled);
    await cluster?.stop();
  });

  async function namespace(name: string): Promise<string> {
    await core.createNamespace({ body: { metadata: { name } } });
    return name;
  }

  const cm = (ns: string, name: string, data: Record<string, string> = { v: "1" }, labels?: Record<string, string>) =>
    core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name, namespace: ns, ...(labels ? { labels } : {}) }, data },
    });

  function watchConfigMaps(
    kc: KubeConfigLike,
    ns: string,
    opts: Parameters<typeof startInformer>[3] & { labelSelector?: string } = {},
    handler?: (e: InformerEvent<CM>) => void,
  ) {
    const events: Array<{ type: string; name: string; rv: string | undefined; data?: Record<string, string> }> = [];
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const { labelSelector, ...rest } = opts;
    const informer = startInformer<CM>(
      kc,
      {
        name: `cm-${ns}`,
        path,
        ...(labelSelector ? { labelSelector } : {}),
        list: () => listPath<CM>(kc, path, labelSelector ? { labelSelector } : {}),
      },
      (e) => {
        events.push({
          type: e.type,
          name: e.object.metadata?.name ?? "",
          rv: e.object.metadata?.resourceVersion,
          ...(e.object.data ? { data: e.object.data } : {}),
        });
        return handler?.(e);
      },
      rest,
    );
    informers.push(informer);
    const has = (type: string, name: string) => events.some((e) => e.type === type && e.name === name);
    return { informer, events, has };
  }

  const restarts = async (metrics: ControllerMetrics, name: string) =>
    (await metrics.watchRestarts.get()).values.find((v) => v.labels.informer === name)?.value ?? 0;

  it("lists, then watches adds, modifications and deletes into its cache", async () => {
    const ns = await namespace("inf-basic");
    await cm(ns, "before");
    const { informer, events, has } = watchConfigMaps(admin, ns);
    expect(informer.hasSynced()).toBe(false);
    await informer.synced;
    expect(informer.hasSynced()).toBe(true);
    expect(events).toEqual([expect.objectContaining({ type: "ADDED", name: "before" })]);
    expect(informer.get(ns, "before")?.data).toEqual({ v: "1" });

    await cm(ns, "after");
    await vi.waitFor(() => expect(has("ADDED", "after"), "ADDED after").toBe(true), { timeout: 10_000, interval: 25 });
    await core.patchNamespacedConfigMap({
      name: "after",
      namespace: ns,
      body: [{ op: "replace", path: "/data/v", value: "2" }],
    });
    await vi.waitFor(() => expect(informer.get(ns, "after")?.data?.v === "2", "MODIFIED after").toBe(true), {
      timeout: 10_000,
      interval: 25,
    });
    expect(events.at(-1)).toMatchObject({ type: "MODIFIED", name: "after", data: { v: "2" } });
    await core.deleteNamespacedConfigMap({ name: "before", namespace: ns });
    await vi.waitFor(() => expect(has("DELETED", "before"), "DELETED before").toBe(true), {
      timeout: 10_000,
      interval: 25,
    });
    expect(informer.get(ns, "before")).toBeUndefined();
    expect(informer.list().map((o) => o.metadata?.name)).toEqual(["after"]);
    // Raw JSON, as watch events carry it: times stay strings.
    expect(typeof informer.get(ns, "after")?.metadata?.creationTimestamp).toBe("string");
  });

  it("observe(): caches this process's own write at once, and never replaces a newer watched change with a late answer", async () => {
    const ns = await namespace("inf-observe");
    await cm(ns, "credential");
    const { informer, events, has } = watchConfigMaps(admin, ns);
    await informer.synced;

    // Our write: its answer is cached at once.
    const ours = await core.patchNamespacedConfigMap({
      name: "credential",
      namespace: ns,
      body: [{ op: "replace", path: "/data/v", value: "ours" }],
    });
    informer.observe(ours);
    expect(informer.get(ns, "credential")?.data).toEqual({ v: "ours" });
    // Someone writes right after us, and the watch delivers it...
    await core.patchNamespacedConfigMap({
      name: "credential",
      namespace: ns,
      body: [{ op: "add", path: "/data/extra", value: "theirs" }],
    });
    await vi.waitFor(() => expect(informer.get(ns, "credential")?.data?.extra, "their change watched").toBe("theirs"), {
      timeout: 10_000,
      interval: 25,
    });
    expect(events.at(-1)).toMatchObject({ type: "MODIFIED", data: { v: "ours", extra: "theirs" } });
    // ...before the answer to our write comes back (a slow response): the cache keeps their newer change.
    informer.observe(ours);
    expect(informer.get(ns, "credential")?.data).toEqual({ v: "ours", extra: "theirs" });
    expect(has("ADDED", "credential")).toBe(true);
  });

  it("observe(): an answer that arrives after the watch saw the object deleted does not bring it back", async () => {
    const ns = await namespace("inf-tomb");
    await cm(ns, "leaving");
    const { informer, has } = watchConfigMaps(admin, ns);
    await informer.synced;
    // Our write (e.g. the one removing the last finalizer), then the deletion, watched before our answer is handled.
    const ours = await core.patchNamespacedConfigMap({
      name: "leaving",
      namespace: ns,
      body: [{ op: "replace", path: "/data/v", value: "ours" }],
    });
    await core.deleteNamespacedConfigMap({ name: "leaving", namespace: ns });
    await vi.waitFor(() => expect(has("DELETED", "leaving"), "DELETED watched").toBe(true), {
      timeout: 10_000,
      interval: 25,
    });
    informer.observe(ours);
    expect(informer.get(ns, "leaving")).toBeUndefined();
    // Created again (by us): its answer is newer than the deletion, and is cached at once.
    const again = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "leaving" }, data: { v: "again" } },
    });
    informer.observe(again);
    expect(informer.get(ns, "leaving")?.data).toEqual({ v: "again" });
  });

  it("honours the label selector on the list and on the watch", async () => {
    const ns = await namespace("inf-sel");
    await cm(ns, "in-before", {}, { app: "berth" });
    await cm(ns, "out-before", {}, { app: "other" });
    const { informer, events, has } = watchConfigMaps(admin, ns, { labelSelector: "app=berth" });
    await informer.synced;
    expect(events.map((e) => e.name)).toEqual(["in-before"]);

    await cm(ns, "out-after", {}, { app: "other" });
    await cm(ns, "in-after", {}, { app: "berth" });
    await vi.waitFor(() => expect(has("ADDED", "in-after"), "in-after").toBe(true), { timeout: 10_000, interval: 25 });
    // Relabelling moves objects into and out of the selection.
    await core.patchNamespacedConfigMap({
      name: "out-before",
      namespace: ns,
      body: [{ op: "replace", path: "/metadata/labels/app", value: "berth" }],
    });
    await core.patchNamespacedConfigMap({
      name: "in-before",
      namespace: ns,
      body: [{ op: "replace", path: "/metadata/labels/app", value: "gone" }],
    });
    await vi.waitFor(
      () => expect(has("ADDED", "out-before") && has("DELETED", "in-before"), "relabel events").toBe(true),
      { timeout: 10_000, interval: 25 },
    );
    expect(events.some((e) => e.name === "out-after")).toBe(false);
    expect(
      informer
        .list()
        .map((o) => o.metadata?.name)
        .sort(),
    ).toEqual(["in-after", "out-before"]);
  });

  it("sends the field selector with its default list and with the watch", async () => {
    const ns = await namespace("inf-field");
    await cm(ns, "wanted", { v: "1" });
    await cm(ns, "other");
    const events: string[] = [];
    // No `list`: the informer lists `path` itself, with the same selectors as the watch.
    const informer = startInformer<CM>(
      admin,
      { name: "cm-field", path: `/api/v1/namespaces/${ns}/configmaps`, fieldSelector: "metadata.name=wanted" },
      (e) => void events.push(`${e.type} ${e.object.metadata?.name ?? ""}`),
    );
    informers.push(informer);
    await informer.synced;
    expect(events).toEqual(["ADDED wanted"]);
    await core.patchNamespacedConfigMap({
      name: "other",
      namespace: ns,
      body: [{ op: "replace", path: "/data/v", value: "2" }],
    });
    await core.patchNamespacedConfigMap({
      name: "wanted",
      namespace: ns,
      body: [{ op: "replace", path: "/data/v", value: "2" }],
    });
    await vi.waitFor(() => expect(informer.get(ns, "wanted")?.data?.v === "2", "MODIFIED wanted").toBe(true), {
      timeout: 10_000,
      interval: 25,
    });
    expect(events).toEqual(["ADDED wanted", "MODIFIED wanted"]);
    expect(informer.list().map((o) => o.metadata?.name)).toEqual(["wanted"]);
  });

  it("contains handler exceptions (sync and async): no unhandled rejection, later events still arrive", async () => {
    const ns = await namespace("inf-throw");
    const log = recordingLogger();
    const errors: InformerError[] = [];
    const { informer, has } = watchConfigMaps(admin, ns, { logger: log, onError: (e) => errors.push(e) }, (e) => {
      const name = e.object.metadata?.name ?? "";
      if (name.startsWith("boom")) throw new Error(`handler exploded on ${name}`);
      if (name.startsWith("async")) return Promise.reject(new Error(`async handler rejected on ${name}`));
    });
    await informer.synced;
    await cm(ns, "boom-1");
    await cm(ns, "async-1");
    await cm(ns, "fine");
    await vi.waitFor(() => expect(has("ADDED", "fine"), "event after the throwing ones").toBe(true), {
      timeout: 10_000,
      interval: 25,
    });
    await vi.waitFor(() => expect(errors.length >= 2, "both handler errors reported").toBe(true), {
      timeout: 5_000,
      interval: 25,
    });
    expect(errors.map((e) => e.kind)).toEqual(["handler", "handler"]);
    expect(
      log.entries
        .filter((e) => e.level === "error")
        .map((e) => e.msg)
        .join("\n"),
    ).toMatch(/boom-1[\s\S]*async-1/);
    expect(informer.get(ns, "boom-1")).toBeDefined();
    await sleep(50);
    expect(unhandled).toEqual([]);
  });

  it("survives its connections being cut", async () => {
    const ns = await namespace("inf-cut");
    const proxy = TcpProxy.for(admin);
    await proxy.start();
    try {
      const { informer, has } = watchConfigMaps(viaServer(admin, `https://127.0.0.1:${proxy.port}`), ns, {
        backoffBaseMs: 50,
      });
      await informer.synced;
      for (let i = 1; i <= 3; i++) {
        const before = proxy.connections;
        proxy.cut();
        await vi.waitFor(() => expect(proxy.connections > before, "a new connection after the cut").toBe(true), {
          timeout: 10_000,
          interval: 25,
        });
        await cm(ns, `after-cut-${i}`);
        await vi.waitFor(() => expect(has("ADDED", `after-cut-${i}`), `ADDED after cut ${i}`).toBe(true), {
          timeout: 10_000,
          interval: 25,
        });
      }
    } finally {
      await proxy.stop();
    }
  });

  it("relists after an outage: objects deleted meanwhile get a synthetic DELETED, new ones an ADDED", async () => {
    const ns = await namespace("inf-block");
    await cm(ns, "doomed");
    await cm(ns, "survivor");
    const proxy = TcpProxy.for(admin);
    await proxy.start();
    const registry = new Registry();
    const metrics = createControllerMetrics(registry);
    const errors: InformerError[] = [];
    try {
      const { informer, events, has } = watchConfigMaps(viaServer(admin, `https://127.0.0.1:${proxy.port}`), ns, {
        metrics,
        backoffBaseMs: 50,
        backoffMaxMs: 400,
        onError: (e) => errors.push(e),
      });
      await informer.synced;
      const doomedRv = informer.get(ns, "doomed")?.metadata?.resourceVersion;
      expect(doomedRv).toBeTruthy();

      proxy.block();
      await core.deleteNamespacedConfigMap({ name: "doomed", namespace: ns });
      await cm(ns, "born-in-outage");
      await vi.waitFor(() => expect(errors.length >= 2, "failed attempts while blocked").toBe(true), {
        timeout: 10_000,
        interval: 25,
      });
      expect(informer.get(ns, "doomed")).toBeDefined(); // nothing seen yet
      proxy.unblock();

      await vi.waitFor(
        () => expect(has("DELETED", "doomed") && has("ADDED", "born-in-outage"), "events after the outage").toBe(true),
        { timeout: 10_000, interval: 25 },
      );
      const del = events.find((e) => e.type === "DELETED" && e.name === "doomed");
      // Synthetic: it carries the last state we had (the real DELETED would have a newer resourceVersion).
      expect(del?.rv).toBe(doomedRv);
      expect(events.filter((e) => e.name === "survivor").map((e) => e.type)).toEqual(["ADDED"]);
      expect(await restarts(metrics, `cm-${ns}`)).toBeGreaterThanOrEqual(2);
      expect(
        errors.some((e) => e.kind === "list" && e.cause instanceof KubeApiError && e.cause.kind === "unavailable"),
      ).toBe(true);
    } finally {
      await proxy.stop();
    }
  });

  it("restarts a silent watch (watchdog) and keeps delivering", async () => {
    const ns = await namespace("inf-dog");
    const registry = new Registry();
    const metrics = createControllerMetrics(registry);
    const errors: InformerError[] = [];
    const { informer, has } = watchConfigMaps(admin, ns, {
      watchdogMs: 300,
      backoffBaseMs: 20,
      backoffMaxMs: 200,
      metrics,
      onError: (e) => errors.push(e),
    });
    await informer.synced;
    await vi.waitFor(
      async () => expect((await restarts(metrics, `cm-${ns}`)) >= 2, "two watchdog restarts").toBe(true),
      { timeout: 10_000, interval: 25 },
    );
    expect(errors.filter((e) => e.kind === "watchdog").length).toBeGreaterThanOrEqual(2);
    await cm(ns, "after-watchdog");
    await vi.waitFor(() => expect(has("ADDED", "after-watchdog"), "ADDED after watchdog restarts").toBe(true), {
      timeout: 10_000,
      interval: 25,
    });
  });

  it("resyncs: periodically re-emits every cached object, unchanged, as MODIFIED", async () => {
    const ns = await namespace("inf-resync");
    await cm(ns, "steady");
    const { informer, events } = watchConfigMaps(admin, ns, { resyncMs: 400 });
    await informer.synced;
    const rv = informer.get(ns, "steady")?.metadata?.resourceVersion;
    await vi.waitFor(
      () =>
        expect(events.filter((e) => e.type === "MODIFIED" && e.name === "steady").length >= 2, "two resyncs").toBe(
          true,
        ),
      { timeout: 10_000, interval: 25 },
    );
    expect(events.filter((e) => e.type === "MODIFIED").every((e) => e.rv === rv)).toBe(true);
  });

  it("resyncs from its cache: objects re-emitted as MODIFIED with no LIST request, and the watch not restarted", async () => {
    const ns = await namespace("inf-replay");
    await cm(ns, "one");
    await cm(ns, "two");
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const proxy = await countingProxy(admin);
    let informer: Informer<CM> | undefined;
    try {
      const watched = watchConfigMaps(proxy.kubeConfig, ns, { resyncMs: 300 });
      informer = watched.informer;
      const { events, has } = watched;
      await informer.synced;
      const cachedRv = new Map(informer.list().map((o) => [o.metadata?.name, o.metadata?.resourceVersion]));
      expect([proxy.lists(path), events.map((e) => e.type)]).toEqual([1, ["ADDED", "ADDED"]]);
      const resyncs = (name: string) => events.filter((e) => e.type === "MODIFIED" && e.name === name).length;
      await vi.waitFor(() => expect(resyncs("one") >= 3 && resyncs("two") >= 3, "three resyncs").toBe(true), {
        timeout: 10_000,
        interval: 25,
      });
      // Replayed as cached, and nothing asked of the apiserver for it: the first LIST and the first watch only.
      expect(events.filter((e) => e.type === "MODIFIED").every((e) => e.rv === cachedRv.get(e.name))).toBe(true);
      expect({ lists: proxy.lists(path), watches: proxy.watches(path) }).toEqual({ lists: 1, watches: 1 });
      // That watch still delivers.
      await cm(ns, "three");
      await vi.waitFor(() => expect(has("ADDED", "three"), "ADDED over the same watch").toBe(true), {
        timeout: 10_000,
        interval: 25,
      });
      expect({ lists: proxy.lists(path), watches: proxy.watches(path) }).toEqual({ lists: 1, watches: 1 });
    } finally {
      informer?.stop();
      await proxy.stop();
    }
  });

  it("keeps retrying on any error (403 on list, then on watch) and recovers once allowed", async () => {
    const ns = await namespace("inf-rbac");
    await cm(ns, "present");
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    const tester = cluster.kubeConfigFor("tester");
    const errors: InformerError[] = [];
    const { informer, has } = watchConfigMaps(tester, ns, {
      backoffBaseMs: 50,
      backoffMaxMs: 300,
      onError: (e) => errors.push(e),
    });

    await vi.waitFor(() => expect(errors.filter((e) => e.kind === "list").length >= 2, "failed lists").toBe(true), {
      timeout: 10_000,
      interval: 25,
    });
    const listErr = errors.find((e) => e.kind === "list")?.cause;
    expect(listErr).toBeInstanceOf(KubeApiError);
    expect((listErr as KubeApiError).kind).toBe("forbidden");
    expect(informer.hasSynced()).toBe(false);

    // Allow list only: the informer syncs, its watches fail with 403 and are retried.
    const role = (verbs: string[]) => ({
      metadata: { name: "cm-reader", namespace: ns },
      rules: [{ apiGroups: [""], resources: ["configmaps"], verbs }],
    });
    await rbac.createNamespacedRole({ namespace: ns, body: role(["list"]) });
    await rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: "tester-cm-reader", namespace: ns },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "cm-reader" },
        subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "tester" }],
      },
    });
    await informer.synced;
    expect(has("ADDED", "present")).toBe(true);
    await vi.waitFor(
      () =>
        expect(
          errors.some((e) => e.kind === "watch" && (e.cause as KubeApiError)?.status === 403),
          "a forbidden watch",
        ).toBe(true),
      { timeout: 10_000, interval: 25 },
    );

    await rbac.replaceNamespacedRole({ name: "cm-reader", namespace: ns, body: role(["list", "watch"]) });
    await cm(ns, "later");
    await vi.waitFor(() => expect(has("ADDED", "later"), "events once watch is allowed").toBe(true), {
      timeout: 10_000,
      interval: 25,
    });
    const settled = errors.length;
    await cm(ns, "latest");
    await vi.waitFor(() => expect(has("ADDED", "latest"), "events over the watch").toBe(true), {
      timeout: 10_000,
      interval: 25,
    });
    await sleep(700);
    expect(errors.length).toBe(settled);
  });

  it("stop(): no more events, and `synced` rejects when it never synced", async () => {
    const ns = await namespace("inf-stop");
    const { informer, events } = watchConfigMaps(admin, ns);
    await informer.synced;
    informer.stop();
    await cm(ns, "after-stop");
    await sleep(300);
    expect(events).toEqual([]);

    const never = watchConfigMaps(cluster.kubeConfigFor("tester"), ns, { backoffBaseMs: 50 });
    never.informer.stop();
    await expect(never.informer.synced).rejects.toMatchObject({ name: "InformerError", kind: "stopped" });
  });
});
