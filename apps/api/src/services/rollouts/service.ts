import { randomBytes } from "node:crypto";
import {
  abortRollout,
  assignWaves,
  clustersOf,
  commitWave,
  FleetRenderError,
  newRollout,
  onBehalfOfIn,
  pauseRollout,
  resumeRollout,
  ROLLOUT_TRAILER,
  RolloutConflictError,
  rolloutId,
  RolloutNotFoundError,
  RolloutReader,
  rolloutTeams,
  RolloutValidationError,
  serializeRollout,
  ACTIVE_PHASES,
  type ChangeOrigin,
  type CommitInfo,
  type FieldIssue,
  type Fleet,
  type FleetPlan,
  type Onboarding,
  type RepoChange,
  type RepoTree,
  type Rollout,
  type RolloutRequest,
  type Team,
  type TeamFailure,
  type TeamPreview,
} from "@berth/core";
import { IdempotentWrites, type WriteRequest } from "../idempotency.js";
import type { Clock } from "@berth/kube-runtime";
import { describeTarget, rolloutBody, withRolloutTrailer } from "./commit-message.js";
import type { EngineHandle, GateProgress, RolloutStore } from "./ports.js";

export interface RolloutPreview {
  revision: string | undefined;
  target: { templateVersion?: string };
  summary: {
    selected: number;
    changed: number;
    unchanged: number;
    failed: number;
    files: { added: number; modified: number; deleted: number };
  };
  waves: Array<{ name: string; teams: string[] }>;
  /** Why creating this rollout would be refused (empty: it would be accepted). */
  problems: FieldIssue[];
  failed: Array<{ team: string; error: string }>;
  /** Teams whose file cannot be read, that the selector might match: left out of the rollout, each with why. */
  broken: Array<{ team: string; error: string }>;
  unchanged: string[];
  teams: TeamPreview[];
}

export interface RolloutServiceOptions {
  onboarding: Onboarding;
  fleet: Fleet;
  store: RolloutStore;
  /** Clusters whose Team status the API can read (api.clusters): a gate can only wait on these. */
  observedClusters: ReadonlySet<string>;
  gateTimeoutSeconds: number;
  clock: Clock;
  /** The engine that drives Running rollouts: woken after each change; its last gate evaluation is shown. */
  engine: EngineHandle;
  random?: (n: number) => Buffer;
}

/** The name an unstaged rollout gives its single wave. */
const UNSTAGED_WAVE = "all";

/**
 * Rollouts through the API: preview, create (unstaged: one commit; staged: the rollout file, then the
 * engine commits and gates each wave), read, pause, resume, abort. Every write is a transaction through
 * the same writer as team writes; its mutate re-reads the rollout on the tree it commits on.
 */
export class RolloutService {
  readonly reader: RolloutReader;
  private readonly random: (n: number) => Buffer;
  private readonly writes: IdempotentWrites;

  constructor(private readonly opts: RolloutServiceOptions) {
    this.reader = new RolloutReader(opts.onboarding.platform);
    this.random = opts.random ?? randomBytes;
    this.writes = new IdempotentWrites(opts.store);
  }

  /** Read from a fresh fetch (as create is): a rollout must not be planned on a view seconds old. */
  async preview(request: RolloutRequest, options: { diffs: boolean }): Promise<RolloutPreview> {
    const tree = await this.opts.store.snapshot(0);
    const prepared = await this.prepare(tree, request);
    const teams = await this.opts.fleet.preview(tree, prepared.plan, { diffs: options.diffs });
    const files = { added: 0, modified: 0, deleted: 0 };
    for (const t of teams) for (const f of t.files) files[f.status] += 1;
    return {
      revision: tree.revision,
      target: request.target,
      summary: {
        selected: prepared.selected.length,
        changed: prepared.plan.changed.length,
        unchanged: prepared.plan.unchanged.length,
        failed: prepared.plan.failed.length,
        files,
      },
      waves: prepared.waves,
      problems: prepared.problems,
      failed: prepared.plan.failed,
      broken: prepared.broken,
      unchanged: prepared.plan.unchanged,
      teams,
    };
  }

  /**
   * Starts a rollout. Unstaged: the whole selection and the rollout file (Completed) in one commit, or
   * nothing if any team fails to render. Staged: the rollout file (Running); the engine takes it from there.
   * With an Idempotency-Key, a retry is answered from the commit of the original (nothing more is written).
   */
  async create(
    request: RolloutRequest,
    write: WriteRequest,
  ): Promise<{ rollout: Rollout; revision: string; summary: { teams: number; files: number }; replayed: boolean }> {
    const snapshot = await this.opts.store.snapshot(0);
    // A retry is answered before planning: once the original committed, its teams would change no more.
    const original = await this.writes.original(write, snapshot);
    if (original) return { ...(await this.createdBy(original)), replayed: true };
    const prepared = await this.prepare(snapshot, request);
    if (prepared.plan.failed.length) throw new FleetRenderError(prepared.plan.failed);
    if (prepared.problems.length) throw new RolloutValidationError(prepared.problems);
    const { clock } = this.opts;
    const id = rolloutId(clock.now(), this.random(3));
    const staged = request.waves !== undefined;
    const unstagedTeams = prepared.plan.changed.map((t) => t.team);
    const draft = newRollout({
      id,
      request,
      waves: staged ? prepared.waves : [{ name: UNSTAGED_WAVE, teams: unstagedTeams }],
      requestedBy: write.origin.actor,
      onBehalfOf: onBehalfOfIn(write.origin),
      now: clock.now(),
      gateTimeoutSeconds: staged ? this.opts.gateTimeoutSeconds : null,
    });
    const target = request.target.templateVersion;
    let result: Rollout = draft;
    let fileCount = 0;
    const outcome = await this.writes.write(
      { ...write, origin: withRolloutTrailer(write.origin, id) },
      [],
      async (tree): Promise<RepoChange> => {
        await this.assertNoConflict(tree, draft);
        const path = this.reader.path(id);
        if (!staged) {
          // Planned again on the tree the commit builds on: what the preview showed, unless the repo moved. The
          // file lists the teams this commit moves: a team another rollout moved meanwhile is unchanged here.
          const plan = await this.opts.fleet.plan(tree, unstagedTeams, target);
          if (plan.failed.length) throw new FleetRenderError(plan.failed);
          if (plan.changed.length === 0)
            throw new RolloutValidationError([
              {
                field: "selector",
                rule: "no selected team's files would change any more: the repo moved since the rollout was planned",
              },
            ]);
          const kept = new Set([...plan.changed.map((t) => t.team), ...plan.gone]);
          const moved = {
            ...draft,
            spec: { ...draft.spec, waves: [{ name: UNSTAGED_WAVE, teams: unstagedTeams.filter((t) => kept.has(t)) }] },
          };
          result = commitWave(moved, clock.now(), plan.gone);
          const files = new Map(plan.files);
          fileCount = files.size;
          files.set(path, serializeRollout(result));
          return {
            files,
            subject: `berth: rollout ${id}: ${plan.changed.length} team(s) ${describeTarget(target)}`,
            body: rolloutBody(result, plan),
          };
        }
        result = draft;
        return {
          files: new Map([[path, serializeRollout(draft)]]),
          subject: `berth: rollout ${id} created: ${draft.spec.waves.length} wave(s), ${rolloutTeams(draft).length} team(s) ${describeTarget(target)}`,
          body: rolloutBody(draft),
        };
      },
    );
    if (outcome.replayed) return { ...(await this.createdBy(outcome.original)), replayed: true };
    this.opts.engine.kick(id);
    return {
      rollout: result,
      revision: outcome.revision,
      summary: { teams: rolloutTeams(result).length, files: fileCount },
      replayed: false,
    };
  }

  /** The answer of the create that made `commit`: the rollout as that commit wrote it, and what it changed. */
  private async createdBy(
    commit: CommitInfo,
  ): Promise<{ rollout: Rollout; revision: string; summary: { teams: number; files: number } }> {
    const id = commit.trailers.find((t) => t.key === ROLLOUT_TRAILER)?.value;
    const rollout = id === undefined ? undefined : await this.reader.read(commit.tree, id);
    if (!rollout) throw new Error(`the commit ${commit.revision} holds no rollout created with this Idempotency-Key`);
    // Its teams' files and indexes, besides the rollout file itself (a staged rollout's first commit holds only that).
    const files = rollout.spec.gate === null ? (await commit.changes()).length - 1 : 0;
    return { rollout, revision: commit.revision, summary: { teams: rolloutTeams(rollout).length, files } };
  }

  async list(): Promise<{ revision: string | undefined; items: Rollout[] }> {
    const tree = await this.opts.store.snapshot();
    return { revision: tree.revision, items: await this.reader.list(tree) };
  }

  async get(
    id: string,
  ): Promise<{ revision: string | undefined; rollout: Rollout; progress: GateProgress | undefined }> {
    const tree = await this.opts.store.snapshot();
    const rollout = await this.reader.read(tree, id);
    if (!rollout) throw new RolloutNotFoundError(id);
    return { revision: tree.revision, rollout, progress: this.opts.engine.progress(id) };
  }

  pause(id: string, origin: ChangeOrigin) {
    return this.transition(id, origin, "paused", (r, now) => pauseRollout(r, now, origin.actor));
  }

  resume(id: string, origin: ChangeOrigin) {
    return this.transition(id, origin, "resumed", (r, now) => resumeRollout(r, now, origin.actor));
  }

  /** Ends the rollout; nothing is reverted. Says which version each of its teams is on now. */
  async abort(
    id: string,
    origin: ChangeOrigin,
  ): Promise<{ rollout: Rollout; revision: string; versions: Record<string, string[]> }> {
    let versions: Record<string, string[]> = {};
    // Held from this replica's engine, so that no pass of it runs between the commit and the close.
    return this.opts.engine.hold(id, async () => {
      const result = await this.transition(
        id,
        origin,
        "aborted",
        (r, now) => abortRollout(r, now, origin.actor),
        async (tree, r) => {
          versions = await this.versionsOf(tree, rolloutTeams(r));
        },
      );
      // Pull-request mode: the wave's pull request is closed after the commit, never before it, so that no replica's
      // engine sees it closed while the rollout is still Running and takes Berth's own close for a reviewer's.
      await this.opts.engine.withdraw(result.rollout);
      return { ...result, versions };
    });
  }

  /** The version each team is on in the tree, grouped: `{ v3: [a, b], v1: [c] }`; offboarded teams under "gone". */
  async versionsOf(tree: RepoTree, teams: readonly string[]): Promise<Record<string, string[]>> {
    const out: Record<string, string[]> = {};
    const read = await Promise.all(
      teams.map(async (name) => [name, await this.opts.onboarding.readTeam(tree, name)] as const),
    );
    for (const [name, team] of read) (out[team?.templateVersion ?? "gone"] ??= []).push(name);
    for (const list of Object.values(out)) list.sort();
    return out;
  }

  private async transition(
    id: string,
    origin: ChangeOrigin,
    what: string,
    apply: (r: Rollout, now: Date) => Rollout,
    inspect?: (tree: RepoTree, r: Rollout) => Promise<void>,
  ): Promise<{ rollout: Rollout; revision: string }> {
    let result: Rollout | undefined;
    const committed = await this.opts.store.transact(
      async (tree) => {
        const current = await this.reader.read(tree, id);
        if (!current) throw new RolloutNotFoundError(id);
        result = apply(current, this.opts.clock.now());
        await inspect?.(tree, result);
        return {
          files: new Map([[this.reader.path(id), serializeRollout(result)]]),
          subject: `berth: rollout ${id} ${what}`,
        };
      },
      withRolloutTrailer(origin, id),
    );
    // transact commits only what the callback returned, so a commit means the callback ran and set result.
    if (result === undefined) throw new Error(`rollout ${id} ${what}: committed without applying the transition`);
    this.opts.engine.kick(id);
    return { rollout: result, revision: committed.revision };
  }

  /** Selection, fleet plan, wave assignment and every reason the rollout would be refused. */
  private async prepare(
    tree: RepoTree,
    request: RolloutRequest,
  ): Promise<{
    selected: Team[];
    plan: FleetPlan;
    waves: Array<{ name: string; teams: string[] }>;
    problems: FieldIssue[];
    broken: TeamFailure[];
  }> {
    const { onboarding, fleet } = this.opts;
    const target = request.target.templateVersion;
    if (target !== undefined && !onboarding.catalog.has(target)) {
      throw new RolloutValidationError([
        {
          field: "target.templateVersion",
          rule: `must be one of the template versions: ${onboarding.catalog.versions().join(", ")}`,
        },
      ]);
    }
    const { teams: selected, broken } = await fleet.select(tree, request.selector);
    // A broken team the request names is planned, so it fails like any team that cannot be rendered (and an
    // unstaged rollout commits nothing); one it might only match is reported and left out.
    const named = request.selector.names ? broken.map((b) => b.team) : [];
    const plan = await fleet.plan(tree, [...selected.map((t) => t.name), ...named], target);
    const problems: FieldIssue[] = [];
    const changedNames = new Set(plan.changed.map((t) => t.team));
    const changed = selected.filter((t) => changedNames.has(t.name));
    if (changed.length === 0 && plan.failed.length === 0) {
      problems.push({ field: "selector", rule: `no selected team's files would change (${selected.length} selected)` });
    }
    let waves: Array<{ name: string; teams: string[] }> = [{ name: UNSTAGED_WAVE, teams: changed.map((t) => t.name) }];
    if (request.waves) {
      const assigned = assignWaves(changed, request.waves);
      waves = assigned.waves;
      if (assigned.unassigned.length) {
        problems.push({
          field: "waves",
          rule: `${assigned.unassigned.length} team(s) are in no wave (${assigned.unassigned.slice(0, 10).join(", ")}${assigned.unassigned.length > 10 ? ", ..." : ""}): add a last wave without a selector`,
        });
      }
      const unobserved = [...new Set(changed.flatMap((t) => clustersOf(t, onboarding.platform).map((c) => c.name)))]
        .filter((c) => !this.opts.observedClusters.has(c))
        .sort();
      if (unobserved.length) {
        problems.push({
          field: "waves",
          rule: `the gate cannot read Team status on ${unobserved.join(", ")}: configure api.clusters for every cluster of the selection, or roll out without waves`,
        });
      }
    }
    return { selected, plan, waves, problems, broken: request.selector.names ? [] : broken };
  }

  /** Two active rollouts may not move the same team. */
  private async assertNoConflict(tree: RepoTree, rollout: Rollout): Promise<void> {
    const mine = new Set(rolloutTeams(rollout));
    for (const other of await this.reader.list(tree)) {
      if (other.metadata.name === rollout.metadata.name || !ACTIVE_PHASES.includes(other.status.phase)) continue;
      const shared = rolloutTeams(other).filter((t) => mine.has(t));
      if (shared.length) throw new RolloutConflictError(other.metadata.name, shared.sort());
    }
  }
}
