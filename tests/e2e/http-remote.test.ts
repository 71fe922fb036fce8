import { previewResponse, writeResponse } from "@berth/api-contract";
import { teamShard } from "@berth/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, startBerth, type RunningBerth } from "../support/berth.js";
import { readAnswer } from "../support/contract.js";
import { startGitHttpServer, type GitHttpServer } from "../support/git-http-server.js";
import { basicAuthEnv, createBareRepo, inspectRemote, makeTempDir } from "../support/git-remotes.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const auth = { authorization: `Bearer ${DEV_TOKEN}` };
const USER = "flux-bot";
const TOKEN = "s3cret-http-token-value";

describe("create, update, preview and offboard over smart HTTP with Basic auth", () => {
  let server: GitHttpServer;
  let berth: RunningBerth;
  let url: string;
  const remote = () => inspectRemote(url, "main", basicAuthEnv(USER, TOKEN));

  beforeAll(async () => {
    const root = await makeTempDir("berth-http-root-");
    await createBareRepo(`${root}/flux.git`);
    server = await startGitHttpServer({ root, username: USER, password: TOKEN });
    url = server.repoUrl("flux.git");
    berth = await startBerth({ remoteUrl: url, env: { BERTH_GIT_TOKEN: TOKEN, BERTH_GIT_USERNAME: USER } });
  });
  afterAll(async () => {
    await berth?.stop();
    await server?.stop();
  });

  it("is ready when the remote answers with these credentials", async () => {
    expect((await berth.server.inject({ url: "/readyz" })).statusCode).toBe(200);
  });

  it("onboards, previews, updates and offboards, each visible in a fresh clone", async () => {
    const created = await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: auth,
      payload: { name: "ledger", owners: [OWNER], environments: ["dev"] },
    });
    expect(created.statusCode).toBe(201);
    let state = await remote();
    expect(state.head).toBe(readAnswer(created, writeResponse).revision);
    expect(state.files.get("teams/ledger/base/team.yaml")).toContain("name: ledger");
    expect(state.files.has(`clusters/aks-dev-weu/teams/${teamShard("ledger")}/ledger.yaml`)).toBe(true);

    const spec = {
      description: "Ledger",
      owners: [OWNER],
      environments: ["dev", "prod"],
      roleAssignments: [{ role: "servicebus-data-owner" }],
    };
    const preview = await berth.server.inject({
      method: "POST",
      url: "/v1/teams/ledger/preview",
      headers: auth,
      payload: spec,
    });
    expect(preview.statusCode).toBe(200);
    expect(readAnswer(preview, previewResponse).diff).toContain(
      "+++ b/teams/ledger/clusters/aks-prod-neu/role-assignment.yaml",
    );
    expect((await remote()).head).toBe(state.head);

    const updated = await berth.server.inject({ method: "PUT", url: "/v1/teams/ledger", headers: auth, payload: spec });
    expect(updated.statusCode).toBe(200);
    state = await remote();
    expect(state.head).toBe(readAnswer(updated, writeResponse).revision);
    expect(state.files.get("teams/ledger/clusters/aks-prod-neu/role-assignment.yaml")).toContain(
      "roleDefinitions/090c5cfd-751d-490a-894a-3ce6f1109419",
    );
    expect(state.commits[0]!.subject).toBe("berth: update team ledger");

    const deleted = await berth.server.inject({ method: "DELETE", url: "/v1/teams/ledger", headers: auth });
    expect(deleted.statusCode).toBe(200);
    state = await remote();
    expect([...state.files.keys()].filter((p) => p.includes("ledger"))).toEqual([]);
    expect(state.commits.map((c) => c.subject)).toEqual([
      "berth: offboard team ledger",
      "berth: update team ledger",
      "berth: onboard team ledger",
    ]);
  });

  it("never logs the git token", () => {
    expect(berth.logs.join("")).not.toContain(TOKEN);
    expect(berth.logs.join("")).not.toContain(Buffer.from(`${USER}:${TOKEN}`).toString("base64"));
  });
});

describe("a wrong git token", () => {
  it("fails start-up with a clear auth error, without hanging or leaking the token", async () => {
    const root = await makeTempDir("berth-http-root-");
    await createBareRepo(`${root}/flux.git`);
    const server = await startGitHttpServer({ root, username: USER, password: TOKEN });
    const wrong = "wrong-token-value-123";
    // init() needs the remote: a bad credential must fail start-up clearly rather than later.
    const started = Date.now();
    const error = await startBerth({
      remoteUrl: server.repoUrl("flux.git"),
      env: { BERTH_GIT_TOKEN: wrong, BERTH_GIT_USERNAME: USER },
    }).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(error?.message).toMatch(/auth|credential|401|denied/i);
    expect(error?.message).not.toContain(wrong);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(server.stats.unauthorized).toBeGreaterThan(0);
    await server.stop();
  });
});
