import type { GateTeamReport, Rollout, RolloutPhase } from "@berth/core";
import type { GateProgress } from "../../../services/rollouts/ports.js";
import { html, type Html } from "../html.js";
import { requester, shortSha, timestamp } from "./common.js";

/** A rollout phase as one of the page's badge colours. */
const PHASE_BADGE: Record<RolloutPhase, string> = {
  Running: "progressing",
  Paused: "waiting",
  Halted: "failed",
  Completed: "ready",
  Aborted: "unobserved",
};

function rolloutPhaseBadge(phase: RolloutPhase): Html {
  return html`<span class="badge ${PHASE_BADGE[phase]}" data-rollout-phase="${phase}">${phase}</span>`;
}

function targetOf(rollout: Rollout): string {
  return rollout.spec.target.templateVersion ? `to ${rollout.spec.target.templateVersion}` : "same version";
}

const teamCount = (n: number) => `${n} team${n === 1 ? "" : "s"}`;

/** Which wave a rollout is at, in words: "wave 2 of 3 (canary)", or how it ended. */
function progressOf(rollout: Rollout): string {
  const { waves } = rollout.spec;
  const at = rollout.status.wave;
  const wave = waves[at];
  if (wave === undefined) return `${waves.length} of ${waves.length} waves`; // past the last: ended
  return `wave ${at + 1} of ${waves.length} (${wave.name})`;
}

/** Every rollout in the Flux repo, newest first. */
export function rolloutsMain(items: readonly Rollout[], revision: string | undefined): Html {
  const heading = html`<h1>Rollouts</h1>`;
  if (items.length === 0) {
    return html`${heading}<div class="empty"><p>No rollouts yet.</p><p>Preview one with <code>berth rollout preview</code> (see docs/rollouts.md).</p></div>`;
  }
  const rows = [...items]
    .sort((a, b) => (a.spec.createdAt < b.spec.createdAt ? 1 : a.spec.createdAt > b.spec.createdAt ? -1 : 0))
    .map((r) => {
      const teams = r.spec.waves.reduce((n, w) => n + w.teams.length, 0);
      return html`<tr data-rollout="${r.metadata.name}">
  <th scope="row"><a href="/ui/rollouts/${r.metadata.name}">${r.metadata.name}</a></th>
  <td>${r.spec.description}</td>
  <td>${rolloutPhaseBadge(r.status.phase)}</td>
  <td>${progressOf(r)}</td>
  <td>${teamCount(teams)}, ${targetOf(r)}</td>
  <td>${requester(r.spec.requestedBy, r.spec.onBehalfOf)}</td>
  <td>${timestamp(r.spec.createdAt)}</td>
</tr>`;
    });
  return html`${heading}
<table>
<caption>${items.length} rollout${items.length === 1 ? "" : "s"} · Flux repo at ${shortSha(revision)}</caption>
<thead><tr><th scope="col">Rollout</th><th scope="col">Description</th><th scope="col">Phase</th><th scope="col">Progress</th><th scope="col">Teams</th><th scope="col">Requested by</th><th scope="col">Created</th></tr></thead>
<tbody>${rows}</tbody>
</table>`;
}

/** The teams holding a wave back (or passing it), as the gate or the halt reported them. */
function teamReports(reports: readonly GateTeamReport[], caption: string): Html {
  if (reports.length === 0) return html``;
  return html`<table>
<caption>${caption}</caption>
<thead><tr><th scope="col">Team</th><th scope="col">Cluster</th><th scope="col">Result</th><th scope="col">Condition</th><th scope="col">Reason</th><th scope="col">Message</th></tr></thead>
<tbody>${reports.map(
    (t) => html`<tr data-team="${t.team}" data-result="${t.result}">
  <th scope="row"><a href="/ui/teams/${encodeURIComponent(t.team)}">${t.team}</a></th>
  <td>${t.cluster ?? ""}</td>
  <td>${t.result}</td>
  <td>${t.condition ?? ""}</td>
  <td>${t.reason ?? ""}${t.severity ? ` (severity ${t.severity})` : ""}</td>
  <td>${t.message ?? ""}</td>
</tr>`,
  )}</tbody>
</table>`;
}

/** One rollout: its waves and their state, why it halted, what the gate last saw, and its history. */
export function rolloutMain(rollout: Rollout, progress: GateProgress | undefined, revision: string | undefined): Html {
  const { spec, status } = rollout;
  const waves = spec.waves.map((wave, i) => {
    const state = status.waves[i];
    const current = i === status.wave && status.phase !== "Completed" && status.phase !== "Aborted";
    return html`<tr data-wave="${wave.name}" data-wave-phase="${state?.phase ?? "Pending"}"${current ? html` aria-current="step"` : ""}>
  <th scope="row">${i + 1}. ${wave.name}</th>
  <td>${state?.phase ?? "Pending"}${current ? " (current)" : ""}${state?.pullRequest ? html` <a href="${state.pullRequest.url}">pull request #${state.pullRequest.number}</a>` : ""}</td>
  <td>${teamCount(wave.teams.length)}${state?.skipped?.length ? `, ${state.skipped.length} gone` : ""}</td>
  <td>${timestamp(state?.committedAt)}</td>
  <td>${timestamp(state?.readyAt)}</td>
</tr>`;
  });
  const halt = status.halt;
  return html`<p><a href="/ui/rollouts">← Rollouts</a></p>
<h1>${rollout.metadata.name} ${rolloutPhaseBadge(status.phase)}</h1>
<dl class="spec">
  <dt>Description</dt><dd>${spec.description}</dd>
  <dt>Target</dt><dd>${targetOf(rollout)}</dd>
  <dt>Progress</dt><dd>${progressOf(rollout)}</dd>
  <dt>Gate</dt><dd>${spec.gate ? `every team Ready on every cluster within ${spec.gate.timeoutSeconds} s` : "none (one commit)"}</dd>
  <dt>Requested by</dt><dd>${requester(spec.requestedBy, spec.onBehalfOf)}, ${timestamp(spec.createdAt)}</dd>
  <dt>Flux repo</dt><dd>${shortSha(revision)}</dd>
</dl>
${
  halt
    ? html`<section class="halt" data-halt-reason="${halt.reason}" aria-labelledby="halt">
<h2 id="halt">Halted in wave ${halt.wave}: ${halt.reason}</h2>
<p>${halt.message}</p>
<p>Fix the cause, then resume (<code>berth rollout resume ${rollout.metadata.name}</code>), or abort it.</p>
${teamReports(halt.teams, "What the gate saw when it halted")}
</section>`
    : ""
}
<h2>Waves</h2>
<table>
<caption>In order; a wave is committed only when the one before is Ready everywhere</caption>
<thead><tr><th scope="col">Wave</th><th scope="col">Phase</th><th scope="col">Teams</th><th scope="col">Committed</th><th scope="col">Ready</th></tr></thead>
<tbody>${waves}</tbody>
</table>
${
  progress
    ? html`<h2>Last gate evaluation</h2>
<p data-gate-verdict="${progress.verdict}">Wave ${progress.wave}, ${timestamp(progress.evaluatedAt)}: ${progress.verdict} (${progress.ready} ready, ${progress.waiting} waiting, ${progress.failed} failed). ${progress.message}</p>
${teamReports(
  progress.teams.filter((t) => t.result !== "ready"),
  "Teams not ready yet",
)}`
    : ""
}
<h2>History</h2>
<ol class="history">${[...status.history]
    .reverse()
    .map(
      (h) =>
        html`<li>${timestamp(h.at)} <strong>${h.event}</strong>${h.by ? ` by ${h.by}` : ""}${h.message ? html`: ${h.message}` : ""}</li>`,
    )}</ol>`;
}
