/**
 * POST /v1/forge/events, the forge's webhook in pull-request mode (ADR 0030): taken only when signed with the
 * configured secret (X-Hub-Signature-256, as GitHub, Gitea and Forgejo sign), parsed strictly after the signature
 * check, and acted on: a rollout wave's pull request drives that rollout now, a team's drops its cached review.
 * Without a secret the route does not exist. tests/gitea/pull-request-mode.test.ts has real Gitea deliver them.
 */
import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DEV_TOKEN, inPullRequestMode, startBerth, type RunningBerth } from "../support/berth.js";
import { readProblem } from "../support/contract.js";
import { createBareRepo, type BareRepo } from "../support/git-remotes.js";

const SECRET = "forge-webhook-secret-5f1c2a9d0b";
const ROLLOUT = "ro-20261204-160000-a1b2c3";

const sign = (body: string, secret = SECRET) => `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
/** A pull request event as Gitea and GitHub send it (what Berth reads of it, and some of the rest). */
const pullRequestEvent = (head: string, base = "main") =>
  JSON.stringify({
    action: "closed",
    number: 7,
    pull_request: { number: 7, merged: true, head: { ref: head, sha: "a".repeat(40) }, base: { ref: base } },
    repository: { full_name: "platform/fleet" },
  });

describe("the forge's webhook (pull-request mode)", () => {
  let remote: BareRepo;
  let berth: RunningBerth;

  const deliver = (body: string, headers: Record<string, string> = { "x-hub-signature-256": sign(body) }) =>
    berth.server.inject({
      method: "POST",
      url: "/v1/forge/events",
      headers: { "content-type": "application/json", "x-gitea-event": "pull_request", ...headers },
      payload: body,
    });
  /** Berth in pull-request mode on `remote`; its forge is never called by these tests. */
  const start = (webhookSecret?: string) =>
    startBerth({
      remoteUrl: remote.url,
      startEngine: false,
      env: {
        BERTH_FORGE_TOKEN: "forge-token-never-used",
        ...(webhookSecret ? { BERTH_FORGE_WEBHOOK_SECRET: webhookSecret } : {}),
      },
      config: inPullRequestMode({ forge: "gitea", url: "http://127.0.0.1:9", owner: "o", repository: "r" }),
    });

  beforeAll(async () => {
    remote = await createBareRepo();
    berth = await start(SECRET);
  });
  afterAll(async () => {
    await berth?.stop();
    await remote?.remove();
  });

  it("refuses an event unsigned, signed with another secret, or whose body is not the one signed (401), acting on none", async () => {
    const kick = vi.spyOn(berth.services.engine, "kick");
    const body = pullRequestEvent(`berth/rollout/${ROLLOUT}-first`);
    const tampered = body.replace("platform/fleet", "platform/other");
    for (const headers of <Array<Record<string, string>>>[
      {},
      { "x-hub-signature-256": sign(body, "another-secret-of-some-length") },
      { "x-hub-signature-256": sign(body).replace("sha256=", "sha1=") },
      { "x-hub-signature-256": sign(body).slice(0, -2) },
    ]) {
      const res = await deliver(body, headers);
      expect(res.statusCode, res.body).toBe(401);
      expect(readProblem(res).detail).toMatch(/x-hub-signature-256/);
    }
    expect((await deliver(tampered, { "x-hub-signature-256": sign(body) })).statusCode).toBe(401);
    expect(kick).not.toHaveBeenCalled();
    expect(berth.logs.join("")).not.toContain(SECRET);
    kick.mockRestore();
  });

  it("a signed event of a rollout wave's pull request drives that rollout now; a team's is taken too", async () => {
    const kick = vi.spyOn(berth.services.engine, "kick").mockImplementation(() => undefined);
    const from = berth.logs.length;
    const wave = await deliver(pullRequestEvent(`berth/rollout/${ROLLOUT}-canary-2`));
    expect(wave.statusCode, wave.body).toBe(204);
    expect(kick).toHaveBeenCalledExactlyOnceWith(ROLLOUT);
    const team = await deliver(pullRequestEvent("berth/team/payments"));
    expect(team.statusCode, team.body).toBe(204);
    expect(kick).toHaveBeenCalledTimes(1);
    expect(berth.logEntries<{ msg: string; team?: string; rollout?: string }>(from)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ msg: "pull request changed", rollout: ROLLOUT }),
        expect.objectContaining({ msg: "pull request changed", team: "payments" }),
      ]),
    );
    kick.mockRestore();
  });

  it("answers other events, and pull requests into another branch or from a branch not Berth's, without effect", async () => {
    const kick = vi.spyOn(berth.services.engine, "kick");
    const from = berth.logs.length;
    const push = JSON.stringify({ ref: "refs/heads/main", after: "b".repeat(40) });
    for (const body of [
      push,
      pullRequestEvent(`berth/rollout/${ROLLOUT}-first`, "release"),
      pullRequestEvent("feature/readme"),
      pullRequestEvent("berth/rollout/not-a-rollout-id-first"),
    ]) {
      const res = await deliver(body);
      expect(res.statusCode, res.body).toBe(204);
    }
    expect(kick).not.toHaveBeenCalled();
    expect(berth.logEntries<{ msg: string }>(from).map((l) => l.msg)).not.toContain("pull request changed");
    kick.mockRestore();
  });

  it("a signed body that is not strict JSON gets a 400 problem", async () => {
    const duplicate = '{"pull_request":{"number":1},"pull_request":{"number":2}}';
    const res = await deliver(duplicate);
    expect(res.statusCode, res.body).toBe(400);
    expect(readProblem(res).detail).toMatch(/duplicate key/);
  });

  it("is not there without a webhook secret (404), nor in direct mode", async () => {
    const withoutSecret = await start();
    const direct = await startBerth({ remoteUrl: remote.url, startEngine: false });
    try {
      for (const api of [withoutSecret, direct]) {
        const body = pullRequestEvent("berth/team/payments");
        const res = await api.server.inject({
          method: "POST",
          url: "/v1/forge/events",
          headers: { "content-type": "application/json", "x-hub-signature-256": sign(body) },
          payload: body,
        });
        expect(res.statusCode, res.body).toBe(404);
      }
    } finally {
      await Promise.all([withoutSecret.stop(), direct.stop()]);
    }
  });

  it("needs no bearer token, and ignores one", async () => {
    const body = pullRequestEvent("berth/team/payments");
    const res = await deliver(body, { "x-hub-signature-256": sign(body), authorization: `Bearer ${DEV_TOKEN}x` });
    expect(res.statusCode, res.body).toBe(204);
  });
});
