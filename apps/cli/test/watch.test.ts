import type { ClusterStatus, StatusResponse } from "@berth/api-contract";
import { describe, expect, it } from "vitest";
import { parseDuration } from "../src/duration.js";
import { painter } from "../src/io.js";
import { formatTable, visibleWidth } from "../src/output/table.js";
import { formatElapsed, renderFrame, WatchState } from "../src/watch.js";

const cluster = (name: string, over: Partial<ClusterStatus>): ClusterStatus => ({
  cluster: name,
  environment: "dev",
  state: "absent",
  ready: false,
  stale: false,
  conditions: [],
  ...over,
});
const response = (...clusters: ClusterStatus[]): StatusResponse => ({
  team: "payments",
  revision: "0123456789abcdef0123456789abcdef01234567",
  ready: clusters.every((c) => c.ready),
  clusters,
});
const CHAIN = [
  "Rendered",
  "ResourceGroupReady",
  "IdentityReady",
  "FederatedCredentialsReady",
  "FederationMatchesIssuer",
  "RoleAssignmentsReady",
  "KustomizationReady",
  "CredentialWritten",
  "Ready",
];
const readyStatus = cluster("aks-dev-weu", {
  state: "reported",
  ready: true,
  conditions: CHAIN.map((type) => ({ type, status: "True" as const, reason: "Succeeded" })),
});
const failedStatus = cluster("aks-dev-weu", {
  state: "reported",
  conditions: [
    { type: "IdentityReady", status: "False", reason: "AuthorizationFailed", severity: "Error", message: "no access" },
    { type: "Ready", status: "False", reason: "Failed" },
  ],
});

describe("the watch state", () => {
  it("prints a line only when a cluster's state changes", () => {
    const state = new WatchState();
    expect(state.update(response(cluster("aks-dev-weu", {})), 0)).toEqual([
      "[0:00] aks-dev-weu: Waiting: waiting for Flux to apply the team",
    ]);
    expect(state.update(response(cluster("aks-dev-weu", {})), 2000)).toEqual([]);
    expect(state.update(response(readyStatus), 65_000)).toEqual(["[1:05] aks-dev-weu: Ready: Ready"]);
    expect(state.outcome()).toBe("ready");
  });

  it("ends on the first failed cluster, and ignores clusters the API cannot see unless it sees none", () => {
    const state = new WatchState();
    state.update(response(failedStatus, cluster("aks-prod-weu", { state: "not-configured" })), 0);
    expect(state.outcome()).toBe("failed");
    expect(state.failures()).toEqual([
      { cluster: "aks-dev-weu", reason: "IdentityReady: AuthorizationFailed (severity Error): no access" },
    ]);

    const partly = new WatchState();
    partly.update(response(readyStatus, cluster("aks-prod-weu", { state: "not-configured" })), 0);
    expect(partly.outcome()).toBe("ready");
    expect(partly.unobserved()).toEqual(["aks-prod-weu"]);

    const blind = new WatchState();
    blind.update(response(cluster("aks-prod-weu", { state: "not-configured" })), 0);
    expect(blind.outcome()).toBe("unobservable");
  });

  it("draws the chain per cluster, stops a cluster's clock when it is settled, and fits the width", () => {
    const state = new WatchState();
    state.update(response(cluster("aks-dev-weu", {})), 0);
    state.update(response(readyStatus), 12_000);
    const frame = renderFrame(state, { elapsedMs: 99_000, tick: 0, width: 200, paint: painter(false), live: true });
    expect(frame).toContain("✔ aks-dev-weu (dev)  Ready  0:12");
    expect(frame).toContain("✔ committed › ✔ Flux applied");
    const narrow = renderFrame(state, { elapsedMs: 0, tick: 0, width: 80, paint: painter(false), live: true });
    expect(narrow).toContain("✔ commit › ✔ flux › ✔ rg");
    for (const line of narrow.split("\n").slice(2)) expect(visibleWidth(line)).toBeLessThanOrEqual(80);
    const tiny = renderFrame(state, { elapsedMs: 0, tick: 0, width: 30, paint: painter(false), live: true });
    expect(tiny).toContain("8/8 steps");
  });
});

describe("the watch state in pull-request mode", () => {
  const pr = { number: 7, url: "https://git.example.com/platform/fleet/pulls/7" };
  const inReview = (
    state: "open" | "approved" | "changes-requested" | "merged" | "closed",
    ...clusters: ClusterStatus[]
  ) => ({
    ...response(...clusters),
    review: { ...pr, state },
  });

  it("says where review stands, once per change, and first in the frame", () => {
    const state = new WatchState();
    expect(state.update(inReview("open"), 0)).toEqual([
      `[0:00] review: pull request #7 waits for review; it applies once merged (${pr.url})`,
    ]);
    expect(state.update(inReview("open"), 2_000)).toEqual([]);
    expect(state.update(inReview("approved"), 4_000)).toEqual([
      `[0:04] review: pull request #7 is approved; it applies once merged (${pr.url})`,
    ]);
    expect(state.outcome()).toBe("watching");
    const frame = renderFrame(state, { elapsedMs: 4_000, tick: 0, width: 200, paint: painter(false), live: false });
    expect(frame.split("\n")[2]).toBe(`… pull request #7 is approved; it applies once merged (${pr.url})`);
  });

  it("ends on an onboarding closed without merge; a closed change to a team on the clusters leaves its status", () => {
    const dropped = new WatchState();
    dropped.update(inReview("closed"), 0);
    expect(dropped.outcome()).toBe("closed");
    expect(dropped.reviewLine()).toBe(
      `pull request #7 was closed without merge: nothing of it was applied (${pr.url})`,
    );

    const kept = new WatchState();
    kept.update(inReview("closed", readyStatus), 0);
    expect(kept.outcome()).toBe("ready");
    expect(kept.reviewLine()).toContain("its change was dropped, the team stays as the Flux repo holds it");
  });
});

describe("formatting", () => {
  it("aligns columns by what is visible, colour codes aside", () => {
    const paint = painter(true);
    const table = formatTable(
      ["name", "status"],
      [
        [paint("bold", "a"), "Ready"],
        ["longer-name", paint("red", "Failed")],
      ],
    );
    // eslint-disable-next-line no-control-regex -- strips the ESC-led colour codes the painter wrote
    expect(table.replace(/\u001b\[\d+m/g, "")).toBe("NAME          STATUS\na             Ready\nlonger-name   Failed");
  });

  it("reads durations like kubectl's and formats elapsed time", () => {
    expect(parseDuration("90s")).toBe(90_000);
    expect(parseDuration("1h30m")).toBe(5_400_000);
    expect(parseDuration("500ms")).toBe(500);
    expect(parseDuration("2")).toBe(2000);
    expect(() => parseDuration("soon")).toThrow(/not a duration/);
    expect(() => parseDuration("10m junk")).toThrow(/not a duration/);
    expect(formatElapsed(3_725_000)).toBe("1:02:05");
  });
});
