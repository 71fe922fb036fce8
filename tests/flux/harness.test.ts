/**
 * Proves the real-Flux harness (tests/support/flux.ts) on its own, before Berth is in the picture: the
 * source-controller and kustomize-controller built from their Go modules pull a repository served over smart
 * HTTP with Basic auth, apply what its root Kustomization builds, substitute strictly from a ConfigMap, prune
 * what a later commit removes, and report their status as Flux does; and the harness's `requestReconcile` (what
 * `flux reconcile` does) holds when a Receiver's request replaces its own before source-controller reads either;
 * and `startFlux` calls a controller ready only once it listens on every port the harness gave it, and a wait on
 * Flux gives up at once when a controller dies under it (`exits`).
 */
// needs: cluster dist
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { Admin } from "../controller/helpers.js";
import { bootstrapFlux, startFlux, type RunningFlux } from "../support/flux.js";
import { requestReconcile } from "../support/flux-platform.js";
import { startGitHttpServer, type GitHttpServer } from "../support/git-http-server.js";
import { basicAuthEnv, createBareRepo, git, pushTree } from "../support/git-remotes.js";
import { startKubeCluster, type KubeCluster } from "../support/kube-cluster.js";
import { kubeRequest } from "../support/kube-http.js";
import { componentVersion } from "../support/test-cluster-binaries.js";
import { eventually } from "../support/wait.js";

const AUTH = { username: "flux", password: "s3cret-flux" };
/** A reconcile request as notification-controller's Receiver writes it: metav1.Now().String(), Go's format. */
const RECEIVERS = "2026-12-02 08:40:00.123456789 +0000 UTC";

async function writeTree(dir: string, files: Record<string, unknown>): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), typeof content === "string" ? content : stringify(content, { version: "1.1" }));
  }
}

const configMap = (name: string, data: Record<string, string>) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "demo" },
  data,
});

describe(`real Flux (source-controller ${componentVersion("source-controller")}, kustomize-controller ${componentVersion("kustomize-controller")})`, () => {
  let cluster: KubeCluster;
  let flux: RunningFlux;
  let server: GitHttpServer;
  let url: string;
  let work: string;

  beforeAll(async () => {
    cluster = await startKubeCluster({ controllers: true });
    const bare = await createBareRepo();
    server = await startGitHttpServer({ root: dirname(bare.dir), ...AUTH });
    url = server.repoUrl(bare.dir.split("/").pop()!);
    work = await mkdtemp(join(tmpdir(), "berth-flux-harness-"));
    await writeTree(work, {
      "clusters/demo/kustomization.yaml": {
        apiVersion: "kustomize.config.k8s.io/v1beta1",
        kind: "Kustomization",
        resources: ["apps.yaml", "vars.yaml"],
      },
      "clusters/demo/vars.yaml": {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "vars", namespace: "flux-system" },
        data: { GREETING: "hello" },
      },
      "clusters/demo/apps.yaml": {
        apiVersion: "kustomize.toolkit.fluxcd.io/v1",
        kind: "Kustomization",
        metadata: { name: "apps", namespace: "flux-system" },
        spec: {
          interval: "10m",
          path: "./apps",
          prune: true,
          wait: true,
          sourceRef: { kind: "GitRepository", name: "flux-system" },
          postBuild: { substituteFrom: [{ kind: "ConfigMap", name: "vars" }] },
        },
      },
      "apps/kustomization.yaml": {
        apiVersion: "kustomize.config.k8s.io/v1beta1",
        kind: "Kustomization",
        resources: ["namespace.yaml", "one.yaml", "two.yaml"],
      },
      "apps/namespace.yaml": { apiVersion: "v1", kind: "Namespace", metadata: { name: "demo" } },
      "apps/one.yaml": configMap("one", { greeting: "${GREETING}", literal: "$${GREETING}" }),
      "apps/two.yaml": configMap("two", { n: "2" }),
    });
    await pushTree({ url, dir: work, subject: "demo", env: basicAuthEnv(AUTH.username, AUTH.password) });
    flux = await startFlux(cluster);
    await bootstrapFlux(cluster, flux, { url, path: "./clusters/demo", auth: AUTH, interval: "2s" });
  }, 120_000);

  afterAll(async () => {
    await flux?.stop();
    await server?.stop();
    await cluster?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  const get = (path: string) => kubeRequest(cluster.kubeConfig(), { method: "GET", path });
  const kustomization = async (name: string) =>
    (await get(`/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/${name}`)).json as {
      status?: {
        lastAppliedRevision?: string;
        conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
      };
    };

  it("pulls over smart HTTP, applies, substitutes strictly and reports Ready at the pushed revision", async () => {
    const head = (
      await git(["ls-remote", url, "refs/heads/main"], { env: basicAuthEnv(AUTH.username, AUTH.password) })
    ).split("\t")[0]!;
    const one = await eventually(
      "ConfigMap demo/one applied by Flux",
      async () => {
        const r = await get("/api/v1/namespaces/demo/configmaps/one");
        return r.status === 200
          ? (r.json as { data: Record<string, string>; metadata: { labels: Record<string, string> } })
          : undefined;
      },
      60_000,
    );
    expect(one.data).toEqual({ greeting: "hello", literal: "${GREETING}" });
    expect(one.metadata.labels["kustomize.toolkit.fluxcd.io/name"]).toBe("apps");
    // Ready with a revision: Flux's patch helper writes status.conditions and the rest of the status in separate
    // requests, so a read between the two sees Ready=True before lastAppliedRevision.
    const ready = await eventually(
      "Kustomization apps Ready, with the revision it applied",
      async () => {
        const k = await kustomization("apps");
        return k.status?.conditions?.find((c) => c.type === "Ready" && c.status === "True") &&
          k.status.lastAppliedRevision
          ? k
          : undefined;
      },
      60_000,
    );
    expect(ready.status?.lastAppliedRevision).toBe(`main@sha1:${head}`);
  });

  it("fails the build on an undefined variable and keeps what it applied", async () => {
    await writeFile(join(work, "apps/two.yaml"), stringify(configMap("two", { n: "${UNDEFINED_VAR}" })));
    await pushTree({ url, dir: work, subject: "undefined var", env: basicAuthEnv(AUTH.username, AUTH.password) });
    const failed = await eventually(
      "apps fails on the undefined variable",
      async () => {
        const c = (await kustomization("apps")).status?.conditions?.find((x) => x.type === "Ready");
        return c?.status === "False" ? c : undefined;
      },
      60_000,
    );
    expect(failed.message).toMatch(/UNDEFINED_VAR/);
    expect((await get("/api/v1/namespaces/demo/configmaps/two")).status).toBe(200);
  });

  it("prunes what a commit removes", async () => {
    await writeTree(join(work, "apps"), {
      "kustomization.yaml": {
        apiVersion: "kustomize.config.k8s.io/v1beta1",
        kind: "Kustomization",
        resources: ["namespace.yaml", "one.yaml"],
      },
      "namespace.yaml": { apiVersion: "v1", kind: "Namespace", metadata: { name: "demo" } },
      "one.yaml": configMap("one", { greeting: "${GREETING}", literal: "$${GREETING}" }),
    });
    await pushTree({
      url,
      dir: work,
      subject: "drop two",
      remove: ["apps/two.yaml"],
      env: basicAuthEnv(AUTH.username, AUTH.password),
    });
    await eventually(
      "ConfigMap demo/two pruned",
      async () => (await get("/api/v1/namespaces/demo/configmaps/two")).status === 404,
      60_000,
    );
    expect((await get("/api/v1/namespaces/demo/configmaps/one")).status).toBe(200);
  });

  it("counts a reconcile request as handled when a later one (a Receiver's) replaced it before the controller read it", async () => {
    const admin = new Admin(cluster.kubeConfig());
    const SOURCE = ["source.toolkit.fluxcd.io/v1", "GitRepository", "flux-system", "flux-system"] as const;
    const requested = async () =>
      (await admin.get(...SOURCE))?.metadata.annotations?.["reconcile.fluxcd.io/requestedAt"];
    const before = await requested();
    // Paused (not stopped: its leader lease and watches outlive a second), source-controller reads neither request
    // until both are written, as when a Receiver's lands between ours and the controller's next read.
    const sourceController = flux.processes.get("source-controller")!.pid;
    process.kill(sourceController, "SIGSTOP");
    let ours: Promise<string>;
    try {
      ours = requestReconcile(admin, ...SOURCE);
      await eventually("our reconcile request written", async () => (await requested()) !== before);
      await admin.mergePatch(...SOURCE, {
        metadata: { annotations: { "reconcile.fluxcd.io/requestedAt": RECEIVERS } },
      });
    } finally {
      process.kill(sourceController, "SIGCONT");
    }
    const head = (
      await git(["ls-remote", url, "refs/heads/main"], { env: basicAuthEnv(AUTH.username, AUTH.password) })
    ).split("\t")[0]!;
    expect(await ours).toBe(`main@sha1:${head}`);
    const status = (await admin.get(...SOURCE))?.status as { lastHandledReconcileAt?: string };
    expect(status.lastHandledReconcileAt).toBe(RECEIVERS);
  }, 90_000);

  it("does not call a controller ready that loses a port to another process after its readiness probe answered", async () => {
    // As in a CI run: another process took source-controller's picked artifact port. Its readiness probe answers,
    // then the artifact server fails to bind and it exits; a harness that stopped at the probe left every
    // Kustomization waiting 240 s for an artifact. The last --storage-addr wins: here, a port that is taken.
    const holder = createServer();
    await new Promise<void>((r) => holder.listen(0, "127.0.0.1", r));
    try {
      const taken = (holder.address() as AddressInfo).port;
      const outcome = await startFlux(cluster, {
        namespace: "flux-taken-port",
        controllers: ["source-controller"],
        extraArgs: { "source-controller": ["--watch-all-namespaces=false", `--storage-addr=127.0.0.1:${taken}`] },
      }).then(
        async (other) => {
          await other.stop();
          return "ready";
        },
        (err: unknown) => (err as Error).message,
      );
      expect(outcome).toMatch(/^source-controller exited \(1\):[^]*address already in use/);
    } finally {
      holder.close();
    }
  }, 60_000);

  it("a wait on Flux gives up at once, naming the controller and its log, when one dies under it; not one stopped", async () => {
    // As in a CI run: notification-controller was gone and the platform harness waited 120 s for its Receiver.
    const other = await startFlux(cluster, {
      namespace: "flux-dies",
      controllers: ["source-controller", "kustomize-controller"],
    });
    try {
      expect(other.exits()).toBeUndefined();
      // One stopped on purpose (a test of Flux partly down) is not news.
      await other.stopController("kustomize-controller");
      expect(other.exits()).toBeUndefined();
      process.kill(other.processes.get("source-controller")!.pid, "SIGKILL");
      const outcome = await eventually("a Receiver that never comes", async () => undefined, 60_000, other.exits).then(
        () => "waited",
        (err: unknown) => (err as Error).message,
      );
      expect(outcome).toMatch(
        /^gave up waiting for a Receiver that never comes: source-controller exited \(SIGKILL\):\n[^]*"msg":/,
      );
      expect(outcome).not.toMatch(/kustomize-controller/);
    } finally {
      await other.stop();
    }
    expect(other.exits()).toBeUndefined();
  }, 90_000);
});
