/**
 * The install manifests as a platform team gets them: flux/ copied into a fleet repository the way
 * docs/install.md says (`cp -rL`, which turns flux/berth/{crds,controller,api} into copies of infra/), then
 *
 *   - every kustomization builds with `kubectl kustomize` (kustomize v5.5, Flux's builder),
 *   - every Flux Kustomization under clusters/ points at a folder that builds, depends only on Kustomizations
 *     of its cluster, prunes, and health-checks objects its build really holds,
 *   - every object of every build, and the cluster entry files, pass a server-side dry-run apply on the test
 *     kube-apiserver (the version infra/test-cluster/go builds) with the Flux, ASO and Team CRDs, compared field by
 *     field with what the server would store (tests/support/kube-dry-run.ts),
 *   - the Deployments are hardened, run the image's user, and take their image from the one release component,
 *   - the platform config file loads as the API and as the controller would load it,
 *
 * and negative controls: a misspelled field and values of the wrong type, edited into a copy of the overlays,
 * are caught by the same path.
 */
// needs: cluster
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { loadConfig, loadControllerConfig } from "@berth/config";
import { SLICE_LETTERS } from "@berth/core";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT, startKubeCluster, type KubeCluster } from "../support/kube-cluster.js";
import { formatDryRunProblems, serverSideDryRunApply, type DryRunResult } from "../support/kube-dry-run.js";
import { applyObject, installCrd } from "../support/kube-http.js";
import { kustomizeBuild, parseManifests, type KubeObject } from "../support/kustomize.js";
import { componentVersion } from "../support/test-cluster-binaries.js";

const FIELD_MANAGER = "berth-install-dry-run";
/** The image's user (infra/image/build.mjs). */
const IMAGE_USER = 65532;

/** A fleet repository with Berth's install layout copied in, as docs/install.md step 3 does. */
function fleetCopy(): string {
  const fleet = mkdtempSync(join(tmpdir(), "berth-fleet-"));
  cpSync(join(REPO_ROOT, "flux"), fleet, { recursive: true, dereference: true });
  return fleet;
}

/**
 * Every folder holding a kustomization.yaml of kind Kustomization (components are built by their users), but
 * the cluster roots clusters/<cluster>/: they include flux-system/, which `flux bootstrap` writes.
 */
function kustomizations(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    const file = join(dir, "kustomization.yaml");
    if (existsSync(file) && (parse(readFileSync(file, "utf8")) as { kind?: string }).kind !== "Component")
      out.push(dir);
    for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) walk(join(dir, e.name));
  };
  walk(join(root, "berth"));
  return out.sort();
}

/** The Flux Kustomizations and other objects of clusters/<cluster>/*.yaml (applied by the cluster's flux-system). */
function clusterEntries(fleet: string): Array<{ cluster: string; file: string; objects: KubeObject[] }> {
  const out: Array<{ cluster: string; file: string; objects: KubeObject[] }> = [];
  for (const cluster of readdirSync(join(fleet, "clusters")).sort()) {
    for (const file of readdirSync(join(fleet, "clusters", cluster))
      .filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml")
      .sort()) {
      const path = join(fleet, "clusters", cluster, file);
      out.push({ cluster, file: relative(fleet, path), objects: parseManifests(readFileSync(path, "utf8"), path) });
    }
  }
  return out;
}

interface Built {
  dir: string;
  objects: KubeObject[];
}

async function buildAll(fleet: string): Promise<Built[]> {
  return Promise.all(
    kustomizations(fleet).map(async (dir) => ({ dir: relative(fleet, dir), objects: await kustomizeBuild(dir) })),
  );
}

type Checked = DryRunResult & { source: string };

/**
 * Dry-runs every object the way Flux applies them: CRDs and Namespaces first (for real: the objects inside
 * need them), then the rest with dryRun=All; every problem is returned, none thrown.
 */
async function dryRun(
  cluster: KubeCluster,
  sets: Array<{ source: string; objects: KubeObject[] }>,
): Promise<Checked[]> {
  const kc = cluster.kubeConfig();
  const results: Checked[] = [];
  const all = sets.flatMap((s) => s.objects.map((o) => ({ source: s.source, object: o })));
  for (const { source, object } of all.filter((x) => x.object.kind === "CustomResourceDefinition")) {
    const refused = await installCrd(kc, object);
    const ok = refused === undefined || refused.startsWith("HTTP 409");
    results.push({
      source,
      ref: `CustomResourceDefinition ${object.metadata.name}`,
      ok,
      problems: ok ? [] : [{ kind: "rejected", path: "", message: refused! }],
    });
  }
  const namespaces = all.filter((x) => x.object.kind === "Namespace");
  const nsResults = await serverSideDryRunApply(
    kc,
    namespaces.map((x) => x.object),
    FIELD_MANAGER,
  );
  for (const [i, x] of namespaces.entries()) {
    results.push({ ...nsResults[i]!, source: x.source });
    if (nsResults[i]!.ok) await applyObject(kc, x.object, FIELD_MANAGER);
  }
  const rest = all.filter((x) => x.object.kind !== "Namespace" && x.object.kind !== "CustomResourceDefinition");
  const restResults = await serverSideDryRunApply(
    kc,
    rest.map((x) => x.object),
    FIELD_MANAGER,
  );
  for (const [i, x] of rest.entries()) results.push({ ...restResults[i]!, source: x.source });
  return results;
}

function report(results: readonly Checked[]): string {
  return results
    .flatMap((r) =>
      r.problems.map((p) => `${r.source}: ${r.ref}: [${p.kind}] ${p.path ? `${p.path}: ` : ""}${p.message}`),
    )
    .join("\n");
}

const deployments = (built: Built[]) =>
  built.flatMap((b) => b.objects.filter((o) => o.kind === "Deployment").map((d) => ({ dir: b.dir, d })));

describe("install manifests: kustomize builds, Flux wiring, hardening", () => {
  let fleet: string;
  let built: Built[];
  beforeAll(async () => {
    fleet = fleetCopy();
    built = await buildAll(fleet);
  });
  afterAll(() => rmSync(fleet, { recursive: true, force: true }));

  it("copies into a fleet repo as plain files, and every kustomization there builds", () => {
    expect(statSync(join(fleet, "berth", "controller")).isDirectory()).toBe(true);
    expect(readdirSync(join(fleet, "berth", "controller")).sort()).toEqual(
      readdirSync(join(REPO_ROOT, "infra", "controller")).sort(),
    );
    expect(built.map((b) => b.dir)).toEqual([
      "berth/api",
      "berth/controller",
      "berth/controller/crds",
      "berth/crds",
      "berth/overlays/aks-dev-weu",
      "berth/overlays/management",
      "berth/platform",
    ]);
    for (const b of built) expect(b.objects.length, b.dir).toBeGreaterThan(0);
  });

  it("wires each cluster with Flux Kustomizations: CRDs first, dependsOn within the cluster, prune, health checks of built objects", async () => {
    const entries = clusterEntries(fleet);
    expect([...new Set(entries.map((e) => e.cluster))]).toEqual(["aks-dev-weu", "management"]);
    for (const cluster of ["aks-dev-weu", "management"]) {
      const fluxKs = entries
        .filter((e) => e.cluster === cluster)
        .flatMap((e) => e.objects.filter((o) => o.kind === "Kustomization"));
      const names = new Set(fluxKs.map((k) => k.metadata.name));
      for (const k of fluxKs) {
        const where = `${cluster}: Kustomization ${k.metadata.name}`;
        expect(k.apiVersion, where).toBe("kustomize.toolkit.fluxcd.io/v1");
        const slice = /^berth-teams-([a-z])$/.exec(k.metadata.name)?.[1];
        // Berth's teams come from the slices of the cluster's teams (ADR 0019, 0022), beside the team Kustomizations,
        // so a team commit never wakes the platform's own Kustomizations, which read the fleet repository itself.
        expect(k.metadata.namespace, where).toBe(slice ? "flux-config" : "flux-system");
        const source = slice
          ? { kind: "ExternalArtifact", name: `berth-team-slice-${slice}` }
          : { kind: "GitRepository", name: "flux-system" };
        expect(k.spec.sourceRef, where).toEqual(source);
        expect(k.spec.prune, where).toBe(true);
        for (const dep of k.spec.dependsOn ?? [])
          expect(names.has(dep.name), `${where} depends on ${dep.name}`).toBe(true);
        const path = join(fleet, k.spec.path);
        if (slice) {
          // Berth writes the team Kustomizations into clusters/<cluster>/teams/ (its slice's part of it).
          expect(k.spec.path).toBe(`./clusters/${cluster}/teams`);
          continue;
        }
        const objects = await kustomizeBuild(path);
        expect(k.spec.wait === true || (k.spec.healthChecks ?? []).length > 0, `${where} checks health`).toBe(true);
        for (const h of k.spec.healthChecks ?? []) {
          expect(
            objects.some(
              (o) => o.kind === h.kind && o.metadata.name === h.name && o.metadata.namespace === h.namespace,
            ),
            `${where} health-checks ${h.kind} ${h.namespace}/${h.name}`,
          ).toBe(true);
        }
      }
      // The cluster root applies flux-system and exactly these entry files (never clusters/<cluster>/teams/).
      const root = parse(readFileSync(join(fleet, "clusters", cluster, "kustomization.yaml"), "utf8")) as {
        resources: string[];
      };
      expect([...root.resources].sort(), cluster).toEqual(
        ["flux-system", ...entries.filter((e) => e.cluster === cluster).map((e) => e.file.split("/").at(-1)!)].sort(),
      );
      if (cluster === "aks-dev-weu") {
        const byName = Object.fromEntries(fluxKs.map((k) => [k.metadata.name, k]));
        const slices = SLICE_LETTERS.map((l) => `berth-teams-${l}`);
        expect(Object.keys(byName).sort()).toEqual(["berth-controller", "berth-crds", ...slices]);
        expect(byName["berth-crds"]!.spec.wait).toBe(true);
        expect(byName["berth-controller"]!.spec.dependsOn).toEqual([{ name: "berth-crds" }]);
        for (const name of slices) {
          // No dependsOn: Flux reconciles a Kustomization's dependencies each time its source moves, so every
          // onboarding would reconcile berth-crds and berth-controller too (ADR 0019); a team applied too early is
          // retried.
          expect(byName[name]!.spec.dependsOn, name).toBeUndefined();
          expect(byName[name]!.spec.retryInterval, name).toBe("1m");
        }
      } else {
        expect([...names]).toEqual(["berth-api"]);
      }
    }
  });

  it("keeps the Team CRD out of every prune: deleting it would delete every Team", () => {
    const crds = built.flatMap((b) =>
      b.objects.filter((o) => o.kind === "CustomResourceDefinition").map((o) => ({ dir: b.dir, o })),
    );
    expect(crds.map((c) => c.dir).sort()).toEqual(["berth/controller/crds", "berth/crds"]);
    for (const { o } of crds) expect(o.metadata.annotations?.["kustomize.toolkit.fluxcd.io/prune"]).toBe("disabled");
  });

  it("runs every Deployment hardened, as the image's user, with the image of the one release component", () => {
    const release = parse(readFileSync(join(fleet, "berth", "release", "kustomization.yaml"), "utf8")) as {
      images: Array<{ newName: string; newTag: string }>;
    };
    const image = `${release.images[0]!.newName}:${release.images[0]!.newTag}`;
    const overlays = deployments(built).filter((x) => x.dir.startsWith("berth/overlays/"));
    expect(overlays.map((x) => `${x.dir} ${x.d.metadata.name}`)).toEqual([
      "berth/overlays/aks-dev-weu berth-controller",
      "berth/overlays/management berth-api",
    ]);
    for (const { dir, d } of deployments(built)) {
      const where = `${dir} ${d.metadata.name}`;
      const pod = d.spec.template.spec;
      expect(pod.securityContext, where).toMatchObject({
        runAsNonRoot: true,
        runAsUser: IMAGE_USER,
        runAsGroup: IMAGE_USER,
        fsGroup: IMAGE_USER,
        seccompProfile: { type: "RuntimeDefault" },
      });
      expect(pod.enableServiceLinks, where).toBe(false);
      for (const c of pod.containers) {
        expect(c.securityContext, where).toEqual({
          privileged: false,
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          runAsNonRoot: true,
          capabilities: { drop: ["ALL"] },
        });
        expect(
          c.resources.requests.cpu && c.resources.requests.memory && c.resources.limits.memory,
          where,
        ).toBeTruthy();
        expect(c.livenessProbe && c.readinessProbe && c.startupProbe, where).toBeTruthy();
        // The image's entrypoint (tini) stays: args, never command.
        expect(c.command, where).toBeUndefined();
        expect(c.args, where).toEqual(["node", `apps/${d.metadata.name.replace("berth-", "")}/dist/main.js`]);
        expect(c.image, where).toBe(dir.startsWith("berth/overlays/") ? image : "registry.example.com/berth:0.1.0");
        // The root filesystem is read-only: /tmp is a volume.
        expect(
          c.volumeMounts.map((m: { mountPath: string }) => m.mountPath),
          where,
        ).toContain("/tmp");
        // A mount point inside another read-only volume fails at container start.
        const paths = c.volumeMounts.map((m: { mountPath: string }) => m.mountPath as string);
        for (const p of paths)
          expect(
            paths.filter((q: string) => q !== p && p.startsWith(`${q}/`)),
            `${where}: ${p} is inside another mount`,
          ).toEqual([]);
      }
    }
    const api = overlays.find((x) => x.d.metadata.name === "berth-api")!.d.spec.template.spec;
    expect(api.automountServiceAccountToken).toBe(false);
    const controller = overlays.find((x) => x.d.metadata.name === "berth-controller")!.d;
    const env = Object.fromEntries(
      controller.spec.template.spec.containers[0].env.map((e: { name: string; value?: string }) => [e.name, e.value]),
    );
    expect(env.BERTH_CLUSTER_NAME).toBe("aks-dev-weu");
    const sa = built
      .find((b) => b.dir === "berth/overlays/aks-dev-weu")!
      .objects.find((o) => o.kind === "ServiceAccount" && o.metadata.name === "berth-controller")!;
    expect(sa.metadata.annotations?.["azure.workload.identity/client-id"]).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    );
    expect(sa.metadata.annotations?.["azure.workload.identity/client-id"]).not.toBe(
      "00000000-0000-0000-0000-000000000000",
    );
  });

  it("switches the API to an SSH deploy key with the git-ssh component (token file out, key and known_hosts in)", async () => {
    const copy = fleetCopy();
    try {
      const file = join(copy, "berth", "overlays", "management", "kustomization.yaml");
      const text = readFileSync(file, "utf8");
      const enabled = text.replace("  # - ../../api/git-ssh", "  - ../../api/git-ssh");
      expect(enabled).not.toBe(text);
      writeFileSync(file, enabled);
      const d = (await kustomizeBuild(dirname(file))).find((o) => o.kind === "Deployment")!;
      const env = Object.fromEntries(
        d.spec.template.spec.containers[0].env.map((e: { name: string; value: string }) => [e.name, e.value]),
      );
      expect(env.BERTH_GIT_TOKEN_FILE).toBeUndefined();
      expect(env.BERTH_GIT_SSH_KEY_FILE).toBe("/var/run/secrets/berth/git/ssh-privatekey");
      expect(env.BERTH_GIT_KNOWN_HOSTS_FILE).toBe("/var/run/secrets/berth/git/known_hosts");
      const mount = d.spec.template.spec.containers[0].volumeMounts.find(
        (m: { name: string }) => m.name === "git-credential",
      );
      expect(mount.mountPath).toBe("/var/run/secrets/berth/git");
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });

  it("has a NetworkPolicy and a PodDisruptionBudget for each Deployment", () => {
    for (const b of built.filter((x) => x.dir.startsWith("berth/overlays/"))) {
      for (const d of b.objects.filter((o) => o.kind === "Deployment")) {
        const labels = d.spec.template.metadata.labels as Record<string, string>;
        const selects = (o: KubeObject, selector: Record<string, string>) =>
          o.metadata.namespace === d.metadata.namespace && Object.entries(selector).every(([k, v]) => labels[k] === v);
        const np = b.objects.find((o) => o.kind === "NetworkPolicy" && selects(o, o.spec.podSelector.matchLabels));
        expect(np?.spec.policyTypes, `${b.dir}: NetworkPolicy for ${d.metadata.name}`).toEqual(["Ingress", "Egress"]);
        const pdb = b.objects.find((o) => o.kind === "PodDisruptionBudget" && selects(o, o.spec.selector.matchLabels));
        expect(pdb?.spec.minAvailable, `${b.dir}: PDB for ${d.metadata.name}`).toBe(1);
      }
    }
  });

  it("ships a platform config the API and the controller load as their Deployments would", () => {
    for (const [dir, kind] of [
      ["berth/overlays/management", "api"],
      ["berth/overlays/aks-dev-weu", "controller"],
    ] as const) {
      const objects = built.find((b) => b.dir === dir)!.objects;
      const cm = objects.find((o) => o.kind === "ConfigMap" && o.metadata.name.startsWith("berth-config-"))!;
      const d = objects.find((o) => o.kind === "Deployment")!;
      expect(d.spec.template.spec.volumes.find((v: { name: string }) => v.name === "config").configMap.name, dir).toBe(
        cm.metadata.name,
      );
      const file = join(fleet, "config-check", dir, "berth.yaml");
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, cm.data["berth.yaml"]);
      const env = Object.fromEntries(
        d.spec.template.spec.containers[0].env
          .filter((e: { value?: string }) => e.value !== undefined)
          .map((e: { name: string; value: string }) => [e.name, e.value]),
      );
      if (kind === "api") {
        const config = loadConfig(
          {
            ...env,
            BERTH_CONFIG_FILE: file,
            BERTH_GIT_TOKEN: "stand-in-for-the-token-file",
            BERTH_GIT_TOKEN_FILE: undefined,
          },
          dirname(file),
        );
        expect(config.api.auth.mode).toBe("oidc");
        expect(config.fluxRepo.workDir).toBe("/var/lib/berth/work");
        expect(Object.keys(config.api.clusters)).toEqual(["aks-dev-weu"]);
        // Behind the one ingress: without it every unauthenticated caller shares the ingress's rate-limit budget.
        expect(config.api.trustProxy).toBe(1);
        // What the cluster's entry files install matches what this config renders: the team applier team
        // Kustomizations name (ADR 0023; RBAC without the policy if they differ, and nothing would say so) and the
        // artifacts they read (ADR 0022).
        const { asoNamespace, fluxServiceAccount, fluxSource } = config.platform;
        const installed = clusterEntries(fleet)
          .filter((e) => e.cluster === "aks-dev-weu")
          .flatMap((e) => e.objects);
        const applier = installed.find((o) => o.kind === "ServiceAccount" && o.metadata.name === fluxServiceAccount);
        expect(applier?.metadata.namespace).toBe(asoNamespace);
        const policy = installed.find((o) => o.kind === "ValidatingAdmissionPolicy")!;
        expect(policy.spec.matchConditions[0].expression).toContain(
          `'system:serviceaccount:${asoNamespace}:${fluxServiceAccount}'`,
        );
        expect(JSON.stringify(policy.spec.variables)).toContain(`== '${asoNamespace}'`);
        const generators = installed.filter((o) => o.metadata.name.startsWith("berth-team-artifacts-"));
        expect(generators).toHaveLength(26);
        for (const g of generators) {
          expect(g.metadata.namespace).toBe(asoNamespace);
          expect(g.spec.artifacts[0].name).toBe(`${fluxSource.artifactPrefix}{team}`);
        }
      } else {
        const config = loadControllerConfig(
          { ...env, BERTH_CONFIG_FILE: file, BERTH_POD_NAME: "berth-controller-0" },
          dirname(file),
        );
        expect(config.provider).toBe("azure");
        expect(config.cluster.name).toBe("aks-dev-weu");
        expect(config.cluster.azure).toBeDefined();
      }
    }
  });
});

describe("install manifests: the ASO kinds team owners may declare", () => {
  const documents = (path: string) =>
    parseManifests(readFileSync(join(REPO_ROOT, path), "utf8"), path) as Array<
      KubeObject & { rules?: Array<{ apiGroups: string[] }>; spec?: Record<string, unknown> }
    >;
  const named = (objects: ReturnType<typeof documents>, kind: string, name: string) => {
    const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
    if (!found) throw new Error(`no ${kind} ${name}`);
    return found;
  };
  const azureGroups = (groups: string[]) => [...new Set(groups.filter((g) => g.endsWith(".azure.com")))].sort();

  // The apiserver looks a binding's param up before any matchCondition, so the policy that refuses ASO objects while
  // the team's credential is missing names the groups; the controller keeps the credential while objects of these
  // groups remain (docs/security.md, ADR 0025). A group granted in one list and missing from another is a hole.
  it("grants, guards and outlives the same ASO API groups", () => {
    const tenancy = documents("flux/clusters/aks-dev-weu/berth-tenancy.yaml");
    const granted = azureGroups(
      named(tenancy, "ClusterRole", "berth-team-azure-resources").rules!.flatMap((r) => r.apiGroups),
    );
    const policy = named(tenancy, "ValidatingAdmissionPolicy", "berth-team-azure-credential-exists").spec as {
      matchConstraints: { resourceRules: Array<{ apiGroups: string[] }> };
    };
    const guarded = azureGroups(policy.matchConstraints.resourceRules.flatMap((r) => r.apiGroups));
    const offboarding = azureGroups(
      named(documents("flux/berth/controller/rbac-cluster.yaml"), "ClusterRole", "berth-controller").rules!.flatMap(
        (r) => r.apiGroups,
      ),
    );
    expect(granted).toEqual(["authorization.azure.com", "managedidentity.azure.com", "resources.azure.com"]);
    expect(guarded).toEqual(granted);
    expect(offboarding).toEqual(granted);
  });
});

describe(`install manifests: server-side dry-run on kube-apiserver ${componentVersion("kubernetes")}`, () => {
  let cluster: KubeCluster;

  beforeAll(async () => {
    cluster = await startKubeCluster();
    // What `flux bootstrap` creates.
    await applyObject(
      cluster.kubeConfig(),
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "flux-system" } },
      FIELD_MANAGER,
    );
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  /** Everything a cluster applies from the fleet repo: cluster entry files, then every build. */
  async function everything(fleet: string) {
    const sets: Array<{ source: string; objects: KubeObject[] }> = clusterEntries(fleet).map((e) => ({
      source: e.file,
      objects: e.objects,
    }));
    for (const b of await buildAll(fleet)) sets.push({ source: b.dir, objects: b.objects });
    return sets;
  }

  it("applies every object of every build and every cluster entry file, nothing rejected, pruned or changed", async () => {
    const fleet = fleetCopy();
    try {
      const sets = await everything(fleet);
      const results = await dryRun(cluster, sets);
      expect(report(results)).toBe("");
      const kinds = new Set(results.map((r) => r.ref.split(" ")[0]!.split("/").at(-1)));
      expect([...kinds].sort()).toEqual(
        [
          "ArtifactGenerator",
          "ClusterRole",
          "ClusterRoleBinding",
          "ConfigMap",
          "CustomResourceDefinition",
          "Deployment",
          "GitRepository",
          "Ingress",
          "Kustomization",
          "Namespace",
          "NetworkPolicy",
          "PodDisruptionBudget",
          "Receiver",
          "Role",
          "RoleBinding",
          "Secret",
          "Service",
          "ServiceAccount",
          "ValidatingAdmissionPolicy",
          "ValidatingAdmissionPolicyBinding",
        ].sort(),
      );
      console.log(
        `[tests/install] ${results.length} objects from ${sets.length} builds and entry files dry-run applied, 0 problems`,
      );
    } finally {
      rmSync(fleet, { recursive: true, force: true });
    }
  });

  describe("negative controls: a broken overlay is caught by the same path", () => {
    /** Edits files of a fresh fleet copy, then dry-runs everything; returns the failures. */
    async function failuresWith(edits: Record<string, (text: string) => string>): Promise<Checked[]> {
      const fleet = fleetCopy();
      try {
        for (const [file, edit] of Object.entries(edits)) {
          const path = join(fleet, file);
          const before = readFileSync(path, "utf8");
          const after = edit(before);
          expect(after, `the edit of ${file} changed nothing`).not.toBe(before);
          writeFileSync(path, after);
        }
        return (await dryRun(cluster, await everything(fleet))).filter((r) => !r.ok);
      } finally {
        rmSync(fleet, { recursive: true, force: true });
      }
    }

    it("a misspelled field in a per-cluster overlay is reported as pruned, naming the field", async () => {
      const failed = await failuresWith({
        "berth/overlays/aks-dev-weu/kustomization.yaml": (t) =>
          t.replace(
            "                  - name: BERTH_CLUSTER_NAME\n                    value: aks-dev-weu",
            "                  - name: BERTH_CLUSTER_NAME\n                    valeu: aks-dev-weu",
          ),
      });
      expect(
        failed.map((r) => `${r.source} ${r.ref}`),
        formatDryRunProblems(failed),
      ).toEqual(["berth/overlays/aks-dev-weu apps/v1/Deployment berth-system/berth-controller"]);
      expect(failed[0]!.problems.map((p) => [p.kind, p.path])).toEqual([
        ["pruned", 'spec.template.spec.containers[name="controller"].env[name="BERTH_CLUSTER_NAME"].valeu'],
      ]);
    });

    it("a value of the wrong type in an overlay and in a Flux Kustomization is reported as rejected", async () => {
      const failed = await failuresWith({
        "berth/overlays/management/kustomization.yaml": (t) =>
          `${t}  - target: { kind: Deployment, name: berth-api }\n    patch: |-\n      - op: replace\n        path: /spec/replicas\n        value: two\n`,
        "clusters/aks-dev-weu/berth.yaml": (t) =>
          t.replace(
            "  path: ./berth/crds\n  # The CRD itself carries kustomize.toolkit.fluxcd.io/prune: disabled: removing it would delete every Team.\n  prune: true",
            '  path: ./berth/crds\n  prune: "yes"',
          ),
      });
      expect(failed.map((r) => `${r.source} ${r.ref}`).sort(), report(failed)).toEqual(
        [
          "berth/overlays/management apps/v1/Deployment berth-api/berth-api",
          "clusters/aks-dev-weu/berth.yaml kustomize.toolkit.fluxcd.io/v1/Kustomization flux-system/berth-crds",
        ].sort(),
      );
      for (const r of failed) {
        expect(r.problems[0]!.kind, report(failed)).toBe("rejected");
        expect(r.problems[0]!.message, report(failed)).toMatch(
          r.ref.includes("Deployment") ? /replicas/ : /spec\.prune/,
        );
      }
    });
  });
});
