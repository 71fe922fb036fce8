/**
 * Idempotency-Key on POST/PUT/DELETE (draft-ietf-httpapi-idempotency-key-header): a retry with the same key
 * and request answers the original outcome; the key lives in commit trailers, so a restarted process and a
 * second replica answer the same; the audit line and the trailers record every write.
 */
import { existsSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { deleteResponse, writeResponse } from "@berth/api-contract";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DEV_TOKEN, startBerth, type RunningBerth } from "../support/berth.js";
import { readAnswer, readProblem } from "../support/contract.js";
import { createBareRepo, git, inspectRemote, makeTempDir, type BareRepo } from "../support/git-remotes.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const team = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  description: "A team",
  owners: [OWNER],
  environments: ["dev"],
  ...extra,
});

describe("Idempotency-Key", () => {
  let remote: BareRepo;
  let berth: RunningBerth;
  let replica: RunningBerth | undefined;
  const headers = (key?: string) => ({
    authorization: `Bearer ${DEV_TOKEN}`,
    ...(key === undefined ? {} : { "idempotency-key": key }),
  });
  const commitCount = async () => (await inspectRemote(remote.url)).commits.length;
  const post = (b: RunningBerth, key: string | undefined, body: unknown) =>
    b.server.inject({ method: "POST", url: "/v1/teams", headers: headers(key), payload: body as object });

  beforeAll(async () => {
    remote = await createBareRepo();
    berth = await startBerth({ remoteUrl: remote.url });
  });
  afterAll(async () => {
    await replica?.stop();
    await berth?.stop();
    await remote?.remove();
  });

  it("answers a retried create with its original outcome, and commits once", async () => {
    const first = await post(berth, "create-alpha-1", team("alpha"));
    expect(first.statusCode).toBe(201);
    expect(first.headers["idempotent-replayed"]).toBeUndefined();
    const count = await commitCount();
    // Without the key the same request is a conflict; with it, the original 201.
    expect((await post(berth, undefined, team("alpha"))).statusCode).toBe(409);
    const retry = await post(berth, '"create-alpha-1"', {
      environments: ["dev"],
      owners: [OWNER],
      description: "A team",
      name: "alpha",
    });
    expect(retry.statusCode).toBe(201);
    expect(retry.headers["idempotent-replayed"]).toBe("true");
    expect(retry.headers.location).toBe("/v1/teams/alpha");
    expect(readAnswer(retry, writeResponse)).toEqual(readAnswer(first, writeResponse));
    expect(await commitCount()).toBe(count);
  });

  it("refuses the same key with a different request (422) and commits nothing", async () => {
    const count = await commitCount();
    const other = await post(berth, "create-alpha-1", team("alpha", { description: "Another" }));
    expect(other.statusCode).toBe(422);
    expect(readProblem(other)).toMatchObject({ type: "https://berth.dev/problems/idempotency-key-reused" });
    const otherRoute = await berth.server.inject({
      method: "PUT",
      url: "/v1/teams/alpha",
      headers: headers("create-alpha-1"),
      payload: { owners: [OWNER], environments: ["dev"] },
    });
    expect(otherRoute.statusCode).toBe(422);
    expect(await commitCount()).toBe(count);
  });

  it("replays updates and deletes: the original 200 and revision, not a no-op or a 404", async () => {
    const spec = { description: "Alpha", owners: [OWNER], environments: ["dev", "prod"] };
    const update = await berth.server.inject({
      method: "PUT",
      url: "/v1/teams/alpha",
      headers: headers("update-alpha-1"),
      payload: spec,
    });
    expect(readAnswer(update, writeResponse)).toMatchObject({ committed: true });
    const updateAgain = await berth.server.inject({
      method: "PUT",
      url: "/v1/teams/alpha",
      headers: headers("update-alpha-1"),
      payload: spec,
    });
    expect(updateAgain.statusCode).toBe(200);
    expect(readAnswer(updateAgain, writeResponse)).toEqual(readAnswer(update, writeResponse));

    const del = await berth.server.inject({
      method: "DELETE",
      url: "/v1/teams/alpha",
      headers: headers("delete-alpha-1"),
    });
    expect(del.statusCode).toBe(200);
    const delAgain = await berth.server.inject({
      method: "DELETE",
      url: "/v1/teams/alpha",
      headers: headers("delete-alpha-1"),
    });
    expect(delAgain.statusCode).toBe(200);
    expect(readAnswer(delAgain, deleteResponse)).toEqual(readAnswer(del, deleteResponse));
    expect(
      (await berth.server.inject({ method: "DELETE", url: "/v1/teams/alpha", headers: headers() })).statusCode,
    ).toBe(404);
  });

  it("remembers keys across a restart and between replicas: they are read back from the commit trailers", async () => {
    const first = await post(berth, "create-beta-1", team("beta"));
    expect(first.statusCode).toBe(201);
    // A second process with its own clone: a restart, or another replica behind the same service.
    replica = await startBerth({ remoteUrl: remote.url });
    const retry = await post(replica, "create-beta-1", team("beta"));
    expect(retry.statusCode).toBe(201);
    expect(readAnswer(retry, writeResponse)).toEqual(readAnswer(first, writeResponse));

    // Both replicas get the same new request at once: one commit, the same answer from both.
    const count = await commitCount();
    const [a, b] = await Promise.all([
      post(berth, "create-gamma-1", team("gamma")),
      post(replica, "create-gamma-1", team("gamma")),
    ]);
    expect([a.statusCode, b.statusCode]).toEqual([201, 201]);
    expect(readAnswer(a, writeResponse).revision).toBe(readAnswer(b, writeResponse).revision);
    expect([a.headers["idempotent-replayed"], b.headers["idempotent-replayed"]].filter(Boolean)).toEqual(["true"]);
    expect(await commitCount()).toBe(count + 1);
  });

  it("answers 409 to a retry that arrives while the original is still running", async () => {
    const marker = join(await makeTempDir("berth-hook-"), "pushing");
    const hook = join(remote.dir, "hooks", "pre-receive");
    // The original's push waits until the test has sent its retry.
    await writeFile(hook, `#!/bin/sh\ncat >/dev/null\ntouch ${marker}\nwhile [ -e ${marker} ]; do sleep 0.1; done\n`, {
      mode: 0o755,
    });
    try {
      const original = post(berth, "create-delta-1", team("delta"));
      await vi.waitFor(() => expect(existsSync(marker)).toBe(true), { timeout: 30_000, interval: 50 });
      const early = await post(berth, "create-delta-1", team("delta"));
      expect(early.statusCode).toBe(409);
      expect(readProblem(early)).toMatchObject({ type: "https://berth.dev/problems/idempotency-key-in-use" });
      expect(early.headers["retry-after"]).toBeDefined();
      await rm(marker);
      expect((await original).statusCode).toBe(201);
    } finally {
      await rm(hook, { force: true });
      await rm(marker, { force: true });
    }
    expect((await post(berth, "create-delta-1", team("delta"))).headers["idempotent-replayed"]).toBe("true");
  });

  it("refuses a malformed or repeated key (400)", async () => {
    for (const key of ["", "has space", "x".repeat(129), '"unterminated', "é"]) {
      const res = await post(berth, key, team("epsilon"));
      expect(res.statusCode, JSON.stringify(key)).toBe(400);
    }
  });

  it("records who did what in the commit trailers and one audit line per write", async () => {
    const res = await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: { ...headers("audit-zeta-1"), "x-request-id": "req-audit-1" },
      payload: team("zeta"),
    });
    expect(res.statusCode).toBe(201);
    const clone = await makeTempDir("berth-audit-");
    try {
      await git(["clone", "--quiet", remote.url, clone]);
      const trailers = await git(
        ["log", "-1", "--format=%(trailers:only,unfold)", readAnswer(res, writeResponse).revision],
        {
          cwd: clone,
        },
      );
      expect(trailers.trim().split("\n")).toEqual([
        "Berth-Requested-By: developer",
        "Berth-Request-Id: req-audit-1",
        "Berth-Action: create",
        "Berth-Team: zeta",
        "Berth-Idempotency-Key: audit-zeta-1",
        expect.stringMatching(/^Berth-Request-Fingerprint: sha256:[A-Za-z0-9_-]{43}$/),
      ]);
      // docs/operations.md: who changed a team.
      const who = await git(
        [
          "log",
          "--format=%(trailers:key=Berth-Requested-By,valueonly)%(trailers:key=Berth-Action,valueonly)",
          "--",
          "teams/zeta",
        ],
        { cwd: clone },
      );
      expect(who.trim().split("\n").filter(Boolean)).toEqual(["developer", "create"]);
    } finally {
      await rm(clone, { recursive: true, force: true });
    }
    await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: { ...headers(), "x-request-id": "req-audit-2" },
      payload: team("zeta"),
    });
    await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: { authorization: "Bearer wrong-token-wrong-token", "x-request-id": "req-audit-3" },
      payload: team("eta"),
    });
    const audits = berth.logEntries<{ audit?: Record<string, unknown>; reqId?: string }>().filter((l) => l.audit);
    const byRequest = (id: string) => audits.filter((a) => a.audit!.requestId === id).map((a) => a.audit);
    expect(byRequest("req-audit-1")).toEqual([
      {
        principal: "developer",
        onBehalfOf: null,
        action: "create",
        team: "zeta",
        rollout: null,
        requestId: "req-audit-1",
        idempotencyKey: "audit-zeta-1",
        revision: readAnswer(res, writeResponse).revision,
        pullRequest: null,
        outcome: "committed",
        status: 201,
        problem: null,
      },
    ]);
    expect(byRequest("req-audit-2")).toEqual([
      expect.objectContaining({
        team: "zeta",
        outcome: "refused",
        status: 409,
        problem: "team-exists",
        revision: null,
      }),
    ]);
    expect(byRequest("req-audit-3")).toEqual([
      expect.objectContaining({
        principal: null,
        team: null,
        outcome: "refused",
        status: 401,
        problem: "unauthorized",
      }),
    ]);
  });
});
