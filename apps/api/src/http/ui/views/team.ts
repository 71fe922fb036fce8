import {
  describeClusterStatus,
  describeReview,
  phaseOf,
  statusChain,
  type ChainStep,
  type ClusterStatus,
  type PullRequestRef,
} from "@berth/api-contract";
import type { TeamDetail } from "../../../services/status-board.js";
import { TRAILER_ON_BEHALF_OF } from "@berth/core";
import { html, type Html } from "../html.js";
import { phaseBadge, requester, shortSha, timestamp } from "./common.js";

/** Who asked for a commit (requester). */
const requestedBy = (commit: TeamDetail["commits"][number]) =>
  requester(commit.trailers["Berth-Requested-By"] ?? commit.author, commit.trailers[TRAILER_ON_BEHALF_OF]);

const STEP_STATE_WORDS: Record<ChainStep["state"], string> = {
  done: "done",
  active: "in progress",
  failed: "failed",
  waiting: "waiting",
};

function stepItem(step: ChainStep, cluster: ClusterStatus): Html {
  const c = step.condition;
  let detail: Html | string = "";
  if (step.step === "committed") detail = html`<span class="reason">in the Flux repo</span>`;
  else if (cluster.state !== "reported" && step.state === "active")
    detail = html`<span class="reason">${describeClusterStatus(cluster)}</span>`;
  else if (c && step.state !== "done") {
    detail = html`<span class="reason${step.state === "failed" ? " failed" : ""}">${c.type}${c.reason ? html`: <strong>${c.reason}</strong>` : ""}${c.severity ? ` (severity ${c.severity})` : ""}${c.message && c.message !== c.reason ? html` — ${c.message}` : ""}</span>`;
  } else if (c?.reason) detail = html`<span class="reason">${c.reason}</span>`;
  return html`<li class="${step.state}" data-step="${step.step}" data-state="${step.state}">
  <span class="step">${step.label}</span><span class="step-state">${STEP_STATE_WORDS[step.state]}</span>
  ${detail}
  ${c?.lastTransitionTime && step.step !== "committed" ? html`<span class="when">since ${timestamp(c.lastTransitionTime)}</span>` : ""}
</li>`;
}

function clusterCard(cluster: ClusterStatus): Html {
  const phase = phaseOf(cluster);
  return html`<section class="cluster" data-cluster="${cluster.cluster}" data-phase="${phase}" aria-labelledby="cluster-${cluster.cluster}">
  <h3 id="cluster-${cluster.cluster}">${cluster.cluster} <small>${cluster.environment}</small> ${phaseBadge(phase)}</h3>
  <ol class="timeline" aria-label="Status chain on ${cluster.cluster}">
    ${statusChain(cluster).map((step) => stepItem(step, cluster))}
  </ol>
  ${cluster.revision ? html`<p class="when">Flux applied <code>${cluster.revision}</code></p>` : ""}
  ${cluster.clientId ? html`<p class="when">Workload identity client id <code>${cluster.clientId}</code></p>` : ""}
</section>`;
}

/** Pull-request mode: the team's last pull request, linked, first in its chain. */
function reviewBlock(review: PullRequestRef, inFluxRepo: boolean): Html {
  return html`<section class="review" data-review-state="${review.state}" aria-label="Review">
  <h2>Review</h2>
  <p>${/^https?:\/\//.test(review.url) ? html`<a href="${review.url}">Pull request #${review.number}</a>` : `Pull request #${review.number}`} · <strong>${review.state}</strong></p>
  <p class="reason${review.state === "closed" ? " failed" : ""}">${describeReview(review, inFluxRepo)}</p>
</section>`;
}

/** A team the Flux repo does not hold, whose onboarding is in review (or was closed without merge). */
export function teamInReviewMain(name: string, review: PullRequestRef): Html {
  return html`<p><a href="/ui">← Fleet</a></p>
<h1>${name} <span class="badge ${review.state === "closed" ? "failed" : "progressing"}">Not in the Flux repo</span></h1>
${reviewBlock(review, false)}`;
}

function list(values: readonly string[]): Html {
  return values.length
    ? html`${values.map((v, i) => html`${i ? ", " : ""}<code>${v}</code>`)}`
    : html`<span class="none">none</span>`;
}

export function teamMain(detail: TeamDetail): Html {
  const { team } = detail;
  const phases = detail.clusters.map(phaseOf);
  const readyCount = phases.filter((p) => p === "ready").length;
  const overall = phases.includes("failed") ? "failed" : detail.ready ? "ready" : "progressing";
  const labels = Object.entries(team.labels).map(([k, v]) => `${k}=${v}`);
  return html`<p><a href="/ui">← Fleet</a></p>
<h1>${team.name} <span class="badge ${overall}">Ready on ${readyCount} of ${detail.clusters.length} cluster${detail.clusters.length === 1 ? "" : "s"}</span></h1>
<dl class="spec">
  <dt>Description</dt><dd>${team.description || html`<span class="none">none</span>`}</dd>
  <dt>Environments</dt><dd>${list(team.environments)}</dd>
  <dt>Owners</dt><dd>${list(team.owners)}</dd>
  <dt>Role assignments</dt><dd>${list(team.roleAssignments.map((r) => r.role))}</dd>
  <dt>Labels</dt><dd>${list(labels)}</dd>
  ${team.quota ? html`<dt>Quota</dt><dd>cpu ${team.quota.cpu}, memory ${team.quota.memory}, ${team.quota.pods} pods</dd>` : ""}
  <dt>Flux repo</dt><dd>${shortSha(detail.revision)}</dd>
</dl>
${detail.review ? reviewBlock(detail.review, true) : ""}
<h2>Status per cluster</h2>
<div class="clusters">${detail.clusters.map(clusterCard)}</div>
<h2>Last commits touching the team</h2>
${
  detail.commits.length
    ? html`<table>
<caption>Newest first</caption>
<thead><tr><th scope="col">Commit</th><th scope="col">Date</th><th scope="col">Change</th><th scope="col">Requested by</th></tr></thead>
<tbody>${detail.commits.map(
        (c) =>
          html`<tr><td>${shortSha(c.sha)}</td><td>${timestamp(c.date)}</td><td>${c.subject}</td><td>${requestedBy(c)}</td></tr>`,
      )}</tbody>
</table>`
    : html`<p class="none">No commits found.</p>`
}
<h2>Rendered files</h2>
<p>${detail.files.length} files at ${shortSha(detail.revision)}.</p>
${detail.files.map(
  (f, i) =>
    html`<details id="file-${i}" data-path="${f.path}"><summary>${f.path}</summary><pre><code>${f.content}</code></pre></details>`,
)}`;
}
