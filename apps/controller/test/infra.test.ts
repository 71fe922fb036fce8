import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import { describe, expect, it } from "vitest";
import { watchSpecs } from "../src/watches.js";
import { ACCESS_FINALIZER, ASO_KINDS, TEAM_ROLE_BINDING } from "../src/names.js";
import { platform } from "./fixtures.js";

/** infra/controller/ against the code: every watch is allowed, nothing more is granted than the code uses. */

const DIR = fileURLToPath(new URL("../../../infra/controller/", import.meta.url));
type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };
/** The fields of the manifests these tests read (a Deployment's pod spec, a binding's role and subjects). */
type Container = {
  securityContext?: unknown;
  resources: { requests?: unknown; limits: { memory?: string } };
  livenessProbe: { httpGet: { path: string } };
  readinessProbe: { httpGet: { path: string } };
  env: Array<{ name: string; value?: string; valueFrom?: unknown }>;
  ports: Array<{ containerPort: number }>;
};
type PodTemplate = {
  metadata: { labels: Record<string, string> };
  spec: { serviceAccountName: string; securityContext: { runAsNonRoot?: boolean }; containers: Container[] };
};
type Doc = {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: Rule[];
  spec?: { replicas?: number; template: PodTemplate };
  roleRef?: { apiGroup: string; kind: string; name: string };
  subjects?: unknown[];
};
const docs: Doc[] = readdirSync(DIR)
  .filter((f) => f.endsWith(".yaml"))
  .flatMap((f) => parseAllDocuments(readFileSync(DIR + f, "utf8"), { version: "1.1" }).map((d) => d.toJS() as Doc));
const find = (kind: string, name: string, ns?: string) =>
  docs.find((d) => d.kind === kind && d.metadata.name === name && d.metadata.namespace === ns)!;

function allows(rules: Rule[], group: string, resource: string, verb: string, name?: string): boolean {
  return rules.some(
    (r) =>
      r.apiGroups.includes(group) &&
      r.resources.includes(resource) &&
      r.verbs.includes(verb) &&
      (!r.resourceNames || (name !== undefined && r.resourceNames.includes(name))),
  );
}

function parsePath(path: string): { group: string; namespace?: string; resource: string } {
  const m = /^\/(?:api\/v1|apis\/([^/]+)\/[^/]+)(?:\/namespaces\/([^/]+))?\/([^/]+)$/.exec(path)!;
  return { group: m[1] ?? "", ...(m[2] ? { namespace: m[2] } : {}), resource: m[3]! };
}

const clusterRole = find("ClusterRole", "berth-controller");
const teamWriter = find("ClusterRole", "berth-controller-team-writer");
const asoRole = find("Role", "berth-controller", "flux-config");
const leaseRole = find("Role", "berth-controller-leader-election", "berth-system");

describe("infra/controller RBAC", () => {
  it("allows list and watch for every informer, cluster-wide or in the ASO namespace", () => {
    for (const spec of Object.values(watchSpecs(platform()))) {
      const { group, namespace, resource } = parsePath(spec.path);
      const rules = namespace ? [...clusterRole.rules!, ...asoRole.rules!] : clusterRole.rules!;
      // A list/watch selecting metadata.name=<name> is authorized against resourceNames with that name.
      const name = /^metadata\.name=([^,]+)$/.exec(spec.fieldSelector ?? "")?.[1];
      for (const verb of ["list", "watch"])
        expect(allows(rules, group, resource, verb, name), `${verb} ${spec.path}`).toBe(true);
    }
  });

  it("grants no cluster-wide write but Team status and Events", () => {
    const writes = ["create", "update", "patch", "delete", "deletecollection", "*"];
    for (const r of clusterRole.rules!) {
      if (!r.verbs.some((v) => writes.includes(v))) continue;
      expect(["teams/status", "events"]).toContain(r.resources.join(","));
    }
    expect(allows(clusterRole.rules!, "", "secrets", "create")).toBe(false);
  });

  it("lets the team writer touch only aso-credential and workload in a team namespace", () => {
    expect(allows(teamWriter.rules!, "", "secrets", "patch", "aso-credential")).toBe(true);
    expect(allows(teamWriter.rules!, "", "secrets", "create", "aso-credential")).toBe(true);
    expect(allows(teamWriter.rules!, "", "secrets", "patch", "other")).toBe(false);
    expect(allows(teamWriter.rules!, "", "serviceaccounts", "patch", "workload")).toBe(true);
    expect(allows(teamWriter.rules!, "", "serviceaccounts", "patch", "default")).toBe(false);
  });

  it("lets the controller remove its RoleBinding's finalizer, and read only that binding", () => {
    const rbac = "rbac.authorization.k8s.io";
    for (const verb of ["patch", "update"])
      expect(allows(teamWriter.rules!, rbac, "rolebindings", verb, TEAM_ROLE_BINDING), verb).toBe(true);
    // Nothing else about bindings: no other binding, no create/delete, no bind/escalate on roles.
    expect(allows(teamWriter.rules!, rbac, "rolebindings", "patch", "owners")).toBe(false);
    for (const verb of ["create", "delete", "get", "list"])
      expect(allows(teamWriter.rules!, rbac, "rolebindings", verb, TEAM_ROLE_BINDING), verb).toBe(false);
    for (const r of [...teamWriter.rules!, ...clusterRole.rules!])
      expect(
        r.verbs.filter((v) => ["bind", "escalate", "*"].includes(v)),
        r.resources.join(),
      ).toEqual([]);
    // Cluster-wide: list/watch of the bindings named berth-controller only (the informer selects that name).
    expect(allows(clusterRole.rules!, rbac, "rolebindings", "watch", TEAM_ROLE_BINDING)).toBe(true);
    expect(allows(clusterRole.rules!, rbac, "rolebindings", "watch")).toBe(false);
    expect(allows(clusterRole.rules!, rbac, "rolebindings", "patch", TEAM_ROLE_BINDING)).toBe(false);
    expect(watchSpecs(platform()).roleBindings.fieldSelector).toBe(`metadata.name=${TEAM_ROLE_BINDING}`);
  });

  it("the templates render the controller's RoleBinding with the finalizer the controller releases", () => {
    const file = fileURLToPath(new URL("../../../templates/v1/controller-rolebinding.yaml", import.meta.url));
    const rb = parseAllDocuments(readFileSync(file, "utf8"), { version: "1.1" })[0]!.toJS() as Doc & {
      metadata: { finalizers?: string[] };
    };
    expect(rb.kind).toBe("RoleBinding");
    expect(rb.metadata.name).toBe(TEAM_ROLE_BINDING);
    expect(rb.metadata.finalizers).toEqual([ACCESS_FINALIZER]);
    expect(rb.roleRef).toEqual({
      apiGroup: "rbac.authorization.k8s.io",
      kind: "ClusterRole",
      name: teamWriter.metadata.name,
    });
  });

  it("lets offboarding list every ASO kind the code checks", () => {
    for (const k of ASO_KINDS) expect(allows(clusterRole.rules!, k.group, k.plural, "list"), k.plural).toBe(true);
  });

  it("writes in the ASO namespace only platform-vars and the platform aso-credential; the Lease only in berth-system", () => {
    expect(allows(asoRole.rules!, "", "configmaps", "patch", "platform-vars")).toBe(true);
    expect(allows(asoRole.rules!, "", "configmaps", "create", "payments-identity")).toBe(false);
    expect(allows(asoRole.rules!, "", "configmaps", "delete", "payments-identity")).toBe(false);
    expect(allows(asoRole.rules!, "", "configmaps", "update", "payments-identity")).toBe(false);
    expect(allows(asoRole.rules!, "", "secrets", "patch", "aso-credential")).toBe(true);
    expect(allows(leaseRole.rules!, "coordination.k8s.io", "leases", "update", "berth-controller")).toBe(true);
    expect(allows(leaseRole.rules!, "coordination.k8s.io", "leases", "update", "other")).toBe(false);
  });

  it("may patch other ConfigMaps of the ASO namespace only as the wake policy allows, for the same namespace and ServiceAccount", () => {
    // RBAC cannot name a credential's issuer ConfigMap (ASO's to name): the patch right is for any, the
    // ValidatingAdmissionPolicy narrows it (its effect on a real apiserver: tests/controller/controller.test.ts).
    expect(allows(asoRole.rules!, "", "configmaps", "patch", "payments--aso-controller-issuer")).toBe(true);
    const policy = docs.find(
      (d) => d.kind === "ValidatingAdmissionPolicy" && d.metadata.name === "berth-controller-configmap-wake",
    ) as (Doc & { spec: Record<string, unknown> }) | undefined;
    const binding = docs.find(
      (d) => d.kind === "ValidatingAdmissionPolicyBinding" && d.metadata.name === "berth-controller-configmap-wake",
    ) as (Doc & { spec: { policyName: string; validationActions: string[] } }) | undefined;
    expect(binding?.spec).toMatchObject({ policyName: "berth-controller-configmap-wake", validationActions: ["Deny"] });
    const text = JSON.stringify(policy?.spec);
    expect(text).toContain(`"kubernetes.io/metadata.name":"${asoRole.metadata.namespace}"`);
    expect(text).toContain("system:serviceaccount:berth-system:berth-controller");
    expect(policy?.spec.failurePolicy).toBe("Fail");
  });

  it("binds each role to the controller's ServiceAccount", () => {
    const subject = { kind: "ServiceAccount", name: "berth-controller", namespace: "berth-system" };
    for (const [kind, name, ns] of [
      ["ClusterRoleBinding", "berth-controller", undefined],
      ["RoleBinding", "berth-controller", "flux-config"],
      ["RoleBinding", "berth-controller-leader-election", "berth-system"],
    ] as const) {
      expect(find(kind, name, ns).subjects).toEqual([subject]);
    }
  });
});

describe("infra/controller Deployment", () => {
  const d = find("Deployment", "berth-controller", "berth-system");
  const pod = d.spec!.template.spec;
  const c = pod.containers[0]!;
  it("runs 2 replicas as the controller's ServiceAccount, non-root with a read-only root filesystem", () => {
    expect(d.spec?.replicas).toBe(2);
    expect(pod.serviceAccountName).toBe("berth-controller");
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(c.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
    });
    expect(c.resources.requests).toBeDefined();
    expect(c.resources.limits.memory).toBeDefined();
  });

  it("probes the health server's endpoints on the metrics port, with the pod name as Lease identity", () => {
    expect(c.livenessProbe.httpGet.path).toBe("/healthz");
    expect(c.readinessProbe.httpGet.path).toBe("/readyz");
    const env = Object.fromEntries(
      c.env.map((e: { name: string; value?: string; valueFrom?: unknown }) => [e.name, e.value ?? e.valueFrom]),
    );
    expect(env.BERTH_POD_NAME).toEqual({ fieldRef: { fieldPath: "metadata.name" } });
    expect(Number(env.BERTH_METRICS_PORT)).toBe(c.ports[0]?.containerPort);
  });

  it("discovers platform values in Azure with workload identity (pod label, ServiceAccount client-id annotation)", () => {
    const env = Object.fromEntries(c.env.map((e: { name: string; value?: string }) => [e.name, e.value]));
    expect(env.BERTH_PROVIDER).toBe("azure");
    // No credential or endpoint in the manifest: the workload-identity webhook injects AZURE_* for DefaultAzureCredential.
    expect(Object.keys(env).filter((k) => k.startsWith("AZURE_"))).toEqual([]);
    expect(d.spec?.template.metadata.labels["azure.workload.identity/use"]).toBe("true");
    const sa = find("ServiceAccount", pod.serviceAccountName, "berth-system") as Doc & {
      metadata: { annotations?: Record<string, string> };
    };
    expect(sa.metadata.annotations?.["azure.workload.identity/client-id"]).toMatch(/^[0-9a-f-]{36}$/);
  });
});
