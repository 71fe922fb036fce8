/**
 * A real kube-apiserver and etcd on 127.0.0.1 with free ports (the same idea as controller-runtime's envtest),
 * optionally with kube-controller-manager's namespace and garbage-collector controllers, so that deleted
 * namespaces empty and finish and owned objects go with their owners. The versions are the ones
 * infra/test-cluster/go names (Kubernetes 1.35, etcd 3.6); `bash infra/test-cluster/ensure-binaries.sh` builds
 * them from their Go modules (`npm test` runs it first). Override with ETCD_BIN / KUBE_APISERVER_BIN.
 *
 *   const cluster = await startKubeCluster();          // ~5 s; Flux's and ASO's CRDs of the built versions loaded
 *   const kc = cluster.kubeConfig();                    // admin (system:masters)
 *   const tester = cluster.kubeConfigFor("tester");    // token user, no RBAC bindings
 *   await cluster.stop();                               // kills the processes, removes temp dirs
 *
 * A missing binary is an error (TestClusterBinariesMissingError naming the script), never a skipped test.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { generateKeyPair, randomBytes, randomUUID } from "node:crypto";
import {
  accessSync,
  constants as fsConstants,
  existsSync,
  mkdtempSync,
  openSync,
  closeSync,
  rmSync,
  statfsSync,
} from "node:fs";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { KubeConfig } from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { createCertificateAuthority, type CertificateAuthority } from "./kube-pki.js";
import { freePorts, retryOnPortRace } from "./ports.js";
import { kubeRequest } from "./kube-http.js";
import { componentCrdDir, programPath } from "./test-cluster-binaries.js";
import { logTail, startWatchdog } from "./watchdog.js";
import { requireNeed } from "./needs.js";

export { REPO_ROOT } from "./test-cluster-binaries.js";
export { ENSURE_SCRIPT, TestClusterBinariesMissingError } from "./test-cluster-binaries.js";

/**
 * The CRDs a test cluster starts with: Flux's source, kustomize, notification and source-watcher APIs (flux/ installs
 * a Receiver and ArtifactGenerators) and ASO's resources, managedidentity and authorization groups, each from the
 * module version the tests run (infra/test-cluster/go).
 */
export function defaultCrdDirs(): string[] {
  return [
    componentCrdDir("source-controller"),
    componentCrdDir("kustomize-controller"),
    componentCrdDir("notification-controller"),
    componentCrdDir("source-watcher"),
    componentCrdDir("helm-controller"),
    componentCrdDir("aso"),
  ];
}

export interface TokenUser {
  name: string;
  groups?: string[];
}

export interface KubeClusterOptions {
  /** Folders whose *.yaml / *.yml CRDs are created at start (recursively). Default: `defaultCrdDirs()`. `false` loads none. */
  crdDirs?: string[] | false;
  /** Extra CRD objects to create. */
  crds?: Record<string, unknown>[];
  /** Token users added to the token file, besides admin (system:masters), "controller" and "tester". */
  users?: TokenUser[];
  /** Deadline for etcd + apiserver + CRDs. Default 60 s. */
  startTimeoutMs?: number;
  /** Appended to the kube-apiserver command line. */
  extraApiserverArgs?: string[];
  /**
   * Also run kube-controller-manager's namespace, garbage-collector, service-account-token and ClusterRole
   * aggregation controllers: a deleted namespace is emptied and goes (after its objects' finalizers), objects go with
   * their owners, a `kubernetes.io/service-account-token` Secret gets its token, and `admin`, `edit` and `view` hold
   * the rules of the ClusterRoles labelled to aggregate into them. Off by default: a test without them keeps every
   * object it deletes in view (namespaces stay Terminating).
   */
  controllers?: boolean;
  /** Keep the apiserver's audit log of every delete and deletecollection request (read with `deletes()`). */
  auditDeletes?: boolean;
  /**
   * The service-account token issuer (`--service-account-issuer`, the `iss` of every token it issues). Default
   * `https://kubernetes.default.svc.cluster.local`; an AKS-shaped URL makes the cluster's tokens what Entra's
   * federated credentials trust (CLUSTER_OIDC_ISSUER_URL).
   */
  serviceAccountIssuer?: string;
}

/** A delete the apiserver was asked for, from its audit log. */
export interface AuditedDelete {
  user: string;
  /** Who the user acted as (kustomize-controller impersonating a Kustomization's serviceAccountName). */
  impersonatedUser?: string;
  verb: "delete" | "deletecollection";
  resource: string;
  namespace?: string;
  name?: string;
  code: number;
  time: string;
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
  pids: { etcd: number; kubeApiserver: number; controllerManager?: number };
  /** The cluster's CA: it signs the apiserver's certificate and client certificates; tests issue serving certificates from it. */
  ca: CertificateAuthority;
  /** The service-account token issuer (`iss` of projected tokens). */
  serviceAccountIssuer: string;
  /** Every delete request the apiserver has answered so far (needs `auditDeletes`). */
  deletes(): Promise<AuditedDelete[]>;
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

const SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local";

const DEFAULT_USERS: TokenUser[] = [
  { name: "controller", groups: [] },
  { name: "tester", groups: [] },
];

// ---- helpers ------------------------------------------------------------------------------------

/** A temp base on tmpfs when there is room (etcd fsyncs a lot). */
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

function makeKubeConfig(
  server: string,
  caData: string,
  userName: string,
  cred: { token: string } | { certData: string; keyData: string },
): KubeConfig {
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

// ---- start ----------------------------------------------------------------------------------------

export async function startKubeCluster(opts: KubeClusterOptions = {}): Promise<KubeCluster> {
  requireNeed("cluster");
  return retryOnPortRace(() => startOnce(opts));
}

async function startOnce(opts: KubeClusterOptions): Promise<KubeCluster> {
  const bins = {
    etcd: programPath("etcd", "etcd", "ETCD_BIN"),
    kubeApiserver: programPath("kubernetes", "kube-apiserver", "KUBE_APISERVER_BIN"),
    controllerManager: opts.controllers
      ? programPath("kubernetes", "kube-controller-manager", "KUBE_CONTROLLER_MANAGER_BIN")
      : undefined,
  };
  const t0 = performance.now();
  const deadline = Date.now() + (opts.startTimeoutMs ?? 60_000);
  const crdDirs = opts.crdDirs === false ? [] : (opts.crdDirs ?? defaultCrdDirs());
  const serviceAccountIssuer = opts.serviceAccountIssuer ?? SERVICE_ACCOUNT_ISSUER;
  // Read CRDs first: a missing folder fails before any process starts.
  const crds = [...(await readCrds(crdDirs)), ...((opts.crds ?? []) as Crd[])];

  const dir = mkdtempSync(join(tempBase(), "berth-kube-"));
  const children: ChildProcess[] = [];
  const watchdogs: ChildProcess[] = [];
  let stopped = false;
  const onExit = () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  };
  process.on("exit", onExit);

  const stop = async () => {
    if (stopped) return;
    stopped = true;
    // Controllers, then the apiserver (it holds etcd connections), then etcd. Everything is thrown away, so
    // the apiserver's graceful shutdown (~1.2 s) buys nothing: SIGKILL it.
    await killChild(children[2], "SIGKILL");
    await killChild(children[1], "SIGKILL");
    await killChild(children[0]);
    for (const w of watchdogs) {
      try {
        if (w.pid) process.kill(-w.pid, "SIGKILL");
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
    const tokenFile =
      [...tokenUsers].map(([name, u]) => `${u.token},${name},${randomUUID()},"${u.groups.join(",")}"`).join("\n") +
      "\n";

    await Promise.all([
      writeFile(join(dir, "ca.crt"), ca.certPem),
      writeFile(join(dir, "serving.crt"), serving.certPem),
      writeFile(join(dir, "serving.key"), serving.keyPem, { mode: 0o600 }),
      writeFile(join(dir, "sa.key"), saKey, { mode: 0o600 }),
      writeFile(join(dir, "tokens.csv"), tokenFile, { mode: 0o600 }),
      // Deletes only, once each (when answered), with who asked and the answer's code.
      writeFile(
        join(dir, "audit-policy.yaml"),
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n  - level: Metadata\n    verbs: [delete, deletecollection]\n  - level: None\n",
      ),
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
          `--cert-dir=${join(dir, "certs")}`,
          `--tls-cert-file=${join(dir, "serving.crt")}`,
          `--tls-private-key-file=${join(dir, "serving.key")}`,
          `--client-ca-file=${join(dir, "ca.crt")}`,
          `--token-auth-file=${join(dir, "tokens.csv")}`,
          `--service-account-issuer=${serviceAccountIssuer}`,
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
          ...(opts.auditDeletes
            ? [
                `--audit-policy-file=${join(dir, "audit-policy.yaml")}`,
                `--audit-log-path=${join(dir, "audit.log")}`,
                "--audit-log-mode=blocking",
              ]
            : []),
          ...(opts.extraApiserverArgs ?? []),
        ],
        apiLog,
      ),
    );
    const [etcdProc, apiProc] = children as [ChildProcess, ChildProcess];
    const watch = (...pids: Array<number | undefined>) => {
      watchdogs.push(startWatchdog("berth-kube-watchdog", pids, { graceSeconds: 3, removeDir: dir }));
    };
    watch(etcdProc.pid, apiProc.pid);

    const fail = async (why: string): Promise<never> => {
      throw new Error(
        `${why}\n--- kube-apiserver log (${apiLog}) ---\n${logTail(apiLog, 25)}\n--- etcd log ---\n${logTail(etcdLog, 10)}`,
      );
    };

    const adminKc = makeKubeConfig(server, caData, "admin", { token: adminToken });

    const crdNames: string[] = [];
    const loadCrds = async (): Promise<void> => {
      await Promise.all(
        crds.map(async (crd) => {
          const r = await kubeRequest(adminKc, {
            method: "POST",
            path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            body: crd,
          });
          if (r.status !== 201 && r.status !== 409) {
            throw new Error(`creating CRD ${crd.metadata?.name}: HTTP ${r.status} ${r.body.slice(0, 500)}`);
          }
          crdNames.push(crd.metadata?.name ?? "?");
        }),
      );
      for (const name of crdNames) {
        for (;;) {
          const r = await kubeRequest(adminKc, {
            method: "GET",
            path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`,
          });
          const conds =
            (r.json as { status?: { conditions?: Array<{ type: string; status: string }> } } | undefined)?.status
              ?.conditions ?? [];
          if (conds.some((c) => c.type === "Established" && c.status === "True")) break;
          if (Date.now() > deadline)
            await fail(`CRD ${name} not Established before the deadline: ${JSON.stringify(conds)}`);
          await sleep(50);
        }
      }
      // Established is not yet served: until a version's storage is initialised its lists answer 429.
      for (const crd of crds) {
        const spec = crd.spec as {
          group: string;
          names: { plural: string };
          versions: Array<{ name: string; served: boolean }>;
        };
        for (const v of spec.versions.filter((x) => x.served)) {
          for (;;) {
            const r = await kubeRequest(adminKc, {
              method: "GET",
              path: `/apis/${spec.group}/${v.name}/${spec.names.plural}?limit=1`,
            });
            if (r.status === 200) break;
            if (Date.now() > deadline)
              await fail(`CRD ${crd.metadata?.name} ${v.name} not served before the deadline: HTTP ${r.status}`);
            await sleep(50);
          }
        }
      }
    };

    // Wait for /readyz. The CRDs are created as soon as the apiextensions hooks pass (admin is
    // system:masters, authorized before the RBAC bootstrap finishes): saves ~1 s.
    const CRD_HOOKS = [
      "[+]poststarthook/start-apiextensions-controllers ok",
      "[+]poststarthook/crd-informer-synced ok",
      "[+]informer-sync ok",
    ];
    let crdsLoading: Promise<void> | undefined;
    let readyzMs = 0;
    for (;;) {
      for (const [name, c] of [
        ["etcd", etcdProc],
        ["kube-apiserver", apiProc],
      ] as const) {
        if (c.exitCode !== null || c.signalCode !== null)
          await fail(`${name} exited early (${c.exitCode ?? c.signalCode})`);
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

    if (bins.controllerManager) {
      const kubeconfig = join(dir, "kubeconfig-controller-manager.json");
      await writeFile(kubeconfig, adminKc.exportConfig(), { mode: 0o600 });
      const kcm = spawnLogged(
        bins.controllerManager,
        [
          `--kubeconfig=${kubeconfig}`,
          // Only what a test cluster without nodes needs: namespaces that finish deleting, owners' dependents
          // deleted, tokens in service-account-token Secrets (a kubeconfig from such a token, as docs/install.md builds),
          // and the aggregated ClusterRoles (admin, edit, view) filled from the roles labelled for them, as on AKS:
          // without it `admin` has no rules at all and a team owner can do nothing in its namespace.
          "--controllers=namespace-controller,garbage-collector-controller,serviceaccount-token-controller,clusterrole-aggregation-controller",
          `--service-account-private-key-file=${join(dir, "sa.key")}`,
          `--root-ca-file=${join(dir, "ca.crt")}`,
          "--leader-elect=false",
          "--secure-port=0",
          "--v=1",
        ],
        join(dir, "kube-controller-manager.log"),
      );
      children.push(kcm);
      watch(kcm.pid);
      await sleep(200);
      if (kcm.exitCode !== null)
        await fail(
          `kube-controller-manager exited early (${kcm.exitCode}): ${logTail(join(dir, "kube-controller-manager.log"), 25)}`,
        );
    }

    const kubeConfigFor = (user: string, groups?: string[]): KubeConfig => {
      const tu = tokenUsers.get(user);
      const same = (a: string[], b: string[]) =>
        a.length === b.length && [...a].sort().every((g, i) => g === [...b].sort()[i]);
      if (tu && (groups === undefined || same(groups, tu.groups)))
        return makeKubeConfig(server, caData, user, { token: tu.token });
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
      pids: {
        etcd: etcdProc.pid ?? -1,
        kubeApiserver: apiProc.pid ?? -1,
        ...(children[2]?.pid ? { controllerManager: children[2].pid } : {}),
      },
      ca,
      serviceAccountIssuer,
      async deletes(): Promise<AuditedDelete[]> {
        if (!opts.auditDeletes)
          throw new Error("startKubeCluster({ auditDeletes: true }) keeps the audit log of deletes");
        const text = await readFile(join(dir, "audit.log"), "utf8").catch(() => "");
        return text
          .split("\n")
          .filter((line) => line.trim())
          .map(
            (line) =>
              JSON.parse(line) as {
                verb: AuditedDelete["verb"];
                stage: string;
                user: { username: string };
                impersonatedUser?: { username: string };
                objectRef?: { resource?: string; namespace?: string; name?: string; apiGroup?: string };
                responseStatus?: { code?: number };
                stageTimestamp: string;
              },
          )
          .filter((e) => e.stage === "ResponseComplete")
          .map((e) => ({
            user: e.user.username,
            ...(e.impersonatedUser ? { impersonatedUser: e.impersonatedUser.username } : {}),
            verb: e.verb,
            resource: [e.objectRef?.resource, e.objectRef?.apiGroup].filter(Boolean).join("."),
            ...(e.objectRef?.namespace ? { namespace: e.objectRef.namespace } : {}),
            ...(e.objectRef?.name ? { name: e.objectRef.name } : {}),
            code: e.responseStatus?.code ?? 0,
            time: e.stageTimestamp,
          }));
      },
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
