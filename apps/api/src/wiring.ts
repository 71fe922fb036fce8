import { loadTemplateCatalog, type BerthConfig } from "@berth/config";
import { Adoption, Fleet, fluxReadsOf, Onboarding, repoLayout, type RepoLayout } from "@berth/core";
import { FluxRepo, GiteaForge, GitHubForge, type FluxRepoBatch } from "@berth/gitops";
import { LRUCache } from "lru-cache";
import {
  ProposalSweeper,
  ProposedWaves,
  ProposingWriter,
  ReviewedStore,
  RolloutRecords,
  rolloutOfBranch,
  teamOfBranch,
} from "./adapters/proposals.js";
import type { PullRequestEvent } from "./http/routes/forge-events.js";
import type { ReviewRef } from "./services/idempotency.js";
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
import { FleetRevisionStatusReader, SliceBranchFollower } from "./services/slice-branches.js";
import { StatusBoard } from "./services/status-board.js";
import { TeamService, type PendingReviews, type TeamInReview } from "./services/team-service.js";
import { KubeTeamStatusReader, type TeamStatusReader } from "./adapters/team-status.js";

/** Pull-request mode: the branch that holds the rollout files (not read by Flux, not protected). */
export const ROLLOUT_RECORDS_BRANCH = "berth/rollouts";
/** How often the slices' branches follow commits Berth did not push (per-slice fetch, ADR 0036). */
const SLICE_BRANCH_FOLLOW_MS = 30_000;
/** How long a team's last pull request, as the forge answered, serves its status polls. */
const REVIEW_CACHE_MS = 3_000;

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
  /** Moves each slice's branch after the commits that change it (per-slice fetch, ADR 0036). */
  sliceBranches: SliceBranchFollower;
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
    if (!pushed) return;
    // The slices' branches first (per-slice fetch): a slice told to fetch must find its branch moved (ADR 0036).
    const followed = slices.follow(pushed.revision);
    if (notifier.clusters.length === 0) return;
    // Whose Flux reads what the batch wrote: told to fetch now, after the push (ADR 0020). Never the write's concern.
    const reads = followed
      .then(() => repo.treeAt(pushed.revision))
      .then((tree) => (tree ? fluxReadsOf(tree, layout, pushed.paths) : notifier.everything));
    notifier.notify(reads, pushed.revision);
  };
  const repo = FluxRepo.fromConfig({
    ...config.fluxRepo,
    history: config.api.idempotency,
    logger: logger.child({ component: "flux-repo" }),
    onBatch,
  });
  await repo.init();
  // Commits Berth did not push (a merged pull request, a commit by hand) reach the slices' branches within this long.
  const slices = new SliceBranchFollower(config.platform, repo, {
    intervalMs: SLICE_BRANCH_FOLLOW_MS,
    logger: logger.child({ component: "slice-branches" }),
    // A merged pull request's slices fetch now, as a push of Berth's would have them.
    onMoved: ({ revision, shards }) => revision && notifier.notify(shards, revision),
  });
  // Pull-request mode (ADR 0030): every write goes through its store, proposed on a branch, never pushed to main.
  const review = config.fluxRepo.review;
  const pullRequests =
    review.mode === "pull-request" ? await pullRequestMode(config, repo, review, layout, logger) : undefined;
  const store = pullRequests?.store ?? repo;
  const rolloutStore = pullRequests?.rolloutStore ?? repo;
  const reviews = pullRequests?.reviews;
  // One status reader, so the status API, CLI watchers, every open status page and the rollout gates share its
  // per-cluster cache.
  const clusterStatuses =
    options.statusReader ??
    KubeTeamStatusReader.fromConfig(config.api.clusters, { ttlMs: config.api.statusCacheSeconds * 1000 });
  if (clusterStatuses instanceof KubeTeamStatusReader) metrics.watchStatusCache(() => clusterStatuses.stats());
  // With slice branches, Flux reports slice commits: told as the fleet's commits they stand for.
  const statusReader = slices.enabled
    ? new FleetRevisionStatusReader(clusterStatuses, repo, config.fluxRepo.branch)
    : clusterStatuses;
  const clock = options.clock ?? systemClock;
  const fleet = new Fleet(onboarding);
  // The audit trail is written at info level whatever the log level, as the HTTP audit plugin writes it.
  const auditLogger = logger.child({ component: "rollout-engine" }, { level: "info" });
  const engine = new RolloutEngine({
    onboarding,
    fleet,
    store: rolloutStore,
    statusReader,
    clock,
    pollIntervalMs: config.api.rollouts.pollIntervalMs,
    logger: logger.child({ component: "rollout-engine" }),
    metrics,
    audit: (line) => auditLogger.info({ audit: line }, "audit"),
    ...(pullRequests ? { proposals: pullRequests.waves } : {}),
  });
  // The forge's webhook (pull-request mode with a secret): a pull request that changed is acted on now, not at the
  // next poll. A wave's merge starts its gate; a team's drops its cached review, so its status reads it again.
  const eventsLogger = logger.child({ component: "forge-events" });
  const forgeEvents =
    pullRequests && review.mode === "pull-request" && review.webhookSecret
      ? {
          secret: review.webhookSecret,
          onPullRequest: async ({ number, head, base }: PullRequestEvent) => {
            if (base !== repo.branch) return;
            const team = teamOfBranch(head);
            const rollout = rolloutOfBranch(head);
            if (team) pullRequests.forget(team);
            if (rollout) engine.kick(rollout);
            if (team || rollout)
              eventsLogger.info({ pullRequest: number, ...(team ? { team } : { rollout }) }, "pull request changed");
          },
        }
      : undefined;
  const rollouts = new RolloutService({
    onboarding,
    fleet,
    store: rolloutStore,
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
    teams: new TeamService(onboarding, store, statusReader, reviews),
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
    board: new StatusBoard(onboarding, repo, statusReader, reviews),
    ui: { auth: config.api.auth, config: config.api.ui, clock },
    ...(forgeEvents ? { forgeEvents } : {}),
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
    sliceBranches: slices,
    async start() {
      slices.start();
      engine.start();
      pullRequests?.sweeper.start();
    },
    async close() {
      await pullRequests?.sweeper.stop();
      await engine.stop();
      await drift.close();
      await slices.stop();
      await notifier.stop();
      await pullRequests?.records.close();
      await repo.close();
    },
  };
}

/** Pull-request mode's parts: the store that proposes, the team's reviews as status reads them, the sweeper. */
async function pullRequestMode(
  config: BerthConfig,
  repo: FluxRepo,
  review: Extract<BerthConfig["fluxRepo"]["review"], { mode: "pull-request" }>,
  layout: RepoLayout,
  logger: pino.Logger,
) {
  const where = { url: review.url, owner: review.owner, repo: review.repository, token: async () => review.token };
  const forge = review.forge === "github" ? new GitHubForge(where) : new GiteaForge(where);
  const proposer = new ProposingWriter(repo, forge, layout);
  // Every status poll (CLI watches, status pages) reads a team's last pull request: one forge lookup per team per
  // few seconds, however many poll.
  const latest = new LRUCache<string, ReviewRef | false>({
    max: 10_000,
    ttl: REVIEW_CACHE_MS,
    fetchMethod: async (team) => (await proposer.latest({ team })) ?? false,
  });
  // The list of teams in review: one forge listing per few seconds, however many ask.
  const inReview = new LRUCache<"all", TeamInReview[]>({
    max: 1,
    ttl: REVIEW_CACHE_MS,
    fetchMethod: () => proposer.teamsInReview(),
  });
  // What this replica changed on the forge, it answers at once (another replica's changes after at most the TTL).
  const forget = (team: string) => {
    latest.delete(team);
    inReview.delete("all");
  };
  const reviews: PendingReviews = {
    pending: (team) => proposer.pending({ team }),
    inReview: async () => (await inReview.fetch("all")) ?? [],
    latest: async (team) => (await latest.fetch(team)) || undefined,
    withdraw: async (team) => {
      try {
        return await proposer.withdraw({ team });
      } finally {
        forget(team);
      }
    },
  };
  const proposing: Pick<ProposingWriter, "propose"> = {
    propose: async (owner, mutate, origin) => {
      try {
        return await proposer.propose(owner, mutate, origin);
      } finally {
        if ("team" in owner) forget(owner.team);
      }
    },
  };
  const sweeper = new ProposalSweeper(proposer, {
    intervalMs: review.sweepSeconds * 1000,
    keepMs: review.keepBranchMinutes * 60_000,
    logger: logger.child({ component: "proposals" }),
    onSwept: ({ branch }) => {
      const team = teamOfBranch(branch);
      if (team) forget(team);
    },
  });
  // Rollout files change at every step: kept on their own unprotected branch, pushed to directly (ADR 0030).
  const records = FluxRepo.fromConfig({
    ...config.fluxRepo,
    branch: ROLLOUT_RECORDS_BRANCH,
    workDir: `${config.fluxRepo.workDir}-rollouts`,
    history: config.api.idempotency,
    logger: logger.child({ component: "rollout-records" }),
  });
  await records.init();
  return {
    store: new ReviewedStore(repo, proposing),
    rolloutStore: new RolloutRecords(repo, records, layout.rolloutsDir),
    waves: new ProposedWaves(proposer, forge),
    reviews,
    forget,
    sweeper,
    records,
  };
}
