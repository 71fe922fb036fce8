import { setTimeout as sleep } from "node:timers/promises";
import {
  rolloutAbortResponse,
  rolloutCreatedResponse,
  rolloutListResponse,
  rolloutPreviewResponse,
  rolloutResponse,
  rolloutWriteResponse,
  type GateProgress,
} from "@berth/api-contract";
import type { GateTeamReport, Rollout, RolloutPhase, RolloutRequest } from "@berth/core";
import { stringify } from "yaml";
import { endsWatch } from "../client.js";
import { CliError, EXIT } from "../exit-codes.js";
import type { Style } from "../io.js";
import { parseRolloutRequest, readRolloutRequest } from "../manifests.js";
import { colorDiff } from "../output/diff.js";
import { formatTable } from "../output/table.js";
import { plural, shortSha } from "../output/text.js";
import type { Runtime } from "../runtime.js";
import { pollTimeoutMs } from "./status.js";

/** Where a rollout request comes from: a file (-f), or flags for the common case. */
export interface RolloutSource {
  filename?: string;
  to?: string;
  team: string[];
  env: string[];
  label: string[];
  description?: string;
}

const rolloutPath = (id: string) => `/v1/rollouts/${encodeURIComponent(id)}`;
const target = (version: string | undefined) => (version ? `to ${version}` : "re-rendered on their own versions");

/** An answer's body: undefined only for a status a request lists in `empty`, and none of these requests lists any. */
function answered<T>(body: T | undefined, what: string): T {
  if (body === undefined) throw new CliError(`the API answered ${what} with no body`, EXIT.unavailable);
  return body;
}

const PHASE_STYLE: Record<RolloutPhase, Style> = {
  Running: "blue",
  Paused: "yellow",
  Halted: "red",
  Completed: "green",
  Aborted: "gray",
};
/** Phases a rollout does not leave on its own. */
const SETTLED: ReadonlySet<RolloutPhase> = new Set(["Completed", "Halted", "Aborted", "Paused"]);

/** The request from -f, or from the flags; never both (which would win would be a guess). */
async function requestOf(rt: Runtime, src: RolloutSource): Promise<RolloutRequest> {
  const flagged =
    src.to !== undefined ||
    src.team.length > 0 ||
    src.env.length > 0 ||
    src.label.length > 0 ||
    src.description !== undefined;
  if (src.filename !== undefined) {
    if (flagged)
      throw new CliError(
        "give the rollout as a file (-f) or as flags (--to, --team, --env, --label, --description), not both",
        EXIT.usage,
      );
    return readRolloutRequest(src.filename, { cwd: rt.io.cwd, stdin: rt.io.stdin });
  }
  const labels: Record<string, string> = {};
  for (const pair of src.label) {
    const at = pair.indexOf("=");
    if (at <= 0) throw new CliError(`--label ${pair}: expected KEY=VALUE`, EXIT.usage);
    labels[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return parseRolloutRequest(
    {
      ...(src.description !== undefined ? { description: src.description } : {}),
      target: src.to !== undefined ? { templateVersion: src.to } : {},
      selector: {
        ...(src.team.length ? { names: src.team } : {}),
        ...(src.env.length ? { environments: src.env } : {}),
        ...(src.label.length ? { labels } : {}),
      },
    },
    "flags",
  );
}

// ---- preview / start -----------------------------------------------------------------------------

export async function rolloutPreview(rt: Runtime, src: RolloutSource, options: { diffs: boolean }): Promise<number> {
  const request = await requestOf(rt, src);
  const client = await rt.client();
  const { body } = await client.request("POST", `/v1/rollouts/preview?diffs=${options.diffs}`, {
    body: request,
    schema: rolloutPreviewResponse,
    timeoutMs: 300_000,
  });
  const p = answered(body, "the rollout preview");
  const { files } = p.summary;
  rt.out(
    `Rollout preview at commit ${shortSha(p.revision)}: ${plural(p.summary.selected, "team")} selected, ${target(p.target.templateVersion)}`,
  );
  rt.out(
    `  ${p.summary.changed} would change (${plural(files.added + files.modified + files.deleted, "file")}: ${files.added} added, ${files.modified} modified, ${files.deleted} deleted), ${p.summary.unchanged} unchanged, ${p.summary.failed} cannot be rendered`,
  );
  if (p.waves.length > 1 || request.waves)
    rt.out(`  waves: ${p.waves.map((w) => `${w.name} (${plural(w.teams.length, "team")})`).join(", ")}`);
  for (const f of p.failed) rt.out(`  ${rt.paint("red", "cannot render")} ${f.team}: ${f.error}`);
  for (const b of p.broken)
    rt.out(`  ${rt.paint("yellow", "left out")} ${b.team}: its team file cannot be read: ${b.error}`);
  for (const problem of p.problems)
    rt.out(`  ${rt.paint("red", "would be refused")}: ${problem.field}: ${problem.rule}`);
  if (options.diffs) {
    for (const t of p.teams)
      if (t.diff) rt.io.stdout.write(colorDiff(t.diff.endsWith("\n") ? t.diff : `${t.diff}\n`, rt.paint));
  }
  // Like `diff`: a script can tell "would be accepted" from "would be refused".
  return p.problems.length ? EXIT.invalid : EXIT.ok;
}

export async function rolloutStart(rt: Runtime, src: RolloutSource): Promise<number> {
  const request = await requestOf(rt, src);
  const client = await rt.client();
  const { body } = await client.request("POST", "/v1/rollouts", {
    body: request,
    schema: rolloutCreatedResponse,
    timeoutMs: 300_000,
  });
  const { rollout, revision, summary } = answered(body, "the new rollout");
  const id = rollout.metadata.name;
  const version = target(rollout.spec.target.templateVersion);
  if (!rollout.spec.gate) {
    rt.out(
      `rollout/${id} ${rollout.status.phase.toLowerCase()}: ${plural(summary.teams, "team")} ${version} in one commit (${shortSha(revision)}, ${plural(summary.files, "file")})`,
    );
    return EXIT.ok;
  }
  const waves = rollout.spec.waves.map((w) => `${w.name} (${w.teams.length})`).join(" → ");
  rt.out(
    `rollout/${id} started: ${plural(summary.teams, "team")} ${version} in waves ${waves}, each gated on Ready (commit ${shortSha(revision)})`,
  );
  rt.err(`Follow it with: berth rollout get ${id} --watch`);
  return EXIT.ok;
}

// ---- get -----------------------------------------------------------------------------------------

const teamCount = (r: Rollout) => r.spec.waves.reduce((n, w) => n + w.teams.length, 0);

function waveLabel(r: Rollout): string {
  const n = r.spec.waves.length;
  const wave = r.spec.waves[r.status.wave];
  if (wave === undefined) return `${n}/${n}`; // past the last: ended
  const pr =
    r.status.waves[r.status.wave]?.phase === "Proposed" ? r.status.waves[r.status.wave]?.pullRequest : undefined;
  return `${r.status.wave + 1}/${n} ${wave.name}${pr ? ` · waits for pull request #${pr.number} to be merged (${pr.url})` : ""}`;
}

/** `team on cluster: result: Condition Reason Severity: message`, the parts that are known. */
function teamReport(t: GateTeamReport): string {
  const condition = [t.condition, t.reason, t.severity].filter(Boolean).join(" ");
  return `${t.team}${t.cluster ? ` on ${t.cluster}` : ""}: ${[t.result, condition, t.message].filter(Boolean).join(": ")}`;
}

function describe(rt: Runtime, r: Rollout, progress: GateProgress | null): void {
  const { spec, status } = r;
  rt.out(`Rollout ${rt.paint("bold", r.metadata.name)}: ${rt.paint(PHASE_STYLE[status.phase], status.phase)}`);
  rt.out(
    `  ${plural(teamCount(r), "team")} ${target(spec.target.templateVersion)}; requested by ${spec.requestedBy} at ${spec.createdAt}${spec.description ? `: ${spec.description}` : ""}`,
  );
  if (spec.gate)
    rt.out(`  gate: every team Ready on every cluster within ${spec.gate.timeoutSeconds}s of its wave's commit`);
  rt.out("");
  const rows = spec.waves.map((w, i) => {
    const s = status.waves[i];
    const phase = s?.pullRequest ? `${s.phase} #${s.pullRequest.number}` : (s?.phase ?? "?");
    return [String(i + 1), w.name, phase, String(w.teams.length), s?.committedAt ?? "", s?.readyAt ?? ""];
  });
  rt.out(formatTable(["#", "wave", "phase", "teams", "committed", "ready"], rows));
  // Pull-request mode: a wave's gate starts once a reviewer merges its pull request.
  const current = status.waves[status.wave];
  if (current?.phase === "Proposed" && current.pullRequest)
    rt.out(
      `\nWave ${current.name} waits for pull request #${current.pullRequest.number} to be merged (${current.pullRequest.url}); its gate starts then.`,
    );
  if (status.halt) {
    const h = status.halt;
    rt.out("");
    rt.out(`${rt.paint("red", `Halted in wave ${h.wave}`)} (${h.reason}, ${h.at}): ${h.message}`);
    for (const t of h.teams.slice(0, 20)) rt.out(`  ${teamReport(t)}`);
    if (h.teams.length > 20) rt.out(`  … and ${h.teams.length - 20} more`);
  }
  if (progress && status.phase === "Running") {
    rt.out("");
    rt.out(
      `Gate of wave ${progress.wave} (${progress.evaluatedAt}): ${progress.verdict}: ${progress.message} (${progress.ready} ready, ${progress.waiting} waiting, ${progress.failed} failed)`,
    );
    for (const t of progress.teams.filter((x) => x.result !== "ready").slice(0, 10)) rt.out(`  ${teamReport(t)}`);
  }
  const recent = status.history.slice(-5);
  if (recent.length) {
    rt.out("");
    rt.out("History (latest last):");
    for (const e of recent)
      rt.out(`  ${e.at} ${e.event}${e.by ? ` by ${e.by}` : ""}${e.message ? `: ${e.message}` : ""}`);
  }
}

export type RolloutOutput = "table" | "json" | "yaml" | "name";

export async function getRollouts(rt: Runtime, id: string | undefined, output: RolloutOutput): Promise<number> {
  const client = await rt.client();
  if (id === undefined) {
    const { body } = await client.request("GET", "/v1/rollouts", { schema: rolloutListResponse });
    const { items } = answered(body, "the list of rollouts");
    if (output === "json") rt.out(JSON.stringify({ items }, null, 2));
    else if (output === "yaml") rt.io.stdout.write(stringify({ items }, { version: "1.1" }));
    else if (output === "name") for (const r of items) rt.out(`rollout/${r.metadata.name}`);
    else if (items.length === 0) rt.err("No rollouts found.");
    else {
      const rows = [...items]
        .reverse()
        .map((r) => [
          r.metadata.name,
          rt.paint(PHASE_STYLE[r.status.phase], r.status.phase),
          waveLabel(r),
          r.spec.target.templateVersion ?? "(own)",
          String(teamCount(r)),
          r.spec.createdAt,
          r.spec.description.length > 40 ? `${r.spec.description.slice(0, 39)}…` : r.spec.description,
        ]);
      rt.out(formatTable(["name", "phase", "wave", "target", "teams", "created", "description"], rows));
    }
    return EXIT.ok;
  }
  const { body } = await client.request("GET", rolloutPath(id), { schema: rolloutResponse });
  const { rollout, progress } = answered(body, `rollout ${id}`);
  if (output === "json") rt.out(JSON.stringify(rollout, null, 2));
  else if (output === "yaml") rt.io.stdout.write(stringify(rollout, { version: "1.1" }));
  else if (output === "name") rt.out(`rollout/${rollout.metadata.name}`);
  else describe(rt, rollout, progress);
  return EXIT.ok;
}

/**
 * Follows a rollout until it settles: a line whenever its phase, wave or gate verdict changes. Exit 0 when
 * it completes, 1 when it halts, is aborted or paused (someone must act), 8 on --timeout; the rollout
 * itself goes on either way (the API drives it, not this command).
 */
export async function watchRollout(
  rt: Runtime,
  id: string,
  options: { timeoutMs: number; intervalMs: number },
): Promise<number> {
  const client = await rt.client();
  const deadline = Date.now() + options.timeoutMs;
  let last = "";
  const timedOut = () => {
    rt.err(`timed out after ${Math.round(options.timeoutMs / 1000)}s; the rollout goes on (berth rollout get ${id})`);
    return EXIT.timeout;
  };
  for (;;) {
    let answer: { rollout: Rollout; progress: GateProgress | null } | undefined;
    try {
      answer = (
        await client.request("GET", rolloutPath(id), {
          schema: rolloutResponse,
          timeoutMs: pollTimeoutMs(deadline - Date.now()),
        })
      ).body;
    } catch (err) {
      if (endsWatch(err)) throw err;
      // A poll that the watch's own --timeout cut short says nothing about the API: the last answer stands.
      if (deadline - Date.now() <= 0) {
        if (!last) rt.err(`the last poll failed: ${(err as Error).message}`);
        return timedOut();
      }
      rt.err(`warning: ${(err as Error).message}; trying again`);
    }
    if (answer) {
      const { rollout, progress } = answer;
      const phase = rollout.status.phase;
      const gate =
        progress && phase === "Running" ? ` · gate ${progress.wave}: ${progress.verdict}: ${progress.message}` : "";
      const line = `${rt.paint(PHASE_STYLE[phase], phase)} · wave ${waveLabel(rollout)}${gate}`;
      if (line !== last) rt.out(`[${new Date().toISOString()}] rollout/${id}: ${line}`);
      last = line;
      if (SETTLED.has(phase)) {
        if (phase !== "Completed") describe(rt, rollout, progress);
        return phase === "Completed" ? EXIT.ok : EXIT.no;
      }
    }
    const left = deadline - Date.now();
    if (left <= 0) return timedOut();
    try {
      await sleep(Math.min(options.intervalMs, left), undefined, { signal: rt.io.signal });
    } catch {
      throw new CliError("interrupted: the rollout goes on", EXIT.interrupted);
    }
    // A poll with no time left could only fail: the last answer stands.
    if (deadline - Date.now() <= 0) return timedOut();
  }
}

// ---- pause / resume / abort ----------------------------------------------------------------------

export async function rolloutAction(rt: Runtime, id: string, action: "pause" | "resume" | "abort"): Promise<number> {
  const client = await rt.client();
  if (action === "abort") {
    const { body } = await client.request("POST", `${rolloutPath(id)}/abort`, { schema: rolloutAbortResponse });
    const { rollout, revision, versions } = answered(body, `the abort of rollout ${id}`);
    const on = Object.entries(versions)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([version, teams]) => `${version}: ${plural(teams.length, "team")}`)
      .join(", ");
    rt.out(
      `rollout/${rollout.metadata.name} aborted (commit ${shortSha(revision)}); nothing was reverted, each team is on one version: ${on || "no teams"}`,
    );
    return EXIT.ok;
  }
  const { body } = await client.request("POST", `${rolloutPath(id)}/${action}`, { schema: rolloutWriteResponse });
  const { rollout, revision } = answered(body, `the ${action} of rollout ${id}`);
  rt.out(
    `rollout/${rollout.metadata.name} ${action === "pause" ? "paused" : "resumed"} (phase ${rollout.status.phase}, commit ${shortSha(revision)})`,
  );
  return EXIT.ok;
}
