/**
 * The built `berth` CLI, as a process, against servers on 127.0.0.1 that misbehave: one that accepts and
 * never answers (every command ends by itself: `get` after --request-timeout, the watches after their
 * --timeout, not after a request's own 30 s), one whose status and rollout answers carry terminal escape
 * sequences (printed as text), and a --server URL holding a password (refused, never echoed).
 */
// needs: dist
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../support/build.js";
import { CliHarness } from "../support/cli.js";
import { LoopbackServers } from "../support/loopback-servers.js";

const ESC = "\u001b";
// eslint-disable-next-line no-control-regex -- the point: C0 and C1 control characters other than tab and newline, which an escaped answer must never print raw
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
const ROLLOUT_ID = "ro-20261124-101500-a1b2c3";

/** The harness kills a CLI still running after this: the commands below must have ended by themselves well before. */
const KILL_AFTER_MS = 20_000;
/** A watch that gives up after 3 s, polling each second. */
const WATCH_3S = ["--watch", "--timeout", "3s", "--interval", "1s"];

describe("berth against servers that misbehave", () => {
  let cli: CliHarness;
  let silent: string;
  let hostile: string;
  let waiting: string;
  let slowing: string;
  const servers = new LoopbackServers();
  const listen = (server: Parameters<LoopbackServers["listen"]>[0]) => servers.listen(server);

  beforeAll(async () => {
    await ensureBuilt();
    cli = await CliHarness.create();
    silent = await listen(createServer(() => {}));
    const halted = {
      apiVersion: "berth.dev/v1alpha1",
      kind: "Rollout",
      metadata: { name: ROLLOUT_ID },
      spec: {
        description: "",
        requestedBy: "alice",
        createdAt: "2026-11-24T10:15:00.000Z",
        target: { templateVersion: "v3" },
        selector: {},
        gate: { timeoutSeconds: 60 },
        waves: [{ name: "all", teams: ["payments"] }],
      },
      status: {
        phase: "Halted",
        wave: 0,
        waves: [
          {
            name: "all",
            phase: "Committed",
            committedAt: "2026-11-24T10:15:01.000Z",
            gateSince: "2026-11-24T10:15:01.000Z",
          },
        ],
        halt: {
          at: "2026-11-24T10:16:00.000Z",
          wave: "all",
          reason: "Failed",
          message: `payments failed${ESC}]0;owned${"\u0007"}`,
          teams: [
            {
              team: "payments",
              cluster: "aks-dev-weu",
              result: "failed",
              condition: "IdentityReady",
              reason: "AzureError",
              severity: "Error",
              message: `no access${ESC}[2J`,
            },
          ],
        },
        history: [{ at: "2026-11-24T10:15:00.000Z", event: "Created", by: "alice" }],
      },
    };
    const failedCluster = {
      cluster: "aks-dev-weu",
      environment: "dev",
      state: "reported",
      ready: false,
      stale: false,
      conditions: [
        {
          type: "IdentityReady",
          status: "False",
          reason: "AzureError",
          severity: "Error",
          message: `denied${ESC}[31m${ESC}[8mhidden`,
        },
        { type: "Ready", status: "False", reason: "Failed" },
      ],
    };
    hostile = await listen(
      createHttpServer((req, res) => {
        const json = (body: unknown) =>
          res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
        if (req.url === "/v1/teams/payments/status")
          return json({ team: "payments", revision: null, ready: false, clusters: [failedCluster] });
        if (req.url === `/v1/rollouts/${ROLLOUT_ID}`) return json({ rollout: halted, revision: null, progress: null });
        res
          .writeHead(404, { "content-type": "application/problem+json" })
          .end(JSON.stringify({ type: "about:blank", title: `Not found${ESC}[1A`, status: 404 }));
      }),
    );
    // Not a misbehaving server: one whose team and rollout are never done.
    const running = { ...halted, status: { ...halted.status, phase: "Running", halt: undefined } };
    const waitingCluster = {
      ...failedCluster,
      conditions: [
        {
          type: "IdentityReady",
          status: "False",
          reason: "AuthorizationFailed",
          severity: "Warning",
          message: "retrying",
        },
        { type: "Ready", status: "False", reason: "Waiting" },
      ],
    };
    const answerNeverDone = (req: IncomingMessage, res: ServerResponse) => {
      const json = (body: unknown) =>
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
      if (req.url === "/v1/teams/payments/status")
        return json({ team: "payments", revision: null, ready: false, clusters: [waitingCluster] });
      if (req.url === `/v1/rollouts/${ROLLOUT_ID}`) return json({ rollout: running, revision: null, progress: null });
      res.writeHead(404).end();
    };
    waiting = await listen(createHttpServer(answerNeverDone));
    // The same answers, but only to each path's first poll: every later one is held past the watch's --timeout.
    const polled = new Set<string>();
    slowing = await listen(
      createHttpServer((req, res) => {
        const url = req.url ?? "";
        if (polled.has(url)) return;
        polled.add(url);
        answerNeverDone(req, res);
      }),
    );
  }, 600_000);
  afterAll(async () => {
    await servers.close();
  });

  const berth = (server: string, args: string[]) =>
    cli.run(["--server", server, "--token", "test-token-0123456789", ...args], { timeoutMs: KILL_AFTER_MS });

  it("get ends after --request-timeout when the server never answers", async () => {
    const result = await berth(silent, ["--request-timeout", "2s", "get", "teams"]);
    expect(result.code).toBe(7);
    expect(result.stderr).toContain(`error: the Berth API at ${silent} gave no complete answer within 2s`);
  });

  it("status --watch ends at its --timeout, not at the end of a request that never returns", async () => {
    const result = await berth(silent, ["status", "payments", ...WATCH_3S]);
    expect(result.code).toBe(8);
    expect(result.stderr).toContain("error: timed out after 0:03 waiting for team payments to be Ready");
    expect(result.stderr).toContain(
      `  the last poll failed: the Berth API at ${silent} gave no complete answer within`,
    );
    expect(result.stderr).not.toContain("cannot read status");
  });

  it("the watches end at --timeout without a last poll that has no time left (no spurious error line)", async () => {
    const status = await berth(waiting, ["status", "payments", ...WATCH_3S]);
    expect(status.code).toBe(8);
    expect(status.stderr).toContain("error: timed out after 0:03 waiting for team payments to be Ready");
    expect(status.stderr).not.toContain("cannot read status");
    const rollout = await berth(waiting, ["rollout", "get", ROLLOUT_ID, ...WATCH_3S]);
    expect(rollout.code).toBe(8);
    expect(rollout.stderr).not.toContain("warning:");
  });

  it("a poll that the --timeout cuts short ends the watch as timed out, and the last answer stands", async () => {
    const status = await berth(slowing, ["status", "payments", ...WATCH_3S]);
    expect(status.code).toBe(8);
    expect(status.stderr).toContain(
      "error: timed out after 0:03 waiting for team payments to be Ready\n  aks-dev-weu: IdentityReady: AuthorizationFailed",
    );
    expect(status.stderr).not.toContain("cannot read status");
    expect(status.stderr).not.toContain("the last poll failed");
    const rollout = await berth(slowing, ["rollout", "get", ROLLOUT_ID, ...WATCH_3S]);
    expect(rollout.code).toBe(8);
    expect(rollout.stdout).toContain(`rollout/${ROLLOUT_ID}: Running`);
    expect(rollout.stderr).toBe(`timed out after 3s; the rollout goes on (berth rollout get ${ROLLOUT_ID})\n`);
  });

  it("rollout get --watch ends at its --timeout too", async () => {
    const result = await berth(silent, ["rollout", "get", ROLLOUT_ID, ...WATCH_3S]);
    expect(result.code).toBe(8);
    expect(result.stderr).toContain(`timed out after 3s; the rollout goes on (berth rollout get ${ROLLOUT_ID})`);
    expect(result.stderr).toContain(`the last poll failed: the Berth API at ${silent} gave no complete answer within`);
  });

  it("prints a condition message's escape sequences as text in status and status --watch", async () => {
    for (const args of [
      ["status", "payments"],
      ["status", "payments", "--watch", "--timeout", "5s"],
    ]) {
      const result = await berth(hostile, args);
      expect(`${result.stdout}${result.stderr}`).toContain("denied\\x1b[31m\\x1b[8mhidden");
      expect(result.stdout).not.toMatch(RAW_CONTROL);
      expect(result.stderr).not.toMatch(RAW_CONTROL);
    }
  });

  it("prints a rollout's halt report and a problem's title as text", async () => {
    const halted = await berth(hostile, ["rollout", "get", ROLLOUT_ID]);
    expect(halted.code).toBe(0);
    expect(halted.stdout).toContain("payments failed\\x1b]0;owned\\x07");
    expect(halted.stdout).toContain("no access\\x1b[2J");
    const missing = await berth(hostile, ["get", "team", "nobody"]);
    expect(missing.code).toBe(4);
    expect(missing.stderr).toContain("Not found\\x1b[1A");
    for (const out of [halted.stdout, halted.stderr, missing.stdout, missing.stderr])
      expect(out).not.toMatch(RAW_CONTROL);
  });

  it("refuses a --server URL that holds a password, and never prints it", async () => {
    const result = await cli.run(
      ["--server", "http://me:hunter2@127.0.0.1:9", "--token", "test-token-0123456789", "get", "teams"],
      { timeoutMs: KILL_AFTER_MS },
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--server: the server URL must not hold a user name or password");
    const login = await cli.run(["login", "--server", "http://me:hunter2@127.0.0.1:9", "--token", "x", "--no-verify"], {
      timeoutMs: KILL_AFTER_MS,
    });
    expect(login.code).toBe(2);
    for (const out of [result.stdout, result.stderr, login.stdout, login.stderr]) expect(out).not.toContain("hunter2");
  });
});
