import { loadTemplateCatalog, type BerthConfig } from "@berth/config";
import { Adoption, clustersReading, Fleet, Onboarding, repoLayout } from "@berth/core";
import { FluxRepo, GiteaForge, type FluxRepoBatch } from "@berth/gitops";
import { ProposingWriter, ReviewedStore } from "./adapters/proposals.js";
import type pino from "pino";
import { AdoptionService } from "./services/adoption-service.js";
import type { AppDeps } from "./http/app.js";
import { DriftThread } from "./services/drift/drift-thread.js";
import { FleetService } from "./services/fleet-service.js";
import { FluxNotifier } from "./adapters/flux-notifier.js";
import { ApiMetrics } from "./metrics.js";
import { authenticatorFor } from "./http/plugins/auth.js";
import { systemClock, type Clock } from "@berth/kube-runtime";
import { RolloutEngine } from "./services/rollouts/engine.js";
import { RolloutService } from "./services/rollouts/service.js";
import { StatusBoard } from "./services/status-board.js";
import { TeamService } from "./services/team-service.js";
import { KubeTeamStatusReader, type TeamStatusReader } from "./adapters/team-status.js";

/** The API's services built from its configuration: what main.ts runs and what the tests start. */
export interface ApiServices {
  deps: AppDeps;
  repo: FluxRepo;
  onboarding: Onboarding;
  engine: RolloutEngine;
  /** The one status reader every status consumer shares (its per-cluster cache). */
  statusReader: TeamStatusReader;
  /** Prometheus metrics; main.ts serves them on api.metricsPort. */
  metrics: ApiMetrics;
  /** Tells clusters' Flux to fetch after each push (api.fluxReceivers). */
  notifier: FluxNotifier;
  /** The drift worker thread behind GET /v1/fleet/drift (its stats() tell what it rendered). */
  drift: DriftThread;
  /** Starts background work (the rollout engine); call after the server listens. */
  start(): Promise<void>;
  /** Stops background work and closes the repo; call after the server closed. */
  close(): Promise<void>;
}

export async function createServices(
  config: BerthConfig,
  logger: pino.Logger,
  options: { clock?: Clock; statusReader?: TeamStatusReader } = {},
): Promise<ApiServices> {
  const catalog = await loadTemplateCatalog(config.templatesDir, config.platform.templateVersion);
  const onboarding = new Onboarding(config.platform, catalog);
  const metrics = new ApiMetrics();
  const notifier = new FluxNotifier(config.api.fluxReceivers, {
    ...config.api.fluxNotify,
    observer: metrics.notifyObserver,
    logger: logger.child({ component: "flux-notify" }),
  });
  const layout = repoLayout(config.platform);
  const onBatch = (batch: FluxRepoBatch) => {
    metrics.observeBatch(batch);
    const pushed = batch.pushed;
    if (!pushed || notifier.clusters.length === 0) return;
    // Whose Flux reads what the batch wrote: told to fetch now, after the push (ADR 0020). Never the write's concern.
    const clusters = repo
      .treeAt(pushed.revision)
      .then((tree) => (tree ? clustersReading(tree, layout, pushed.paths) : notifier.clusters));
    notifier.notify(clusters, pushed.revision);
  };
  const repo = FluxRepo.fromConfig({
    ...config.fluxRepo,
    history: config.api.idempotency,
    logger: logger.child({ component: "flux-repo" }),
    onBatch,
  });
  await repo.init();
  // Pull-request mode (ADR 0030): every write goes through the store below, proposed on a branch, never pushed to main.
  const review = config.fluxRepo.review;
  const proposer =
    review.mode === "pull-request"
      ? new ProposingWriter(
          repo,
          new GiteaForge({
            url: review.url,
            owner: review.owner,
            repo: review.repository,
            token: async () => review.token,
          }),
          layout,
        )
      : undefined;
  const store = proposer ? new ReviewedStore(repo, proposer) : repo;
  // One status reader, so the status API, CLI watchers, every open status page and the rollout gates share its
  // per-cluster cache.
  const statusReader =
    options.statusReader ??
    KubeTeamStatusReader.fromConfig(config.api.clusters, { ttlMs: config.api.statusCacheSeconds * 1000 });
  if (statusReader instanceof KubeTeamStatusReader) metrics.watchStatusCache(() => statusReader.stats());
  const clock = options.clock ?? systemClock;
  const fleet = new Fleet(onboarding);
  const engine = new RolloutEngine({
    onboarding,
    fleet,
    store,
    statusReader,
    clock,
    pollIntervalMs: config.api.rollouts.pollIntervalMs,
    logger: logger.child({ component: "rollout-engine" }),
    metrics,
  });
  const rollouts = new RolloutService({
    onboarding,
    fleet,
    store,
    observedClusters: new Set(Object.keys(config.api.clusters)),
    gateTimeoutSeconds: config.api.rollouts.gateTimeoutSeconds,
    clock,
    engine,
  });
  // Drift renders the fleet: in a worker thread reading the same clone, so /healthz and every other request
  // keep answering while it does (ADR 0026). Started on the first drift read.
  const drift = new DriftThread({
    platform: config.platform,
    templatesDir: config.templatesDir,
    gitDir: config.fluxRepo.workDir,
  });
  const deps: AppDeps = {
    teams: new TeamService(
      onboarding,
      store,
      statusReader,
      proposer && { pending: (team) => proposer.pending({ team }) },
    ),
    fleet: new FleetService(onboarding, repo, drift),
    rollouts,
    // Adoption reads hand-written trees: bounded (DEFAULT_BUILD_LIMITS) and yielding to the event loop
    // between files, so /healthz and other requests keep answering while it builds (ADR 0014).
    adoption: new AdoptionService(
      new Adoption(onboarding, {
        clock: { now: () => performance.now(), pause: () => new Promise<void>((resolve) => setImmediate(resolve)) },
      }),
      store,
    ),
    store,
    authenticator: authenticatorFor(config.api.auth),
    limits: config.api.rateLimit,
    metrics,
    board: new StatusBoard(onboarding, repo, statusReader),
    ui: { auth: config.api.auth, config: config.api.ui, clock },
  };
  return {
    deps,
    repo,
    onboarding,
    engine,
    statusReader,
    metrics,
    notifier,
    drift,
    async start() {
      engine.start();
    },
    async close() {
      await engine.stop();
      await drift.close();
      await notifier.stop();
      await repo.close();
    },
  };
}
