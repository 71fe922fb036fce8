/**
 * Flux and Azure Service Operator for one test cluster, so Berth's controller sees what it sees in
 * production. No Flux or ASO binary runs here (no internet, no images), so this plays them against the
 * real kube-apiserver:
 *
 * - Flux: reads the branch head of the Flux repo (a bare git repository), and for every team in the
 *   cluster's teams index applies its Flux Kustomization and what that builds (kustomize resources,
 *   `${VAR}` substituted strictly from the cluster's platform-vars ConfigMap, which the controller
 *   writes), with server-side apply as kustomize-controller does; then reports the Kustomization's status:
 *   lastAppliedRevision `main@sha1:<sha>` and Ready from the health of the team's ASO objects (as the
 *   rendered healthCheckExprs say: failed on Ready=False/Error).
 * - ASO: marks each ASO object of a team Ready for its generation, or — for a team the test lists in
 *   `failing` — the UserAssignedIdentity Ready=False with severity Error (reason AuthorizationFailed), as
 *   ASO does when Azure refuses a write it will not retry; writes `<team>-identity` (clientId, principalId,
 *   tenantId) once the identity is Ready, as the identity's operatorSpec asks.
 *
 * A failed apply is reported as Flux does: Ready=False (ReconciliationFailed), lastAttemptedRevision moves,
 * lastAppliedRevision does not. Not modelled: pruning of removed objects, dependsOn, retry intervals.
 *
 * kube-apiserver 1.20's server-side apply turns a field the manager stops sending into `null` instead of
 * removing it (fixed in later releases); a schema that refuses null (ASO's `spec.tags`) then fails the
 * apply. Moving a team from v2 back to v1 drops the identity's tags, so `apply` removes such a field with
 * a merge patch first, which is what a current apiserver's apply does by itself.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import type { KubeConfig } from "@kubernetes/client-node";
import { kustomizeFiles, normalizeRepoPath, parseYamlObjects, substituteFluxVars } from "./flux-build.js";
import { kubeRequest, objectPath, resolveResource } from "./kube-http.js";

const run = promisify(execFile);
const FIELD_MANAGER = "kustomize-controller";
const TEAM_LABEL = "berth.dev/team";
const ASO_KINDS = [
  { apiVersion: "resources.azure.com/v1api20200601", kind: "ResourceGroup" },
  { apiVersion: "managedidentity.azure.com/v1api20230131", kind: "UserAssignedIdentity" },
  { apiVersion: "managedidentity.azure.com/v1api20230131", kind: "FederatedIdentityCredential" },
  { apiVersion: "authorization.azure.com/v1api20220401", kind: "RoleAssignment" },
];

type Obj = Record<string, any>;

export interface ClusterSimOptions {
  /** Admin access to the cluster. */
  kc: KubeConfig;
  cluster: string;
  /** The bare repository Berth pushes to. */
  remoteDir: string;
  branch?: string;
  asoNamespace: string;
  platformVarsConfigMap?: string;
  tenantId: string;
}

export class ClusterSim {
  /** Teams whose UserAssignedIdentity ASO reports failed (Ready=False, severity Error). */
  readonly failing = new Set<string>();
  /** While true, Flux does not apply new revisions (ASO keeps reporting). */
  paused = false;
  /** The revision Flux applied last. */
  lastApplied: string | undefined;
  readonly errors: string[] = [];
  private readonly applied = new Map<string, string>();
  /** Teams whose last apply failed: at which revision, and why. */
  private readonly failedApply = new Map<string, { revision: string; message: string }>();
  private readonly trees = new Map<string, Map<string, string>>();
  private loop: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly opts: ClusterSimOptions) {}

  start(intervalMs = 300): void {
    this.loop ??= (async () => {
      while (!this.stopped) {
        try {
          await this.sync();
        } catch (err) {
          this.errors.push(String((err as Error).message).slice(0, 500));
          if (this.errors.length > 50) this.errors.shift();
        }
        await new Promise((r) => setTimeout(r, intervalMs));
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  /** One round: Flux applies the head (unless paused), ASO settles, Flux reports health. */
  async sync(): Promise<void> {
    const vars = await this.platformVars();
    if (!vars) return; // the controller has not written platform-vars yet: Flux's build would fail
    const teams = new Map<string, { revision: string }>();
    if (!this.paused) {
      const sha = await this.head();
      if (sha) {
        const files = await this.tree(sha);
        // The cluster's teams folder as its berth-teams Kustomization builds it: the top index, each shard's.
        const teamsDir = `clusters/${this.opts.cluster}/teams`;
        for (const file of files.has(`${teamsDir}/kustomization.yaml`) ? kustomizeFiles(files, teamsDir) : []) {
          const ks = parseYamlObjects(files.get(file)!)[0]!;
          const team = ks.metadata.labels[TEAM_LABEL] as string;
          if (this.applied.get(team) === sha || this.failedApply.get(team)?.revision === sha) continue;
          try {
            await this.applyTeam(team, ks, files, vars, sha);
            this.failedApply.delete(team);
          } catch (err) {
            this.failedApply.set(team, { revision: sha, message: String((err as Error).message).slice(0, 500) });
            if (!this.applied.has(team)) this.applied.set(team, "");
          }
        }
        this.lastApplied = sha;
      }
    }
    await this.settleAso();
    for (const [team, revision] of this.applied) teams.set(team, { revision });
    await this.reportKustomizations(teams);
  }

  private async applyTeam(team: string, ks: Obj, files: Map<string, string>, vars: Record<string, string>, sha: string): Promise<void> {
    await this.apply(ks);
    const objects = kustomizeFiles(files, normalizeRepoPath(String(ks.spec.path))).flatMap((f) => parseYamlObjects(substituteFluxVars(files.get(f)!, vars, f)));
    // Namespaces first, as kustomize orders them.
    for (const o of objects.filter((x) => x.kind === "Namespace")) await this.apply(o);
    for (const o of objects.filter((x) => x.kind !== "Namespace")) await this.apply(o);
    this.applied.set(team, sha);
  }

  private async settleAso(): Promise<void> {
    const { asoNamespace } = this.opts;
    for (const k of ASO_KINDS) {
      const list = await this.req("GET", `${await this.path(k.apiVersion, k.kind, asoNamespace)}?labelSelector=${encodeURIComponent(TEAM_LABEL)}`);
      for (const o of (list.items ?? []) as Obj[]) {
        const team = o.metadata.labels[TEAM_LABEL] as string;
        const fail = k.kind === "UserAssignedIdentity" && this.failing.has(team);
        const want = fail
          ? { type: "Ready", status: "False", severity: "Error", reason: "AuthorizationFailed", message: `The client does not have authorization to perform action 'Microsoft.ManagedIdentity/userAssignedIdentities/write' (identity of team ${team})` }
          : { type: "Ready", status: "True", severity: "", reason: "Succeeded", message: "Resource successfully provisioned" };
        const cur = ((o.status?.conditions ?? []) as Obj[]).find((c) => c.type === "Ready");
        if (!cur || cur.status !== want.status || cur.reason !== want.reason || cur.observedGeneration !== o.metadata.generation) {
          const condition = { ...want, lastTransitionTime: new Date().toISOString(), observedGeneration: o.metadata.generation };
          if (!condition.severity) delete (condition as Partial<typeof condition>).severity;
          await this.req("PATCH", `${await this.path(k.apiVersion, k.kind, asoNamespace, o.metadata.name)}/status`, { status: { conditions: [condition] } }, "application/merge-patch+json");
        }
        if (k.kind === "UserAssignedIdentity" && !fail) await this.writeIdentity(team);
      }
    }
  }

  /** What ASO exports for a Ready identity (operatorSpec.configMaps). */
  private async writeIdentity(team: string): Promise<void> {
    const name = `${team}-identity`;
    const hex = createHash("sha256").update(`${this.opts.cluster}/${team}`).digest("hex");
    const uuid = (s: string) => `${s.slice(0, 8)}-${s.slice(8, 12)}-4${s.slice(13, 16)}-8${s.slice(17, 20)}-${s.slice(20, 32)}`;
    const data = { clientId: uuid(hex), principalId: uuid(hex.slice(32)), tenantId: this.opts.tenantId };
    const path = `/api/v1/namespaces/${this.opts.asoNamespace}/configmaps/${name}`;
    const cur = await kubeRequest(this.opts.kc, { method: "GET", path });
    if (cur.status === 200 && (cur.json as Obj).data?.clientId === data.clientId) return;
    await this.req("PATCH", `${path}?fieldManager=azureserviceoperator&force=true`, { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: this.opts.asoNamespace }, data }, "application/apply-patch+yaml");
  }

  /** Each applied team's Kustomization: the revision applied, Ready from its ASO objects' health. */
  private async reportKustomizations(teams: Map<string, { revision: string }>): Promise<void> {
    const { asoNamespace } = this.opts;
    const health = new Map<string, { failed: string | undefined; pending: number }>();
    for (const k of ASO_KINDS) {
      const list = await this.req("GET", `${await this.path(k.apiVersion, k.kind, asoNamespace)}?labelSelector=${encodeURIComponent(TEAM_LABEL)}`);
      for (const o of (list.items ?? []) as Obj[]) {
        const team = o.metadata.labels[TEAM_LABEL] as string;
        const h = health.get(team) ?? { failed: undefined, pending: 0 };
        const ready = ((o.status?.conditions ?? []) as Obj[]).find((c) => c.type === "Ready");
        if (ready?.status === "False" && ready.severity === "Error") h.failed ??= `${k.kind}/${o.metadata.name}: ${ready.reason}`;
        else if (ready?.status !== "True") h.pending += 1;
        health.set(team, h);
      }
    }
    for (const [team, { revision }] of teams) {
      const path = `${await this.path("kustomize.toolkit.fluxcd.io/v1", "Kustomization", asoNamespace, `team-${team}`)}`;
      const current = await kubeRequest(this.opts.kc, { method: "GET", path });
      if (current.status !== 200) continue;
      const ks = current.json as Obj;
      const h = health.get(team) ?? { failed: undefined, pending: 1 };
      const failedApply = this.failedApply.get(team);
      const attempted = failedApply ? `main@sha1:${failedApply.revision}` : `main@sha1:${revision}`;
      const ready = failedApply
        ? { status: "False", reason: "ReconciliationFailed", message: failedApply.message }
        : h.failed
        ? { status: "False", reason: "HealthCheckFailed", message: `health check failed: ${h.failed}` }
        : h.pending
          ? { status: "Unknown", reason: "Progressing", message: `${h.pending} object(s) not Ready yet` }
          : { status: "True", reason: "ReconciliationSucceeded", message: `Applied revision: main@sha1:${revision}` };
      const rev = revision ? `main@sha1:${revision}` : undefined;
      const cur = ((ks.status?.conditions ?? []) as Obj[]).find((c) => c.type === "Ready");
      if (ks.status?.lastAppliedRevision === rev && ks.status?.lastAttemptedRevision === attempted && cur?.status === ready.status && cur.reason === ready.reason && cur.observedGeneration === ks.metadata.generation) continue;
      const status = {
        observedGeneration: ks.metadata.generation,
        ...(rev ? { lastAppliedRevision: rev } : {}),
        lastAttemptedRevision: attempted,
        conditions: [{ type: "Ready", ...ready, lastTransitionTime: new Date().toISOString(), observedGeneration: ks.metadata.generation }],
      };
      await this.req("PATCH", `${path}/status`, { status }, "application/merge-patch+json");
    }
  }

  private async platformVars(): Promise<Record<string, string> | undefined> {
    const r = await kubeRequest(this.opts.kc, { method: "GET", path: `/api/v1/namespaces/${this.opts.asoNamespace}/configmaps/${this.opts.platformVarsConfigMap ?? "platform-vars"}` });
    return r.status === 200 ? ((r.json as Obj).data as Record<string, string>) : undefined;
  }

  private async head(): Promise<string | undefined> {
    return run("git", ["--git-dir", this.opts.remoteDir, "rev-parse", "--verify", "-q", `refs/heads/${this.opts.branch ?? "main"}`]).then(
      (r) => r.stdout.trim(),
      () => undefined,
    );
  }

  /** Every file of the commit (git archive, unpacked once per commit). */
  private async tree(sha: string): Promise<Map<string, string>> {
    const cached = this.trees.get(sha);
    if (cached) return cached;
    const dir = await mkdtemp(join(tmpdir(), "berth-flux-sim-"));
    try {
      await run("sh", ["-c", `git --git-dir "$0" archive --format=tar "$1" | tar -x -C "$2"`, this.opts.remoteDir, sha, dir]);
      const files = new Map<string, string>();
      const walk = async (d: string): Promise<void> => {
        for (const e of await readdir(d, { withFileTypes: true })) {
          const p = join(d, e.name);
          if (e.isDirectory()) await walk(p);
          else files.set(relative(dir, p), await readFile(p, "utf8"));
        }
      };
      await walk(dir);
      this.trees.clear();
      this.trees.set(sha, files);
      return files;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  private async apply(o: Obj): Promise<void> {
    const path = await this.path(o.apiVersion, o.kind, o.metadata.namespace, o.metadata.name);
    const ssa = () => kubeRequest(this.opts.kc, { method: "PATCH", path: `${path}?fieldManager=${FIELD_MANAGER}&force=true`, body: o, contentType: "application/apply-patch+yaml" });
    let r = await ssa();
    // 1.20: a field dropped from the applied config becomes null (see the header); remove it, apply again.
    const dropped = r.status === 422 ? [...r.body.matchAll(/(spec(?:\.[A-Za-z0-9]+)+): Invalid value: \\"null\\"/g)].map((m) => m[1]!) : [];
    if (dropped.length) {
      const patch: Obj = {};
      for (const field of dropped) {
        const keys = field.split(".");
        let node = patch;
        for (const k of keys.slice(0, -1)) node = node[k] ??= {};
        node[keys.at(-1)!] = null;
      }
      await this.req("PATCH", path, patch, "application/merge-patch+json");
      r = await ssa();
    }
    if (r.status < 200 || r.status > 299) throw new Error(`apply ${o.kind} ${o.metadata.name}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
  }

  private async path(apiVersion: string, kind: string, namespace: string | undefined, name?: string): Promise<string> {
    return objectPath(apiVersion, await resolveResource(this.opts.kc, apiVersion, kind), namespace, name);
  }

  private async req(method: "GET" | "PATCH", path: string, body?: unknown, contentType?: string): Promise<Obj> {
    const r = await kubeRequest(this.opts.kc, { method, path, ...(body === undefined ? {} : { body }), ...(contentType ? { contentType } : {}) });
    if (r.status < 200 || r.status > 299) throw new Error(`${method} ${path}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
    return r.json as Obj;
  }
}
