import { createHash } from "node:crypto";
import { z } from "zod";
import { clustersOf } from "./context.js";
import { RepoContentError, RolloutStateError, RolloutValidationError, type FieldIssue } from "./errors.js";
import { repoLayout } from "./layout.js";
import type { Platform } from "./platform.js";
import type { RepoTree } from "./repo.js";
import { parseRepoFile, toYamlFile } from "./serialize.js";
import { safeTextSchema, teamNameSchema, templateVersionSchema, type Team } from "./team.js";

/**
 * Rollouts, the pure part (docs/rollouts.md): the request, the state file kept in the Flux repo, how
 * teams are selected and split into waves, the state transitions, and the gate decision. The engine that
 * waits, reads cluster status and commits is the API's (apps/api/src/rollouts/).
 */

/** Every commit of a rollout carries this trailer with the rollout id. */
export const ROLLOUT_TRAILER = "Berth-Rollout-Id";
export const ROLLOUT_API_VERSION = "berth.dev/v1alpha1";
export const ROLLOUT_KIND = "Rollout";

/** `ro-<yyyymmdd>-<hhmmss>-<6 hex>`: sortable by creation time, safe as a file name and in a URL. */
export const ROLLOUT_ID = /^ro-[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$/;
export const rolloutIdSchema = z.string().regex(ROLLOUT_ID, "must be a rollout id such as ro-20261124-153000-1a2b3c");

/** A rollout id from a creation time and 3 random bytes (the caller's: the domain has no randomness). */
export function rolloutId(at: Date, random: Buffer): string {
  const iso = at.toISOString();
  return `ro-${iso.slice(0, 10).replaceAll("-", "")}-${iso.slice(11, 19).replaceAll(":", "")}-${random.subarray(0, 3).toString("hex")}`;
}

const DNS_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const environmentName = z.string().regex(DNS_LABEL).max(30);

// ---- request --------------------------------------------------------------------------------------------

export const teamSelectorSchema = z
  .object({
    names: z.array(teamNameSchema).min(1).max(10_000).optional().describe("These teams"),
    environments: z.array(environmentName).min(1).max(10).optional().describe("Teams that land on at least one of these environments"),
    onlyEnvironments: z
      .array(environmentName)
      .min(1)
      .max(10)
      .optional()
      .describe("Teams that land on none but these environments (a dev wave that must not reach prod)"),
    labels: z.record(z.string().max(317), z.string().max(63)).optional().describe("Teams whose labels include all of these"),
    templateVersions: z.array(templateVersionSchema).min(1).max(20).optional().describe("Teams currently rendered with one of these versions"),
  })
  .strict()
  .describe("Every field given must match; an empty selector selects every team");
export type TeamSelector = z.infer<typeof teamSelectorSchema>;

export const waveRequestSchema = z
  .object({
    name: z.string().regex(DNS_LABEL, "must be a DNS label").max(40),
    selector: teamSelectorSchema.optional().describe("Which of the teams no earlier wave took; default: all of them"),
    percent: z.number().int().min(1).max(100).optional().describe("Keep this share of the matched teams (rounded up), by a stable hash of the name"),
  })
  .strict();
export type WaveRequest = z.infer<typeof waveRequestSchema>;

export const rolloutRequestSchema = z
  .object({
    description: safeTextSchema(256).default(""),
    target: z
      .object({ templateVersion: templateVersionSchema.optional().describe("Move the teams to this version; absent: re-render each on its own version") })
      .strict()
      .default({}),
    selector: teamSelectorSchema.default({}),
    waves: z
      .array(waveRequestSchema)
      .min(1)
      .max(20)
      .optional()
      .describe("Ordered waves, each gated on Ready; absent: one commit for the whole selection")
      .refine((ws) => ws === undefined || new Set(ws.map((w) => w.name)).size === ws.length, "wave names must be unique"),
    gate: z
      .object({ timeoutSeconds: z.number().int().min(10).max(7 * 86_400).optional().describe("How long a wave may take to become Ready; default: the API's") })
      .strict()
      .default({}),
  })
  .strict();
export type RolloutRequest = z.infer<typeof rolloutRequestSchema>;
export type RolloutRequestInput = z.input<typeof rolloutRequestSchema>;

// ---- state (the file in the Flux repo) -----------------------------------------------------------------

export const ROLLOUT_PHASES = ["Running", "Paused", "Halted", "Completed", "Aborted"] as const;
export type RolloutPhase = (typeof ROLLOUT_PHASES)[number];
/** Phases in which a rollout still owns its teams (another rollout may not take them). */
export const ACTIVE_PHASES: readonly RolloutPhase[] = ["Running", "Paused", "Halted"];

const isoTime = z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/, "must be an ISO 8601 UTC time");

/** One team on one cluster, as the gate judged it. */
export const gateTeamReportSchema = z.object({
  team: z.string(),
  cluster: z.string().optional(),
  result: z.enum(["ready", "waiting", "failed", "render-failed", "gone"]),
  /** The cluster's status state (reported, pending, absent, unreachable, not-configured). */
  state: z.string().optional(),
  condition: z.string().optional().describe("The condition holding the team back, e.g. IdentityReady"),
  reason: z.string().optional().describe("Its reason, as ASO (or Flux, or the controller) gave it"),
  severity: z.string().optional(),
  message: z.string().optional(),
});
export type GateTeamReport = z.infer<typeof gateTeamReportSchema>;

export const haltSchema = z.object({
  at: isoTime,
  wave: z.string(),
  reason: z.enum(["Failed", "Timeout", "RenderFailed"]),
  message: z.string(),
  teams: z.array(gateTeamReportSchema),
});
export type Halt = z.infer<typeof haltSchema>;

export const waveStatusSchema = z.object({
  name: z.string(),
  phase: z.enum(["Pending", "Committed", "Ready"]),
  committedAt: isoTime.optional(),
  /** Where the gate's timeout counts from: the commit, or the last resume. */
  gateSince: isoTime.optional(),
  readyAt: isoTime.optional(),
  /** Teams of the wave that were gone (offboarded) when it was committed. */
  skipped: z.array(z.string()).optional(),
});
export type WaveStatus = z.infer<typeof waveStatusSchema>;

export const historyEntrySchema = z.object({
  at: isoTime,
  event: z.string(),
  by: z.string().optional(),
  message: z.string().optional(),
});

export const rolloutSchema = z
  .object({
    apiVersion: z.literal(ROLLOUT_API_VERSION),
    kind: z.literal(ROLLOUT_KIND),
    metadata: z.object({ name: rolloutIdSchema }).strict(),
    spec: z
      .object({
        description: z.string(),
        requestedBy: z.string(),
        createdAt: isoTime,
        target: z.object({ templateVersion: templateVersionSchema.optional() }).strict(),
        selector: teamSelectorSchema,
        /** Unstaged rollouts have no gate. */
        gate: z.object({ timeoutSeconds: z.number().int().positive() }).strict().nullable(),
        waves: z.array(z.object({ name: z.string(), teams: z.array(teamNameSchema) }).strict()).min(1),
      })
      .strict(),
    status: z
      .object({
        phase: z.enum(ROLLOUT_PHASES),
        /** Index of the wave in progress (waves.length once completed). */
        wave: z.number().int().min(0),
        waves: z.array(waveStatusSchema),
        halt: haltSchema.optional(),
        history: z.array(historyEntrySchema),
      })
      .strict(),
  })
  .strict();
export type Rollout = z.infer<typeof rolloutSchema>;

const MAX_HISTORY = 50;

export function serializeRollout(rollout: Rollout): string {
  return toYamlFile([rollout], [
    `Berth rollout ${rollout.metadata.name}: its spec and state. Written by Berth's API only (docs/rollouts.md);`,
    "every commit of the rollout carries the trailer Berth-Rollout-Id. Not applied by Flux.",
  ]);
}

export function parseRollout(text: string, path: string): Rollout {
  return parseRepoFile(text, path, rolloutSchema);
}

// ---- selection and waves --------------------------------------------------------------------------------

export function matchesSelector(team: Team, selector: TeamSelector): boolean {
  if (selector.names && !selector.names.includes(team.name)) return false;
  if (selector.environments && !team.environments.some((e) => selector.environments!.includes(e))) return false;
  if (selector.onlyEnvironments && !team.environments.every((e) => selector.onlyEnvironments!.includes(e))) return false;
  if (selector.labels && !Object.entries(selector.labels).every(([k, v]) => team.labels[k] === v)) return false;
  if (selector.templateVersions && !selector.templateVersions.includes(team.templateVersion ?? "")) return false;
  return true;
}

/** A team's place in the canary order: a stable hash of its name, so the same teams go first every time. */
function canaryKey(name: string): string {
  return createHash("sha256").update(name).digest("hex");
}

/**
 * Splits `teams` into the requested waves, in order: each wave takes, from the teams no earlier wave took,
 * those its selector matches, then keeps `percent` of them (rounded up, at least one). Teams no wave takes
 * are returned as `unassigned` (the caller refuses such a request).
 */
export function assignWaves(teams: readonly Team[], waves: readonly WaveRequest[]): { waves: Array<{ name: string; teams: string[] }>; unassigned: string[] } {
  const remaining = new Map(teams.map((t) => [t.name, t]));
  const out = waves.map((wave) => {
    let matched = [...remaining.values()].filter((t) => matchesSelector(t, wave.selector ?? {})).map((t) => t.name);
    if (wave.percent !== undefined && matched.length > 0) {
      const keep = Math.max(1, Math.ceil((matched.length * wave.percent) / 100));
      matched = matched
        .map((name) => ({ name, key: canaryKey(name) }))
        .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
        .slice(0, keep)
        .map((m) => m.name);
    }
    for (const name of matched) remaining.delete(name);
    return { name: wave.name, teams: matched.sort() };
  });
  return { waves: out, unassigned: [...remaining.keys()].sort() };
}

// ---- transitions ----------------------------------------------------------------------------------------

export interface NewRolloutInput {
  id: string;
  request: RolloutRequest;
  /** The teams of each wave (assignWaves), or one wave named "all" for an unstaged rollout. */
  waves: Array<{ name: string; teams: string[] }>;
  requestedBy: string;
  now: Date;
  /** The gate timeout when the request gives none; null for an unstaged rollout. */
  gateTimeoutSeconds: number | null;
}

export function newRollout(input: NewRolloutInput): Rollout {
  const at = input.now.toISOString();
  if (input.waves.length === 0) throw new RolloutValidationError([{ field: "waves", rule: "a rollout needs at least one wave" }]);
  return {
    apiVersion: ROLLOUT_API_VERSION,
    kind: ROLLOUT_KIND,
    metadata: { name: input.id },
    spec: {
      description: input.request.description,
      requestedBy: input.requestedBy,
      createdAt: at,
      target: input.request.target,
      selector: input.request.selector,
      gate: input.gateTimeoutSeconds === null ? null : { timeoutSeconds: input.request.gate.timeoutSeconds ?? input.gateTimeoutSeconds },
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

function withHistory(r: Rollout, entry: z.infer<typeof historyEntrySchema>): Rollout["status"]["history"] {
  return [...r.status.history, entry].slice(-MAX_HISTORY);
}

function mustBe(r: Rollout, phases: readonly RolloutPhase[], action: string): void {
  if (!phases.includes(r.status.phase)) throw new RolloutStateError(r.metadata.name, r.status.phase, action);
}

/** The current wave (undefined once every wave is done). */
export function currentWave(r: Rollout): { index: number; spec: Rollout["spec"]["waves"][number]; status: WaveStatus } | undefined {
  const index = r.status.wave;
  const spec = r.spec.waves[index];
  const status = r.status.waves[index];
  return spec && status ? { index, spec, status } : undefined;
}

/** The current wave is committed (its teams' changes are in the same commit as this state). */
export function commitWave(r: Rollout, now: Date, skipped: string[]): Rollout {
  mustBe(r, ["Running"], "committed");
  const wave = currentWave(r);
  if (!wave || wave.status.phase !== "Pending") throw new RolloutStateError(r.metadata.name, r.status.phase, "committed again");
  const at = now.toISOString();
  const waves = r.status.waves.map((w, i) =>
    i === wave.index ? { ...w, phase: "Committed" as const, committedAt: at, gateSince: at, ...(skipped.length ? { skipped: [...skipped].sort() } : {}) } : w,
  );
  const status = { ...r.status, waves, history: withHistory(r, { at, event: "WaveCommitted", message: `wave ${wave.spec.name}: ${wave.spec.teams.length - skipped.length} team(s)` }) };
  // No gate (unstaged): the wave is done as soon as it is committed.
  return r.spec.gate === null ? passWave({ ...r, status }, now) : { ...r, status };
}

/** The current wave passed its gate: it is Ready, and the next one becomes current (or the rollout completes). */
export function passWave(r: Rollout, now: Date): Rollout {
  mustBe(r, ["Running"], "advanced");
  const wave = currentWave(r);
  if (!wave || wave.status.phase !== "Committed") throw new RolloutStateError(r.metadata.name, r.status.phase, "advanced before its wave is committed");
  const at = now.toISOString();
  const waves = r.status.waves.map((w, i) => (i === wave.index ? { ...w, phase: "Ready" as const, readyAt: at } : w));
  const next = wave.index + 1;
  const done = next >= r.spec.waves.length;
  let history = withHistory(r, { at, event: "WaveReady", message: `wave ${wave.spec.name}` });
  if (done) history = [...history, { at, event: "Completed" }].slice(-MAX_HISTORY);
  return { ...r, status: { ...r.status, phase: done ? "Completed" : "Running", wave: next, waves, history } };
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
  return { ...r, status: { ...r.status, phase: "Paused", history: withHistory(r, { at: now.toISOString(), event: "Paused", by }) } };
}

/** Back to Running; the current wave's gate clock starts again (a halt's cause was fixed meanwhile). */
export function resumeRollout(r: Rollout, now: Date, by: string): Rollout {
  mustBe(r, ["Paused", "Halted"], "resumed");
  const at = now.toISOString();
  const waves = r.status.waves.map((w, i) => (i === r.status.wave && w.phase === "Committed" ? { ...w, gateSince: at } : w));
  const { halt: _halt, ...status } = r.status;
  return { ...r, status: { ...status, phase: "Running", waves, history: withHistory(r, { at, event: "Resumed", by }) } };
}

export function abortRollout(r: Rollout, now: Date, by: string): Rollout {
  mustBe(r, ACTIVE_PHASES, "aborted");
  return { ...r, status: { ...r.status, phase: "Aborted", history: withHistory(r, { at: now.toISOString(), event: "Aborted", by }) } };
}

/** Teams of waves already committed (they are on the target), in wave order. */
export function committedTeams(r: Rollout): string[] {
  return r.spec.waves.flatMap((w, i) => (r.status.waves[i]?.phase !== "Pending" ? w.teams.filter((t) => !r.status.waves[i]?.skipped?.includes(t)) : []));
}

export function rolloutTeams(r: Rollout): string[] {
  return r.spec.waves.flatMap((w) => w.teams);
}

// ---- the gate ---------------------------------------------------------------------------------------

/** A team's status on one cluster, as the API reads it (GET /v1/teams/{name}/status), for the gate. */
export interface GateObservation {
  team: string;
  cluster: string;
  /** reported, pending, absent, unreachable, not-configured. */
  state: string;
  ready: boolean;
  stale: boolean;
  /** Does the revision this status describes include the wave's commit? undefined: no revision reported. */
  includesWave: boolean | undefined;
  revision?: string | undefined;
  conditions: ReadonlyArray<{ type: string; status: string; reason?: string | undefined; message?: string | undefined; severity?: string | undefined }>;
}

export interface GateDecision {
  verdict: "pass" | "wait" | "halt";
  reason?: "Failed" | "Timeout";
  message: string;
  teams: GateTeamReport[];
}

/** Judges one team on one cluster: ready, failed (a condition False with severity Error), or waiting (why). */
export function judge(o: GateObservation): GateTeamReport {
  const base = { team: o.team, cluster: o.cluster, state: o.state };
  if (o.state !== "reported") return { ...base, result: "waiting", message: stateMessage(o.state) };
  if (o.includesWave !== true) {
    const notApplied = `Flux has not applied the wave's commit on this cluster yet${o.revision ? ` (applied: ${o.revision})` : ""}`;
    // Flux applies a new revision only once the health checks of the one it is applying end (by default at the
    // Kustomization's timeout): what holds that revision (e.g. ASO retrying AuthorizationFailed) is what to fix.
    const holding = o.conditions.find((c) => c.type !== "Ready" && c.status !== "True");
    if (!holding) return { ...base, result: "waiting", message: notApplied };
    const fields = conditionFields(holding);
    return { ...base, result: "waiting", ...fields, message: `${notApplied}; it is held by ${holding.type}${fields.message ? `: ${fields.message}` : ""}`.slice(0, 1000) };
  }
  if (o.stale) return { ...base, result: "waiting", message: "the controller has not observed the applied Team yet" };
  const failed = o.conditions.find((c) => c.status === "False" && c.severity === "Error");
  if (failed) return { ...base, result: "failed", ...conditionFields(failed) };
  if (o.ready) return { ...base, result: "ready" };
  const holding = o.conditions.find((c) => c.type !== "Ready" && c.status !== "True") ?? o.conditions.find((c) => c.type === "Ready");
  return { ...base, result: "waiting", ...(holding ? conditionFields(holding) : { message: "no conditions reported yet" }) };
}

function conditionFields(c: GateObservation["conditions"][number]): Partial<GateTeamReport> {
  return {
    condition: c.type,
    ...(c.reason ? { reason: c.reason } : {}),
    ...(c.severity ? { severity: c.severity } : {}),
    ...(c.message ? { message: c.message.slice(0, 1000) } : {}),
  };
}

function stateMessage(state: string): string {
  switch (state) {
    case "absent":
      return "Flux has not applied the Team on this cluster yet";
    case "pending":
      return "the controller has not reported the Team's status yet";
    case "unreachable":
      return "the cluster cannot be reached";
    case "not-configured":
      return "the API has no access to this cluster (api.clusters)";
    default:
      return state;
  }
}

/**
 * The gate of a committed wave: pass when every team is Ready on every cluster it lands on (for the
 * wave's commit), halt at once when one failed, halt when the wave is not Ready `timeoutSeconds` after
 * `gateSince`, otherwise wait. Pure: the observations and the time are the caller's.
 */
export function gateDecision(input: { observations: readonly GateObservation[]; now: Date; gateSince: Date; timeoutSeconds: number }): GateDecision {
  const teams = input.observations.map(judge);
  const failed = teams.filter((t) => t.result === "failed");
  if (failed.length) {
    const first = failed[0]!;
    return {
      verdict: "halt",
      reason: "Failed",
      message: `${failed.length} team/cluster pair(s) failed; first: ${first.team} on ${first.cluster}: ${first.condition} ${first.reason ?? ""}`.trim(),
      teams: failed,
    };
  }
  const waiting = teams.filter((t) => t.result !== "ready");
  if (waiting.length === 0) return { verdict: "pass", message: `${teams.length} team/cluster pair(s) Ready`, teams };
  const elapsed = (input.now.getTime() - input.gateSince.getTime()) / 1000;
  if (elapsed > input.timeoutSeconds) {
    return { verdict: "halt", reason: "Timeout", message: `${waiting.length} team/cluster pair(s) not Ready after ${input.timeoutSeconds} s`, teams: waiting };
  }
  return { verdict: "wait", message: `${teams.length - waiting.length}/${teams.length} Ready`, teams };
}

/** The clusters a team lands on (the gate checks each). */
export function gateClusters(team: Team, platform: Platform): string[] {
  return clustersOf(team, platform).map((c) => c.name);
}

/** Refusal with one field/rule, for request checks made outside the zod schema. */
export function rolloutIssue(field: string, rule: string): RolloutValidationError {
  return new RolloutValidationError([{ field, rule } satisfies FieldIssue]);
}

// ---- reading rollouts from the tree -------------------------------------------------------------------

/** Reads rollout files from a tree; parses each distinct text once (they are re-read on every engine tick). */
export class RolloutReader {
  private readonly parsed = new Map<string, Rollout>();
  private readonly layout;

  constructor(platform: Platform) {
    this.layout = repoLayout(platform);
  }

  path(id: string): string {
    return this.layout.rolloutFile(id);
  }

  async read(tree: RepoTree, id: string): Promise<Rollout | undefined> {
    if (!ROLLOUT_ID.test(id)) return undefined;
    const path = this.layout.rolloutFile(id);
    const text = await tree.read(path);
    return text === undefined ? undefined : this.parse(text, path, id);
  }

  /** Every rollout in the tree, oldest first (ids sort by creation time). */
  async list(tree: RepoTree): Promise<Rollout[]> {
    const prefix = `${this.layout.rolloutsDir}/`;
    const ids = (await tree.list(this.layout.rolloutsDir))
      .map((p) => p.slice(prefix.length))
      .filter((f) => f.endsWith(".yaml"))
      .map((f) => f.slice(0, -".yaml".length))
      .filter((id) => ROLLOUT_ID.test(id))
      .sort();
    const out = await Promise.all(ids.map((id) => this.read(tree, id)));
    return out.filter((r): r is Rollout => r !== undefined);
  }

  private parse(text: string, path: string, id: string): Rollout {
    let r = this.parsed.get(text);
    if (!r) {
      r = parseRollout(text, path);
      if (this.parsed.size > 2_000) this.parsed.clear();
      this.parsed.set(text, r);
    }
    if (r.metadata.name !== id) throw new RepoContentError(path, `metadata.name is "${r.metadata.name}", expected "${id}"`);
    return r;
  }
}
