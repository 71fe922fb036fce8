/**
 * kill -9 with idempotency keys: the API process is killed (SIGKILL) while requests stream in, right after
 * one of its pushes lands (a post-receive hook tells the test), so some requests are committed and
 * answered, some committed but never answered, some never committed. Restarted on the same clone, every
 * request is retried with its key. Each must end with exactly one commit for its team and its original
 * outcome (the same status and revision for the answered ones).
 */
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { deleteResponse, writeResponse } from "@berth/api-contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN } from "../support/berth.js";
import { readAnswer, readProblem } from "../support/contract.js";
import { startBerthProcess, type BerthProcess } from "../support/berth-process.js";
import { createBareRepo, inspectRemote, makeTempDir, type BareRepo } from "../support/git-remotes.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const ROUNDS = 3;
const REQUESTS = 24;
/** Requests in flight at once: enough to fill batches, few enough that the kill lands mid-stream. */
const CONCURRENCY = 4;
/** The kill comes as this push of the round lands: some requests answered before, some pending, some unsent. */
const KILL_AT_PUSH = 2;

interface Attempt {
  name: string;
  key: string;
  method: "POST" | "PUT" | "DELETE";
  path: string;
  body?: string;
  /** The answer before the kill, if one arrived. */
  answered?: { status: number; revision: string };
}

async function send(
  url: string,
  a: Attempt,
): Promise<{ status: number; json: { revision?: string; [field: string]: unknown }; replayed: boolean }> {
  const res = await fetch(`${url}${a.path}`, {
    method: a.method,
    headers: {
      authorization: `Bearer ${DEV_TOKEN}`,
      "content-type": "application/json",
      "idempotency-key": a.key,
      connection: "close",
    },
    body: a.body,
  });
  return {
    status: res.status,
    // A write's answer (a DELETE's: deleteResponse), or a problem.
    json: !res.ok
      ? await readProblem(res)
      : a.method === "DELETE"
        ? await readAnswer(res, deleteResponse)
        : await readAnswer(res, writeResponse),
    replayed: res.headers.get("idempotent-replayed") === "true",
  };
}

describe("kill -9 under load, retried with idempotency keys", () => {
  let remote: BareRepo;
  let tmp: string;
  let proc: BerthProcess | undefined;
  const figures: string[] = [];

  let pushLog: string;
  const pushes = async () => (await readFile(pushLog, "utf8").catch(() => "")).split("\n").filter(Boolean).length;
  beforeAll(async () => {
    remote = await createBareRepo();
    tmp = await makeTempDir("berth-kill9-");
    pushLog = join(tmp, "pushes.log");
    await writeFile(
      join(remote.dir, "hooks", "post-receive"),
      `#!/bin/sh\ncat >/dev/null\necho pushed >> ${pushLog}\n`,
      { mode: 0o755 },
    );
  });
  afterAll(async () => {
    await proc?.kill();
    await remote?.remove();
    await rm(tmp, { recursive: true, force: true });
    if (figures.length) process.stdout.write(`kill -9: ${figures.join("; ")}\n`);
  });

  const start = () =>
    startBerthProcess({
      remoteUrl: remote.url,
      workDir: join(tmp, "clone"),
      configDir: tmp,
      api: { rateLimit: { reads: 100_000, writes: 100_000, unauthenticated: 100_000 } },
    });

  it("ends every request with one commit and its original outcome", { timeout: 900_000 }, async () => {
    const actions: Array<{ subject: (name: string) => string; make: (round: number, i: number) => Attempt }> = [
      {
        subject: (name) => `berth: onboard team ${name}`,
        make: (round, i) => {
          const name = `k9-r${round}-t${i}`;
          return {
            name,
            key: `create-${name}`,
            method: "POST",
            path: "/v1/teams",
            body: JSON.stringify({ name, owners: [OWNER], environments: ["dev", "prod"] }),
          };
        },
      },
      {
        subject: (name) => `berth: update team ${name}`,
        make: (_round, i) => {
          const name = `k9-r0-t${i}`;
          return {
            name,
            key: `update-${name}`,
            method: "PUT",
            path: `/v1/teams/${name}`,
            body: JSON.stringify({ description: `updated ${i}`, owners: [OWNER], environments: ["dev"] }),
          };
        },
      },
      {
        subject: (name) => `berth: offboard team ${name}`,
        make: (_round, i) => {
          const name = `k9-r0-t${i}`;
          return { name, key: `delete-${name}`, method: "DELETE", path: `/v1/teams/${name}` };
        },
      },
    ];
    let unansweredButCommitted = 0;
    let unanswered = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const action = actions[round]!;
      const attempts = Array.from({ length: REQUESTS }, (_, i) => action.make(round, i));
      proc = await start();
      const url = proc.url;
      const killAt = (await pushes()) + KILL_AT_PUSH;
      let killed: Promise<void> | undefined;
      const victim = proc;
      // Watch the remote's push log; the moment the chosen push lands, kill the process that made it.
      const watcher = (async () => {
        while (!killed) {
          if ((await pushes()) >= killAt) killed = victim.kill();
          else await new Promise((r) => setTimeout(r, 5));
        }
      })();
      // A stream of requests, CONCURRENCY at a time, until the process is gone.
      let next = 0;
      const worker = async () => {
        while (next < attempts.length && !killed) {
          const a = attempts[next++]!;
          try {
            const r = await send(url, a);
            if (r.status < 500 && r.json.revision) a.answered = { status: r.status, revision: r.json.revision };
          } catch {
            // Connection refused or reset by the kill: this request has no answer.
          }
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      killed ??= victim.kill();
      await watcher;
      await killed;

      // Restart on the same clone (stale locks of the killed git, if any, are cleared) and retry everything.
      proc = await start();
      const restarted = proc;
      let retryNext = 0;
      const retry = async () => {
        while (retryNext < attempts.length) {
          const a = attempts[retryNext++]!;
          const r = await send(restarted.url, a);
          expect(r.status, `${a.method} ${a.path}`).toBe(a.method === "POST" ? 201 : 200);
          if (a.answered) {
            expect(r.json.revision, `${a.key}: the original revision`).toBe(a.answered.revision);
            expect(r.replayed, a.key).toBe(true);
          } else {
            unanswered += 1;
            if (r.replayed) unansweredButCommitted += 1;
          }
          // And once more: still the same answer.
          expect((await send(restarted.url, a)).json.revision).toBe(r.json.revision);
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, retry));
      await proc.kill();
      proc = undefined;

      const state = await inspectRemote(remote.url);
      for (const a of attempts) {
        const commits = state.commits.filter((c) => c.subject === action.subject(a.name));
        expect(commits.length, `${a.key}: commits for ${a.name}`).toBe(1);
        expect(commits[0]!.trailers["Berth-Idempotency-Key"]).toBe(a.key);
      }
    }
    figures.push(
      `${ROUNDS} rounds of ${REQUESTS} requests; ${unanswered} unanswered at the kill, ${unansweredButCommitted} of them committed before it (answered on retry from the trailers)`,
    );
    // The point of the test: the kill did leave requests without an answer.
    expect(unanswered).toBeGreaterThan(0);
  });
});
