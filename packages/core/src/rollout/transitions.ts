import { RolloutStateError, RolloutValidationError } from "../errors.js";
import {
  ACTIVE_PHASES,
  type Halt,
  type HistoryEntry,
  type Rollout,
  type RolloutPhase,
  type RolloutRequest,
  type WaveStatus,
  ROLLOUT_API_VERSION,
  ROLLOUT_KIND,
} from "./model.js";

/**
 * The rollout's state machine: Running → (Paused | Halted ⇄ Running) → Completed | Aborted, and each
 * wave Pending → Committed → Ready (in pull-request mode Pending → Proposed → Committed → Ready). Each
 * transition returns a new state and appends to its history; a transition the phase does not allow is a
 * RolloutStateError.
 */

/** The history keeps the last entries only: the state file stays small however long the rollout runs. */
const MAX_HISTORY = 50;

export interface NewRolloutInput {
  id: string;
  request: RolloutRequest;
  /** The teams of each wave (assignWaves), or one wave named "all" for an unstaged rollout. */
  waves: Array<{ name: string; teams: string[] }>;
  requestedBy: string;
  /** Whom the caller said it acts for, if it did. */
  onBehalfOf?: string | undefined;
  now: Date;
  /** The gate timeout when the request gives none; null for an unstaged rollout. */
  gateTimeoutSeconds: number | null;
}

export function newRollout(input: NewRolloutInput): Rollout {
  const at = input.now.toISOString();
  if (input.waves.length === 0)
    throw new RolloutValidationError([{ field: "waves", rule: "a rollout needs at least one wave" }]);
  return {
    apiVersion: ROLLOUT_API_VERSION,
    kind: ROLLOUT_KIND,
    metadata: { name: input.id },
    spec: {
      description: input.request.description,
      requestedBy: input.requestedBy,
      ...(input.onBehalfOf ? { onBehalfOf: input.onBehalfOf } : {}),
      createdAt: at,
      target: input.request.target,
      selector: input.request.selector,
      gate:
        input.gateTimeoutSeconds === null
          ? null
          : { timeoutSeconds: input.request.gate.timeoutSeconds ?? input.gateTimeoutSeconds },
      waves: input.waves.map((w) => ({ name: w.name, teams: [...w.teams] })),
    },
    status: {
      phase: "Running",
      wave: 0,
      waves: input.waves.map((w) => ({ name: w.name, phase: "Pending" as const })),
      history: [{ at, event: "Created", by: input.requestedBy }],
    },
  };
}

function withHistory(r: Rollout, entry: HistoryEntry): Rollout["status"]["history"] {
  return [...r.status.history, entry].slice(-MAX_HISTORY);
}

function mustBe(r: Rollout, phases: readonly RolloutPhase[], action: string): void {
  if (!phases.includes(r.status.phase)) throw new RolloutStateError(r.metadata.name, r.status.phase, action);
}

/** A rollout's current wave: its place, its spec and its status. */
export interface CurrentWave {
  index: number;
  spec: Rollout["spec"]["waves"][number];
  status: WaveStatus;
}

/** The current wave (undefined once every wave is done). */
export function currentWave(r: Rollout): CurrentWave | undefined {
  const index = r.status.wave;
  const spec = r.spec.waves[index];
  const status = r.status.waves[index];
  return spec && status ? { index, spec, status } : undefined;
}

/**
 * One step of the current wave of a Running rollout: it must be in `from` (else a RolloutStateError saying `refusal`);
 * `change` gives its new status, `event` the history entry. The waves and history of the result; callers add the rest.
 */
function stepCurrentWave(
  r: Rollout,
  now: Date,
  step: { action: string; from: WaveStatus["phase"]; refusal: string },
  change: (wave: WaveStatus, at: string) => WaveStatus,
  event: (wave: CurrentWave, at: string) => HistoryEntry,
): { wave: CurrentWave; status: Rollout["status"] } {
  mustBe(r, ["Running"], step.action);
  const wave = currentWave(r);
  if (!wave || wave.status.phase !== step.from)
    throw new RolloutStateError(r.metadata.name, r.status.phase, step.refusal);
  const at = now.toISOString();
  const waves = r.status.waves.map((w, i) => (i === wave.index ? change(w, at) : w));
  return { wave, status: { ...r.status, waves, history: withHistory(r, event(wave, at)) } };
}

/** The current wave is committed (its teams' changes are in the same commit as this state). */
export function commitWave(r: Rollout, now: Date, skipped: string[]): Rollout {
  const { status } = stepCurrentWave(
    r,
    now,
    { action: "committed", from: "Pending", refusal: "committed again" },
    (w, at) => ({
      ...w,
      phase: "Committed",
      committedAt: at,
      gateSince: at,
      ...(skipped.length ? { skipped: [...skipped].sort() } : {}),
    }),
    (wave, at) => ({
      at,
      event: "WaveCommitted",
      message: `wave ${wave.spec.name}: ${wave.spec.teams.length - skipped.length} team(s)`,
    }),
  );
  // No gate (unstaged): the wave is done as soon as it is committed.
  return r.spec.gate === null ? passWave({ ...r, status }, now) : { ...r, status };
}

/**
 * Pull-request mode: the current wave's team files wait in a pull request (ADR 0030). The wave is committed when it
 * is merged (`mergeWave`), and its gate starts then.
 */
export function proposeWave(
  r: Rollout,
  now: Date,
  pullRequest: { number: number; url: string },
  skipped: string[],
): Rollout {
  const { status } = stepCurrentWave(
    r,
    now,
    { action: "proposed", from: "Pending", refusal: "proposed again" },
    (w, at) => ({
      ...w,
      phase: "Proposed",
      pullRequest: { number: pullRequest.number, url: pullRequest.url },
      proposedAt: at,
      ...(skipped.length ? { skipped: [...skipped].sort() } : {}),
    }),
    (wave, at) => ({
      at,
      event: "WaveProposed",
      message: `wave ${wave.spec.name}: pull request #${pullRequest.number}`,
    }),
  );
  return { ...r, status };
}

/** Pull-request mode: the current wave's pull request was merged; its team files are on main and its gate starts. */
export function mergeWave(r: Rollout, now: Date): Rollout {
  const { status } = stepCurrentWave(
    r,
    now,
    { action: "merged", from: "Proposed", refusal: "merged before it was proposed" },
    (w, at) => ({ ...w, phase: "Committed", committedAt: at, gateSince: at }),
    (wave, at) => ({
      at,
      event: "WaveCommitted",
      message: `wave ${wave.spec.name}: pull request #${wave.status.pullRequest?.number ?? "?"} merged`,
    }),
  );
  return r.spec.gate === null ? passWave({ ...r, status }, now) : { ...r, status };
}

/** The current wave passed its gate: it is Ready, and the next one becomes current (or the rollout completes). */
export function passWave(r: Rollout, now: Date): Rollout {
  const { wave, status } = stepCurrentWave(
    r,
    now,
    { action: "advanced", from: "Committed", refusal: "advanced before its wave is committed" },
    (w, at) => ({ ...w, phase: "Ready", readyAt: at }),
    (w, at) => ({ at, event: "WaveReady", message: `wave ${w.spec.name}` }),
  );
  const next = wave.index + 1;
  const done = next >= r.spec.waves.length;
  const history = done
    ? [...status.history, { at: now.toISOString(), event: "Completed" as const }].slice(-MAX_HISTORY)
    : status.history;
  return { ...r, status: { ...status, phase: done ? "Completed" : "Running", wave: next, history } };
}

export function haltRollout(r: Rollout, now: Date, halt: Omit<Halt, "at" | "wave">): Rollout {
  mustBe(r, ["Running"], "halted");
  const at = now.toISOString();
  const wave = currentWave(r)?.spec.name ?? "";
  return {
    ...r,
    status: {
      ...r.status,
      phase: "Halted",
      halt: { ...halt, at, wave, teams: halt.teams.slice(0, 200) },
      history: withHistory(r, { at, event: "Halted", message: `${halt.reason}: ${halt.message}` }),
    },
  };
}

export function pauseRollout(r: Rollout, now: Date, by: string): Rollout {
  mustBe(r, ["Running"], "paused");
  return {
    ...r,
    status: { ...r.status, phase: "Paused", history: withHistory(r, { at: now.toISOString(), event: "Paused", by }) },
  };
}

/** Back to Running; the current wave's gate clock starts again (a halt's cause was fixed meanwhile). */
export function resumeRollout(r: Rollout, now: Date, by: string): Rollout {
  mustBe(r, ["Paused", "Halted"], "resumed");
  const at = now.toISOString();
  // A wave whose pull request was closed without merge is proposed again, from main as it is now.
  const reproposed = r.status.halt?.reason === "ProposalClosed";
  const waves = r.status.waves.map((w, i) => {
    if (i !== r.status.wave) return w;
    if (reproposed && w.phase === "Proposed") return { name: w.name, phase: "Pending" as const };
    return w.phase === "Committed" ? { ...w, gateSince: at } : w;
  });
  const { halt: _halt, ...status } = r.status;
  return {
    ...r,
    status: { ...status, phase: "Running", waves, history: withHistory(r, { at, event: "Resumed", by }) },
  };
}

export function abortRollout(r: Rollout, now: Date, by: string): Rollout {
  mustBe(r, ACTIVE_PHASES, "aborted");
  return {
    ...r,
    status: { ...r.status, phase: "Aborted", history: withHistory(r, { at: now.toISOString(), event: "Aborted", by }) },
  };
}

/** Teams of waves already committed (they are on the target), in wave order. */
export function committedTeams(r: Rollout): string[] {
  return r.spec.waves.flatMap((w, i) =>
    r.status.waves[i]?.phase === "Committed" || r.status.waves[i]?.phase === "Ready"
      ? w.teams.filter((t) => !r.status.waves[i]?.skipped?.includes(t))
      : [],
  );
}

export function rolloutTeams(r: Rollout): string[] {
  return r.spec.waves.flatMap((w) => w.teams);
}
