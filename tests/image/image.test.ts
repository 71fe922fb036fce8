/**
 * Smoke tests of Berth's image itself: the OCI archive `npm run image` wrote (npm test builds it before
 * vitest), unpacked by buildah and run the way a pod runs it (tests/support/image.ts: read-only root, tini as
 * PID 1, uid 65532, volumes where the Deployment mounts them).
 *
 * The cluster part is one team's whole path, with both processes from the image and their command, env and
 * volume mounts taken from the shipped install overlays (flux/berth/overlays/*, built with kubectl kustomize):
 * the API onboards the team against a local bare repo served over smart HTTP with a token from a mounted
 * Secret file; the test plays Flux (builds the team's Kustomization path from a clone of the remote and
 * applies it, substituted from the platform-vars the controller wrote); the test plays ASO (the team's
 * identity ConfigMap); the controller, in-cluster with a ServiceAccount token under infra/controller's RBAC,
 * writes the team's credential; the API reads the team's status from the cluster with the status-reader
 * ServiceAccount's token. Only Azure is not reached: the controller runs with BERTH_PROVIDER=static.
 */
// needs: cluster image sshd
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, posix, relative } from "node:path";
import { teamShard } from "@berth/core";
import { parse, stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startGitHttpServer, type GitHttpServer } from "../support/git-http-server.js";
import { startGitSshServer, type GitSshServer } from "../support/git-ssh-server.js";
import { createBareRepo, git, inspectRemote, type BareRepo } from "../support/git-remotes.js";
import {
  descendants,
  IMAGE_ARCHIVE,
  openImage,
  processInfo,
  readImageSummary,
  runContainer,
  skipWithoutImage,
  type ImageSummary,
  type Mount,
  type OpenImage,
  type RunningContainer,
} from "../support/image.js";
import { REPO_ROOT, startKubeCluster, type KubeCluster } from "../support/kube-cluster.js";
import { applyObject, kubeRequest, requestServiceAccountToken } from "../support/kube-http.js";
import {
  fluxSubstitute,
  kustomizeBuild,
  kustomizeText,
  parseManifests,
  type KubeObject,
} from "../support/kustomize.js";
import { startTestIssuer, type TestIssuer } from "../support/oidc-issuer.js";
import { freePort } from "../support/ports.js";

const skipImage = skipWithoutImage();

const APPS = ["api", "controller"] as const;
const USER = "65532:65532";
const CLUSTER = "aks-dev-weu";
const ASO_NS = "flux-config";
const FIELD_MANAGER = "berth-image-test";
const OVERLAYS = join(REPO_ROOT, "flux", "berth", "overlays");

let image: OpenImage;
let summary: ImageSummary;
const scratch = mkdtempSync(join(tmpdir(), "berth-image-smoke-"));

beforeAll(async () => {
  if (skipImage) return;
  summary = readImageSummary();
  const t0 = Date.now();
  image = await openImage();
  const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
  console.log(
    [
      `[tests/image] ${IMAGE_ARCHIVE}: berth ${summary.version}, ${mb(summary.compressedSize)} compressed (${mb(summary.uncompressedSize)} unpacked), built in ${(summary.timingsMs.total! / 1000).toFixed(1)} s (load ${summary.loadAverage}); unpacked by buildah in ${Date.now() - t0} ms`,
      ...summary.layers.map((l) => `  ${l.name.padEnd(6)} ${mb(l.size).padStart(8)}  ${l.holds}`),
    ].join("\n"),
  );
}, 300_000);

afterAll(async () => {
  await image?.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** Every path under `dir` (relative), not following symlinks. */
function walk(dir: string, out: string[] = [], base = dir): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    out.push(relative(base, p));
    if (e.isDirectory()) walk(p, out, base);
  }
  return out;
}

/** Package names in a pnpm-deployed node_modules/.pnpm (`@scope+name@1.2.3_peer...` -> `@scope/name`). */
function deployedPackages(appDir: string): Set<string> {
  const names = new Set<string>();
  for (const entry of readdirSync(join(appDir, "node_modules", ".pnpm"))) {
    if (entry === "node_modules" || entry === "lock.yaml") continue;
    const m = /^(@[^+]+\+[^@]+|[^@]+)@/.exec(entry);
    if (!m) throw new Error(`unexpected entry node_modules/.pnpm/${entry}`);
    names.add(m[1]!.replace("+", "/"));
  }
  return names;
}

type LockDeps = Record<string, string | { version: string }>;
interface Lockfile {
  importers: Record<string, { dependencies?: LockDeps; optionalDependencies?: LockDeps }>;
  packages: Record<string, { os?: string[]; cpu?: string[] }>;
  snapshots: Record<string, { dependencies?: LockDeps; optionalDependencies?: LockDeps }>;
}

/**
 * An app's production dependency closure, read from pnpm-lock.yaml (the image must hold exactly this):
 * `dependencies` and installable `optionalDependencies`, through workspace links, never devDependencies.
 */
function productionClosure(app: string): Set<string> {
  const lock = parse(readFileSync(join(REPO_ROOT, "pnpm-lock.yaml"), "utf8")) as Lockfile;
  const names = new Set<string>();
  const seen = new Set<string>();
  const installable = (key: string) => {
    const meta = lock.packages[key.replace(/\(.*$/, "")] ?? {};
    return (!meta.os || meta.os.includes(process.platform)) && (!meta.cpu || meta.cpu.includes(process.arch));
  };
  const visit = (from: string, deps: LockDeps | undefined, optional: boolean) => {
    for (const [name, ref] of Object.entries(deps ?? {})) {
      const version = typeof ref === "string" ? ref : ref.version;
      if (version.startsWith("link:")) {
        names.add(name);
        visitImporter(posix.normalize(posix.join(from, version.slice("link:".length))));
        continue;
      }
      const key = `${name}@${version}`;
      if (seen.has(key) || (optional && !installable(key))) continue;
      seen.add(key);
      names.add(name);
      const snapshot = lock.snapshots[key];
      if (!snapshot) throw new Error(`pnpm-lock.yaml has no snapshot ${key}`);
      visit(from, snapshot.dependencies, false);
      visit(from, snapshot.optionalDependencies, true);
    }
  };
  const visitImporter = (importer: string) => {
    if (seen.has(`importer:${importer}`)) return;
    seen.add(`importer:${importer}`);
    const entry = lock.importers[importer];
    if (!entry) throw new Error(`pnpm-lock.yaml has no importer ${importer}`);
    visit(importer, entry.dependencies, false);
    visit(importer, entry.optionalDependencies, true);
  };
  visitImporter(`apps/${app}`);
  return names;
}

describe.skipIf(skipImage)(`Berth's image (${relative(REPO_ROOT, IMAGE_ARCHIVE)})`, () => {
  it("runs as 65532 with tini as entrypoint, both entry points present, labelled with this checkout", async () => {
    const c = image.config;
    expect(c.User).toBe(USER);
    expect(c.Entrypoint).toEqual(["/usr/bin/tini", "--"]);
    expect(c.Cmd).toEqual(["node", "apps/api/dist/main.js"]);
    expect(c.WorkingDir).toBe("/app");
    for (const app of APPS)
      expect(existsSync(join(image.rootfs, "app", "apps", app, "dist", "main.js")), app).toBe(true);
    const head = (await git(["rev-parse", "HEAD"], { cwd: REPO_ROOT })).trim();
    const labels = c.Labels ?? {};
    expect(labels["org.opencontainers.image.revision"]).toBe(head);
    expect(labels["org.opencontainers.image.version"]).toBe(summary.version);
    expect(labels["org.opencontainers.image.created"]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(labels["org.opencontainers.image.source"]).toBeTruthy();
    // passwd knows the user (ssh and git look it up) and its home is its own.
    expect(readFileSync(join(image.rootfs, "etc", "passwd"), "utf8")).toMatch(
      /^berth:x:65532:65532:[^:]*:\/home\/berth:\/usr\/sbin\/nologin$/m,
    );
  });

  it(
    "runs Node 24 and the tools the apps call, as 65532 (buildah run --isolation chroot)",
    { timeout: 120_000 },
    async () => {
      expect((await image.buildahRun(["node", "--version"], { user: USER })).trim()).toMatch(/^v24\./);
      expect((await image.buildahRun(["id", "-u"])).trim()).toBe("65532"); // the image's own User
      expect(await image.buildahRun(["git", "--version"], { user: USER })).toMatch(/^git version 2\./);
      expect(await image.buildahRun(["sh", "-c", "ssh -V 2>&1"], { user: USER })).toMatch(/OpenSSH/);
      expect(await image.buildahRun(["tini", "--version"], { user: USER })).toMatch(/tini version/);
    },
  );

  it("is at most 120 MB compressed", () => {
    expect(summary.compressedSize).toBeLessThanOrEqual(120_000_000);
    expect(summary.layers.map((l) => l.name)).toEqual(["base", "node", "deps", "berth"]);
  });

  it(
    "holds each app's production dependencies exactly, and no dev dependency, test or TypeScript source",
    { timeout: 120_000 },
    async () => {
      for (const app of APPS) {
        const dir = join(image.rootfs, "app", "apps", app);
        const inImage = deployedPackages(dir);
        const expected = productionClosure(app);
        expect(
          [...inImage].filter((n) => !expected.has(n)).sort(),
          `${app}: packages that are not production dependencies`,
        ).toEqual([]);
        expect(
          [...expected].filter((n) => !inImage.has(n)).sort(),
          `${app}: production dependencies missing from the image`,
        ).toEqual([]);
        // The closure above would hide a dev dependency that both sides wrongly included: name the usual ones.
        for (const dev of [
          "vitest",
          "typescript",
          "tsx",
          "turbo",
          "fast-check",
          "esbuild",
          "@berth/tests",
          "@types/node-forge",
        ])
          expect(inImage.has(dev), `${app}: ${dev}`).toBe(false);
        // Berth's own packages arrive built: package.json and dist/ only (and a README, which npm's packing
        // rules always include, as packages/kube-runtime has one).
        const workspace = readdirSync(join(dir, "node_modules", ".pnpm")).filter((e) => e.startsWith("@berth+"));
        expect(workspace.length, app).toBeGreaterThan(0);
        for (const w of workspace) {
          const pkg = join(
            dir,
            "node_modules",
            ".pnpm",
            w,
            "node_modules",
            "@berth",
            w.slice("@berth+".length).split("@")[0]!,
          );
          expect(
            readdirSync(pkg)
              .filter((f) => f !== "node_modules" && f !== "README.md")
              .sort(),
            w,
          ).toEqual(["dist", "package.json"]);
        }
        expect(readdirSync(dir).sort(), app).toEqual(["dist", "node_modules", "package.json"]);
      }
      // Named, so a lockfile that lost the link cannot make both sides of the closure check agree on its absence.
      expect(deployedPackages(join(image.rootfs, "app", "apps", "controller")).has("@berth/kube-runtime")).toBe(true);
      const files = walk(join(image.rootfs, "app"));
      expect(files.filter((f) => /\.(test|spec)\.[cm]?[jt]sx?$|(^|\/)__tests__(\/|$)/.test(f))).toEqual([]);
      expect(files.filter((f) => /\.d\.[cm]?ts$|\.map$/.test(f))).toEqual([]);
      expect(files.filter((f) => /\.ts$/.test(f) && f.includes("@berth"))).toEqual([]);
      expect(existsSync(join(image.rootfs, "app", "templates", "v1", "templateset.yaml"))).toBe(true);
    },
  );

  it("lets 65532 write nowhere but its home, the git work dir and sticky temp folders", () => {
    const problems: string[] = [];
    for (const rel of walk(image.rootfs)) {
      if (/^(proc|sys|dev)(\/|$)/.test(rel)) continue;
      const st = lstatSync(join(image.rootfs, rel));
      if (st.isSymbolicLink()) continue;
      const own = st.uid === 65532 || st.gid === 65532;
      const sticky = (st.mode & 0o1000) !== 0;
      if (own && !/^(home\/berth|var\/lib\/berth)$/.test(rel)) problems.push(`${rel} is owned by 65532`);
      if ((st.mode & 0o002) !== 0 && !(st.isDirectory() && sticky)) problems.push(`${rel} is world-writable`);
    }
    expect(problems).toEqual([]);
  });

  it(
    "runs with a read-only root: only the mounted volumes and /tmp take writes (the test runner works)",
    { timeout: 120_000 },
    async () => {
      const vol = mkdtempSync(join(scratch, "vol-"));
      chownSync(vol, 65532, 65532);
      const c = runContainer(image, {
        args: [
          "sh",
          "-c",
          "id -u; for p in /app/x /etc/x /home/berth/x /var/lib/berth/x /tmp/x /data/x; do touch $p 2>/dev/null && echo ok $p || echo refused $p; done",
        ],
        mounts: [{ source: vol, target: "/data" }],
      });
      expect(await c.exited).toBe(0);
      const lines = c.output().trim().split("\n");
      expect(lines).toEqual([
        "65532",
        "refused /app/x",
        "refused /etc/x",
        "refused /home/berth/x",
        "refused /var/lib/berth/x",
        "ok /tmp/x",
        "ok /data/x",
      ]);
      expect(existsSync(join(vol, "x"))).toBe(true);
    },
  );
});

// ---- one team through both processes of the image --------------------------------------------------

/** vi.waitFor for a value: polls until `fn` gives one; on time-out names `what`, the last error and the containers' output. */
async function waitUntil<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  ms: number,
  output: () => string,
): Promise<T> {
  let last: unknown;
  try {
    return await vi.waitFor(
      async () => {
        const v = await fn().catch((err: unknown) => {
          last = err;
          return undefined;
        });
        if (!v) throw new Error(`waiting for ${what}`);
        return v;
      },
      { timeout: ms, interval: 250 },
    );
  } catch {
    throw new Error(
      `timed out after ${ms} ms waiting for ${what}; last error: ${last instanceof Error ? last.message : String(last)}\n${output()}`,
    );
  }
}

/** A folder on the host as the kubelet would present a Secret/ConfigMap volume: root-owned, group 65532 (fsGroup). */
function volumeDir(name: string, files: Record<string, string>, mode = 0o440): string {
  const dir = join(scratch, name);
  mkdirSync(dir, { recursive: true });
  for (const [file, content] of Object.entries(files)) {
    writeFileSync(join(dir, file), content);
    chownSync(join(dir, file), 0, 65532);
    chmodSync(join(dir, file), mode);
  }
  chownSync(dir, 0, 65532);
  chmodSync(dir, 0o750);
  return dir;
}

/** An emptyDir: writable by the pod's user. */
function emptyDir(name: string): string {
  const dir = join(scratch, name);
  mkdirSync(dir, { recursive: true });
  chownSync(dir, 65532, 65532);
  return dir;
}

type Container = {
  args: string[];
  env: Array<{ name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }>;
  volumeMounts: Array<{ name: string; mountPath: string; readOnly?: boolean }>;
};

/**
 * What the kubelet would start for the Deployment's first container: its args, its env (fieldRefs resolved
 * from `pod`, then `overrides`), its volume mounts (each volume's host folder from `volumes`; every volume
 * of the pod spec must be given, so a new one is not silently left out), and the pod's user.
 */
function fromDeployment(
  deployment: KubeObject,
  pod: { namespace: string; name: string },
  volumes: Record<string, string>,
  overrides: Record<string, string>,
  extraMounts: Mount[] = [],
) {
  const spec = deployment.spec.template.spec;
  const c = spec.containers[0] as Container;
  const env: Record<string, string> = {};
  for (const e of c.env) {
    if (e.value !== undefined) env[e.name] = e.value;
    else if (e.valueFrom?.fieldRef?.fieldPath === "metadata.namespace") env[e.name] = pod.namespace;
    else if (e.valueFrom?.fieldRef?.fieldPath === "metadata.name") env[e.name] = pod.name;
    else throw new Error(`env ${e.name}: unsupported source ${JSON.stringify(e.valueFrom)}`);
  }
  expect(Object.keys(volumes).sort(), "volumes given for the pod").toEqual(
    (spec.volumes as Array<{ name: string }>).map((v) => v.name).sort(),
  );
  const mounts: Mount[] = c.volumeMounts.map((m) => ({
    source: volumes[m.name]!,
    target: m.mountPath,
    readOnly: m.readOnly ?? false,
  }));
  const sc = spec.securityContext as { runAsUser: number; runAsGroup: number };
  return {
    args: c.args,
    env: { ...env, ...overrides },
    mounts: [...mounts, ...extraMounts],
    user: `${sc.runAsUser}:${sc.runAsGroup}`,
  };
}

function kubeconfigFor(server: string, caData: string, token: string): string {
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: CLUSTER, cluster: { server, "certificate-authority-data": caData } }],
    users: [{ name: "berth-status-reader", user: { token } }],
    contexts: [{ name: CLUSTER, context: { cluster: CLUSTER, user: "berth-status-reader" } }],
    "current-context": CLUSTER,
  });
}

describe.skipIf(skipImage)(
  "a team onboarded by the API in the image gets its credential from the controller in the image",
  () => {
    let cluster: KubeCluster;
    let bare: BareRepo;
    let gitServer: GitHttpServer;
    let issuer: TestIssuer;
    let api: RunningContainer | undefined;
    let controller: RunningContainer | undefined;
    let apiUrl = "";
    let metricsPort = 0;
    const gitUser = "x-access-token";
    const gitToken = `git-token-${Math.random().toString(36).slice(2)}`;
    const team = "smoke";
    const clientId = "0a1b2c3d-0000-4000-8000-000000000001";
    const timings: Record<string, number> = {};
    let t0 = 0;
    const waitFor = <T>(what: string, fn: () => Promise<T | undefined | false>, ms: number) =>
      waitUntil(what, fn, ms, logsOf);
    const logsOf = () =>
      `--- api ---\n${api?.output().slice(-4000) ?? ""}\n--- controller ---\n${controller?.output().slice(-4000) ?? ""}`;
    const admin = () => cluster.kubeConfig();
    const get = async (path: string) => {
      const r = await kubeRequest(admin(), { method: "GET", path });
      return r.status === 200 ? (r.json as KubeObject) : undefined;
    };

    beforeAll(async () => {
      t0 = Date.now();
      const teamCrd = await kustomizeBuild(join(REPO_ROOT, "infra", "controller", "crds"));
      [cluster, bare, issuer] = await Promise.all([
        startKubeCluster({ crds: teamCrd }),
        createBareRepo(),
        startTestIssuer("api://berth"),
      ]);
      gitServer = await startGitHttpServer({ root: join(bare.dir, ".."), username: gitUser, password: gitToken });
      timings.clusterMs = Date.now() - t0;

      // The workload cluster as Flux sets it up: the ASO namespace (clusters/<cluster>/berth-teams.yaml), then
      // the controller overlay (what runs nowhere here, Deployment/PDB/NetworkPolicy, is left out).
      const teamsEntry = parseManifests(
        readFileSync(join(REPO_ROOT, "flux", "clusters", CLUSTER, "berth-teams.yaml"), "utf8"),
        "berth-teams.yaml",
      );
      for (const ns of teamsEntry.filter((o) => o.kind === "Namespace")) await applyObject(admin(), ns, FIELD_MANAGER);
      const controllerOverlay = await kustomizeBuild(join(OVERLAYS, CLUSTER));
      const inert = new Set(["Deployment", "PodDisruptionBudget", "NetworkPolicy"]);
      // In dependency order; the admission policy (berth-controller-configmap-wake) before its binding.
      const kinds = [
        "Namespace",
        "ServiceAccount",
        "Secret",
        "ConfigMap",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
      ];
      for (const kind of kinds) {
        for (const obj of controllerOverlay.filter((o) => o.kind === kind))
          await applyObject(admin(), obj, FIELD_MANAGER);
      }
      const applied = new Set(kinds);
      expect(controllerOverlay.filter((o) => !applied.has(o.kind) && !inert.has(o.kind)).map((o) => o.kind)).toEqual(
        [],
      );

      const caData = cluster.caData!;
      const ca = Buffer.from(caData, "base64").toString("utf8");
      const server = new URL(cluster.server);
      const configMapOf = (objects: KubeObject[]) =>
        objects.find((o) => o.kind === "ConfigMap" && o.metadata.name.startsWith("berth-config"))!.data[
          "berth.yaml"
        ] as string;

      // ---- the controller, in-cluster, as the overlay's Deployment runs it --------------------------------
      // The shipped platform config, plus what BERTH_PROVIDER=azure would have discovered in Azure.
      const platformConfig = parse(configMapOf(controllerOverlay)) as {
        platform: { environments: Array<{ clusters: Array<{ name: string; vars: Record<string, string> }> }> };
      };
      const thisCluster = platformConfig.platform.environments
        .flatMap((e) => e.clusters)
        .find((c) => c.name === CLUSTER)!;
      Object.assign(thisCluster.vars, {
        TENANT_ID: "72f988bf-86f1-41af-91ab-2d7cd011db47",
        SUBSCRIPTION_ID: "3f2b1c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
        CLUSTER_OIDC_ISSUER_URL: "https://westeurope.oic.prod-aks.azure.com/tenant/cluster/",
        AZURE_LOCATION: "westeurope",
        PLATFORM_CLIENT_ID: "0a1b2c3d-0000-4000-8000-0000000000ff",
      });
      const controllerToken = await requestServiceAccountToken(admin(), "berth-system", "berth-controller");
      metricsPort = await freePort();
      const deployment = controllerOverlay.find((o) => o.kind === "Deployment")!;
      const run = fromDeployment(
        deployment,
        { namespace: "berth-system", name: "berth-controller-smoke" },
        {
          config: volumeDir("controller-config", { "berth.yaml": stringify(platformConfig) }, 0o444),
          tmp: emptyDir("controller-tmp"),
        },
        {
          BERTH_PROVIDER: "static",
          BERTH_METRICS_PORT: String(metricsPort),
          KUBERNETES_SERVICE_HOST: server.hostname,
          KUBERNETES_SERVICE_PORT: server.port,
        },
        // What the kubelet projects for the pod's ServiceAccount.
        [
          {
            source: volumeDir("sa-token", { token: controllerToken, "ca.crt": ca, namespace: "berth-system" }, 0o444),
            target: "/var/run/secrets/kubernetes.io/serviceaccount",
            readOnly: true,
          },
        ],
      );
      expect(run.user).toBe(image.config.User);
      expect(run.env.KUBECONFIG).toBeUndefined();
      controller = runContainer(image, run);
      await waitFor(
        "platform-vars from the controller",
        async () => get(`/api/v1/namespaces/${ASO_NS}/configmaps/platform-vars`),
        60_000,
      );
      timings.controllerMs = Date.now() - t0;

      // ---- the API, as the management overlay's Deployment runs it -----------------------------------------
      const apiOverlay = await kustomizeBuild(join(OVERLAYS, "management"));
      const readerToken = await requestServiceAccountToken(admin(), "berth-system", "berth-status-reader");
      const apiPort = await freePort();
      const apiRun = fromDeployment(
        apiOverlay.find((o) => o.kind === "Deployment")!,
        { namespace: "berth-api", name: "berth-api-smoke" },
        {
          config: volumeDir("api-config", { "berth.yaml": configMapOf(apiOverlay) }, 0o444),
          "git-credential": volumeDir("git-credential", { token: gitToken }),
          "status-kubeconfigs": volumeDir("status-kubeconfigs", {
            [`${CLUSTER}.kubeconfig`]: kubeconfigFor(cluster.server, caData, readerToken),
          }),
          // Secret berth-flux-receivers not created yet: the kubelet mounts an optional Secret that is absent as an empty folder.
          "flux-receivers": volumeDir("flux-receivers", {}),
          work: emptyDir("api-work"),
          tmp: emptyDir("api-tmp"),
        },
        // Only what points at this machine's stand-ins: the remote, the token issuer, the listen address.
        {
          BERTH_GIT_URL: gitServer.repoUrl("flux.git"),
          BERTH_OIDC_ISSUER: issuer.issuer,
          BERTH_OIDC_JWKS_URI: issuer.jwksUri,
          BERTH_HOST: "127.0.0.1",
          BERTH_PORT: String(apiPort),
          BERTH_METRICS_PORT: "0",
        },
      );
      api = runContainer(image, apiRun);
      apiUrl = `http://127.0.0.1:${apiPort}`;
      await waitFor("the API's /readyz", async () => (await fetch(`${apiUrl}/readyz`)).ok, 90_000);
      timings.apiMs = Date.now() - t0;
    }, 300_000);

    afterAll(async () => {
      await Promise.all([api?.stop(5_000), controller?.stop(5_000)]);
      await Promise.all([cluster?.stop(), gitServer?.stop(), issuer?.stop()]);
      await bare?.remove();
    });

    it("runs both as uid 65532 under tini as PID 1", () => {
      for (const [name, c] of [
        ["api", api!],
        ["controller", controller!],
      ] as const) {
        const init = c.pid()!;
        expect(processInfo(init).cmdline.slice(0, 2), name).toEqual(["/usr/bin/tini", "--"]);
        const node = descendants(init)
          .map(processInfo)
          .find((p) => p.cmdline[0] === "node")!;
        expect(node.cmdline.slice(1), name).toEqual([`apps/${name}/dist/main.js`]);
        expect([node.uid, node.gid], name).toEqual([65532, 65532]);
        expect(processInfo(init).uid, name).toBe(65532);
      }
    });

    it("onboards a team through the API (201), and the commit is in the remote", async () => {
      const token = await issuer.sign({ sub: "smoke-tester", roles: ["Berth.Write"] });
      const res = await fetch(`${apiUrl}/v1/teams`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({
          name: team,
          description: "Smoke test team",
          owners: ["0b9a3c1e-1111-4222-8333-444455556666"],
          environments: ["dev"],
          roleAssignments: [{ role: "rg-contributor" }],
        }),
      });
      const body = (await res.json()) as { revision: string; committed: boolean };
      expect(res.status, JSON.stringify(body)).toBe(201);
      const remote = await inspectRemote(bare.url);
      expect(remote.head).toBe(body.revision);
      expect([...remote.files.keys()]).toEqual(
        expect.arrayContaining([
          `teams/${team}/base/team.yaml`,
          `clusters/${CLUSTER}/teams/${teamShard(team)}/${team}.yaml`,
        ]),
      );
      timings.onboardedMs = Date.now() - t0;
    }, 180_000);

    it("gets the team's credential from the controller once Flux and ASO have done their part", async () => {
      // Flux: the team's Kustomization on this cluster, built from a clone of the remote and substituted from
      // the platform-vars the controller wrote (strict, as Flux 2.9).
      const clone = join(scratch, "flux-clone");
      await git(["clone", "--quiet", bare.url, clone]);
      const [fluxKustomization] = parseManifests(
        readFileSync(join(clone, "clusters", CLUSTER, "teams", teamShard(team), `${team}.yaml`), "utf8"),
        "flux kustomization",
      );
      const vars = (await get(`/api/v1/namespaces/${ASO_NS}/configmaps/platform-vars`))!.data as Record<string, string>;
      const objects = parseManifests(
        fluxSubstitute(
          await kustomizeText(join(clone, fluxKustomization!.spec.path)),
          vars,
          fluxKustomization!.spec.path,
        ),
        team,
      );
      for (const o of [
        ...objects.filter((o) => o.kind === "Namespace"),
        ...objects.filter((o) => o.kind !== "Namespace"),
      ])
        await applyObject(admin(), o, "kustomize-controller");
      // ASO: the identity exists in Azure; its ConfigMap in the ASO namespace.
      await applyObject(
        admin(),
        {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: `${team}-identity`, namespace: ASO_NS },
          data: { clientId, principalId: "99999999-9999-4999-8999-999999999999", tenantId: vars.TENANT_ID! },
        },
        "azureserviceoperator",
      );

      const secret = await waitFor(
        `aso-credential in ${team}`,
        async () => {
          const s = await get(`/api/v1/namespaces/${team}/secrets/aso-credential`);
          return s && Buffer.from(s.data?.AZURE_CLIENT_ID ?? "", "base64").toString() === clientId ? s : undefined;
        },
        60_000,
      );
      const data = Object.fromEntries(
        Object.entries(secret.data as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, "base64").toString()]),
      );
      expect(data).toMatchObject({
        AZURE_CLIENT_ID: clientId,
        AZURE_TENANT_ID: vars.TENANT_ID,
        AZURE_SUBSCRIPTION_ID: vars.SUBSCRIPTION_ID,
      });
      timings.credentialMs = Date.now() - t0;
    }, 180_000);

    it("reports the team's status on the cluster through the API (status-reader token)", async () => {
      const token = await issuer.sign({ sub: "smoke-reader", roles: ["Berth.Read"] });
      const status = await waitFor(
        "status reported by the controller, read by the API",
        async () => {
          const res = await fetch(`${apiUrl}/v1/teams/${team}/status`, {
            headers: { authorization: `Bearer ${token}` },
          });
          const body = (await res.json()) as {
            clusters?: Array<{ cluster: string; state: string; clientId?: string }>;
          };
          const mine = body.clusters?.find((c) => c.cluster === CLUSTER);
          return mine?.state === "reported" && mine.clientId === clientId ? mine : undefined;
        },
        60_000,
      );
      expect(status.state).toBe("reported");
      expect((await fetch(`http://127.0.0.1:${metricsPort}/readyz`)).status).toBe(200);
    }, 180_000);

    it("stops both gracefully on SIGTERM (tini forwards it)", async () => {
      const [apiExit, controllerExit] = await Promise.all([api!.stop(40_000), controller!.stop(30_000)]);
      expect(apiExit, logsOf()).toBe(0);
      expect(controllerExit, logsOf()).toBe(0);
      expect(api!.output()).toContain("shutting down");
      expect(controller!.output()).toContain("releasing the lease");
      console.log(
        `[tests/image] smoke: cluster+git+issuer ${timings.clusterMs} ms, controller leading ${timings.controllerMs} ms, API ready ${timings.apiMs} ms, team onboarded ${timings.onboardedMs} ms, credential ${timings.credentialMs} ms, all stopped ${Date.now() - t0} ms (load ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")})`,
      );
    }, 180_000);
  },
);

describe.skipIf(skipImage)(
  "the API in the image pushes over SSH with a mounted deploy key (the git-ssh component)",
  () => {
    let bare: BareRepo;
    let ssh: GitSshServer;
    let issuer: TestIssuer;
    let api: RunningContainer | undefined;
    let apiUrl = "";

    beforeAll(async () => {
      [bare, ssh, issuer] = await Promise.all([createBareRepo(), startGitSshServer(), startTestIssuer("api://berth")]);
      // The management overlay with the component switched on, as docs/install.md step 5 says.
      const fleet = join(scratch, "fleet-ssh");
      cpSync(join(REPO_ROOT, "flux"), fleet, { recursive: true, dereference: true });
      const overlay = join(fleet, "berth", "overlays", "management");
      const text = readFileSync(join(overlay, "kustomization.yaml"), "utf8");
      writeFileSync(
        join(overlay, "kustomization.yaml"),
        text.replace("  # - ../../api/git-ssh", "  - ../../api/git-ssh"),
      );
      const objects = await kustomizeBuild(overlay);
      const config = objects.find((o) => o.kind === "ConfigMap")!.data["berth.yaml"] as string;
      const port = await freePort();
      // The deploy key as a Secret volume presents it: root-owned, group 65532, mode 0440 (ssh accepts a key
      // its user does not own with group read).
      const gitCredential = volumeDir("ssh-credential", {
        "ssh-privatekey": readFileSync(ssh.privateKeyPath, "utf8"),
        known_hosts: readFileSync(ssh.knownHostsPath, "utf8"),
      });
      // The status kubeconfig the config names; never used here (no GET of a status).
      const status = volumeDir("ssh-status", {
        "aks-dev-weu.kubeconfig": kubeconfigFor(
          "https://127.0.0.1:9",
          Buffer.from("unused").toString("base64"),
          "unused",
        ),
      });
      const run = fromDeployment(
        objects.find((o) => o.kind === "Deployment")!,
        { namespace: "berth-api", name: "berth-api-ssh" },
        {
          config: volumeDir("ssh-config", { "berth.yaml": config }, 0o444),
          "git-credential": gitCredential,
          "status-kubeconfigs": status,
          "flux-receivers": volumeDir("ssh-flux-receivers", {}),
          work: emptyDir("ssh-work"),
          tmp: emptyDir("ssh-tmp"),
        },
        {
          BERTH_GIT_URL: ssh.repoUrl(bare.dir),
          BERTH_OIDC_ISSUER: issuer.issuer,
          BERTH_OIDC_JWKS_URI: issuer.jwksUri,
          BERTH_HOST: "127.0.0.1",
          BERTH_PORT: String(port),
          BERTH_METRICS_PORT: "0",
        },
      );
      expect(run.env.BERTH_GIT_SSH_KEY_FILE).toBe("/var/run/secrets/berth/git/ssh-privatekey");
      api = runContainer(image, run);
      apiUrl = `http://127.0.0.1:${port}`;
      await waitUntil(
        "the API's /readyz over SSH",
        async () => (await fetch(`${apiUrl}/readyz`)).ok,
        90_000,
        () => api?.output().slice(-4000) ?? "",
      );
    }, 180_000);

    afterAll(async () => {
      await api?.stop(5_000);
      await Promise.all([ssh?.stop(), issuer?.stop()]);
      await bare?.remove();
    });

    it("onboards a team (201) whose commit is in the SSH remote", async () => {
      const token = await issuer.sign({ sub: "ssh-tester", roles: ["Berth.Write"] });
      const res = await fetch(`${apiUrl}/v1/teams`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({
          name: "ssh-team",
          description: "Onboarded over SSH",
          owners: ["0b9a3c1e-1111-4222-8333-444455556666"],
          environments: ["dev"],
        }),
      });
      const body = (await res.json()) as { revision: string };
      expect(res.status, JSON.stringify(body)).toBe(201);
      expect((await inspectRemote(bare.url)).head).toBe(body.revision);
      expect(await api!.stop(40_000)).toBe(0);
    }, 180_000);
  },
);
