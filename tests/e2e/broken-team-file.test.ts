/**
 * One hand-broken team file (an alias bomb, an unclosed `{`, 30,000 nested `[`) in a real remote: every
 * listing still answers 200 with the other teams, and reports the broken ones with why (GET /v1/teams,
 * /v1/templates, /v1/status, POST /v1/rollouts/preview, the status page), as /v1/fleet/drift already did.
 */
// needs: dist
import { fleetResponse, rolloutPreviewResponse, teamListResponse, templateListResponse } from "@berth/api-contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, startBerth, type RunningBerth } from "../support/berth.js";
import { ensureBuilt } from "../support/build.js";
import { readAnswer, readProblem, type AnswerSchema } from "../support/contract.js";
import { CliHarness } from "../support/cli.js";
import { createBareRepo, handEdit, inspectRemote, type BareRepo } from "../support/git-remotes.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const auth = { authorization: `Bearer ${DEV_TOKEN}` };

const ALIAS_BOMB = [
  "a: &a [x, x, x, x, x, x, x, x, x]",
  "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]",
  "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]",
  "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]",
  "e: [*d, *d, *d, *d, *d, *d, *d, *d, *d]",
  "",
].join("\n");

describe("a team file that cannot be read", () => {
  let remote: BareRepo;
  let berth: RunningBerth;
  let cookie: string;

  beforeAll(async () => {
    remote = await createBareRepo();
    const built = ensureBuilt();
    berth = await startBerth({ remoteUrl: remote.url, listen: true, env: { BERTH_LOG_LEVEL: "warn" } });
    for (const name of ["alpha", "bravo", "charlie", "delta"]) {
      const res = await berth.server.inject({
        method: "POST",
        url: "/v1/teams",
        headers: auth,
        payload: { name, owners: [OWNER], environments: ["dev"] },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
    await handEdit(remote.url, {
      "teams/bravo/base/team.yaml": ALIAS_BOMB,
      "teams/charlie/base/team.yaml": "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: { name: charlie\n",
      "teams/delta/base/team.yaml": `spec: ${"[".repeat(30_000)}\n`,
    });
    await berth.repo.snapshot(0);
    const signIn = await berth.server.inject({
      method: "POST",
      url: "/ui/sign-in",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({ token: DEV_TOKEN }).toString(),
    });
    cookie = String(signIn.headers["set-cookie"]).split(";")[0]!;
    await built;
  }, 600_000);
  afterAll(async () => {
    await berth?.stop();
    await remote?.remove();
  });

  /** A 200 answer, parsed with the schema the route declares (so the contract is checked too). */
  const get = async <T>(url: string, schema: AnswerSchema<T>): Promise<T> => {
    const res = await berth.server.inject({ url, headers: auth });
    expect(res.statusCode, res.body).toBe(200);
    return readAnswer(res, schema);
  };
  const brokenNames = (broken: Array<{ team: string; error: string }>) => broken.map((b) => b.team);

  it("GET /v1/teams serves the other teams and reports each broken one with why, on every page", async () => {
    const list = await get("/v1/teams", teamListResponse);
    expect(list.items.map((t) => t.name)).toEqual(["alpha"]);
    expect(brokenNames(list.broken)).toEqual(["bravo", "charlie", "delta"]);
    expect(list.broken[0]?.error).toContain("teams/bravo/base/team.yaml: not valid YAML: Excessive alias count");
    expect(list.broken[1]?.error).toContain("teams/charlie/base/team.yaml: not valid YAML");
    const page = await get("/v1/teams?limit=1", teamListResponse);
    expect(brokenNames(page.broken)).toEqual(["bravo", "charlie", "delta"]);
  });

  it("GET /v1/templates counts the readable teams and reports the others", async () => {
    const templates = await get("/v1/templates", templateListResponse);
    expect(templates.items.reduce((n, v) => n + v.teams, 0)).toBe(1);
    expect(brokenNames(templates.broken)).toEqual(["bravo", "charlie", "delta"]);
  });

  it("GET /v1/status answers for the readable teams and reports the others", async () => {
    const status = await get("/v1/status", fleetResponse);
    expect(status.teams.map((t) => t.team)).toEqual(["alpha"]);
    expect(brokenNames(status.broken)).toEqual(["bravo", "charlie", "delta"]);
  });

  it("a rollout can still be planned: broken teams are left out and reported, or fail when the request names them", async () => {
    const everyone = await berth.server.inject({
      method: "POST",
      url: "/v1/rollouts/preview?diffs=false",
      headers: auth,
      payload: { target: { templateVersion: "v3" }, selector: {} },
    });
    expect(everyone.statusCode, everyone.body).toBe(200);
    const all = readAnswer(everyone, rolloutPreviewResponse);
    expect(all).toMatchObject({ summary: { selected: 1, changed: 1, failed: 0 }, problems: [] });
    expect(brokenNames(all.broken)).toEqual(["bravo", "charlie", "delta"]);

    const named = await berth.server.inject({
      method: "POST",
      url: "/v1/rollouts/preview?diffs=false",
      headers: auth,
      payload: { target: { templateVersion: "v3" }, selector: { names: ["alpha", "bravo"] } },
    });
    expect(named.statusCode, named.body).toBe(200);
    const some = readAnswer(named, rolloutPreviewResponse);
    expect(some).toMatchObject({ summary: { selected: 1, changed: 1, failed: 1 }, broken: [] });
    expect(some.failed[0]).toMatchObject({ team: "bravo", error: expect.stringContaining("Excessive alias count") });

    // Creating it commits nothing while a team it names cannot be read.
    const before = (await inspectRemote(remote.url)).head;
    const refused = await berth.server.inject({
      method: "POST",
      url: "/v1/rollouts",
      headers: auth,
      payload: { target: { templateVersion: "v3" }, selector: { names: ["alpha", "bravo"] } },
    });
    expect(refused.statusCode, refused.body).toBe(422);
    expect(readProblem(refused).type).toBe("https://berth.dev/problems/rollout-render-failed");
    expect((await inspectRemote(remote.url)).head).toBe(before);
  });

  it("the status page shows the fleet and lists the broken teams with why", async () => {
    const res = await berth.server.inject({ url: "/ui", headers: { cookie } });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('data-team="alpha"');
    for (const team of ["bravo", "charlie", "delta"]) expect(res.body).toContain(`data-broken-team="${team}"`);
    expect(res.body).toContain("Excessive alias count");
  });

  it("the CLI lists the other teams and says which were left out, on stderr", async () => {
    const cli = await CliHarness.create({ BERTH_SERVER: berth.url, BERTH_TOKEN: DEV_TOKEN });
    const list = await cli.run(["get", "teams", "-o", "name"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toBe("team/alpha\n");
    for (const team of ["bravo", "charlie", "delta"])
      expect(list.stderr).toContain(
        `warning: team ${team} is left out: its team file cannot be read: teams/${team}/base/team.yaml`,
      );
    const preview = await cli.run(["rollout", "preview", "--to", "v3", "--no-diffs"]);
    expect(preview.code, preview.stderr).toBe(0);
    expect(preview.stdout).toContain(
      "left out bravo: its team file cannot be read: teams/bravo/base/team.yaml: not valid YAML: Excessive alias count",
    );
  }, 120_000);
});
