import {
  clustersOf,
  commitWave,
  currentWave,
  gateDecision,
  haltRollout,
  judge,
  mergeWave,
  passWave,
  proposeWave,
  TRAILER_ON_BEHALF_OF,
  repoLayout,
  ROLLOUT_PHASES,
  RolloutReader,
  sameTeamOnCluster,
  serializeRollout,
  type ChangeOrigin,
  type CurrentWave,
  type Fleet,
  type FleetPlan,
  type GateDecision,
  type GateObservation,
  type Onboarding,
  type RepoChange,
  type RepoLayout,
  type RepoTree,
  type Rollout,
  type WaveStatus,
} from "@berth/core";
import type { Logger } from "@berth/logging";
import { WorkQueue, type Clock } from "@berth/kube-runtime";
import type { ApiMetrics } from "../../metrics.js";
import type { TeamStatusReader } from "../../adapters/team-status.js";
import { rolloutBody, waveMessage, withRolloutTrailer } from "./commit-message.js";
import type { EngineHandle, GateProgress, RolloutStore, WaveProposals } from "./ports.js";
import type { AuditedAction, AuditOutcome, AuditSink } from "../audit.js";

export interface RolloutEngineOptions {
  onboarding: Onboarding;
  fleet: Fleet;
  store: RolloutStore;
  statusReader: TeamStatusReader;
  clock: Clock;
  pollIntervalMs: number;
  logger: Logger;
  /** Status reads in flight at once (each is one GET per team and cluster). Default 16. */
  statusConcurrency?: number;
  /** Rollouts by phase, gate evaluations and their duration. */
  metrics?: Pick<ApiMetrics, "rollouts" | "gateEvaluations" | "gateDuration">;
  /** The audit trail: one line per commit the engine makes (a wave committed, passed, a halt). */
  audit?: AuditSink;
  /**
   * Pull-request mode (ADR 0030): each wave's team files are proposed as one pull request, and its gate starts at
   * the merge; the store then keeps only the rollout files.
   */
  proposals?: WaveProposals;
}

const ENGINE_ORIGIN = { actor: "berth-rollout-engine", requestId: "rollout-engine" };

/** The engine's commits for a rollout: its trailer, and whom the rollout was started for when it was said. */
function engineOrigin(r: Rollout): ChangeOrigin {
  const { onBehalfOf } = r.spec;
  const origin = onBehalfOf
    ? { ...ENGINE_ORIGIN, trailers: [{ key: TRAILER_ON_BEHALF_OF, value: onBehalfOf }] }
    : ENGINE_ORIGIN;
  return withRolloutTrailer(origin, r.metadata.name);
}
/** Steps one rollout may take in one pass without waiting (commit, gate, pass, commit, ...). */
const MAX_STEPS_PER_PASS = 20;
/** One pass's time limit: a gate over a large wave reads every team's status on every cluster. */
const PASS_TIMEOUT_MS = 10 * 60_000;

/**
 * Drives every Running rollout of the Flux repo, one step at a time (docs/rollouts.md): commit the current
 * wave, then check its gate on every poll until it passes (next wave), fails or times out (halt). Shaped like
 * the controller's reconcilers: `reconcile(id)` runs on a WorkQueue (one pass per rollout at a time, backoff
 * on failure), fed by a resync that lists the Running rollouts every poll interval and by `kick(id)` after a
 * change. It keeps no state of its own: each pass reads the rollout file, and each step is a transaction
 * whose mutate re-checks the step on the tree it commits on. A restarted API, or a second replica, carries on.
 */
export class RolloutEngine implements EngineHandle {
  private readonly evaluations = new Map<string, GateProgress>();
  /** Per rollout, the end of the last pass or hold queued on it: each waits for the one before. */
  private readonly turns = new Map<string, Promise<unknown>>();
  /** Pull requests of aborted rollouts' waves this replica saw closed (`rollout#number`): no longer tried. */
  private readonly withdrawn = new Set<string>();
  private readonly stopper = new AbortController();
  private readonly queue: WorkQueue;
  private resyncLoop: Promise<void> | undefined;

  private readonly layout: RepoLayout;
  private readonly reader: RolloutReader;

  constructor(private readonly opts: RolloutEngineOptions) {
    this.layout = repoLayout(opts.onboarding.platform);
    this.reader = new RolloutReader(opts.onboarding.platform);
    this.queue = new WorkQueue({
      name: "rollouts",
      // One rollout at a time, as one operator would: waves of several rollouts still commit in turn.
      concurrency: 1,
      baseDelayMs: Math.min(1_000, opts.pollIntervalMs),
      maxDelayMs: Math.max(opts.pollIntervalMs, 60_000),
      timeoutMs: PASS_TIMEOUT_MS,
      clock: opts.clock,
      logger: opts.logger,
    });
  }

  start(): void {
    if (this.resyncLoop) return;
    this.queue.start((id, signal) => this.reconcile(id, signal));
    this.resyncLoop = this.resync();
  }

  /** Stops the resync and the queue; a pass in flight ends after its current step. */
  async stop(): Promise<void> {
    this.stopper.abort();
    await this.resyncLoop;
    await this.queue.shutdown({ abort: true, reason: "rollout engine stopped" });
  }

  /** Drive `id` now (it was created, resumed, paused or aborted). */
  kick(id: string): void {
    this.queue.add(id);
  }

  progress(id: string): GateProgress | undefined {
    return this.evaluations.get(id);
  }

  /**
   * One pass over every Running rollout, in the caller's time and not the queue's: tests that do not start
   * the engine step it with this, so every assertion is about a known state.
   */
  async tick(): Promise<void> {
    const { running, aborted } = await this.listRunning();
    for (const r of aborted) await this.withdraw(r);
    for (const id of running) {
      try {
        await this.reconcile(id, this.stopper.signal);
      } catch (err) {
        this.opts.logger.warn({ rollout: id, err: (err as Error).message }, "rollout step failed");
      }
    }
  }

  async withdraw(r: Rollout): Promise<void> {
    const { proposals, logger } = this.opts;
    const pullRequest = this.unwithdrawn(r);
    if (!proposals || pullRequest === undefined) return;
    try {
      await proposals.close(pullRequest);
      this.withdrawn.add(`${r.metadata.name}#${pullRequest}`);
    } catch (err) {
      logger.warn(
        { rollout: r.metadata.name, pullRequest, err: (err as Error).message },
        "closing the pull request of an aborted rollout failed; retrying at the next poll",
      );
    }
  }

  /** The pull request an aborted rollout's wave waits in, unless this replica already saw it closed. */
  private unwithdrawn(r: Rollout): number | undefined {
    const wave = currentWave(r);
    const number = wave?.status.phase === "Proposed" ? wave.status.pullRequest?.number : undefined;
    if (r.status.phase !== "Aborted" || number === undefined) return undefined;
    return this.withdrawn.has(`${r.metadata.name}#${number}`) ? undefined : number;
  }

  hold<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const before = this.turns.get(id) ?? Promise.resolve();
    const run = before.then(fn, fn);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.turns.set(id, settled);
    void settled.then(() => {
      if (this.turns.get(id) === settled) this.turns.delete(id);
    });
    return run;
  }

  /** Takes steps of one rollout until it has to wait (or is no longer Running, or `signal` aborts). */
  reconcile(id: string, signal: AbortSignal): Promise<void> {
    return this.hold(id, () => this.pass(id, signal));
  }

  private async pass(id: string, signal: AbortSignal): Promise<void> {
    for (let step = 0; step < MAX_STEPS_PER_PASS && !signal.aborted; step++) {
      const tree = await this.opts.store.snapshot(0);
      const r = await this.reader.read(tree, id);
      if (!r || r.status.phase !== "Running") {
        this.evaluations.delete(id);
        return;
      }
      const wave = currentWave(r);
      if (!wave) return;
      if (wave.status.phase === "Pending") {
        const { proposals } = this.opts;
        await (proposals ? this.proposeCurrentWave(r, wave.index, proposals) : this.commitCurrentWave(r, wave.index));
        continue;
      }
      if (wave.status.phase === "Proposed") {
        const { proposals } = this.opts;
        if (!proposals)
          throw new Error(`rollout ${id}: wave ${wave.spec.name} waits in a pull request, and Berth is in direct mode`);
        if (!(await this.followProposal(r, wave, proposals))) return;
        continue;
      }
      if (wave.status.phase !== "Committed") return;
      if ((await this.evaluate(tree, r, wave)) !== "pass") return;
    }
  }

  /**
   * The rollout as `tree` holds it, if it is still Running at wave `index` in `phase` (and `same` holds): each step
   * re-checks this on the tree it commits on, so a step another replica (or an earlier attempt) took, or a pause or
   * abort meanwhile, makes it moot.
   */
  private async stillAt(
    tree: RepoTree,
    id: string,
    index: number,
    phase: WaveStatus["phase"],
    same: (wave: CurrentWave) => boolean = () => true,
  ): Promise<{ rollout: Rollout; wave: CurrentWave } | undefined> {
    const rollout = await this.reader.read(tree, id);
    const wave = rollout && currentWave(rollout);
    if (!rollout || rollout.status.phase !== "Running" || !wave || wave.index !== index) return undefined;
    return wave.status.phase === phase && same(wave) ? { rollout, wave } : undefined;
  }

  /** Every poll interval: queue each Running rollout (the queue holds a key once, so a slow pass is not doubled). */
  private async resync(): Promise<void> {
    while (!this.stopper.signal.aborted) {
      try {
        const { running, aborted } = await this.listRunning();
        for (const id of running) this.queue.add(id);
        for (const r of aborted) await this.withdraw(r);
      } catch (err) {
        this.opts.logger.warn({ err: (err as Error).message }, "rollout resync failed; retrying on the next poll");
      }
      await this.opts.clock.sleep(this.opts.pollIntervalMs, this.stopper.signal);
    }
  }

  /**
   * The Running rollouts, and (pull-request mode) the aborted ones whose wave's pull request may still be open;
   * updates the phase gauge and forgets the gate progress of the others.
   */
  private async listRunning(): Promise<{ running: string[]; aborted: Rollout[] }> {
    const tree = await this.opts.store.snapshot(Math.min(1_000, this.opts.pollIntervalMs / 2));
    const rollouts = await this.reader.list(tree);
    if (this.opts.metrics) {
      const gauge = this.opts.metrics.rollouts;
      gauge.reset();
      for (const phase of ROLLOUT_PHASES) gauge.set({ phase }, rollouts.filter((r) => r.status.phase === phase).length);
    }
    const running: string[] = [];
    for (const r of rollouts) {
      if (r.status.phase === "Running") running.push(r.metadata.name);
      else this.evaluations.delete(r.metadata.name);
    }
    const aborted = this.opts.proposals ? rollouts.filter((r) => this.unwithdrawn(r) !== undefined) : [];
    return { running, aborted };
  }

  /** Commits the current wave: its teams re-rendered on the target and the rollout file, in one commit. */
  private async commitCurrentWave(started: Rollout, index: number): Promise<void> {
    const { fleet, clock, store, logger } = this.opts;
    const id = started.metadata.name;
    let action: AuditedAction = "rollout-wave";
    const result = await store.transact(async (tree): Promise<RepoChange | null> => {
      action = "rollout-wave";
      const at = await this.stillAt(tree, id, index, "Pending");
      if (!at) return null;
      const { rollout: r, wave } = at;
      const target = r.spec.target.templateVersion;
      const plan = await fleet.plan(tree, wave.spec.teams, target);
      const path = this.reader.path(id);
      if (plan.failed.length) {
        action = "rollout-halt";
        const halted = haltRollout(r, clock.now(), renderFailedHalt(wave.spec.name, plan));
        logger.warn(
          { rollout: id, wave: wave.spec.name, failed: plan.failed.length },
          "rollout halted: teams cannot be rendered",
        );
        return {
          files: new Map([[path, serializeRollout(halted)]]),
          subject: `berth: rollout ${id} halted in wave ${wave.spec.name}: render failed`,
        };
      }
      const next = commitWave(r, clock.now(), plan.gone);
      const files = new Map(plan.files);
      files.set(path, serializeRollout(next));
      logger.info(
        { rollout: id, wave: wave.spec.name, teams: plan.changed.length, gone: plan.gone.length },
        "rollout: committing wave",
      );
      return {
        files,
        ...waveMessage(id, wave.spec, plan, target),
      };
    }, engineOrigin(started));
    this.audited(started, action, result);
  }

  /**
   * Pull-request mode: proposes the current wave's team files as one pull request (planned on main's head), then
   * records the wave as Proposed with it. A wave with nothing to change is committed at once (there is nothing to
   * review); one whose teams cannot be rendered halts the rollout, as in direct mode, with no pull request.
   */
  private async proposeCurrentWave(started: Rollout, index: number, proposals: WaveProposals): Promise<void> {
    const { fleet, clock, store, logger } = this.opts;
    const id = started.metadata.name;
    const wave = currentWave(started);
    if (!wave || wave.index !== index) return;
    const target = started.spec.target.templateVersion;
    let plan: FleetPlan | undefined;
    const pullRequest = await proposals.propose(
      id,
      wave.spec.name,
      async (tree) => {
        plan = await fleet.plan(tree, wave.spec.teams, target);
        if (plan.failed.length || plan.files.size === 0) return null;
        const { subject, body } = waveMessage(id, wave.spec, plan, target);
        return {
          files: new Map(plan.files),
          subject,
          body: [...body, "Its gate (every team Ready on every cluster) starts once this is merged."],
        };
      },
      engineOrigin(started),
    );
    const planned = plan as FleetPlan | undefined;
    if (!planned) throw new Error(`rollout ${id}: wave ${wave.spec.name} was proposed without a plan`);
    let action: AuditedAction = "rollout-wave";
    const path = this.reader.path(id);
    const result = await store.transact(async (tree): Promise<RepoChange | null> => {
      const at = await this.stillAt(tree, id, index, "Pending");
      if (!at) return null;
      const { rollout: r, wave: w } = at;
      if (planned.failed.length) {
        action = "rollout-halt";
        const halted = haltRollout(r, clock.now(), renderFailedHalt(w.spec.name, planned));
        return {
          files: new Map([[path, serializeRollout(halted)]]),
          subject: `berth: rollout ${id} halted in wave ${w.spec.name}: render failed`,
        };
      }
      const next = pullRequest
        ? proposeWave(r, clock.now(), pullRequest, planned.gone)
        : commitWave(r, clock.now(), planned.gone);
      return {
        files: new Map([[path, serializeRollout(next)]]),
        subject: pullRequest
          ? `berth: rollout ${id} wave ${w.spec.name} proposed in pull request #${pullRequest.number}`
          : `berth: rollout ${id} wave ${w.spec.name}: nothing to change`,
      };
    }, engineOrigin(started));
    if (!result.committed && pullRequest) {
      // Aborted while its wave was being proposed: nobody waits for that pull request.
      const now = await this.reader.read(await store.snapshot(0), id);
      if (now?.status.phase === "Aborted") await proposals.close(pullRequest.number);
    }
    if (pullRequest)
      logger.info({ rollout: id, wave: wave.spec.name, pullRequest: pullRequest.number }, "rollout: wave proposed");
    // A proposed wave's files wait in its pull request (audited as proposed); the merge is audited when it is seen.
    if (pullRequest && action === "rollout-wave") this.audited(started, action, result, pullRequest.number, "proposed");
    else this.audited(started, action, result);
  }

  /**
   * Pull-request mode: where the current wave's pull request stands. Merged: the wave is committed and its gate
   * starts (true: go on). Closed without merge: the rollout halts (resume proposes the wave again). Open: wait.
   */
  private async followProposal(r: Rollout, wave: CurrentWave, proposals: WaveProposals): Promise<boolean> {
    const { clock, store, logger } = this.opts;
    const id = r.metadata.name;
    const pullRequest = wave.status.pullRequest;
    if (!pullRequest) throw new Error(`rollout ${id}: wave ${wave.spec.name} is Proposed without a pull request`);
    const state = await proposals.state(pullRequest.number);
    if (state === "open") return false;
    const result = await store.transact(async (tree): Promise<RepoChange | null> => {
      const at = await this.stillAt(
        tree,
        id,
        wave.index,
        "Proposed",
        (w) => w.status.pullRequest?.number === pullRequest.number,
      );
      if (!at) return null;
      const { rollout: current, wave: w } = at;
      const next =
        state === "merged"
          ? mergeWave(current, clock.now())
          : haltRollout(current, clock.now(), {
              reason: "ProposalClosed",
              message: `pull request #${pullRequest.number} of wave ${w.spec.name} was closed without merge: nothing of the wave was applied (resume proposes it again; abort ends the rollout)`,
              teams: [],
            });
      return {
        files: new Map([[this.reader.path(id), serializeRollout(next)]]),
        subject:
          state === "merged"
            ? `berth: rollout ${id} wave ${w.spec.name} merged (pull request #${pullRequest.number}): gate started`
            : `berth: rollout ${id} halted in wave ${w.spec.name}: pull request #${pullRequest.number} closed without merge`,
      };
    }, engineOrigin(r));
    this.audited(r, state === "merged" ? "rollout-wave" : "rollout-halt", result, pullRequest.number);
    if (state === "closed")
      logger.warn(
        { rollout: id, wave: wave.spec.name, pullRequest: pullRequest.number },
        "rollout halted: pull request closed",
      );
    return state === "merged";
  }

  /** The audit line of a commit the engine made (nothing when the step was taken elsewhere, or was moot). */
  private audited(
    r: Rollout,
    action: AuditedAction,
    result: { revision: string; committed: boolean },
    pullRequest: number | null = null,
    outcome: AuditOutcome = "committed",
  ): void {
    if (!result.committed) return;
    this.opts.audit?.({
      principal: ENGINE_ORIGIN.actor,
      onBehalfOf: r.spec.onBehalfOf ?? null,
      action,
      team: null,
      rollout: r.metadata.name,
      requestId: null,
      idempotencyKey: null,
      revision: result.revision,
      pullRequest,
      outcome,
      status: null,
      problem: null,
    });
  }

  /** Reads the gate of `wave`, the current (committed) wave of `r`; on pass or halt commits the rollout file. */
  private async evaluate(tree: RepoTree, r: Rollout, wave: CurrentWave): Promise<"pass" | "wait" | "halt"> {
    const { clock, logger } = this.opts;
    const id = r.metadata.name;
    const stopTimer = this.opts.metrics?.gateDuration.startTimer();
    const observations = await this.observe(tree, r, wave);
    stopTimer?.();
    const now = clock.now();
    const decision = gateDecision({
      observations,
      now,
      gateSince: new Date(wave.status.gateSince ?? wave.status.committedAt ?? r.spec.createdAt),
      timeoutSeconds: r.spec.gate?.timeoutSeconds ?? 0,
    });
    const judged = observations.map(judge);
    const count = (result: string) => judged.filter((t) => t.result === result).length;
    this.evaluations.set(id, {
      evaluatedAt: now.toISOString(),
      wave: wave.spec.name,
      verdict: decision.verdict,
      message: decision.message,
      ready: count("ready"),
      waiting: count("waiting"),
      failed: count("failed"),
      teams: judged.slice(0, 500),
    });
    this.opts.metrics?.gateEvaluations.inc({ verdict: decision.verdict });
    if (decision.verdict === "wait") return "wait";
    const gateSince = wave.status.gateSince;
    const result = await this.opts.store.transact(async (head): Promise<RepoChange | null> => {
      // Only if nothing moved meanwhile: same wave, still committed, not resumed (gateSince) or paused.
      const at = await this.stillAt(head, id, wave.index, "Committed", (w) => w.status.gateSince === gateSince);
      if (!at) return null;
      const current = at.rollout;
      const next =
        decision.verdict === "pass"
          ? passWave(current, clock.now())
          : haltRollout(current, clock.now(), {
              reason: haltReasonOf(decision),
              message: decision.message,
              teams: decision.teams,
            });
      const subject =
        decision.verdict === "pass"
          ? `berth: rollout ${id} wave ${wave.spec.name} Ready${next.status.phase === "Completed" ? ": rollout completed" : ""}`
          : `berth: rollout ${id} halted in wave ${wave.spec.name}: ${decision.reason}`;
      return {
        files: new Map([[this.reader.path(id), serializeRollout(next)]]),
        subject,
        body: decision.verdict === "halt" ? [decision.message] : rolloutBody(next).slice(0, 1),
      };
    }, engineOrigin(r));
    this.audited(r, decision.verdict === "pass" ? "rollout-wave-ready" : "rollout-halt", result);
    if (decision.verdict === "halt")
      logger.warn(
        { rollout: id, wave: wave.spec.name, reason: decision.reason, message: decision.message },
        "rollout halted",
      );
    else logger.info({ rollout: id, wave: wave.spec.name }, "rollout: wave Ready");
    return decision.verdict;
  }

  /** Every team of the wave on every cluster it lands on, with "does that status describe the wave?". */
  private async observe(tree: RepoTree, r: Rollout, { index, spec: wave }: CurrentWave): Promise<GateObservation[]> {
    const { onboarding, statusReader, store } = this.opts;
    const skipped = new Set(r.status.waves[index]?.skipped ?? []);
    const trees = new Map<string, Promise<{ at: RepoTree | undefined; includesWave: boolean }>>();
    const treeOf = (sha: string) => {
      let p = trees.get(sha);
      if (!p) {
        p = (async () => {
          const at = await store.treeAt(sha);
          const seen = at && (await this.reader.read(at, r.metadata.name));
          return {
            at,
            includesWave: seen !== undefined && (seen.status.waves[index]?.phase ?? "Pending") !== "Pending",
          };
        })();
        trees.set(sha, p);
      }
      return p;
    };
    // Does the status describe the wave? Its revision includes the wave's commit, or (Flux reconciles a team only
    // when the team's own inputs change, ADR 0019) it is older but holds what `tree`, which includes the wave, holds
    // for the team on that cluster.
    const describesWave = async (
      revision: string | undefined,
      team: string,
      cluster: string,
    ): Promise<boolean | undefined> => {
      const sha = revisionSha(revision);
      if (!sha) return undefined;
      const { at, includesWave } = await treeOf(sha);
      return includesWave || (at !== undefined && (await sameTeamOnCluster(at, tree, this.layout, team, cluster)));
    };
    const names = wave.teams.filter((t) => !skipped.has(t));
    // Every team from one listing (parsed once per team folder content, shared with every other reader),
    // not one look-up of its folder per team: a 1,000-team wave is one pass.
    const { teams, broken } = await onboarding.listTeams(tree);
    // A wave team whose file cannot be read is not judged as gone: the gate waits (the step fails and is retried).
    const unreadable = broken.find((b) => names.includes(b.team));
    if (unreadable) throw new Error(unreadable.error);
    const byName = new Map(teams.map((t) => [t.name, t]));
    const perTeam = await mapLimit(names, this.opts.statusConcurrency ?? 16, async (name) => {
      const team = byName.get(name);
      if (!team) return [];
      const statuses = await statusReader.read(name, clustersOf(team, onboarding.platform));
      return Promise.all(
        statuses.map(async (s): Promise<GateObservation> => ({
          team: name,
          cluster: s.cluster,
          state: s.state,
          ready: s.ready,
          stale: s.stale,
          revision: s.revision,
          includesWave: await describesWave(s.revision, name, s.cluster),
          conditions: s.conditions,
        })),
      );
    });
    return perTeam.flat();
  }
}

/** The halt of a wave some of whose teams cannot be rendered: nothing of it was committed (or proposed). */
function renderFailedHalt(wave: string, plan: FleetPlan) {
  return {
    reason: "RenderFailed" as const,
    message: `${plan.failed.length} team(s) of wave ${wave} cannot be rendered; nothing of the wave was committed`,
    teams: plan.failed.map((f) => ({
      team: f.team,
      result: "render-failed" as const,
      message: f.error.slice(0, 1000),
    })),
  };
}

/** The reason a halting gate decision gives (gateDecision gives every halt one). */
function haltReasonOf(decision: GateDecision): NonNullable<GateDecision["reason"]> {
  if (!decision.reason) throw new Error(`the gate decided "${decision.verdict}" without a halt reason`);
  return decision.reason;
}

/** The commit of a Flux revision: `main@sha1:<sha>` (Flux 2), `main/<sha>` (older), or a bare sha. */
export function revisionSha(revision: string | undefined): string | undefined {
  if (!revision) return undefined;
  const m = /(?:^|[@:/])([0-9a-f]{40}|[0-9a-f]{64})$/.exec(revision);
  return m?.[1];
}

async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  const queue = items.entries();
  // The workers share one iterator, so each item is taken exactly once.
  const worker = async () => {
    for (const [i, item] of queue) out[i] = await fn(item);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
