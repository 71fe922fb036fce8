/**
 * A platform on one test cluster, for real, as docs/install.md builds it:
 *
 *   - the fleet repository is a bare git repository served over smart HTTP (`git http-backend`, Basic auth),
 *     seeded from Berth's flux/ folder the way docs/install.md copies it (`cp -rL flux/. <fleet>`), with this
 *     test's platform config as berth/platform/berth.yaml and the `flux-system` folder `flux bootstrap` writes;
 *   - real Flux (tests/support/flux.ts) is bootstrapped on clusters/<cluster>: it applies berth-crds, then
 *     berth-controller, then berth-teams, which applies every team Kustomization Berth commits;
 *   - kube-controller-manager runs the namespace, garbage-collector and token controllers;
 *   - Berth's API commits to the repository over smart HTTP and reads Team status through the
 *     berth-status-reader token Flux applied (the kubeconfig docs/install.md step 6 builds);
 *   - Berth's controller runs as its own process from its built entry (apps/controller/dist/main.js, what the
 *     image runs), as the berth-controller ServiceAccount, once Flux has applied its Deployment. No kubelet runs here, so this harness stands in for one: it writes the Deployment's status
 *     (all replicas available) once the controller has written platform-vars, the moment its readiness probe
 *     would pass. That status is the one object state here not written by the component that owns it.
 *   - Azure Service Operator is played by `AsoStandIn` (tests/support/aso-stand-in.ts) by default; with
 *     `aso: "real"` it is ASO itself (tests/support/aso.ts) against one fake Azure for the platform
 *     (tests/support/platform-azure.ts).
 */
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import {
  newClusterFiles,
  platformSchema,
  sliceBranches,
  sliceFiles,
  sliceOptions,
  slicesFile,
  withTeamsRepositorySettings,
  type PlatformInput,
} from "@berth/core";
import { parse, parseAllDocuments, stringify } from "yaml";
import { Admin, CONTROLLER_GROUPS, CONTROLLER_USER, type Obj } from "../controller/helpers.js";
import { ensureBuilt } from "./build.js";
import { startControllerProcess, type AppProcess } from "./processes.js";
import { DEV_TOKEN, REPO_ROOT, startBerth, type RawConfig, type RunningBerth } from "./berth.js";
import {
  bootstrapFlux,
  bootstrapObjects,
  startFlux,
  type BootstrapOptions,
  type FluxOptions,
  type RunningFlux,
} from "./flux.js";
import { startGitHttpServer, type GitHttpServer } from "./git-http-server.js";
import { basicAuthEnv, createBareRepo, git, pushTree } from "./git-remotes.js";
import { startKubeCluster, type KubeCluster } from "./kube-cluster.js";
import { startAso, type AsoOptions, type RunningAso } from "./aso.js";
import { AsoStandIn } from "./aso-stand-in.js";
import { clusterIssuer, startPlatformAzure } from "./platform-azure.js";
import type { FakeAzure, FakeAzureOptions } from "../fake-azure/index.js";
import { eventually } from "./wait.js";
import { FleetRevisions } from "./fleet-revisions.js";
import { FluxRepo } from "@berth/gitops";

export const PLATFORM_CLUSTER = "aks-dev-weu";
/** The controller identity's client id each further cluster's overlay gets (the fake Azure does not check it). */
const TEST_CONTROLLER_CLIENT_ID = "11111111-2222-4333-8444-555555555555";
export const ASO_NAMESPACE = "flux-config";
export const TENANT_ID = "11111111-1111-4111-8111-111111111111";
const GIT_AUTH = { username: "berth", password: "fleet-token-for-tests" };

/** A cluster of the test platform: its name and its environment. */
export interface ClusterSpec {
  name: string;
  environment: string;
}

/** The platform section of Berth's config for the test clusters (static values: no Azure discovery). */
export function testPlatform(
  clusters: ClusterSpec[] = [{ name: PLATFORM_CLUSTER, environment: "dev" }],
): PlatformInput {
  const environments = [...new Set(clusters.map((c) => c.environment))];
  return {
    asoNamespace: ASO_NAMESPACE,
    templateVersion: "v1",
    federatedCredential: { subjectMode: "aso-controller" },
    environments: environments.map((environment) => ({
      name: environment,
      clusters: clusters
        .filter((c) => c.environment === environment)
        .map((c, i) => ({
          name: c.name,
          vars: {
            TENANT_ID,
            SUBSCRIPTION_ID: `22222222-2222-4222-8222-22222222222${i}`,
            CLUSTER_OIDC_ISSUER_URL: `https://westeurope.oic.prod-aks.azure.com/${TENANT_ID}/${c.name}/`,
            AZURE_LOCATION: "westeurope",
            PLATFORM_CLIENT_ID: "33333333-3333-4333-8333-333333333333",
            SERVICEBUS_NAMESPACE: `sb-${environment}`,
            POSTGRES_SERVER: `pg-${environment}`,
          },
        })),
    })),
    platformVars: { SERVICEBUS_NAMESPACE: "Shared Service Bus namespace", POSTGRES_SERVER: "Shared PostgreSQL server" },
    // The embedded default's catalog (infra/local/berth.yaml).
    roleCatalog: (
      parse(readFileSync(join(REPO_ROOT, "infra", "local", "berth.yaml"), "utf8")) as {
        platform: Pick<PlatformInput, "roleCatalog">;
      }
    ).platform.roleCatalog,
  };
}

/**
 * Where team Kustomizations read from (platform.fluxSource.kind, ADR 0019). `ExternalArtifact`: flux/ as it is, each
 * team's own artifact cut by source-watcher from GitRepository berth-teams, which the API's Receiver notification
 * fetches at once. `GitRepository`: the install before ADR 0019 (tests/fixtures/flux-install-before-0019): berth-teams
 * and every team read GitRepository flux-system; only source- and kustomize-controller run, no Receiver.
 */
export type TeamSource = "ExternalArtifact" | "GitRepository";

export interface FluxPlatformOptions {
  /** The workload clusters (default: aks-dev-weu in dev). Each gets its own apiserver, Flux, controller and ASO. */
  clusters?: ClusterSpec[];
  /** The interval of the GitRepositories (flux-system, what `flux bootstrap --interval` sets, and berth-teams). Default 5s. */
  pollInterval?: string;
  /** Default ExternalArtifact (what flux/ installs). */
  teamSource?: TeamSource;
  /**
   * With ExternalArtifact: install ADR 0019's layout (infra/flux/upgrades/0019/berth-teams.yaml: one generator for the team
   * artifacts team-<team>, one Kustomization berth-teams) instead of flux/'s slices (ADR 0022).
   */
  install0019?: boolean;
  /**
   * With ExternalArtifact: this many hash slices (ADR 0034, platform.layout.slices) instead of flux/'s first-letter
   * slices, as `berth cluster add` writes them for such a platform (team folders in their shard's folder).
   */
  hashSlices?: 16 | 32 | 64 | 128 | 256;
  /** With hashSlices: how the slices fetch (platform.layout.slices.fetch, ADR 0036). Default whole. */
  sliceFetch?: "whole" | "per-slice";
  /**
   * The API tells each cluster's Receiver to fetch after a push (api.fluxReceivers; ExternalArtifact only). Default
   * true; false leaves every fetch to the poll interval and `reconcileSource()`.
   */
  notify?: boolean;
  /** Changes to the platform section before anything starts. */
  platform?: (platform: PlatformInput) => void;
  flux?: FluxOptions;
  /** Play ASO (default true: AsoStandIn); "real": run Azure Service Operator against a fake Azure; false: neither. */
  aso?: boolean | "real";
  /** With `aso: "real"`: ASO's settings (aso-controller-settings) and the fake Azure's options. */
  realAso?: AsoOptions & { azure?: FakeAzureOptions };
  /** How often the ASO stand-in looks at every ASO object (default 300 ms; a fleet of 1,000 teams wants less). */
  asoIntervalMs?: number;
  /** Changes to the API's config file (e.g. templatesDir). */
  berthConfig?: (raw: RawConfig) => void;
  /** More of the API's environment (e.g. BERTH_FORGE_TOKEN). */
  apiEnv?: Record<string, string>;
  /**
   * Install infra/flux/pull-requests/forge-receiver.yaml on each cluster (Receiver berth-teams-forge, type github,
   * for the forge's push webhook), with its Secret, as docs/pull-requests.md says (ExternalArtifact only).
   */
  forgeReceiver?: boolean;
  /**
   * An existing, empty fleet repository (e.g. on Gitea: tests/support/gitea.ts) and its credentials, instead of the
   * harness's own smart-HTTP server. Flux, Berth's API and the seeding use it.
   */
  repository?: { url: string; username: string; password: string };
  /** Files committed with the install, before Flux starts (e.g. teams an earlier Berth wrote: fleet-seed.ts). */
  seed?: (platform: Record<string, unknown>) => Promise<Map<string, string>>;
}

/** One workload cluster of the platform, with what runs for it. */
export interface PlatformCluster {
  name: string;
  /** The GitRepository team commits reach the cluster through (berth-teams, or flux-system before ADR 0019). */
  teamsSource: { namespace: string; name: string };
  /** Receiver berth-teams: its webhook URL and HMAC key (ExternalArtifact only). */
  receiver: { url: string; token: string; tokenFile: string } | undefined;
  /** Receiver berth-teams-forge (`forgeReceiver`): its webhook URL and the secret the forge signs with. */
  forgeReceiver?: { url: string; token: string };
  cluster: KubeCluster;
  admin: Admin;
  flux: RunningFlux;
  /** Berth's controller process for this cluster; its output in `controller.logs`. */
  controller: AppProcess;
  aso: AsoStandIn | undefined;
  /** Azure Service Operator itself (`aso: "real"`). */
  realAso?: RunningAso;
  /** `flux reconcile source git <teamsSource>`: fetch now, not at the next interval; resolves with the revision fetched. */
  reconcileSource(): Promise<string>;
  /** `flux suspend|resume source git <teamsSource>`: Flux stops (or starts again) fetching Berth's new commits. */
  suspendSource(suspend: boolean): Promise<void>;
  /** A Flux Kustomization's status (flux-config/team-<team> for a team). */
  kustomization(namespace: string, name: string): Promise<Obj | undefined>;
  /**
   * Until the Kustomization reports Ready=True at `revision` (a commit sha): its lastAppliedRevision, or for one that
   * reads an ExternalArtifact, the commit its artifact was cut from (lastAppliedOriginRevision).
   */
  waitKustomizationReady(namespace: string, name: string, revision: string, ms?: number): Promise<Obj>;
}

/** The platform; the members of PlatformCluster are those of the first cluster, for one-cluster tests. */
export interface FluxPlatform extends PlatformCluster {
  clusters: Map<string, PlatformCluster>;
  berth: RunningBerth;
  /** The fake Azure ASO talks to (`aso: "real"`). */
  azure?: FakeAzure;
  /** The fleet repository's URL and an env with its credentials for `git`. */
  repoUrl: string;
  gitEnv: Record<string, string>;
  /** The platform config file (what ConfigMap berth-config holds). */
  configFile: string;
  /** The main-branch commit a revision Flux reports stands for (a slice branch's commit, ADR 0036), as the API reads it. */
  fleetRevisions: FleetRevisions;
  /** The branch head now. */
  head(): Promise<string>;
  /** The API's request, as a platform engineer sends it. */
  request(
    method: "GET" | "POST" | "PUT" | "DELETE",
    url: string,
    payload?: unknown,
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the scenarios read the fields they assert on; the API's own answers are parsed with @berth/api-contract in tests/e2e
  ): Promise<{ statusCode: number; json: any; body: string }>;
  /**
   * A second API process on the same repository and clusters (e.g. after a restart), stopped with the platform;
   * `platform` changes its platform config (e.g. a new fluxSource), as a redeploy with a changed berth.yaml would.
   */
  startApi(opts?: { platform?: (platform: PlatformInput) => void }): Promise<RunningBerth>;
  stop(): Promise<void>;
}

export async function startFluxPlatform(opts: FluxPlatformOptions = {}): Promise<FluxPlatform> {
  const cleanups: Array<() => Promise<unknown>> = [];
  const stop = async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    cleanups.length = 0;
  };
  try {
    const specs = opts.clusters ?? [{ name: PLATFORM_CLUSTER, environment: "dev" }];
    const teamSource = opts.teamSource ?? "ExternalArtifact";
    const platform = testPlatform(specs);
    // ADR 0019's single generator names the team artifacts team-<team>; flux/'s slices team-files-<team>.
    const slices = teamSource === "ExternalArtifact" && !opts.install0019;
    platform.fluxSource = {
      kind: teamSource,
      name: "flux-system",
      namespace: "flux-system",
      artifactPrefix: slices ? "team-files-" : "team-",
    };
    // The slices apply the team files themselves: no index is written (ADR 0032), as flux/berth/platform/berth.yaml.
    platform.layout = { ...platform.layout, appliedBy: slices ? "slices" : "cluster-index" };
    if (opts.hashSlices) {
      if (!slices) throw new Error("hashSlices needs flux/'s slices (ExternalArtifact, not install0019)");
      platform.layout.slices = { by: "hash", count: opts.hashSlices, fetch: opts.sliceFetch ?? "whole" };
    }
    opts.platform?.(platform);

    // The fleet repository: the test's, or one served here over smart HTTP.
    const gitAuth = opts.repository
      ? { username: opts.repository.username, password: opts.repository.password }
      : GIT_AUTH;
    const repoUrl = opts.repository?.url ?? (await serveFleetRepository(cleanups));
    const gitEnv = basicAuthEnv(gitAuth.username, gitAuth.password);

    // Seeded as docs/install.md does it: flux/ copied with links followed, each further cluster written by what
    // `berth cluster add` runs, this platform's config, and the folder `flux bootstrap` writes.
    const work = await mkdtemp(join(tmpdir(), "berth-fleet-"));
    cleanups.push(() => rm(work, { recursive: true, force: true }));
    // A clone of the harness's own: it writes the install's slice branches and reads what Flux's revisions stand for.
    let fleetClone: FluxRepo | undefined;
    const fleetRepo = () =>
      (fleetClone ??= FluxRepo.fromConfig({
        url: repoUrl,
        branch: "main",
        workDir: join(work, "fleet-clone"),
        author: { name: "Berth", email: "berth@example.test" },
        auth: { kind: "token", token: gitAuth.password, username: gitAuth.username },
      }));
    cleanups.push(async () => fleetClone?.close());
    const fleetRevisions = new FleetRevisions(fleetRepo);
    const fleet = join(work, "fleet");
    await cp(join(REPO_ROOT, "flux"), fleet, { recursive: true, dereference: true });
    await rm(join(fleet, "README.md"));
    const teamsFile = join(fleet, "clusters", PLATFORM_CLUSTER, "berth-teams.yaml");
    if (!slices) {
      // An earlier install: its berth-teams.yaml alone, without the slices.
      await cp(
        teamSource === "GitRepository"
          ? join(REPO_ROOT, "tests", "fixtures", "flux-install-before-0019", "berth-teams.yaml")
          : join(REPO_ROOT, "infra", "flux", "upgrades", "0019", "berth-teams.yaml"),
        teamsFile,
      );
      await rm(join(fleet, "clusters", PLATFORM_CLUSTER, "berth-team-slices.yaml"));
      // And without the slices' marker files, which came with them.
      await rm(join(fleet, "teams"), { recursive: true });
      await rm(join(fleet, "clusters", PLATFORM_CLUSTER, "teams"), { recursive: true });
      const index = join(fleet, "clusters", PLATFORM_CLUSTER, "kustomization.yaml");
      const kustomization = parse(await readFile(index, "utf8")) as { resources: string[] };
      kustomization.resources = kustomization.resources.filter((r) => r !== "berth-team-slices.yaml");
      await writeFile(index, stringify(kustomization));
    }
    if (teamSource === "ExternalArtifact")
      await writeFile(
        teamsFile,
        withTeamsRepository(await readFile(teamsFile, "utf8"), repoUrl, opts.pollInterval ?? "5s"),
      );
    if (opts.hashSlices) {
      // flux/'s first-letter slices and their markers give way to the hash slices berth cluster add writes.
      await rm(join(fleet, "teams"), { recursive: true });
      await rm(join(fleet, "clusters", PLATFORM_CLUSTER, "teams"), { recursive: true });
      await rm(join(fleet, "clusters", PLATFORM_CLUSTER, "berth-team-slices.yaml"));
      const parsed = platformSchema.parse(platform);
      const index = join(fleet, "clusters", PLATFORM_CLUSTER, "kustomization.yaml");
      const kustomization = parse(await readFile(index, "utf8")) as { resources: string[] };
      kustomization.resources = kustomization.resources.map((r) =>
        r === "berth-team-slices.yaml" ? slicesFile(parsed.layout.slices) : r,
      );
      await writeFile(index, stringify(kustomization));
      const teams = { text: await readFile(teamsFile, "utf8"), path: teamsFile };
      for (const [path, text] of sliceFiles(sliceOptions(parsed, PLATFORM_CLUSTER, teams))) {
        await mkdir(dirname(join(fleet, path)), { recursive: true });
        await writeFile(join(fleet, path), text);
      }
      const perSlice = parsed.layout.slices.fetch === "per-slice";
      await writeFile(
        teamsFile,
        withTeamsRepositorySettings(teams.text, teamsFile, parsed, PLATFORM_CLUSTER, perSlice),
      );
    }
    if (opts.forgeReceiver) {
      await cp(
        join(REPO_ROOT, "infra", "flux", "pull-requests", "forge-receiver.yaml"),
        join(fleet, "clusters", PLATFORM_CLUSTER, "forge-receiver.yaml"),
      );
      const index = join(fleet, "clusters", PLATFORM_CLUSTER, "kustomization.yaml");
      const kustomization = parse(await readFile(index, "utf8")) as { resources: string[] };
      kustomization.resources.push("forge-receiver.yaml");
      await writeFile(index, stringify(kustomization));
    }
    for (const spec of specs.filter((c) => c.name !== PLATFORM_CLUSTER)) {
      if (slices) {
        // What `berth cluster add` writes (docs/install.md, step 3), and what the test added to aks-dev-weu beside it.
        const files = newClusterFiles({
          platform: platformSchema.parse(platform),
          cluster: spec.name,
          like: PLATFORM_CLUSTER,
          read: (path) => (existsSync(join(fleet, path)) ? readFileSync(join(fleet, path), "utf8") : undefined),
          controllerClientId: TEST_CONTROLLER_CLIENT_ID,
        });
        for (const [path, text] of files) {
          await mkdir(dirname(join(fleet, path)), { recursive: true });
          await writeFile(join(fleet, path), text);
        }
        for (const extra of opts.forgeReceiver ? ["forge-receiver.yaml"] : [])
          await cp(join(fleet, "clusters", PLATFORM_CLUSTER, extra), join(fleet, "clusters", spec.name, extra));
      } else {
        // An install from before the slices: copied with the name replaced, as its install.md said.
        for (const dir of ["berth/overlays", "clusters"])
          await copyReplacing(
            join(fleet, dir, PLATFORM_CLUSTER),
            join(fleet, dir, spec.name),
            PLATFORM_CLUSTER,
            spec.name,
          );
      }
    }
    if (!specs.some((c) => c.name === PLATFORM_CLUSTER)) {
      await rm(join(fleet, "berth", "overlays", PLATFORM_CLUSTER), { recursive: true });
      await rm(join(fleet, "clusters", PLATFORM_CLUSTER), { recursive: true });
    }
    const platformConfig = join(fleet, "berth", "platform", "berth.yaml");
    const config = parse(await readFile(platformConfig, "utf8")) as Record<string, unknown>;
    config.platform = platform;
    await writeFile(platformConfig, stringify(config));
    const bootstrap = (name: string) => ({
      url: repoUrl,
      path: `./clusters/${name}`,
      auth: gitAuth,
      interval: opts.pollInterval ?? "5s",
    });
    const notify = teamSource === "ExternalArtifact" && opts.notify !== false;
    for (const spec of specs) {
      const systemDir = join(fleet, "clusters", spec.name, "flux-system");
      await mkdir(systemDir, { recursive: true });
      await writeFile(
        join(systemDir, "gotk-sync.yaml"),
        bootstrapObjects("flux-system", bootstrap(spec.name))
          .map((o) => stringify(o, { version: "1.1" }))
          .join("---\n"),
      );
      await writeFile(
        join(systemDir, "kustomization.yaml"),
        stringify({
          apiVersion: "kustomize.config.k8s.io/v1beta1",
          kind: "Kustomization",
          resources: ["gotk-sync.yaml"],
        }),
      );
    }
    for (const [path, content] of (await opts.seed?.(platform)) ?? []) {
      await mkdir(dirname(join(fleet, path)), { recursive: true });
      await writeFile(join(fleet, path), content);
    }
    const installed = await pushTree({
      url: repoUrl,
      dir: fleet,
      subject: "Install Berth (docs/install.md)",
      env: gitEnv,
    });
    // Per-slice fetch: each slice's branch at the install, written by the API's own code as the API writes them at its
    // start (ADR 0036: commits holding the slice's folders only); here before Flux starts, which the API waits for,
    // so that no slice's first fetch finds its branch missing.
    const branches = sliceBranches(platformSchema.parse(platform));
    if (branches.length > 0) {
      const writer = fleetRepo();
      await writer.snapshot(0);
      const moves = branches.map(({ branch, folders }) => ({ branch, to: installed, folders }));
      const created = await writer.advanceFollowers(moves);
      if (created.length !== branches.length)
        throw new Error(`slice branches: ${created.length} of ${branches.length} created`);
    }

    const azure = opts.aso === "real" ? await startPlatformAzure(platform, opts.realAso?.azure) : undefined;
    if (azure) cleanups.push(() => azure.close());
    const controllerConfigFile = join(work, "controller.yaml");
    await writeFile(controllerConfigFile, stringify({ platform }));
    const built = ensureBuilt();
    const clusters = new Map<string, PlatformCluster>();
    const statusKubeconfigs: Record<string, string> = {};
    await Promise.all(
      specs.map(async (spec) => {
        const up = await startPlatformCluster(
          spec.name,
          clusterIssuer(platform, spec.name),
          bootstrap(spec.name),
          controllerConfigFile,
          built,
          { ...opts, teamSource, fleetRevisions },
          work,
          cleanups,
          azure,
        );
        clusters.set(spec.name, up.cluster);
        statusKubeconfigs[spec.name] = await writeStatusKubeconfig(up.cluster, join(work, `${spec.name}.kubeconfig`));
      }),
    );

    const receivers = notify
      ? Object.fromEntries(
          [...clusters.values()].map((c) => [c.name, { url: c.receiver!.url, tokenFile: c.receiver!.tokenFile }]),
        )
      : undefined;
    const startApi = async (api_?: { platform?: (platform: PlatformInput) => void }) => {
      const apiPlatform = structuredClone(platform);
      api_?.platform?.(apiPlatform);
      const api = await startBerth({
        remoteUrl: repoUrl,
        listen: true,
        env: { BERTH_GIT_USERNAME: gitAuth.username, BERTH_GIT_TOKEN: gitAuth.password, ...opts.apiEnv },
        config: (raw) => {
          raw.platform = apiPlatform;
          raw.api.clusters = Object.fromEntries(
            Object.entries(statusKubeconfigs).map(([c, kubeconfig]) => [c, { kubeconfig }]),
          );
          if (receivers) raw.api.fluxReceivers = receivers;
          opts.berthConfig?.(raw);
        },
      });
      cleanups.push(() => api.stop());
      return api;
    };
    const first = clusters.get(specs[0]!.name)!;
    const result: FluxPlatform = {
      ...first,
      clusters,
      ...(azure ? { azure } : {}),
      berth: await startApi(),
      repoUrl,
      gitEnv,
      configFile: controllerConfigFile,
      fleetRevisions,
      head: async () => (await git(["ls-remote", repoUrl, "refs/heads/main"], { env: gitEnv })).split("\t")[0]!,
      request: (method, url, payload) => apiRequest(result.berth, method, url, payload),
      startApi,
      stop,
    };
    return result;
  } catch (err) {
    await stop();
    throw err;
  }
}

/** A bare fleet repository served over smart HTTP (Basic auth), stopped and removed with the platform: its URL. */
async function serveFleetRepository(cleanups: Array<() => Promise<unknown>>): Promise<string> {
  const bare = await createBareRepo();
  cleanups.push(() => bare.remove());
  const server: GitHttpServer = await startGitHttpServer({ root: dirname(bare.dir), ...GIT_AUTH });
  cleanups.push(() => server.stop());
  return server.repoUrl(bare.dir.split("/").pop()!);
}

/** A request to a running API as the dev token's caller (FluxPlatform.request, or an API from startApi). */
export async function apiRequest(
  berth: RunningBerth,
  ...[method, url, payload]: Parameters<FluxPlatform["request"]>
): ReturnType<FluxPlatform["request"]> {
  const res = await berth.server.inject({
    method,
    url,
    headers: { authorization: `Bearer ${DEV_TOKEN}` },
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  return {
    statusCode: res.statusCode,
    json: res.body ? (JSON.parse(res.body) as unknown) : undefined,
    body: res.body,
  };
}

/** Every delete request the cluster's apiserver answered, but its housekeeping of its own leases in kube-system. */
export async function answeredDeletes(platform: Pick<FluxPlatform, "cluster">) {
  return (await platform.cluster.deletes()).filter(
    (d) => !(d.user === "system:apiserver" && d.resource.startsWith("leases.")),
  );
}

/** Distinct objects of answered deletes (`resource namespace/name`, sorted): a finalizer racing its own requeue may ask twice. */
export const deletedObjects = (deletes: ReadonlyArray<{ resource: string; namespace?: string; name?: string }>) =>
  [...new Set(deletes.map((d) => `${d.resource} ${d.namespace ?? ""}/${d.name ?? ""}`))].sort();

/** The Flux Kustomization that applied `o` (kustomize-controller's label on what it applies), if any. */
export const appliedBy = (o: Obj | undefined) =>
  (o?.metadata.labels as Record<string, string> | undefined)?.["kustomize.toolkit.fluxcd.io/name"];

/** A Flux object's Ready condition, if it has one yet. */
export const readyCondition = (o: Obj | undefined) =>
  (
    o?.status as { conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> } | undefined
  )?.conditions?.find((c) => c.type === "Ready");

/** berth-teams.yaml with GitRepository berth-teams on the test's repository and poll interval (docs/install.md, step 4). */
export function withTeamsRepository(text: string, url: string, interval: string): string {
  return parseAllDocuments(text)
    .map((doc) => {
      const o = doc.toJS() as { kind?: string; metadata?: { name?: string }; spec?: Record<string, unknown> };
      if (o.kind === "GitRepository" && o.metadata?.name === "berth-teams") {
        doc.setIn(["spec", "url"], url);
        doc.setIn(["spec", "interval"], interval);
      }
      return doc.toString();
    })
    .join("---\n");
}

/** A copy of a folder with every occurrence of `from` in file contents replaced by `to` (docs/install.md, step 3). */
async function copyReplacing(source: string, target: string, from: string, to: string): Promise<void> {
  await cp(source, target, { recursive: true });
  const walk = async (dir: string): Promise<void> => {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) await walk(p);
      else await writeFile(p, (await readFile(p, "utf8")).replaceAll(from, to));
    }
  };
  await walk(target);
}

/** One cluster: apiserver with its controllers, Flux bootstrapped, Berth's controller once Flux applied it, ASO. */
async function startPlatformCluster(
  name: string,
  serviceAccountIssuer: string,
  bootstrap: BootstrapOptions,
  controllerConfigFile: string,
  built: Promise<void>,
  opts: FluxPlatformOptions & { teamSource: TeamSource; fleetRevisions: FleetRevisions },
  work: string,
  cleanups: Array<() => Promise<unknown>>,
  azure: FakeAzure | undefined,
): Promise<{ cluster: PlatformCluster }> {
  // The cluster signs service-account tokens as its OIDC issuer (CLUSTER_OIDC_ISSUER_URL), as AKS does.
  const cluster = await startKubeCluster({ controllers: true, auditDeletes: true, serviceAccountIssuer });
  cleanups.push(() => cluster.stop());
  const admin = new Admin(cluster.kubeConfig());
  const artifacts = opts.teamSource === "ExternalArtifact";
  const flux = await startFlux(cluster, artifacts ? withTeamArtifacts(opts.flux) : opts.flux);
  cleanups.push(() => flux.stop());
  await bootstrapFlux(cluster, flux, bootstrap);
  // What docs/install.md step 7 creates beside what Flux applies: the Receiver's HMAC key, never in git.
  const receiverToken = randomBytes(32).toString("hex");
  const forgeToken = randomBytes(32).toString("hex");
  const receiverSecrets = artifacts
    ? {
        "berth-teams-receiver": receiverToken,
        ...(opts.forgeReceiver ? { "berth-teams-forge-receiver": forgeToken } : {}),
      }
    : {};
  for (const [secretName, token] of Object.entries(receiverSecrets))
    await admin.create({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: secretName, namespace: flux.namespace },
      stringData: { token },
    } as Obj);

  // Berth's controller, once Flux has applied what it runs under (namespace, RBAC, its Deployment). Flux's defaults
  // make that about a minute (berth-controller waits on berth-crds through the 30 s dependency requeue); the bound
  // is for a loaded machine, and a timeout says where each Kustomization stood.
  await eventually(
    `Flux applied Deployment berth-system/berth-controller on ${name}`,
    () => admin.get("apps/v1", "Deployment", "berth-system", "berth-controller"),
    240_000,
    flux.exits,
  ).catch(async (err: unknown) => {
    const standing = async (apiVersion: string, kind: string) =>
      (await admin.list(apiVersion, kind, "flux-system"))
        .map((o) => {
          const ready = readyCondition(o);
          return `${o.metadata.name}: ${ready ? `${ready.reason}: ${ready.message}` : "not reconciled yet"}`;
        })
        .join("; ") || "none";
    throw new Error(
      `${(err as Error).message}; Kustomizations: ${await standing("kustomize.toolkit.fluxcd.io/v1", "Kustomization")}` +
        `; GitRepositories: ${await standing("source.toolkit.fluxcd.io/v1", "GitRepository")}`,
      { cause: err },
    );
  });
  await built;
  const controller = startControllerProcess({
    BERTH_CONFIG_FILE: controllerConfigFile,
    BERTH_CLUSTER_NAME: name,
    BERTH_POD_NAME: `berth-controller-${name}`,
    BERTH_LEADER_ELECTION: "false",
    KUBECONFIG: await cluster.writeKubeconfigFile(CONTROLLER_USER, CONTROLLER_GROUPS),
  });
  cleanups.push(() => controller.stop());
  await eventually(
    `the controller wrote platform-vars on ${name}`,
    () => admin.get("v1", "ConfigMap", ASO_NAMESPACE, "platform-vars"),
    60_000,
    () =>
      controller.child.exitCode === null
        ? undefined
        : `the controller exited (${controller.child.exitCode}):\n${controller.logs.join("").slice(-3000)}`,
  );
  await markDeploymentAvailable(admin, "berth-system", "berth-controller");
  // Installed: Flux reports Berth's controller healthy (berth-teams waits for that before it applies any team).
  await eventually(
    `Kustomization berth-controller Ready on ${name}`,
    async () => {
      const k = await admin.get("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "berth-controller");
      return (k?.status as { conditions?: Array<{ type: string; status: string }> } | undefined)?.conditions?.some(
        (c) => c.type === "Ready" && c.status === "True",
      );
    },
    120_000,
    flux.exits,
  );

  const aso = opts.aso === false || opts.aso === "real" ? undefined : new AsoStandIn(admin, TENANT_ID);
  if (aso) {
    aso.start(opts.asoIntervalMs);
    cleanups.push(() => aso.stop());
  }
  const realAso = azure ? await startAso(cluster, azure, opts.realAso) : undefined;
  if (realAso) cleanups.push(() => realAso.stop());
  const kustomization = (namespace: string, ksName: string) =>
    admin.get("kustomize.toolkit.fluxcd.io/v1", "Kustomization", namespace, ksName);
  const teamsSource = { namespace: flux.namespace, name: artifacts ? "berth-teams" : "flux-system" };
  let receiver: PlatformCluster["receiver"];
  let forgeReceiver: PlatformCluster["forgeReceiver"];
  /** The Receiver's webhook URL, once it is Ready. */
  const receiverUrl = async (receiverName: string) => {
    const webhookPath = await eventually(
      `Receiver ${receiverName} Ready on ${name}`,
      async () => {
        const r = await admin.get("notification.toolkit.fluxcd.io/v1", "Receiver", flux.namespace, receiverName);
        const status = r?.status as
          { webhookPath?: string; conditions?: Array<{ type: string; status: string }> } | undefined;
        return status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")
          ? status.webhookPath
          : undefined;
      },
      120_000,
      flux.exits,
    );
    return `${flux.receiverUrl!}${webhookPath}`;
  };
  if (artifacts) {
    const tokenFile = join(work, `${name}.receiver-token`);
    await writeFile(tokenFile, `${receiverToken}\n`, { mode: 0o600 });
    receiver = { url: await receiverUrl("berth-teams"), token: receiverToken, tokenFile };
    if (opts.forgeReceiver) forgeReceiver = { url: await receiverUrl("berth-teams-forge"), token: forgeToken };
  }
  return {
    cluster: {
      name,
      teamsSource,
      receiver,
      ...(forgeReceiver ? { forgeReceiver } : {}),
      cluster,
      admin,
      flux,
      controller,
      aso,
      ...(realAso ? { realAso } : {}),
      reconcileSource: () =>
        requestReconcile(
          admin,
          "source.toolkit.fluxcd.io/v1",
          "GitRepository",
          teamsSource.namespace,
          teamsSource.name,
        ),
      suspendSource: async (suspend) => {
        await admin.mergePatch(
          "source.toolkit.fluxcd.io/v1",
          "GitRepository",
          teamsSource.namespace,
          teamsSource.name,
          { spec: { suspend } },
          "flux",
        );
      },
      kustomization,
      waitKustomizationReady: (namespace, ksName, revision, ms = 120_000) =>
        eventually(
          `Kustomization ${namespace}/${ksName} Ready at ${revision.slice(0, 7)} on ${name}`,
          async () => {
            const k = await kustomization(namespace, ksName);
            const status = k?.status as
              | {
                  lastAppliedRevision?: string;
                  lastAppliedOriginRevision?: string;
                  conditions?: Array<{ type: string; status: string }>;
                }
              | undefined;
            const ready = status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
            const applied = status?.lastAppliedOriginRevision ?? status?.lastAppliedRevision;
            return ready && (await opts.fleetRevisions.is(applied, revision)) ? k : undefined;
          },
          ms,
          flux.exits,
        ),
    },
  };
}

/**
 * Flux as docs/install.md step 0 installs it for team artifacts: source-watcher and notification-controller beside
 * source- and kustomize-controller, kustomize-controller's ExternalArtifact feature gate, and source-watcher's
 * artifact retention TTL above the time it takes to cut every team's artifact (SOURCE_WATCHER_ARGS).
 */
function withTeamArtifacts(flux: FluxOptions | undefined): FluxOptions {
  const gates = flux?.featureGates?.["kustomize-controller"] ?? [];
  return {
    ...flux,
    controllers: flux?.controllers ?? [
      "source-controller",
      "kustomize-controller",
      "notification-controller",
      "source-watcher",
    ],
    featureGates: {
      ...flux?.featureGates,
      "kustomize-controller": [...gates.filter((g) => !g.startsWith("ExternalArtifact=")), "ExternalArtifact=true"],
    },
    extraArgs: {
      ...flux?.extraArgs,
      "source-watcher": [...SOURCE_WATCHER_ARGS, ...(flux?.extraArgs?.["source-watcher"] ?? [])],
    },
  };
}

/**
 * source-watcher 2.2 garbage-collects each artifact's folder after cutting all of a generator's artifacts, with the
 * current file unprotected: a file older than the retention TTL (default 1m) goes, the current one included. When
 * cutting 1,000 teams takes over a minute, the first teams' artifacts vanish ("artifact not found"). docs/install.md
 * step 0 sets the TTL to an hour; so do the tests.
 */
export const SOURCE_WATCHER_ARGS = ["--artifact-retention-ttl=1h"];

/** The API's kubeconfig for a cluster, from the berth-status-reader token Flux applied (docs/install.md, step 6). */
async function writeStatusKubeconfig(pc: PlatformCluster, file: string): Promise<string> {
  const token = await eventually(
    `the token controller filled berth-status-reader-token on ${pc.name}`,
    async () => {
      const secret = await pc.admin.get("v1", "Secret", "berth-system", "berth-status-reader-token");
      const data = secret?.data as Record<string, string> | undefined;
      return data?.token ? Buffer.from(data.token, "base64").toString("utf8") : undefined;
    },
    60_000,
  );
  await writeFile(
    file,
    stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [
        { name: pc.name, cluster: { server: pc.cluster.server, "certificate-authority-data": pc.cluster.caData } },
      ],
      users: [{ name: "berth-status-reader", user: { token } }],
      contexts: [{ name: pc.name, context: { cluster: pc.name, user: "berth-status-reader" } }],
      "current-context": pc.name,
    }),
  );
  return file;
}

/**
 * What `flux reconcile` does: annotate the object with reconcile.fluxcd.io/requestedAt and wait until the
 * controller has handled a request made no earlier than ours (status.lastHandledReconcileAt). A Receiver (Berth
 * notifies one after each commit) may write its own request over ours before the controller reads it; the
 * controller then handles only the Receiver's, which also covers ours, so waiting for our value alone would wait
 * forever. Resolves with the artifact revision.
 */
export async function requestReconcile(
  admin: Admin,
  apiVersion: string,
  kind: string,
  namespace: string,
  name: string,
): Promise<string> {
  const at = new Date().toISOString();
  await admin.mergePatch(
    apiVersion,
    kind,
    namespace,
    name,
    { metadata: { annotations: { "reconcile.fluxcd.io/requestedAt": at } } },
    "flux",
  );
  const done = await eventually(
    `${kind} ${namespace}/${name} handled the reconcile request ${at}`,
    async () => {
      const o = await admin.get(apiVersion, kind, namespace, name);
      const status = o?.status as { lastHandledReconcileAt?: string; artifact?: { revision?: string } } | undefined;
      // Ours replaced our patch's predecessor, so whatever the annotation holds now was requested at or after ours.
      const requested = o?.metadata.annotations?.["reconcile.fluxcd.io/requestedAt"];
      const handled = status?.lastHandledReconcileAt;
      if (status && handled !== undefined && handled === requested) return status;
      throw new Error(`requested ${JSON.stringify(requested)}, handled ${JSON.stringify(handled)}`);
    },
    60_000,
  );
  return done.artifact?.revision ?? "";
}

/** What the kubelets and the deployment controller would report once every replica passes its readiness probe. */
async function markDeploymentAvailable(admin: Admin, namespace: string, name: string): Promise<void> {
  const deployment = (await admin.get("apps/v1", "Deployment", namespace, name))!;
  const replicas = ((deployment.spec as { replicas?: number }).replicas ?? 1) as number;
  const now = new Date().toISOString();
  await admin.setStatus(deployment, {
    observedGeneration: deployment.metadata.generation,
    replicas,
    updatedReplicas: replicas,
    readyReplicas: replicas,
    availableReplicas: replicas,
    conditions: [
      {
        type: "Available",
        status: "True",
        reason: "MinimumReplicasAvailable",
        message: "Deployment has minimum availability.",
        lastUpdateTime: now,
        lastTransitionTime: now,
      },
      {
        type: "Progressing",
        status: "True",
        reason: "NewReplicaSetAvailable",
        message: `ReplicaSet "${name}" has successfully progressed.`,
        lastUpdateTime: now,
        lastTransitionTime: now,
      },
    ],
  });
}
