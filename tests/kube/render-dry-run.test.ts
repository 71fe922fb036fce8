/**
 * Every manifest Berth renders, server-side dry-run applied to a real kube-apiserver (the version
 * infra/test-cluster/go builds) with the ASO and Flux CRDs of the module versions the tests run and the Team CRD
 * (infra/controller/crds/berth.dev_teams.yaml, or a minimal stand-in while the server refuses it, which then fails
 * a test of its own).
 *
 * For each template version (templates/v1, templates/v3, ...) and each example team of
 * packages/core/test/fixtures.ts (together they use every template and option), the teams are onboarded
 * one after the other into one in-memory repo (Onboarding.planCreate). Then, per
 * cluster of the team, the test does what Flux does there: starts from the team's Flux Kustomization
 * (`clusters/<cluster>/teams/<team>.yaml`), follows `spec.path` and the `kustomization.yaml` resources
 * (kustomize files are not API objects), and substitutes `${VAR}` from a realistic platform-vars map of
 * that cluster (strictly, as Flux 2.9 does). Namespaces are applied first (the team namespace is itself
 * rendered; the ASO namespace is the platform's), then every object is dry-run applied and compared
 * with what the server would keep: server-side apply, as Flux applies, refuses a field the schema does not declare
 * (see tests/support/kube-dry-run.ts). Negative controls edit a template and show the same path reports it.
 * The Flux build here is tests/support/flux-build.ts, which tests/flux/chain.test.ts holds to real Flux.
 */
// needs: cluster
import { existsSync, readFileSync } from "node:fs";
import { componentVersion } from "../support/test-cluster-binaries.js";
import { resolve } from "node:path";
import { parseAllDocuments } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  allClusters,
  clustersOf,
  knownPlatformVars,
  Onboarding,
  parseTemplateSet,
  repoLayout,
  validateTeam,
  type Cluster,
  type CorePlatformVar,
  type Platform,
  type TemplateSet,
} from "@berth/core";
import {
  EXAMPLES,
  loadTemplates,
  MemoryRepoTree,
  TEMPLATE_VERSIONS,
  templateFiles,
  type Example,
} from "../../packages/core/test/fixtures.js";
import { parseObjects } from "../../packages/core/test/yaml-helpers.js";
import { REPO_ROOT, startKubeCluster, type KubeCluster } from "../support/kube-cluster.js";
import { installCrd, kubeRequest } from "../support/kube-http.js";
import { fluxSubstitute } from "../support/kustomize.js";
import { serverSideDryRunApply, type DryRunResult } from "../support/kube-dry-run.js";
import { kustomizeFiles, normalizeRepoPath } from "../support/flux-build.js";
import type { KubeConfig } from "@kubernetes/client-node";

const FIELD_MANAGER = "berth-render-dry-run";
/** Templates v6 and later render the team's `<team>--cluster-issuer` ConfigMap in the ASO namespace (ADR 0035). */
const issuerConfigMap = (version: string) => Number(version.slice(1)) >= 6;

// ---- the Team CRD -----------------------------------------------------------------------------------

/** The controller's CRD, once infra/controller/crds/ holds it (docs/controller-contract.md). */
const TEAM_CRD_FILE = resolve(REPO_ROOT, "infra/controller/crds/berth.dev_teams.yaml");
const TEAM_CRD_NAME = "teams.berth.dev";

const quantity = { type: "string" };
const cpuMemory = { type: "object", properties: { cpu: quantity, memory: quantity } };
/**
 * Stand-in until the controller's CRD exists: the contract's names and scope, and a structural schema of
 * the team spec (packages/core/src/team.ts), so a field the CRD does not declare is still pruned.
 */
const MINIMAL_TEAM_CRD = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: TEAM_CRD_NAME },
  spec: {
    group: "berth.dev",
    scope: "Cluster",
    names: { kind: "Team", listKind: "TeamList", plural: "teams", singular: "team" },
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
              spec: {
                type: "object",
                required: ["owners", "environments"],
                properties: {
                  description: { type: "string" },
                  owners: { type: "array", items: { type: "string" } },
                  environments: { type: "array", items: { type: "string" } },
                  quota: { type: "object", properties: { cpu: quantity, memory: quantity, pods: { type: "integer" } } },
                  containerLimits: { type: "object", properties: { defaultRequest: cpuMemory, default: cpuMemory } },
                  roleAssignments: {
                    type: "array",
                    items: { type: "object", required: ["role"], properties: { role: { type: "string" } } },
                  },
                  labels: { type: "object", additionalProperties: { type: "string" } },
                },
              },
              status: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
            },
          },
        },
      },
    ],
  },
};

/** The controller's CRD when infra/controller/crds/ holds it, else undefined. */
function controllerTeamCrd(): Record<string, unknown> | undefined {
  if (!existsSync(TEAM_CRD_FILE)) return undefined;
  const crd = parseAllDocuments(readFileSync(TEAM_CRD_FILE, "utf8"))
    .map((d) => d.toJS() as KubeObject | null)
    .find((o) => o?.kind === "CustomResourceDefinition" && o.metadata?.name === TEAM_CRD_NAME);
  if (!crd) throw new Error(`${TEAM_CRD_FILE} holds no CustomResourceDefinition ${TEAM_CRD_NAME}`);
  return crd;
}

// ---- platform-vars, substituted as Flux does ----------------------------------------------------------

const TENANT_ID = "72f988bf-86f1-41af-91ab-2d7cd011db47";
const SUBSCRIPTIONS: Record<string, string> = {
  dev: "3f2b1c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
  staging: "8a7b6c5d-4e3f-4a2b-9c1d-0e9f8a7b6c5d",
  prod: "c0ffee00-1234-4abc-8def-0123456789ab",
};
/** Values of the platform-declared keys the fixtures use, per environment. */
const DECLARED_VARS: Record<string, (env: string) => string> = {
  SERVICEBUS_NAMESPACE: (env) => `sb-platform-${env}`,
  POSTGRES_SERVER: (env) => `pg-platform-${env}`,
};

/** The platform-vars ConfigMap the controller writes on `cluster`: every key a template may use. */
function platformVarsFor(platform: Platform, cluster: Cluster): Record<string, string> {
  const location = cluster.vars.AZURE_LOCATION ?? "westeurope";
  const issuer = `https://${location}.oic.prod-aks.azure.com/${TENANT_ID}/${Buffer.from(cluster.name).toString("hex").slice(0, 32)}/`;
  const core = {
    TENANT_ID,
    SUBSCRIPTION_ID: SUBSCRIPTIONS[cluster.environment] ?? SUBSCRIPTIONS.dev!,
    CLUSTER_NAME: cluster.name,
    ENVIRONMENT: cluster.environment,
    CLUSTER_OIDC_ISSUER_URL: issuer,
    CLUSTER_OIDC: issuer,
    AZURE_LOCATION: location,
  } satisfies Record<CorePlatformVar, string>;
  const vars: Record<string, string> = { ...core };
  for (const key of Object.keys(platform.platformVars)) {
    const value = DECLARED_VARS[key];
    if (!value) throw new Error(`no example platform-vars value for the declared key ${key}: add one to DECLARED_VARS`);
    vars[key] = value(cluster.environment);
  }
  Object.assign(vars, cluster.vars);
  for (const key of knownPlatformVars(platform))
    expect(vars[key], `platform-vars of ${cluster.name} lacks ${key}`).toBeDefined();
  return vars;
}

// ---- what Flux builds -------------------------------------------------------------------------------

/** A rendered object as these tests read and apply it: identity fields typed, the rest passed through unread. */
type KubeObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [field: string]: unknown };
  spec?: Record<string, unknown>;
  [field: string]: unknown;
};

interface Manifest {
  /** Repo path of the file the object came from. */
  file: string;
  cluster: string;
  object: KubeObject;
}

const normalize = normalizeRepoPath;

function objectsOf(file: string, text: string, vars: Record<string, string>): KubeObject[] {
  const substituted = fluxSubstitute(text, vars, file);
  // Berth's templates have no `$` besides platform-vars references; a leftover one would be a miss.
  expect(substituted, `${file}: a Flux variable was left unsubstituted`).not.toMatch(/\$\{/);
  expect(substituted, `${file}: a \`$\` is left after substitution`).not.toContain("$");
  return parseObjects(substituted, "1.1") as KubeObject[];
}

/**
 * Every API object an example's team puts on each of its clusters, once per distinct content: the
 * team's Flux Kustomization (applied by the cluster's root) and what it builds, substituted.
 */
function manifestsOf(ex: Example, files: ReadonlyMap<string, string>): { manifests: Manifest[]; covered: Set<string> } {
  const layout = repoLayout(ex.platform);
  const team = validateTeam(ex.team, ex.platform);
  const manifests: Manifest[] = [];
  const covered = new Set<string>();
  const seen = new Set<string>();
  const add = (file: string, cluster: Cluster, vars: Record<string, string>) => {
    covered.add(file);
    for (const object of objectsOf(file, files.get(file)!, vars)) {
      const key = JSON.stringify(object);
      if (seen.has(key)) continue; // the base, identical on several clusters
      seen.add(key);
      manifests.push({ file, cluster: cluster.name, object });
    }
  };
  // The cluster's root applies its teams index (a kustomize file), which reaches each team's Flux file
  // through the team's shard index; planCreate rewrites every cluster's top index.
  for (const c of allClusters(ex.platform)) covered.add(layout.clusterTeamsIndex(c.name));
  for (const cluster of clustersOf(team, ex.platform)) {
    const vars = platformVarsFor(ex.platform, cluster);
    const indexes = new Set<string>();
    const fluxFile = layout.fluxKustomization(cluster.name, team.name);
    expect(kustomizeFiles(files, layout.clusterTeamsDir(cluster.name), indexes), cluster.name).toContain(fluxFile);
    for (const k of indexes) covered.add(k);
    add(fluxFile, cluster, vars);
    const flux = parseObjects(files.get(fluxFile)!, "1.1")[0] as KubeObject;
    const kustomizations = new Set<string>();
    for (const file of kustomizeFiles(files, normalize(String(flux.spec?.path)), kustomizations))
      add(file, cluster, vars);
    for (const k of kustomizations) covered.add(k);
  }
  return { manifests, covered };
}

/** planCreate of each example in turn on one repo (each on its own platform); the files each wrote. */
async function onboardAll(
  examples: readonly Example[],
  templates: (ex: Example) => TemplateSet = () => loadTemplates(),
) {
  let tree = new MemoryRepoTree();
  const written = new Map<string, Set<string>>();
  for (const ex of examples) {
    const { change } = await new Onboarding(ex.platform, templates(ex)).planCreate(tree, ex.team);
    tree = tree.apply(change);
    written.set(ex.name, new Set([...change.files].filter(([, c]) => c !== null).map(([p]) => p)));
  }
  const files = new Map(tree.paths().map((p) => [p, tree.get(p)!] as const));
  return { files, written };
}

// ---- against the server -----------------------------------------------------------------------------

const refOf = (o: KubeObject) =>
  `${o.apiVersion}/${o.kind} ${o.metadata?.namespace ? `${o.metadata.namespace}/` : ""}${o.metadata?.name}`;

async function createNamespace(kc: KubeConfig, name: string): Promise<void> {
  const res = await kubeRequest(kc, {
    method: "POST",
    path: "/api/v1/namespaces",
    body: { apiVersion: "v1", kind: "Namespace", metadata: { name } },
  });
  if (res.status !== 201 && res.status !== 409)
    throw new Error(`creating namespace ${name}: HTTP ${res.status} ${res.body.slice(0, 300)}`);
}

async function apply(kc: KubeConfig, object: KubeObject, path: string): Promise<void> {
  const res = await kubeRequest(kc, {
    method: "PATCH",
    path: `${path}?fieldManager=${FIELD_MANAGER}&force=true`,
    body: object,
    contentType: "application/apply-patch+yaml",
  });
  if (res.status < 200 || res.status > 299)
    throw new Error(`applying ${refOf(object)}: HTTP ${res.status} ${res.body.slice(0, 300)}`);
}

type Checked = DryRunResult & { file: string; cluster: string };

/**
 * Dry-runs every manifest the way Flux would apply them: Namespaces first (dry-run, then applied for real
 * so the objects inside can be dry-run; a rejected one is created bare so the rest is still checked),
 * the other namespaces the objects use created as the platform would have them, then everything else.
 */
async function dryRunAll(kc: KubeConfig, manifests: readonly Manifest[], platformNamespaces: readonly string[]) {
  const namespaces = manifests.filter((m) => m.object.apiVersion === "v1" && m.object.kind === "Namespace");
  const rest = manifests.filter((m) => !namespaces.includes(m));
  const results: Checked[] = [];
  const nsResults = await serverSideDryRunApply(
    kc,
    namespaces.map((m) => m.object),
    FIELD_MANAGER,
  );
  for (const [i, m] of namespaces.entries()) {
    const r = nsResults[i]!;
    results.push({ ...r, file: m.file, cluster: m.cluster });
    if (r.ok) await apply(kc, m.object, `/api/v1/namespaces/${m.object.metadata.name}`);
    else await createNamespace(kc, m.object.metadata.name);
  }
  const rendered = new Set(namespaces.map((m) => m.object.metadata.name as string));
  const used = new Set(
    rest.map((m) => m.object.metadata?.namespace as string | undefined).filter((n): n is string => n !== undefined),
  );
  const others = [...used].filter((n) => !rendered.has(n)).sort();
  // Objects only land in the team's own namespace or the platform's (ASO) namespace.
  expect(
    others.every((n) => platformNamespaces.includes(n)),
    `objects in unexpected namespaces: ${others.join(", ")}`,
  ).toBe(true);
  for (const n of others) await createNamespace(kc, n);
  const restResults = await serverSideDryRunApply(
    kc,
    rest.map((m) => m.object),
    FIELD_MANAGER,
  );
  for (const [i, m] of rest.entries()) results.push({ ...restResults[i]!, file: m.file, cluster: m.cluster });
  return results;
}

function report(results: readonly Checked[]): string {
  return results
    .flatMap((r) => r.problems.map((p) => `${r.file} (${r.cluster}) ${r.ref}: [${p.kind}] ${p.message}`))
    .join("\n");
}

// ---- the tests ----------------------------------------------------------------------------------------

describe(`rendered manifests: server-side dry-run on kube-apiserver ${componentVersion("kubernetes")}`, () => {
  let cluster: KubeCluster;
  let admin: KubeConfig;
  const controllerCrd = controllerTeamCrd();
  /** Why the apiserver refused the controller's CRD (the stand-in is then used, and a test fails). */
  let controllerCrdRefused: string | undefined;

  beforeAll(async () => {
    cluster = await startKubeCluster();
    admin = cluster.kubeConfig();
    // Prefer the controller's CRD; if the server refuses it, say so in its own test and check the manifests
    // against the stand-in, so one problem does not hide the other.
    if (controllerCrd) {
      controllerCrdRefused = await installCrd(admin, controllerCrd);
    }
    const source = !controllerCrd
      ? "minimal stand-in (infra/controller/crds/berth.dev_teams.yaml does not exist yet)"
      : controllerCrdRefused
        ? `minimal stand-in: the server REFUSED infra/controller/crds/berth.dev_teams.yaml (${controllerCrdRefused})`
        : "infra/controller/crds/berth.dev_teams.yaml";
    if (!controllerCrd || controllerCrdRefused) {
      const refused = await installCrd(admin, MINIMAL_TEAM_CRD);
      if (refused) throw new Error(`the minimal Team CRD was refused: ${refused}`);
    }
    console.log(`[tests/kube] cluster ready at ${cluster.server} in ${cluster.startupMs} ms; Team CRD: ${source}`);
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  it("accepts the controller's Team CRD (infra/controller/crds/berth.dev_teams.yaml)", () => {
    expect(controllerCrd, "infra/controller/crds/berth.dev_teams.yaml").toBeDefined();
    expect(controllerCrdRefused, "the apiserver refused the CRD").toBeUndefined();
  });

  it("serves the Team CRD as the contract says: teams.berth.dev, cluster-scoped, v1alpha1, status subresource", async () => {
    const res = await kubeRequest(admin, { method: "GET", path: "/apis/berth.dev/v1alpha1" });
    expect(res.status).toBe(200);
    const resources = (res.json as { resources: Array<{ name: string; kind: string; namespaced: boolean }> }).resources;
    expect(resources).toContainEqual(expect.objectContaining({ name: "teams", kind: "Team", namespaced: false }));
    expect(resources.map((r) => r.name)).toContain("teams/status");
  });

  const perExample = new Map<string, Checked[]>();
  const CASES = TEMPLATE_VERSIONS.flatMap((version) => EXAMPLES.map((ex) => [version, ex.name, ex] as const));

  it.each(CASES)(
    "templates %s, example %s: every rendered object passes a server-side dry-run apply, nothing pruned or changed",
    async (version, name, ex) => {
      const { files, written } = await onboardAll(EXAMPLES, () => loadTemplates(version));
      const { manifests, covered } = manifestsOf(ex, files);
      // Every file the team's planCreate wrote is applied on some cluster (or is a kustomize file on the way).
      const uncovered = [...written.get(name)!].filter((p) => !covered.has(p));
      expect(uncovered, "rendered files no cluster applies").toEqual([]);
      const results = await dryRunAll(admin, manifests, [ex.platform.asoNamespace]);
      perExample.set(`${version}/${name}`, results);
      expect(report(results)).toBe("");
      expect(results.every((r) => r.ok)).toBe(true);
      expect(results.length).toBe(manifests.length);
      console.log(`[tests/kube] ${version} ${name}: ${results.length} objects dry-run applied, 0 problems`);
    },
  );

  it.each(TEMPLATE_VERSIONS)(
    "templates %s: covered every kind Berth renders, including the Team object and the controller's RoleBinding",
    (version) => {
      expect([...perExample.keys()].filter((k) => k.startsWith(`${version}/`)).sort()).toEqual(
        EXAMPLES.map((e) => `${version}/${e.name}`).sort(),
      );
      const all = [...perExample].filter(([k]) => k.startsWith(`${version}/`)).flatMap(([, r]) => r);
      const kinds = new Set(all.map((r) => r.ref.split(" ")[0]));
      expect([...kinds].sort()).toEqual(
        [
          "authorization.azure.com/v1api20220401/RoleAssignment",
          "berth.dev/v1alpha1/Team",
          "kustomize.toolkit.fluxcd.io/v1/Kustomization",
          "managedidentity.azure.com/v1api20230131/FederatedIdentityCredential",
          "managedidentity.azure.com/v1api20230131/UserAssignedIdentity",
          "rbac.authorization.k8s.io/v1/RoleBinding",
          "resources.azure.com/v1api20200601/ResourceGroup",
          "v1/LimitRange",
          "v1/Namespace",
          "v1/ResourceQuota",
          "v1/ServiceAccount",
          // From v6 the first federated credential reads the cluster's issuer from a ConfigMap (ADR 0035).
          ...(issuerConfigMap(version) ? ["v1/ConfigMap"] : []),
        ].sort(),
      );
      for (const ex of EXAMPLES) {
        const refs = perExample.get(`${version}/${ex.name}`)!.map((r) => r.ref);
        expect(refs).toContain(`rbac.authorization.k8s.io/v1/RoleBinding ${ex.team.name}/berth-controller`);
        expect(refs).toContain(`berth.dev/v1alpha1/Team ${ex.team.name}`);
        if (issuerConfigMap(version))
          expect(refs).toContain(`v1/ConfigMap ${ex.platform.asoNamespace}/${ex.team.name}--cluster-issuer`);
      }
      // Every output file of the version held at least one object that was checked (the Flux Kustomization's file
      // is named after the team, the kinds above cover it). With one file per folder (v5) the kinds above are what
      // show that every template rendered.
      const checkedFiles = new Set(all.map((r) => r.file.split("/").at(-1)!));
      const set = loadTemplates(version);
      for (const entry of [...set.team, ...set.cluster]) {
        expect(checkedFiles, entry.template).toContain(entry.output ?? entry.template);
      }
    },
  );

  it("applied for real, the Team objects are what `kubectl get teams` lists", async () => {
    const { files } = await onboardAll(EXAMPLES);
    for (const ex of EXAMPLES) {
      const spec = files.get(repoLayout(ex.platform).teamSpec(ex.team.name))!;
      const [object] = parseObjects(spec, "1.1") as KubeObject[];
      await apply(admin, object!, `/apis/berth.dev/v1alpha1/teams/${ex.team.name}`);
    }
    const list = await kubeRequest(admin, { method: "GET", path: "/apis/berth.dev/v1alpha1/teams" });
    expect(list.status).toBe(200);
    const items = (list.json as { items: KubeObject[] }).items;
    expect(items.map((t) => t.metadata.name).sort()).toEqual(EXAMPLES.map((e) => e.team.name).sort());
    const payments = items.find((t) => t.metadata.name === "payments")!;
    expect(payments.metadata.namespace).toBeUndefined();
    expect(payments.spec).toMatchObject({
      environments: ["prod", "dev"],
      quota: { pods: 200 },
      roleAssignments: [{ role: "rg-contributor" }],
    });
  });

  describe("negative controls: a broken template is reported through the same path", () => {
    const payments = EXAMPLES.find((e) => e.name === "payments")!;

    async function failuresWith(templates: TemplateSet): Promise<Checked[]> {
      const rendered = await onboardAll(EXAMPLES, (ex) => (ex === payments ? templates : loadTemplates()));
      const { manifests } = manifestsOf(payments, rendered.files);
      const results = await dryRunAll(admin, manifests, [payments.platform.asoNamespace]);
      return results.filter((r) => !r.ok);
    }
    const failureKey = (r: Checked) =>
      JSON.stringify([r.file, r.cluster, r.ref, r.problems.map((p) => [p.kind, p.path, p.message])]);
    /** What fails with the unedited templates (nothing, unless the positive tests above fail too). */
    let baseline: Set<string> | undefined;

    /**
     * Renders every example with payments' templates edited and dry-runs payments' manifests: the failures
     * the edit causes (any failure the unedited templates have too is left out, so these controls stay
     * about the edit).
     */
    async function dryRunWith(edits: Record<string, (text: string) => string>): Promise<Checked[]> {
      const files = templateFiles("v1");
      for (const [name, edit] of Object.entries(edits)) {
        const before = files.get(name)!;
        const after = edit(before);
        expect(after, `the edit of ${name} changed nothing`).not.toBe(before);
        files.set(name, after);
      }
      baseline ??= new Set((await failuresWith(loadTemplates())).map(failureKey));
      return (await failuresWith(parseTemplateSet("v1", files))).filter((r) => !baseline!.has(failureKey(r)));
    }

    it("a misspelled field (built-in and custom resource) is reported as pruned, naming the field", async () => {
      const failed = await dryRunWith({
        "limit-range.yaml": (t) => t.replace("      defaultRequest:", "      defaultRequst:"),
        "identity.yaml": (t) => t.replace("  operatorSpec:", "  operatorSpecs:"),
      });
      const problems = failed.flatMap((r) => r.problems.map((p) => ({ ref: r.ref, kind: p.kind, path: p.path })));
      expect(problems.length, report(failed)).toBeGreaterThan(0);
      expect(new Set(failed.map((r) => r.ref.split(" ")[0]))).toEqual(
        new Set(["v1/LimitRange", "managedidentity.azure.com/v1api20230131/UserAssignedIdentity"]),
      );
      // LimitRange once (the base), the identity once per cluster of the team (3).
      expect(failed).toHaveLength(4);
      for (const p of problems) {
        expect(p.kind, report(failed)).toBe("pruned");
        expect(p.path, report(failed)).toMatch(/^spec\.limits\[0\]\.defaultRequst$|^spec\.operatorSpecs$/);
      }
    });

    it("a value of the wrong type (built-in and custom resource) is reported as rejected", async () => {
      const failed = await dryRunWith({
        "owners-rolebinding.yaml": (t) =>
          t.replace('subjects: "{{ rbac.ownerSubjects }}"', 'subjects: "{{ team.name }}"'),
        "flux-kustomization.yaml": (t) => t.replace("  prune: true", '  prune: "yes"'),
      });
      expect(failed.map((r) => r.ref).sort(), report(failed)).toEqual(
        [
          "kustomize.toolkit.fluxcd.io/v1/Kustomization flux-config/team-payments",
          "kustomize.toolkit.fluxcd.io/v1/Kustomization flux-config/team-payments",
          "kustomize.toolkit.fluxcd.io/v1/Kustomization flux-config/team-payments",
          "rbac.authorization.k8s.io/v1/RoleBinding payments/team-owners",
        ].sort(),
      );
      for (const r of failed) {
        expect(r.problems[0]?.kind, report(failed)).toBe("rejected");
        expect(r.problems[0]?.message, report(failed)).toMatch(
          r.ref.includes("Kustomization") ? /spec\.prune/ : /subjects/,
        );
      }
    });
  });
});
