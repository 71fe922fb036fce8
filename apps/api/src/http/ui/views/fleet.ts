import {
  describeClusterStatus,
  PHASES,
  phaseOf,
  type ClusterStatus,
  type FleetResponse,
  type Phase,
} from "@berth/api-contract";
import type { Cluster } from "@berth/core";
import { html, type Html } from "../html.js";
import { PHASE_LABELS, phaseBadge, shortSha } from "./common.js";

export interface FleetFilter {
  /** Part of a team name, case-insensitive. */
  q: string;
  /** Only teams with at least one cluster in this phase. */
  phase: Phase | undefined;
}

/**
 * Rows per page: a grid of thousands of teams is megabytes of HTML at every live refresh and more than a reader
 * scrolls; the counts and the filter cover the whole fleet.
 */
export const FLEET_PAGE_ROWS = 200;

export interface FleetView {
  columns: Cluster[];
  /** This page's rows; one cell per column, in column order: the cluster's name and the team's status there. */
  rows: Array<{ team: string; cells: Array<{ cluster: string; status: ClusterStatus | undefined }> }>;
  /** Teams the filter matches, on every page. */
  matching: number;
  /** The page shown (from 1; a page past the last shows the last) and how many there are (at least 1). */
  page: number;
  pages: number;
  /** Team × cluster cells per phase, over the whole fleet (not only the filtered rows). */
  counts: Record<Phase, number>;
  teams: number;
  revision: string | null;
  /** Teams whose team file cannot be read: listed with why, above the grid. */
  broken: FleetResponse["broken"];
}

/** The fleet as a grid: one row per team, one column per cluster; filtering happens here, on the server. */
export function fleetView(fleet: FleetResponse, columns: Cluster[], filter: FleetFilter, page = 1): FleetView {
  const counts = Object.fromEntries(PHASES.map((p) => [p, 0])) as Record<Phase, number>;
  for (const team of fleet.teams) for (const cell of team.clusters) counts[phaseOf(cell)] += 1;
  const q = filter.q.trim().toLowerCase();
  const matching = fleet.teams
    .filter((t) => !q || t.team.toLowerCase().includes(q))
    .filter((t) => !filter.phase || t.clusters.some((c) => phaseOf(c) === filter.phase));
  const pages = Math.max(1, Math.ceil(matching.length / FLEET_PAGE_ROWS));
  const shown = Math.min(Math.max(1, Math.trunc(page)), pages);
  const rows = matching.slice((shown - 1) * FLEET_PAGE_ROWS, shown * FLEET_PAGE_ROWS).map((t) => ({
    team: t.team,
    cells: columns.map((col) => ({ cluster: col.name, status: t.clusters.find((c) => c.cluster === col.name) })),
  }));
  return {
    columns,
    rows,
    matching: matching.length,
    page: shown,
    pages,
    counts,
    teams: fleet.teams.length,
    revision: fleet.revision,
    broken: fleet.broken,
  };
}

function filterQuery(filter: FleetFilter, phase: Phase | undefined, page = 1): string {
  const params = new URLSearchParams();
  if (filter.q) params.set("q", filter.q);
  if (phase) params.set("phase", phase);
  if (page > 1) params.set("page", String(page));
  const query = params.toString();
  return query ? `/ui?${query}` : "/ui";
}

/** Previous and next page, keeping the filter; none when everything fits on one. */
function pager(view: FleetView, filter: FleetFilter): Html | string {
  if (view.pages === 1) return "";
  const link = (page: number, text: string, rel: string) =>
    page >= 1 && page <= view.pages
      ? html`<a href="${filterQuery(filter, filter.phase, page)}" rel="${rel}">${text}</a>`
      : html`<span class="none">${text}</span>`;
  return html`<nav class="pager" aria-label="Pages of teams">
  ${link(view.page - 1, "← Previous", "prev")}
  <span>Page ${view.page} of ${view.pages}</span>
  ${link(view.page + 1, "Next →", "next")}
</nav>`;
}

/** The filter form: outside <main>, so typing is not interrupted when the grid refreshes. */
export function fleetFilterForm(filter: FleetFilter): Html {
  return html`<form class="filters" method="get" action="/ui" role="search" data-live-filter>
  <div><label for="q">Team</label><input id="q" name="q" type="search" value="${filter.q}" placeholder="name contains…" autocomplete="off"></div>
  <div><label for="phase">State</label><select id="phase" name="phase">
    <option value="">any</option>
    ${PHASES.map((p) => html`<option value="${p}"${filter.phase === p ? html` selected` : ""}>${PHASE_LABELS[p]}</option>`)}
  </select></div>
  <button type="submit">Filter</button>
</form>`;
}

export function fleetMain(view: FleetView, filter: FleetFilter): Html {
  const counts = html`<ul class="counts" aria-label="Counts by state (one per team and cluster)">
  ${PHASES.filter((p) => view.counts[p] > 0 || p === "ready" || p === "failed").map(
    (p) => html`<li><a href="${filterQuery(filter, filter.phase === p ? undefined : p)}" data-phase-count="${p}"
      ><span class="badge ${p}${filter.phase === p ? " selected" : ""}">${PHASE_LABELS[p]} <span class="count">${view.counts[p]}</span></span></a></li>`,
  )}
</ul>`;
  const broken = view.broken.length
    ? html`<section class="broken" aria-labelledby="broken-title"><h2 id="broken-title">Team files that cannot be read</h2>
<p>These teams are left out until their <code>teams/&lt;team&gt;/base/team.yaml</code> is fixed in the Flux repo.</p>
<ul>${view.broken.map((b) => html`<li data-broken-team="${b.team}"><strong>${b.team}</strong>: <code>${b.error}</code></li>`)}</ul></section>`
    : "";
  if (view.teams === 0) {
    return html`<h1>Fleet</h1>${counts}${broken}<div class="empty"><p>No teams yet.</p><p>Onboard one with <code>berth apply -f team.yaml</code> (see docs/cli.md).</p></div>`;
  }
  const header = html`<tr><th scope="col">Team</th>${view.columns.map((c) => html`<th scope="col">${c.name}<small>${c.environment}</small></th>`)}</tr>`;
  const body = view.rows.map(
    (row) => html`<tr data-team="${row.team}">
  <th scope="row"><a href="/ui/teams/${encodeURIComponent(row.team)}">${row.team}</a></th>
  ${row.cells.map(({ cluster, status }) =>
    status
      ? html`<td data-cluster="${cluster}" data-phase="${phaseOf(status)}">${phaseBadge(phaseOf(status), describeClusterStatus(status))}</td>`
      : html`<td data-cluster="${cluster}" class="none"><span aria-hidden="true">—</span><span class="visually-hidden">not deployed here</span></td>`,
  )}
</tr>`,
  );
  const teams = (n: number) => `${n} team${n === 1 ? "" : "s"}`;
  const first = (view.page - 1) * FLEET_PAGE_ROWS + 1;
  const range = `${first}–${first + view.rows.length - 1}`;
  const filtered = view.matching !== view.teams;
  const shown =
    view.pages === 1
      ? filtered
        ? `${view.matching} of ${teams(view.teams)}`
        : teams(view.teams)
      : filtered
        ? `${range} of ${view.matching} matching (${teams(view.teams)})`
        : `${range} of ${teams(view.teams)}`;
  return html`<h1>Fleet</h1>
${counts}
${broken}
<table>
<caption>${shown} · Flux repo at ${shortSha(view.revision)}</caption>
<thead>${header}</thead>
<tbody>${body}</tbody>
</table>
${pager(view, filter)}
${view.rows.length === 0 ? html`<p class="empty">No team matches this filter. <a href="/ui">Show all teams</a></p>` : ""}`;
}
