/**
 * A real kube-apiserver (v1.20, built from Debian bookworm's `kubernetes` source package) backed by
 * a real etcd, both on 127.0.0.1 with free ports — the same idea as controller-runtime's envtest.
 * No controller-manager or scheduler runs: namespaces never finish deleting and nothing is
 * garbage-collected, so give every test its own namespace or object names.
 *
 * Binaries: `bash infra/test-cluster/ensure-binaries.sh` installs etcd and builds/caches
 * kube-apiserver. Override the lookup with ETCD_BIN / KUBE_APISERVER_BIN.
 *
 *   const cluster = await startKubeCluster();          // ~5 s, CRDs from ../shared/crds loaded
 *   const kc = cluster.kubeConfig();                    // admin (system:masters)
 *   const tester = cluster.kubeConfigFor("tester");    // token user, no RBAC bindings
 *   await cluster.stop();                               // ~0.1 s; kills both processes, removes temp dirs
 */
import { spawn, type ChildProcess } from "node:child_process";
import { generateKeyPair, randomBytes, randomUUID } from "node:crypto";
import { accessSync, constants as fsConstants, existsSync, mkdtempSync, openSync, closeSync, readlinkSync, rmSync, statfsSync } from "node:fs";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { homedir, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { KubeConfig } from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { createCertificateAuthority, type CertificateAuthority } from "./kube-pki.js";
import { kubeRequest } from "./kube-http.js";

export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const ENSURE_SCRIPT = "infra/test-cluster/ensure-binaries.sh";
/**
 * PATCH_LEVEL of ensure-binaries.sh (keep in sync): the cached link must point at
 * `<source version>-<this>/kube-apiserver`. An older build (e.g. one that refuses "" in custom
 * resources as null) counts as missing, so the tests say to run the script instead of failing oddly.
 */
export const KUBE_APISERVER_PATCH_LEVEL = "berth2";
/** CRDs shipped beside the repository (CI clones it with shared/ next to it). */
export const DEFAULT_CRD_DIR = resolve(REPO_ROOT, "../shared/crds");

export interface KubeBinaries {
  etcd: string | null;
  kubeApiserver: string | null;
}

export class KubeBinariesMissingError extends Error {
  constructor(readonly missing: string[]) {
    super(
      `test cluster binaries missing: ${missing.join("; ")}. ` +
        `Run \`bash ${ENSURE_SCRIPT}\` from the repository root (installs etcd, builds kube-apiserver 1.20 ` +
        `into \${BERTH_CACHE_DIR:-$HOME/.cache/berth}; 5-11 min the first time), or set ETCD_BIN / KUBE_APISERVER_BIN.`,
    );
    this.name = "KubeBinariesMissingError";
  }
}

function cacheDir(): string {
  return process.env.BERTH_CACHE_DIR || join(process.env.HOME || homedir(), ".cache", "berth");
}

function executable(path: string): boolean {
  try {
    accessSync(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(cmd: string): string | null {
  for (const dir of (process.env.PATH ?? "").split(":")) {
    if (dir && executable(join(dir, cmd))) return join(dir, cmd);
  }
  return null;
}

/** Where the binaries are, or null for each that is missing. Never throws. */
export function findKubeBinaries(): KubeBinaries {
  const etcdEnv = process.env.ETCD_BIN;
  const apiEnv = process.env.KUBE_APISERVER_BIN;
  const cached = join(cacheDir(), "kube-apiserver-1.20", "kube-apiserver");
  return {
    etcd: etcdEnv ? (executable(etcdEnv) ? etcdEnv : null) : executable("/usr/bin/etcd") ? "/usr/bin/etcd" : onPath("etcd"),
    kubeApiserver: apiEnv ? (executable(apiEnv) ? apiEnv : null) : executable(cached) && cachedBuildIsCurrent(cached) ? cached : null,
  };
}

function linkTarget(path: string): string | null {
  try {
    return readlinkSync(path);
  } catch {
    return null;
  }
}

function cachedBuildIsCurrent(link: string): boolean {
  return linkTarget(link)?.endsWith(`-${KUBE_APISERVER_PATCH_LEVEL}/kube-apiserver`) ?? false;
}

/** Why the cluster cannot start, or null when both binaries are there. */
export function missingKubeBinaries(): string[] {
  const b = findKubeBinaries();
  const cached = join(cacheDir(), "kube-apiserver-1.20", "kube-apiserver");
  const missing: string[] = [];
  if (!b.etcd) missing.push(process.env.ETCD_BIN ? `ETCD_BIN=${process.env.ETCD_BIN} is not executable` : "etcd (Debian package etcd-server) not found");
  if (!b.kubeApiserver)
    missing.push(
      process.env.KUBE_APISERVER_BIN
        ? `KUBE_APISERVER_BIN=${process.env.KUBE_APISERVER_BIN} is not executable`
        : executable(cached)
          ? `kube-apiserver at ${cached} is an outdated build (-> ${linkTarget(cached)}; want patch level ${KUBE_APISERVER_PATCH_LEVEL})`
          : `kube-apiserver not found at ${cached}`,
    );
  return missing;
}

/**
 * Whether suites needing the real cluster skip: only on a developer machine without the binaries. In CI
 * (env CI set) a missing binary is a failure, never a skip — CI must have built it.
 */
export function skipWithoutKubeBinaries(): boolean {
  const missing = missingKubeBinaries();
  const inCI = Boolean(process.env.CI) && process.env.CI !== "false" && process.env.CI !== "0";
  if (missing.length === 0 || inCI) return false;
  console.warn(`[kube tests] SKIPPED: ${missing.join("; ")}. Run \`bash ${ENSURE_SCRIPT}\` to enable these tests.`);
  return true;
}

export interface TokenUser {
  name: string;
  groups?: string[];
}

export interface KubeClusterOptions {
  /** Folders whose *.yaml / *.yml CRDs are created at start (recursively). Default: `../shared/crds`. `false` loads none. */
  crdDirs?: string[] | false;
  /** Extra CRD objects to create. */
  crds?: Record<string, unknown>[];
  /** Token users added to the token file, besides admin (system:masters), "controller" and "tester". */
  users?: TokenUser[];
  /** Deadline for etcd + apiserver + CRDs. Default 60 s. */
  startTimeoutMs?: number;
  /** Appended to the kube-apiserver command line. */
  extraApiserverArgs?: string[];
}

export interface KubeCluster {
  /** https://127.0.0.1:PORT */
  server: string;
  adminToken: string;
  /** base64 PEM of the CA that signed the serving certificate (kubeconfig `certificate-authority-data`). */
  caData?: string;
  etcdUrl: string;
  /** Temp folder holding keys, token file, logs and etcd data; removed by stop(). */
  dir: string;
  /** Names of the CRDs loaded at start. */
  crdNames: string[];
  /** Milliseconds from the call to ready (readyz + CRDs established). */
  startupMs: number;
  /** Where the startup time went: until /readyz answered ok, then until all CRDs were Established (their creation starts before readyz). */
  timings: { readyzMs: number; crdsMs: number };
  /** Process ids, for diagnostics. */
  pids: { etcd: number; kubeApiserver: number };
  /** Admin (group system:masters) client config. */
  kubeConfig(): KubeConfig;
  /**
   * Client config for `user`. A token user of the token file when one matches (admin, "controller",
   * "tester" and opts.users — with `groups` omitted or equal to theirs); otherwise a client
   * certificate is issued on the fly (CN = user, O = groups), so any user/groups pair works.
   */
  kubeConfigFor(user: string, groups?: string[]): KubeConfig;
  /** Writes a kubeconfig for `user` into the cluster's temp folder and returns its path (for kubectl/flux CLIs). */
  writeKubeconfigFile(user: string, groups?: string[]): Promise<string>;
  /** Kills both processes and removes the temp folders. Idempotent. */
  stop(): Promise<void>;
}

const DEFAULT_USERS: TokenUser[] = [
  { name: "controller", groups: [] },
  { name: "tester", groups: [] },
];

// ---- helpers ------------------------------------------------------------------------------------

async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", rej);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => res(port));
    });
  });
}

async function freePorts(n: number): Promise<number[]> {
  // Hold all listeners open together so the ports are distinct.
  const servers = await Promise.all(
    Array.from({ length: n }, () => {
      return new Promise<import("node:net").Server>((res, rej) => {
        const srv = createServer();
        srv.on("error", rej);
        srv.listen(0, "127.0.0.1", () => res(srv));
      });
    }),
  );
  const ports = servers.map((s) => {
    const a = s.address();
    return typeof a === "object" && a ? a.port : 0;
  });
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports.every((p) => p > 0) ? ports : Promise.all(Array.from({ length: n }, freePort));
}

/** A temp base on tmpfs when there is room (etcd fsyncs a lot; 3.4 has no --unsafe-no-fsync). */
function tempBase(): string {
  try {
    const st = statfsSync("/dev/shm");
    accessSync("/dev/shm", fsConstants.W_OK);
    if (st.bavail * st.bsize > 1024 * 1024 * 1024) return "/dev/shm";
  } catch {
    /* fall through */
  }
  return tmpdir();
}

async function tail(file: string, lines = 25): Promise<string> {
  try {
    const text = await readFile(file, "utf8");
    return text.trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

async function findYamlFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await findYamlFiles(p)));
    else if (/\.ya?ml$/i.test(entry.name)) out.push(p);
  }
  return out.sort();
}

type Crd = {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string };
  spec?: { conversion?: { strategy?: string; webhook?: unknown; webhookClientConfig?: unknown } };
};

export async function readCrds(dirs: string[]): Promise<Crd[]> {
  const crds: Crd[] = [];
  for (const dir of dirs) {
    if (!existsSync(dir)) {
      throw new Error(`CRD folder ${dir} does not exist (shared/ must be cloned beside the repository)`);
    }
    for (const file of await findYamlFiles(dir)) {
      for (const doc of parseAllDocuments(await readFile(file, "utf8"))) {
        if (doc.errors.length) throw new Error(`${file}: ${doc.errors[0]?.message}`);
        const obj = doc.toJS() as Crd | null;
        if (obj?.kind === "CustomResourceDefinition") crds.push(obj);
      }
    }
  }
  return crds;
}

/** A bare apiserver has no conversion webhook to call: switch to strategy None. */
export function withoutConversionWebhook<T extends Crd>(crd: T): T {
  const copy = structuredClone(crd);
  if (copy.spec?.conversion && copy.spec.conversion.strategy !== "None") copy.spec.conversion = { strategy: "None" };
  return copy;
}

function makeKubeConfig(server: string, caData: string, userName: string, cred: { token: string } | { certData: string; keyData: string }): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "berth-test", server, caData, skipTLSVerify: false }],
    users: [{ name: userName, ...cred }],
    contexts: [{ name: `${userName}@berth-test`, cluster: "berth-test", user: userName }],
    currentContext: `${userName}@berth-test`,
  });
  return kc;
}

function waitExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((res) => {
    const t = setTimeout(() => res(false), ms);
    child.once("exit", () => {
      clearTimeout(t);
      res(true);
    });
  });
}

async function killChild(child: ChildProcess | undefined, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  child.kill(signal);
  if (!(await waitExit(child, 5_000))) {
    child.kill("SIGKILL");
    await waitExit(child, 5_000);
  }
}

// A detached watchdog: if this Node process dies without stop() (SIGKILL, crashed worker), it
// kills etcd/kube-apiserver and removes the temp folder within ~1 s.
const WATCHDOG = `
parent=$1; dir=$2; shift 2
while kill -0 "$parent" 2>/dev/null; do sleep 1; done
kill -TERM "$@" 2>/dev/null; sleep 3; kill -KILL "$@" 2>/dev/null; rm -rf "$dir"
`;

// ---- start ----------------------------------------------------------------------------------------

export async function startKubeCluster(opts: KubeClusterOptions = {}): Promise<KubeCluster> {
  // Free ports are picked then released; another process may grab one in between: retry then.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(opts);
    } catch (err) {
      if (attempt >= 3 || !/address already in use/i.test((err as Error).message)) throw err;
    }
  }
}

async function startOnce(opts: KubeClusterOptions): Promise<KubeCluster> {
  const missing = missingKubeBinaries();
  if (missing.length) throw new KubeBinariesMissingError(missing);
  const bins = findKubeBinaries() as { etcd: string; kubeApiserver: string };
  const t0 = performance.now();
  const deadline = Date.now() + (opts.startTimeoutMs ?? 60_000);
  const crdDirs = opts.crdDirs === false ? [] : (opts.crdDirs ?? [process.env.BERTH_CRDS_DIR || DEFAULT_CRD_DIR]);
  // Read CRDs first: a missing shared/ folder fails before any process starts.
  const crds = [...(await readCrds(crdDirs)), ...((opts.crds ?? []) as Crd[])].map(withoutConversionWebhook);

  const dir = mkdtempSync(join(tempBase(), "berth-kube-"));
  const children: ChildProcess[] = [];
  let watchdog: ChildProcess | undefined;
  let stopped = false;
  const onExit = () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  };
  process.on("exit", onExit);

  const stop = async () => {
    if (stopped) return;
    stopped = true;
    // apiserver first (it holds etcd connections), then etcd. Everything is thrown away, so the
    // apiserver's graceful shutdown (~1.2 s) buys nothing: SIGKILL it.
    await killChild(children[1], "SIGKILL");
    await killChild(children[0]);
    if (watchdog?.pid) {
      try {
        process.kill(-watchdog.pid, "SIGKILL");
      } catch {
        /* already gone */
      }
    }
    process.off("exit", onExit);
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    const [[etcdClientPort = 0, etcdPeerPort = 0, apiPort = 0], saKey] = await Promise.all([
      freePorts(3),
      new Promise<string>((res, rej) =>
        generateKeyPair("rsa", { modulusLength: 2048 }, (err, _pub, priv) =>
          err ? rej(err) : res(priv.export({ type: "pkcs8", format: "pem" }).toString()),
        ),
      ),
    ]);
    const ca: CertificateAuthority = createCertificateAuthority();
    const serving = ca.issue({
      commonName: "kube-apiserver",
      hosts: ["127.0.0.1", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"],
      usage: "server",
    });
    const caData = Buffer.from(ca.certPem).toString("base64");
    const server = `https://127.0.0.1:${apiPort}`;
    const etcdUrl = `http://127.0.0.1:${etcdClientPort}`;

    // token,user,uid,"group1,group2"
    const tokenUsers = new Map<string, { token: string; groups: string[] }>();
    const adminToken = randomBytes(24).toString("hex");
    tokenUsers.set("admin", { token: adminToken, groups: ["system:masters"] });
    for (const u of [...DEFAULT_USERS, ...(opts.users ?? [])]) {
      tokenUsers.set(u.name, { token: randomBytes(24).toString("hex"), groups: u.groups ?? [] });
    }
    const tokenFile = [...tokenUsers].map(([name, u]) => `${u.token},${name},${randomUUID()},"${u.groups.join(",")}"`).join("\n") + "\n";

    await Promise.all([
      writeFile(join(dir, "ca.crt"), ca.certPem),
      writeFile(join(dir, "serving.crt"), serving.certPem),
      writeFile(join(dir, "serving.key"), serving.keyPem, { mode: 0o600 }),
      writeFile(join(dir, "sa.key"), saKey, { mode: 0o600 }),
      writeFile(join(dir, "tokens.csv"), tokenFile, { mode: 0o600 }),
    ]);

    const etcdLog = join(dir, "etcd.log");
    const apiLog = join(dir, "kube-apiserver.log");
    const spawnLogged = (bin: string, args: string[], log: string) => {
      const fd = openSync(log, "a");
      try {
        return spawn(bin, args, { stdio: ["ignore", fd, fd] });
      } finally {
        closeSync(fd);
      }
    };

    children.push(
      spawnLogged(
        bins.etcd,
        [
          "--name=berth-test",
          `--data-dir=${join(dir, "etcd")}`,
          `--listen-client-urls=${etcdUrl}`,
          `--advertise-client-urls=${etcdUrl}`,
          `--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
          `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
          `--initial-cluster=berth-test=http://127.0.0.1:${etcdPeerPort}`,
          "--initial-cluster-state=new",
          "--logger=zap",
          "--log-level=warn",
          "--quota-backend-bytes=2147483648",
        ],
        etcdLog,
      ),
    );
    // Started at once: the apiserver retries etcd until it answers.
    children.push(
      spawnLogged(
        bins.kubeApiserver,
        [
          `--etcd-servers=${etcdUrl}`,
          "--bind-address=127.0.0.1",
          "--advertise-address=127.0.0.1",
          `--secure-port=${apiPort}`,
          "--insecure-port=0",
          `--cert-dir=${join(dir, "certs")}`,
          `--tls-cert-file=${join(dir, "serving.crt")}`,
          `--tls-private-key-file=${join(dir, "serving.key")}`,
          `--client-ca-file=${join(dir, "ca.crt")}`,
          `--token-auth-file=${join(dir, "tokens.csv")}`,
          "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
          `--service-account-key-file=${join(dir, "sa.key")}`,
          `--service-account-signing-key-file=${join(dir, "sa.key")}`,
          "--authorization-mode=RBAC",
          "--disable-admission-plugins=ServiceAccount",
          "--service-cluster-ip-range=10.0.0.0/24",
          // No endpoints for the "kubernetes" service: 127.0.0.1 is not a valid endpoint address.
          "--endpoint-reconciler-type=none",
          "--allow-privileged=true",
          "--profiling=false",
          "--v=1",
          ...(opts.extraApiserverArgs ?? []),
        ],
        apiLog,
      ),
    );
    const [etcdProc, apiProc] = children as [ChildProcess, ChildProcess];
    watchdog = spawn("bash", ["-c", WATCHDOG, "berth-kube-watchdog", String(process.pid), dir, String(etcdProc.pid), String(apiProc.pid)], {
      detached: true,
      stdio: "ignore",
    });
    watchdog.unref();

    const fail = async (why: string): Promise<never> => {
      throw new Error(
        `${why}\n--- kube-apiserver log (${apiLog}) ---\n${await tail(apiLog)}\n--- etcd log ---\n${await tail(etcdLog, 10)}`,
      );
    };

    const adminKc = makeKubeConfig(server, caData, "admin", { token: adminToken });

    // Plain create (not server-side apply): a 1.20 server does not know e.g. x-kubernetes-validations
    // and a create drops it, where an apply would fail on the unknown field.
    const crdNames: string[] = [];
    const loadCrds = async (): Promise<void> => {
      await Promise.all(
        crds.map(async (crd) => {
          const r = await kubeRequest(adminKc, { method: "POST", path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body: crd });
          if (r.status !== 201 && r.status !== 409) {
            throw new Error(`creating CRD ${crd.metadata?.name}: HTTP ${r.status} ${r.body.slice(0, 500)}`);
          }
          crdNames.push(crd.metadata?.name ?? "?");
        }),
      );
      for (const name of crdNames) {
        for (;;) {
          const r = await kubeRequest(adminKc, { method: "GET", path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}` });
          const conds = (r.json as { status?: { conditions?: Array<{ type: string; status: string }> } } | undefined)?.status?.conditions ?? [];
          if (conds.some((c) => c.type === "Established" && c.status === "True")) break;
          if (Date.now() > deadline) await fail(`CRD ${name} not Established before the deadline: ${JSON.stringify(conds)}`);
          await sleep(50);
        }
      }
    };

    // Wait for /readyz. The CRDs are created as soon as the apiextensions hooks pass (admin is
    // system:masters, authorized before the RBAC bootstrap finishes): saves ~1 s.
    const CRD_HOOKS = ["[+]poststarthook/start-apiextensions-controllers ok", "[+]poststarthook/crd-informer-synced ok", "[+]informer-sync ok"];
    let crdsLoading: Promise<void> | undefined;
    let readyzMs = 0;
    for (;;) {
      for (const [name, c] of [["etcd", etcdProc], ["kube-apiserver", apiProc]] as const) {
        if (c.exitCode !== null || c.signalCode !== null) await fail(`${name} exited early (${c.exitCode ?? c.signalCode})`);
      }
      let r: Awaited<ReturnType<typeof kubeRequest>> | undefined;
      try {
        r = await kubeRequest(adminKc, { method: "GET", path: "/readyz?verbose", timeoutMs: 2_000 });
      } catch {
        /* not listening yet */
      }
      if (r && !crdsLoading && (r.status === 200 || CRD_HOOKS.every((h) => r.body.includes(h)))) {
        crdsLoading = loadCrds();
        crdsLoading.catch(() => undefined); // awaited below
      }
      if (r?.status === 200) {
        readyzMs = Math.round(performance.now() - t0);
        break;
      }
      if (Date.now() > deadline) await fail("kube-apiserver not ready before the deadline");
      await sleep(100);
    }
    await crdsLoading;
    crdNames.sort();

    const kubeConfigFor = (user: string, groups?: string[]): KubeConfig => {
      const tu = tokenUsers.get(user);
      const same = (a: string[], b: string[]) => a.length === b.length && [...a].sort().every((g, i) => g === [...b].sort()[i]);
      if (tu && (groups === undefined || same(groups, tu.groups))) return makeKubeConfig(server, caData, user, { token: tu.token });
      const cert = ca.issue({ commonName: user, organizations: groups ?? [], usage: "client" });
      return makeKubeConfig(server, caData, user, {
        certData: Buffer.from(cert.certPem).toString("base64"),
        keyData: Buffer.from(cert.keyPem).toString("base64"),
      });
    };

    return {
      server,
      adminToken,
      caData,
      etcdUrl,
      dir,
      crdNames,
      startupMs: Math.round(performance.now() - t0),
      timings: { readyzMs, crdsMs: Math.round(performance.now() - t0) - readyzMs },
      pids: { etcd: etcdProc.pid ?? -1, kubeApiserver: apiProc.pid ?? -1 },
      kubeConfig: () => makeKubeConfig(server, caData, "admin", { token: adminToken }),
      kubeConfigFor,
      async writeKubeconfigFile(user: string, groups?: string[]): Promise<string> {
        const suffix = groups?.length ? `-${groups.join("_").replace(/[^A-Za-z0-9_.-]/g, "_")}` : "";
        const file = join(dir, `kubeconfig-${user.replace(/[^A-Za-z0-9_.-]/g, "_")}${suffix}.json`);
        await writeFile(file, kubeConfigFor(user, groups).exportConfig(), { mode: 0o600 });
        return file;
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
