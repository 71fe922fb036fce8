/**
 * A Berth upgraded to one without a template version its teams are on (docs/templates.md, "Retiring a version"):
 * GET /v1/templates names the version as not installed, with its teams; an update of such a team is a clear 409
 * that commits nothing; a rollout moves the team to an installed version, and then it updates again. Real API
 * wiring, real git remote; the templates of the upgraded Berth are this repository's without v1.
 */
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rolloutCreatedResponse, templateListResponse, writeResponse } from "@berth/api-contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, REPO_ROOT, startBerth, type RunningBerth } from "../support/berth.js";
import { readAnswer, readProblem } from "../support/contract.js";
import { createBareRepo, inspectRemote } from "../support/git-remotes.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const auth = { authorization: `Bearer ${DEV_TOKEN}` };
const spec = { owners: [OWNER], environments: ["dev"], description: "changed after the upgrade" };

describe("a team on a retired template version", () => {
  let url: string;
  let templatesWithoutV1: string;
  let upgraded: RunningBerth;

  beforeAll(async () => {
    url = (await createBareRepo()).url;
    const before = await startBerth({ remoteUrl: url, env: { BERTH_LOG_LEVEL: "warn" } });
    try {
      for (const name of ["alpha", "bravo"]) {
        const res = await before.server.inject({
          method: "POST",
          url: "/v1/teams",
          headers: auth,
          payload: { name, owners: [OWNER], environments: ["dev"], templateVersion: "v1" },
        });
        expect(res.statusCode, res.body).toBe(201);
      }
    } finally {
      await before.stop();
    }
    templatesWithoutV1 = await mkdtemp(join(tmpdir(), "berth-templates-"));
    await cp(join(REPO_ROOT, "templates"), templatesWithoutV1, { recursive: true });
    await rm(join(templatesWithoutV1, "v1"), { recursive: true });
    upgraded = await startBerth({
      remoteUrl: url,
      env: { BERTH_LOG_LEVEL: "warn" },
      config: (raw) => {
        raw.templatesDir = templatesWithoutV1;
        raw.platform.templateVersion = "v5";
      },
    });
  });
  afterAll(async () => {
    await upgraded?.stop();
    if (templatesWithoutV1) await rm(templatesWithoutV1, { recursive: true, force: true });
  });

  it("GET /v1/templates lists the version as not installed, with the teams still on it", async () => {
    const res = await upgraded.server.inject({ url: "/v1/templates", headers: auth });
    expect(res.statusCode).toBe(200);
    const { items } = readAnswer(res, templateListResponse);
    expect(items[0]).toEqual({ version: "v1", default: false, available: false, teams: 2 });
    expect(items.filter((i) => !i.available).map((i) => i.version)).toEqual(["v1"]);
  });

  it("an update of the team is a 409 naming the version and what is installed, and commits nothing", async () => {
    const head = (await inspectRemote(url)).head;
    for (const request of [
      { method: "PUT" as const, url: "/v1/teams/alpha" },
      { method: "POST" as const, url: "/v1/teams/alpha/preview" },
    ]) {
      const res = await upgraded.server.inject({ ...request, headers: auth, payload: spec });
      expect(res.statusCode, `${request.url}: ${res.body}`).toBe(409);
      const problem = readProblem(res);
      expect(problem.type).toBe("https://berth.dev/problems/template-version-retired");
      expect(problem.detail).toContain("template version v1, which is no longer installed (installed: v3, v4, v5, v6)");
      expect(problem.detail).toContain("POST /v1/rollouts");
    }
    expect((await inspectRemote(url)).head).toBe(head);
  });

  it("a rollout moves the team to an installed version, and then it updates again", async () => {
    const rollout = await upgraded.server.inject({
      method: "POST",
      url: "/v1/rollouts",
      headers: auth,
      payload: {
        description: "off the retired v1",
        target: { templateVersion: "v5" },
        selector: { names: ["alpha"] },
      },
    });
    expect(rollout.statusCode, rollout.body).toBe(201);
    expect(readAnswer(rollout, rolloutCreatedResponse).rollout.status.phase).toBe("Completed");
    const remote = await inspectRemote(url);
    expect(remote.files.get("teams/alpha/base/team.yaml")).toContain("templateVersion: v5");
    expect(remote.files.get("teams/bravo/base/team.yaml")).toContain("templateVersion: v1");

    const put = await upgraded.server.inject({ method: "PUT", url: "/v1/teams/alpha", headers: auth, payload: spec });
    expect(put.statusCode, put.body).toBe(200);
    expect(readAnswer(put, writeResponse).team.templateVersion).toBe("v5");
    const { items } = readAnswer(
      await upgraded.server.inject({ url: "/v1/templates", headers: auth }),
      templateListResponse,
    );
    expect(items.find((i) => i.version === "v1")?.teams).toBe(1);
  });
});
