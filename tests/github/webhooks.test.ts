/**
 * GitHub's webhook to Berth (pull-request mode, POST /v1/forge/events): every pull_request and pull_request_review
 * payload of @octokit/webhooks-examples (GitHub's own example deliveries, as its documentation publishes them), its
 * branch names set to a team's, signed as GitHub signs, with GitHub's headers, is taken: 204, and Berth drops that
 * team's cached review. GitHub's push payloads are answered 204 and ignored. tests/e2e/forge-events.test.ts checks
 * the signature and what each event does.
 */
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inPullRequestMode, startBerth, type RunningBerth } from "../support/berth.js";
import { createBareRepo, type BareRepo } from "../support/git-remotes.js";

const SECRET = "github-webhook-secret-7a1d3e9c55";
type Payload = { pull_request?: { head: { ref: string }; base: { ref: string } } } & Record<string, unknown>;
const examples = JSON.parse(
  readFileSync(
    join(
      dirname(createRequire(import.meta.url).resolve("@octokit/webhooks-examples/package.json")),
      "api.github.com",
      "index.json",
    ),
    "utf8",
  ),
) as Array<{ name: string; examples: Payload[] }>;
const of = (name: string) => examples.find((e) => e.name === name)?.examples ?? [];

describe("GitHub's own webhook payloads reach Berth's forge events route", () => {
  let remote: BareRepo;
  let berth: RunningBerth;
  const deliver = (event: string, body: string) =>
    berth.server.inject({
      method: "POST",
      url: "/v1/forge/events",
      headers: {
        "content-type": "application/json",
        "user-agent": "GitHub-Hookshot/a1b2c3d",
        "x-github-event": event,
        "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
        "x-hub-signature-256": `sha256=${createHmac("sha256", SECRET).update(body).digest("hex")}`,
      },
      payload: body,
    });

  beforeAll(async () => {
    remote = await createBareRepo();
    berth = await startBerth({
      remoteUrl: remote.url,
      startEngine: false,
      env: { BERTH_FORGE_TOKEN: "forge-token-never-used", BERTH_FORGE_WEBHOOK_SECRET: SECRET },
      config: inPullRequestMode({ forge: "github", url: "http://127.0.0.1:9", owner: "o", repository: "r" }),
    });
  });
  afterAll(async () => {
    await berth?.stop();
    await remote?.remove();
  });

  it("takes every pull_request and pull_request_review example as a change of the team's pull request", async () => {
    const payloads = [...of("pull_request"), ...of("pull_request_review")].map((p) => ({
      ...p,
      pull_request: {
        ...p.pull_request!,
        head: { ...p.pull_request!.head, ref: "berth/team/payments" },
        base: { ...p.pull_request!.base, ref: "main" },
      },
    }));
    expect(payloads.length).toBeGreaterThanOrEqual(30);
    for (const [i, payload] of payloads.entries()) {
      const from = berth.logs.length;
      const res = await deliver(
        i < of("pull_request").length ? "pull_request" : "pull_request_review",
        JSON.stringify(payload),
      );
      expect(res.statusCode, `${String((payload as Payload).action)}: ${res.body}`).toBe(204);
      expect(berth.logEntries<{ msg: string; team?: string }>(from)).toEqual(
        expect.arrayContaining([expect.objectContaining({ msg: "pull request changed", team: "payments" })]),
      );
    }
  });

  it("answers GitHub's push examples 204 and acts on none", async () => {
    const from = berth.logs.length;
    for (const payload of of("push")) expect((await deliver("push", JSON.stringify(payload))).statusCode).toBe(204);
    expect(of("push").length).toBeGreaterThan(0);
    expect(berth.logEntries<{ msg: string }>(from).map((l) => l.msg)).not.toContain("pull request changed");
  });
});
