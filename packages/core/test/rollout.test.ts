/** The pure part of rollouts: selection, waves, transitions, the gate decision, the state file. */
import { describe, expect, it } from "vitest";
import {
  abortRollout,
  assignWaves,
  commitWave,
  committedTeams,
  gateDecision,
  haltRollout,
  matchesSelector,
  mergeWave,
  newRollout,
  parseRollout,
  passWave,
  pauseRollout,
  proposeWave,
  resumeRollout,
  rolloutId,
  rolloutRequestSchema,
  RolloutStateError,
  serializeRollout,
  validateTeam,
  type GateObservation,
  type Team,
} from "@berth/core";
import { OWNERS, PLATFORM } from "./fixtures.js";

const team = (name: string, environments: string[], extra: Partial<Team> = {}): Team => ({
  ...validateTeam({ name, owners: [OWNERS.payments], environments }, PLATFORM),
  templateVersion: "v1",
  ...extra,
});
const NOW = new Date("2026-11-24T12:00:00Z");
const later = (s: number) => new Date(NOW.getTime() + s * 1000);

describe("selection and waves", () => {
  const teams = [
    team("dev-a", ["dev"]),
    team("dev-b", ["dev"]),
    team("both", ["dev", "prod"]),
    ...Array.from({ length: 20 }, (_, i) =>
      team(`prod-${i}`, ["prod"], { labels: { tier: i < 5 ? "gold" : "bronze" } }),
    ),
  ];

  it("matches every given field: environments (any), onlyEnvironments (none but), labels, names, versions", () => {
    const both = teams[2]!;
    expect(matchesSelector(both, { environments: ["dev"] })).toBe(true);
    expect(matchesSelector(both, { onlyEnvironments: ["dev"] })).toBe(false);
    expect(matchesSelector(teams[0]!, { onlyEnvironments: ["dev"] })).toBe(true);
    expect(matchesSelector(teams[3]!, { labels: { tier: "gold" } })).toBe(true);
    expect(matchesSelector(teams[3]!, { labels: { tier: "gold" }, names: ["x"] })).toBe(false);
    expect(matchesSelector(teams[3]!, { templateVersions: ["v3"] })).toBe(false);
    expect(matchesSelector(teams[3]!, {})).toBe(true);
  });

  it("splits in order; a percent keeps a stable share chosen by name hash; leftovers are reported", () => {
    const waves = [
      { name: "dev", selector: { onlyEnvironments: ["dev"] } },
      { name: "canary", selector: { environments: ["prod"] }, percent: 10 },
      { name: "gold", selector: { labels: { tier: "gold" } } },
    ];
    const a = assignWaves(teams, waves);
    expect(a.waves[0]).toEqual({ name: "dev", teams: ["dev-a", "dev-b"] });
    expect(a.waves[1]!.teams).toHaveLength(3); // ceil(21 * 10%)
    expect(a.waves[2]!.teams.every((t) => a.waves[1]!.teams.indexOf(t) === -1)).toBe(true);
    const all = a.waves.flatMap((w) => w.teams);
    expect(new Set(all).size).toBe(all.length);
    expect([...all, ...a.unassigned].sort()).toEqual(teams.map((t) => t.name).sort());
    expect(a.unassigned.length).toBeGreaterThan(0);
    // Same input, same canaries; order of the input does not matter.
    expect(assignWaves([...teams].reverse(), waves)).toEqual(a);
    expect(assignWaves(teams, [...waves, { name: "rest" }]).unassigned).toEqual([]);
    expect(assignWaves([teams[0]!], [{ name: "x", percent: 1 }]).waves[0]!.teams).toEqual(["dev-a"]);
  });

  it("refuses duplicate wave names and unknown fields in a request", () => {
    expect(rolloutRequestSchema.safeParse({ waves: [{ name: "a" }, { name: "a" }] }).success).toBe(false);
    expect(rolloutRequestSchema.safeParse({ target: { version: "v3" } }).success).toBe(false);
    expect(rolloutRequestSchema.safeParse({ waves: [{ name: "a", percent: 0 }] }).success).toBe(false);
    expect(rolloutRequestSchema.parse({})).toEqual({ description: "", target: {}, selector: {}, gate: {} });
  });
});

describe("transitions", () => {
  const request = rolloutRequestSchema.parse({
    description: "v3",
    target: { templateVersion: "v3" },
    waves: [{ name: "one" }, { name: "two" }],
  });
  const fresh = () =>
    newRollout({
      id: rolloutId(NOW, Buffer.from([1, 2, 3])),
      request,
      waves: [
        { name: "one", teams: ["aa", "bb"] },
        { name: "two", teams: ["cc"] },
      ],
      requestedBy: "alice",
      now: NOW,
      gateTimeoutSeconds: 900,
    });

  it("ids sort by creation time", () => {
    expect(fresh().metadata.name).toBe("ro-20261124-120000-010203");
  });

  it("runs wave by wave to Completed, and round-trips through its file", () => {
    let r = commitWave(fresh(), later(1), ["bb"]);
    expect(r.status.waves[0]).toMatchObject({ phase: "Committed", skipped: ["bb"], gateSince: later(1).toISOString() });
    expect(committedTeams(r)).toEqual(["aa"]);
    expect(() => commitWave(r, later(2), [])).toThrow(RolloutStateError);
    r = passWave(r, later(2));
    expect(r.status).toMatchObject({ phase: "Running", wave: 1 });
    r = passWave(commitWave(r, later(3), []), later(4));
    expect(r.status.phase).toBe("Completed");
    expect(parseRollout(serializeRollout(r), "rollouts/x.yaml")).toEqual(r);
    expect(() => pauseRollout(r, later(5), "bob")).toThrow(/is Completed: it cannot be paused/);
  });

  it("an unstaged rollout (no gate) is done when its wave is committed", () => {
    const r = newRollout({
      id: "ro-20261124-120000-aaaaaa",
      request: rolloutRequestSchema.parse({}),
      waves: [{ name: "all", teams: ["aa"] }],
      requestedBy: "x",
      now: NOW,
      gateTimeoutSeconds: null,
    });
    expect(commitWave(r, later(1), []).status.phase).toBe("Completed");
  });

  it("halt, resume (clock restarts, report cleared), pause, abort", () => {
    let r = commitWave(fresh(), later(1), []);
    r = haltRollout(r, later(2), { reason: "Timeout", message: "slow", teams: [] });
    expect(r.status.halt).toMatchObject({ wave: "one", reason: "Timeout" });
    expect(() => passWave(r, later(3))).toThrow(RolloutStateError);
    r = resumeRollout(r, later(10), "bob");
    expect(r.status.halt).toBeUndefined();
    expect(r.status.waves[0]!.gateSince).toBe(later(10).toISOString());
    r = abortRollout(pauseRollout(r, later(11), "bob"), later(12), "carol");
    expect(r.status.phase).toBe("Aborted");
    expect(r.status.history.map((h) => [h.event, h.by])).toEqual([
      ["Created", "alice"],
      ["WaveCommitted", undefined],
      ["Halted", undefined],
      ["Resumed", "bob"],
      ["Paused", "bob"],
      ["Aborted", "carol"],
    ]);
    expect(() => abortRollout(r, later(13), "x")).toThrow(RolloutStateError);
  });

  it("pull-request mode: a wave is proposed, committed at its merge (gate from then), and proposed again after a closed one", () => {
    const pr = { number: 7, url: "https://git.example.com/platform/fleet/pulls/7" };
    let r = proposeWave(fresh(), later(1), pr, ["bb"]);
    expect(r.status.waves[0]).toMatchObject({ phase: "Proposed", pullRequest: pr, proposedAt: later(1).toISOString() });
    expect(r.status.waves[0]!.gateSince).toBeUndefined();
    // Not on main yet: its teams are not counted as moved, and it cannot pass a gate.
    expect(committedTeams(r)).toEqual([]);
    expect(() => passWave(r, later(2))).toThrow(RolloutStateError);
    expect(() => proposeWave(r, later(2), pr, [])).toThrow(RolloutStateError);
    expect(parseRollout(serializeRollout(r), "rollouts/x.yaml")).toEqual(r);

    const merged = mergeWave(r, later(5));
    expect(merged.status.waves[0]).toMatchObject({
      phase: "Committed",
      committedAt: later(5).toISOString(),
      gateSince: later(5).toISOString(),
      skipped: ["bb"],
      pullRequest: pr,
    });
    expect(committedTeams(merged)).toEqual(["aa"]);
    expect(() => mergeWave(merged, later(6))).toThrow(RolloutStateError);

    // Closed without merge: halted; a resume proposes the wave again from scratch.
    r = haltRollout(r, later(3), { reason: "ProposalClosed", message: "closed", teams: [] });
    r = resumeRollout(r, later(4), "bob");
    expect(r.status.waves[0]).toEqual({ name: "one", phase: "Pending" });
    expect(proposeWave(r, later(5), { ...pr, number: 8 }, []).status.waves[0]).toMatchObject({
      phase: "Proposed",
      pullRequest: { number: 8 },
    });
    // Any other halt of a proposed wave keeps its pull request.
    const timedOut = haltRollout(proposeWave(fresh(), later(1), pr, []), later(2), {
      reason: "Timeout",
      message: "slow",
      teams: [],
    });
    expect(resumeRollout(timedOut, later(3), "bob").status.waves[0]).toMatchObject({
      phase: "Proposed",
      pullRequest: pr,
    });
  });

  it("refuses a hand-edited file that is not a rollout", () => {
    const text = serializeRollout(fresh()).replace("phase: Running", "phase: Sprinting");
    expect(() => parseRollout(text, "rollouts/x.yaml")).toThrow(/rollouts\/x.yaml: status.phase/);
  });

  it("refuses a wave's pull request link that is not a web address (a hand edit of the rollouts branch)", () => {
    const pr = { number: 7, url: "https://git.example.com/platform/fleet/pulls/7" };
    const text = serializeRollout(proposeWave(fresh(), later(1), pr, []));
    // The status page and the CLI show it as a link: a script or markup must never get there.
    for (const url of [
      "javascript:alert(document.cookie)",
      "JAVASCRIPT://%0aalert(1)",
      "data:text/html;base64,PHNjcmlwdD4=",
      'https://git.example.com/pulls/7" onmouseover="alert(1)',
      "https://git.example.com/pulls/7><script>alert(1)</script>",
    ]) {
      expect(() => parseRollout(text.replace(pr.url, url), "rollouts/x.yaml"), url).toThrow(
        /rollouts\/x.yaml: status.waves.0.pullRequest.url must be an http\(s\) URL/,
      );
    }
    expect(parseRollout(text, "rollouts/x.yaml").status.waves[0]?.pullRequest).toEqual(pr);
  });
});

describe("the gate", () => {
  const obs = (team: string, over: Partial<GateObservation> = {}): GateObservation => ({
    team,
    cluster: "aks-dev-weu",
    state: "reported",
    ready: true,
    stale: false,
    includesWave: true,
    conditions: [{ type: "Ready", status: "True", reason: "Ready" }],
    ...over,
  });
  const failedConditions = [
    { type: "ResourceGroupReady", status: "True" },
    {
      type: "IdentityReady",
      status: "False",
      reason: "AuthorizationFailed",
      severity: "Error",
      message: "no permission",
    },
    { type: "Ready", status: "False", reason: "Failed" },
  ];
  const decide = (observations: GateObservation[], seconds = 10) =>
    gateDecision({ observations, now: later(seconds), gateSince: NOW, timeoutSeconds: 60 });

  it("passes when every team is Ready on every cluster for the wave's commit", () => {
    expect(decide([obs("a"), obs("b", { cluster: "aks-prod-weu" })]).verdict).toBe("pass");
    expect(decide([]).verdict).toBe("pass");
  });

  it("halts at once on a condition False with severity Error, naming team, cluster, condition and ASO's reason", () => {
    const d = decide([obs("a"), obs("b", { ready: false, conditions: failedConditions })]);
    expect(d).toMatchObject({ verdict: "halt", reason: "Failed" });
    expect(d.teams).toEqual([
      {
        team: "b",
        cluster: "aks-dev-weu",
        state: "reported",
        result: "failed",
        condition: "IdentityReady",
        reason: "AuthorizationFailed",
        severity: "Error",
        message: "no permission",
      },
    ]);
  });

  it("waits for a status that does not describe the wave yet (older revision, stale, not applied), even a failed one", () => {
    expect(decide([obs("a", { includesWave: false, ready: false, conditions: failedConditions })]).verdict).toBe(
      "wait",
    );
    expect(decide([obs("a", { stale: true, ready: false, conditions: failedConditions })]).verdict).toBe("wait");
    expect(decide([obs("a", { state: "absent", includesWave: undefined })]).teams[0]!.message).toContain(
      "has not applied the Team",
    );
    expect(decide([obs("a", { state: "unreachable" })]).verdict).toBe("wait");
    const w = decide([
      obs("a", {
        ready: false,
        conditions: [
          { type: "IdentityReady", status: "Unknown", reason: "Reconciling" },
          { type: "Ready", status: "False" },
        ],
      }),
    ]);
    expect(w.teams[0]).toMatchObject({ result: "waiting", condition: "IdentityReady", reason: "Reconciling" });
  });

  it("while Flux has not applied the wave's commit, reports what holds the revision it applied (ASO's reason and severity), and only waits", () => {
    const held = [
      { type: "Rendered", status: "True" },
      {
        type: "RoleAssignmentsReady",
        status: "False",
        reason: "AuthorizationFailed",
        severity: "Warning",
        message: "payments--rg-contributor: does not have authorization",
      },
      { type: "Ready", status: "False", reason: "Waiting" },
    ];
    const d = decide([
      obs("a", { includesWave: false, ready: false, revision: "main@sha1:0123456", conditions: held }),
    ]);
    expect(d.verdict).toBe("wait");
    expect(d.teams[0]).toEqual({
      team: "a",
      cluster: "aks-dev-weu",
      state: "reported",
      result: "waiting",
      condition: "RoleAssignmentsReady",
      reason: "AuthorizationFailed",
      severity: "Warning",
      message:
        "Flux has not applied the wave's commit on this cluster yet (applied: main@sha1:0123456); it is held by RoleAssignmentsReady: payments--rg-contributor: does not have authorization",
    });
    expect(decide([obs("a", { includesWave: false, ready: true })]).teams[0]).toEqual({
      team: "a",
      cluster: "aks-dev-weu",
      state: "reported",
      result: "waiting",
      message: "Flux has not applied the wave's commit on this cluster yet",
    });
  });

  it("halts on timeout, reporting what is still waiting", () => {
    const d = decide([obs("a"), obs("b", { ready: false, state: "pending" })], 61);
    expect(d).toMatchObject({ verdict: "halt", reason: "Timeout" });
    expect(d.teams.map((t) => t.team)).toEqual(["b"]);
    expect(decide([obs("b", { ready: false, state: "pending" })], 59).verdict).toBe("wait");
  });
});
