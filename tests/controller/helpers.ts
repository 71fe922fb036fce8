/**
 * Helpers for the controller's end-to-end tests: admin requests against the real apiserver, the
 * controller's manifests from infra/controller/, playing Flux and ASO, polling, and a TCP proxy that
 * lets a test cut one controller replica off the apiserver (an abrupt crash, as far as the cluster sees).
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { KubeConfig } from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { kubeRequest, objectPath, resolveResource, type KubeResponse } from "../support/kube-http.js";
import { REPO_ROOT } from "../support/kube-cluster.js";

export const INFRA = join(REPO_ROOT, "infra", "controller");
export const ASO_NS = "flux-config";

/** The controller's ServiceAccount as the apiserver authenticates it (user + the groups a token carries). */
export const CONTROLLER_USER = "system:serviceaccount:berth-system:berth-controller";
export const CONTROLLER_GROUPS = [
  "system:serviceaccounts",
  "system:serviceaccounts:berth-system",
  "system:authenticated",
];

export type Obj = {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    annotations?: Record<string, string>;
    managedFields?: Array<{ manager: string; operation: string }>;
    deletionTimestamp?: string;
    [k: string]: unknown;
  };
  [k: string]: unknown;
};

export function readManifests(dir: string, filter: (file: string) => boolean = () => true): Obj[] {
  const out: Obj[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith(".yaml") && filter(f))
    .sort()) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, file), "utf8"), { version: "1.1" })) {
      const obj = doc.toJS() as Obj | null;
      // kustomization.yaml files (infra/controller/crds has one) are kustomize's input, not API objects.
      if (obj && !obj.apiVersion?.startsWith("kustomize.config.k8s.io/")) out.push(obj);
    }
  }
  return out;
}

/**
 * The RoleBinding `berth-controller` exactly as templates/v1/controller-rolebinding.yaml renders it for
 * `team` (the placeholders it uses, with the default controller ServiceAccount berth-system/berth-controller).
 */
export function teamRoleBinding(team: string): Obj {
  const values: Record<string, string> = {
    "names.namespace": team,
    "team.name": team,
    "platform.controller.serviceAccount": "berth-controller",
    "platform.controller.namespace": "berth-system",
  };
  const text = readFileSync(join(REPO_ROOT, "templates", "v1", "controller-rolebinding.yaml"), "utf8").replace(
    /\{\{\s*([\w.]+)\s*\}\}/g,
    (_m, key: string) => {
      if (!(key in values)) throw new Error(`controller-rolebinding.yaml: unexpected placeholder ${key}`);
      return values[key]!;
    },
  );
  return parseAllDocuments(text, { version: "1.1" })[0]!.toJS() as Obj;
}

export class Admin {
  constructor(readonly kc: KubeConfig) {}

  async path(apiVersion: string, kind: string, namespace: string | undefined, name?: string): Promise<string> {
    return objectPath(apiVersion, await resolveResource(this.kc, apiVersion, kind), namespace, name);
  }

  async req(
    method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE",
    path: string,
    body?: unknown,
    contentType?: string,
  ): Promise<KubeResponse> {
    return kubeRequest(this.kc, {
      method,
      path,
      ...(body === undefined ? {} : { body }),
      ...(contentType ? { contentType } : {}),
    });
  }

  /** Creates the object (409 = already there is fine); with `status`, also writes the status subresource. */
  async create(obj: Obj): Promise<Obj> {
    const path = await this.path(obj.apiVersion, obj.kind, obj.metadata.namespace);
    const r = await this.req("POST", path, obj);
    if (r.status !== 201 && r.status !== 409)
      throw new Error(`create ${obj.kind} ${obj.metadata.name}: HTTP ${r.status} ${r.body.slice(0, 400)}`);
    if (obj.status) await this.setStatus(obj, obj.status as Record<string, unknown>);
    return r.json as Obj;
  }

  async get(apiVersion: string, kind: string, namespace: string | undefined, name: string): Promise<Obj | undefined> {
    const r = await this.req("GET", await this.path(apiVersion, kind, namespace, name));
    if (r.status === 404) return undefined;
    if (r.status !== 200) throw new Error(`get ${kind} ${name}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
    return r.json as Obj;
  }

  async list(apiVersion: string, kind: string, namespace: string, query = ""): Promise<Obj[]> {
    const r = await this.req("GET", `${await this.path(apiVersion, kind, namespace)}${query}`);
    if (r.status !== 200) throw new Error(`list ${kind}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
    return (r.json as { items: Obj[] }).items;
  }

  /** JSON merge patch as a hand edit would (field manager `kubectl-edit`). */
  async mergePatch(
    apiVersion: string,
    kind: string,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    manager = "kubectl-edit",
  ): Promise<KubeResponse> {
    const r = await this.req(
      "PATCH",
      `${await this.path(apiVersion, kind, namespace, name)}?fieldManager=${manager}`,
      patch,
      "application/merge-patch+json",
    );
    if (r.status !== 200) throw new Error(`patch ${kind} ${name}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
    return r;
  }

  async setStatus(obj: Obj, status: Record<string, unknown>): Promise<void> {
    const path = `${await this.path(obj.apiVersion, obj.kind, obj.metadata.namespace, obj.metadata.name)}/status`;
    const r = await this.req("PATCH", path, { status }, "application/merge-patch+json");
    if (r.status !== 200)
      throw new Error(`status of ${obj.kind} ${obj.metadata.name}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
  }

  async delete(apiVersion: string, kind: string, namespace: string | undefined, name: string): Promise<void> {
    const r = await this.req("DELETE", await this.path(apiVersion, kind, namespace, name));
    if (r.status !== 200 && r.status !== 202 && r.status !== 404)
      throw new Error(`delete ${kind} ${name}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
  }
}

/** What Flux applies for a team: its namespace, the ServiceAccount `workload`, the controller's RoleBinding as the templates render it, the Team. */
export async function onboardTeam(admin: Admin, team: string, environments: string[] = ["dev"]): Promise<void> {
  await admin.create({
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: team, labels: { "berth.dev/team": team } },
  });
  await admin.create({
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: "workload", namespace: team, labels: { "berth.dev/team": team } },
  });
  await admin.create(teamRoleBinding(team));
  await admin.create({
    apiVersion: "berth.dev/v1alpha1",
    kind: "Team",
    metadata: { name: team },
    spec: { description: `Team ${team}`, owners: ["0b9a3c1e-1111-4222-8333-444455556666"], environments },
  });
}

export const decode = (data: Record<string, string> | undefined) =>
  Object.fromEntries(Object.entries(data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]));
