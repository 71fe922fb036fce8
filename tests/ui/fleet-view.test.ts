/**
 * The fleet grid in pages: a fleet of hundreds of teams is shown FLEET_PAGE_ROWS rows at a time, with the counts
 * over the whole fleet, the filter applied before paging, and Previous/Next links that keep the filter.
 */
import type { ClusterStatus, FleetResponse } from "@berth/api-contract";
import type { Cluster } from "@berth/core";
import { describe, expect, it } from "vitest";
import { FLEET_PAGE_ROWS, fleetMain, fleetView, type FleetFilter } from "../../apps/api/src/http/ui/views/fleet.js";

const columns = [{ name: "aks-dev-weu", environment: "dev" }] as Cluster[];
const cell = (ready: boolean): ClusterStatus => ({
  cluster: "aks-dev-weu",
  environment: "dev",
  state: "reported",
  ready,
  stale: false,
  conditions: [],
});
/** team-0000 … team-0449; every tenth is not ready. */
const fleet: FleetResponse = {
  revision: "0123456789abcdef0123456789abcdef01234567",
  broken: [],
  teams: Array.from({ length: 450 }, (_, i) => {
    const ready = i % 10 !== 0;
    return { team: `team-${String(i).padStart(4, "0")}`, ready, clusters: [cell(ready)] };
  }),
};
const all: FleetFilter = { q: "", phase: undefined };

describe("the fleet grid in pages", () => {
  it("shows one page of rows, and counts every team", () => {
    const first = fleetView(fleet, columns, all);
    expect(FLEET_PAGE_ROWS).toBe(200);
    expect(first).toMatchObject({ page: 1, pages: 3, matching: 450, teams: 450 });
    expect(first.rows.map((r) => r.team)).toEqual(fleet.teams.slice(0, 200).map((t) => t.team));
    expect(first.counts).toMatchObject({ ready: 405, progressing: 45 });

    const last = fleetView(fleet, columns, all, 3);
    expect(last.rows.map((r) => r.team)).toEqual(fleet.teams.slice(400).map((t) => t.team));
    const markup = fleetMain(last, all).value;
    expect(markup).toContain("401–450 of 450 teams");
    expect(markup).toContain("Page 3 of 3");
    expect(markup).toContain('href="/ui?page=2" rel="prev"');
    expect(markup).not.toContain('rel="next"');
    expect(markup.match(/<tr data-team=/g)).toHaveLength(50);
  });

  it("shows the last page for a page past it, and the first for one before it", () => {
    expect(fleetView(fleet, columns, all, 99)).toMatchObject({ page: 3 });
    expect(fleetView(fleet, columns, all, 0)).toMatchObject({ page: 1 });
    expect(fleetView({ ...fleet, teams: [] }, columns, all, 5)).toMatchObject({ page: 1, pages: 1, rows: [] });
  });

  it("filters before paging, and the links keep the filter", () => {
    const filter: FleetFilter = { q: "team-0", phase: undefined }; // all 450
    const notReady: FleetFilter = { q: "", phase: "progressing" };
    const progressing = fleetView(fleet, columns, notReady);
    expect(progressing.matching).toBe(45);
    expect(progressing.pages).toBe(1);
    expect(fleetMain(progressing, notReady).value).toContain("45 of 450 teams");
    expect(fleetMain(progressing, notReady).value).not.toContain('class="pager"');

    expect(fleetView(fleet, columns, { q: "team-00", phase: undefined })).toMatchObject({ matching: 100, pages: 1 });
    const paged = fleetView(fleet, columns, filter, 2);
    const markup = fleetMain(paged, filter).value;
    expect(markup).toContain('href="/ui?q=team-0&amp;page=3" rel="next"');
    expect(markup).toContain('href="/ui?q=team-0" rel="prev"');
  });
});
