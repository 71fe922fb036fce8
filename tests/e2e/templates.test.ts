/**
 * Template versions through the API: new teams get the default or a version they name, an update keeps
 * the team's version, GET /v1/templates counts teams per version. Real API wiring, real git remote.
 */
import { teamResponse, templateListResponse, writeResponse } from "@berth/api-contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, startBerth, type RunningBerth } from "../support/berth.js";
import { readAnswer, readProblem } from "../support/contract.js";
import { createBareRepo, inspectRemote } from "../support/git-remotes.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const auth = { authorization: `Bearer ${DEV_TOKEN}` };
const team = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  owners: [OWNER],
  environments: ["dev"],
  ...extra,
});

describe("template versions side by side", () => {
  let berth: RunningBerth;
  let url: string;

  beforeAll(async () => {
    url = (await createBareRepo()).url;
    berth = await startBerth({ remoteUrl: url, env: { BERTH_LOG_LEVEL: "warn" } });
  });
  afterAll(async () => {
    await berth?.stop();
  });

  const post = (body: unknown) =>
    berth.server.inject({ method: "POST", url: "/v1/teams", headers: auth, payload: body as object });
  const templates = async () => {
    const res = await berth.server.inject({ url: "/v1/templates", headers: auth });
    expect(res.statusCode).toBe(200);
    return readAnswer(res, templateListResponse);
  };

  it("lists every version on disk, the default, and no teams on an empty repo", async () => {
    expect(await templates()).toEqual({
      default: "v1",
      revision: null,
      items: [
        { version: "v1", default: true, available: true, teams: 0 },
        { version: "v3", default: false, available: true, teams: 0 },
        { version: "v4", default: false, available: true, teams: 0 },
        { version: "v5", default: false, available: true, teams: 0 },
        { version: "v6", default: false, available: true, teams: 0 },
      ],
      broken: [],
    });
  });

  it("onboards on the default, or on a version the request names; refuses one that does not exist", async () => {
    const a = await post(team("alpha"));
    expect(a.statusCode).toBe(201);
    expect(readAnswer(a, writeResponse).team.templateVersion).toBe("v1");
    const b = await post(team("bravo", { templateVersion: "v3" }));
    expect(b.statusCode).toBe(201);
    expect(readAnswer(b, writeResponse).team.templateVersion).toBe("v3");
    const bad = await post(team("charlie", { templateVersion: "v9" }));
    expect(bad.statusCode).toBe(422);
    expect(readProblem(bad).errors).toContainEqual({
      field: "templateVersion",
      rule: "must be one of the template versions: v1, v3, v4, v5, v6",
    });

    const remote = await inspectRemote(url);
    expect(remote.files.get("teams/bravo/base/team.yaml")).toContain("templateVersion: v3");
    expect(remote.files.get("teams/bravo/base/namespace.yaml")).toContain("berth.dev/template-version: v3");
    expect(remote.files.get("teams/alpha/base/namespace.yaml")).not.toContain("template-version");
    expect(remote.files.has("teams/charlie/base/team.yaml")).toBe(false);
    expect((await templates()).items.map((i) => [i.version, i.teams])).toEqual([
      ["v1", 1],
      ["v3", 1],
      ["v4", 0],
      ["v5", 0],
      ["v6", 0],
    ]);
  });

  it("an update keeps the version; changing it through PUT is a 422 that points to rollouts", async () => {
    const { name: _n, ...spec } = team("bravo", { description: "renamed" });
    const put = await berth.server.inject({ method: "PUT", url: "/v1/teams/bravo", headers: auth, payload: spec });
    expect(put.statusCode).toBe(200);
    expect(readAnswer(put, writeResponse).team.templateVersion).toBe("v3");
    const moved = await berth.server.inject({
      method: "PUT",
      url: "/v1/teams/bravo",
      headers: auth,
      payload: { ...spec, templateVersion: "v1" },
    });
    expect(moved.statusCode).toBe(422);
    expect(readProblem(moved).errors?.[0]).toMatchObject({
      field: "templateVersion",
      rule: expect.stringContaining("a rollout moves teams between versions"),
    });
    const got = await berth.server.inject({ url: "/v1/teams/bravo", headers: auth });
    expect(readAnswer(got, teamResponse).team).toMatchObject({ description: "renamed", templateVersion: "v3" });
  });

  it("a platform whose default is v3 onboards new teams on v3", async () => {
    const other = await startBerth({
      remoteUrl: url,
      env: { BERTH_LOG_LEVEL: "warn" },
      config: (raw) => void (raw.platform.templateVersion = "v3"),
    });
    try {
      const res = await other.server.inject({
        method: "POST",
        url: "/v1/teams",
        headers: auth,
        payload: team("delta"),
      });
      expect(res.statusCode).toBe(201);
      expect(readAnswer(res, writeResponse).team.templateVersion).toBe("v3");
      const body = readAnswer(await other.server.inject({ url: "/v1/templates", headers: auth }), templateListResponse);
      expect(body.default).toBe("v3");
      expect(body.items.map((i) => [i.version, i.teams, i.default])).toEqual(
        [
          ["v1", 1],
          ["v3", 2],
          ["v4", 0],
          ["v5", 0],
          ["v6", 0],
        ].map(([v, n]) => [v, n, v === "v3"]),
      );
    } finally {
      await other.stop();
    }
  });
});
