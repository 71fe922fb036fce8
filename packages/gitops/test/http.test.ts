import { readdir, readFile } from "node:fs/promises";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GitOpsError } from "../src/index.js";
import { pushForeignCommit, startForeignPusher } from "../../../tests/support/foreign-pusher.js";
import { startGitHttpServer, type GitHttpServer } from "../../../tests/support/git-http-server.js";
import { basicAuthEnv, type BareRepo, createBareRepo, inspectRemote } from "../../../tests/support/git-remotes.js";
import { change, openRepo, origin } from "./helpers.js";
import { captureLogs } from "../../../tests/support/logs.js";

const USER = "flux-writer";
const TOKEN = "tok_9f8e7d6c5b4a3210SECRET";
const WRONG = "tok_WRONG_0123456789abcdef";

/** Every file under a folder, concatenated: to prove no secret was written to disk. */
async function allText(dir: string): Promise<string> {
  let out = "";
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    out += await readFile(join(e.parentPath, e.name), "latin1");
  }
  return out;
}

describe("FluxRepo over smart HTTP with Basic auth", () => {
  let server: GitHttpServer;
  let root: string;
  let first: BareRepo;
  const authEnv = basicAuthEnv(USER, TOKEN);

  beforeAll(async () => {
    first = await createBareRepo();
    root = dirname(first.dir);
    server = await startGitHttpServer({ root, username: USER, password: TOKEN });
  });
  afterAll(async () => {
    await server?.stop();
    await first?.remove();
  });

  async function newRemote(name: string) {
    await createBareRepo(join(root, name));
    return server.repoUrl(name);
  }

  it("commits over HTTP with a token that never reaches disk, logs or argv", async () => {
    const url = await newRemote("a.git");
    // The apps' logger (pino), at debug, into memory: every line the writer logs is checked for the token.
    const { logger, lines: logs } = captureLogs({ level: "debug" });
    const { repo, workDir, cleanup } = await openRepo(url, {
      auth: { kind: "token", token: TOKEN, username: USER },
      logger,
    });
    try {
      await repo.ping();
      const r = await repo.transact(
        async () => change("berth: onboard team h", { "teams/h/team.yaml": "name: h\n" }),
        origin,
      );
      expect(r.committed).toBe(true);
      const concurrent = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          repo.transact(async () => change(`w${i}`, { [`w/${i}.txt`]: `${i}` }), origin),
        ),
      );
      const state = await inspectRemote(url, "main", authEnv);
      expect(state.files.get("teams/h/team.yaml")).toBe("name: h\n");
      for (let i = 0; i < 10; i++) expect(state.files.get(`w/${i}.txt`)).toBe(`${i}`);
      expect(state.head).toBe(concurrent.map((c) => c.revision).find((rev) => rev === state.head));
      const basic = Buffer.from(`${USER}:${TOKEN}`).toString("base64");
      const disk = await allText(workDir);
      expect(disk).not.toContain(TOKEN);
      expect(disk).not.toContain(basic);
      expect(await readFile(join(workDir, "config"), "utf8")).toContain(`url = ${url}`);
      const logText = logs.join("\n");
      expect(logs.length).toBeGreaterThan(0);
      expect(logText).not.toContain(TOKEN);
      expect(logText).not.toContain(basic);
    } finally {
      await cleanup();
    }
  });

  it("fails fast with an auth error, without the token, when the token is wrong or missing", async () => {
    const url = await newRemote("b.git");
    const basic = Buffer.from(`${USER}:${WRONG}`).toString("base64");
    for (const auth of [{ kind: "token" as const, token: WRONG, username: USER }, { kind: "none" as const }]) {
      const { repo, cleanup } = await openRepo(url, { auth, timeoutMs: 20_000 });
      try {
        for (const op of [
          () => repo.ping(),
          () => repo.transact(async () => change("x", { "x.txt": "x" }), origin),
          () => repo.snapshot(),
        ]) {
          const started = Date.now();
          const err = await op().catch((e: unknown) => e);
          expect(Date.now() - started).toBeLessThan(5_000);
          expect(err).toBeInstanceOf(GitOpsError);
          expect((err as GitOpsError).kind).toBe("auth");
          const text = `${(err as Error).message}\n${(err as Error).stack}\n${JSON.stringify(err)}`;
          expect(text).not.toContain(WRONG);
          expect(text).not.toContain(basic);
        }
      } finally {
        await cleanup();
      }
    }
    expect(server.stats.unauthorized).toBeGreaterThan(0);
    expect((await inspectRemote(url, "main", authEnv)).head).toBeUndefined();
  });

  it("gives up with a timeout error when the remote stops answering", async () => {
    const sockets: Socket[] = [];
    const blackhole = createServer((s) => sockets.push(s)); // accepts, never answers
    await new Promise<void>((r) => blackhole.listen(0, "127.0.0.1", () => r()));
    const { port } = blackhole.address() as AddressInfo;
    const { repo, cleanup } = await openRepo(`http://127.0.0.1:${port}/flux.git`, {
      auth: { kind: "token", token: TOKEN },
      timeoutMs: 1_500,
    });
    try {
      const started = Date.now();
      const err = await repo.ping().catch((e: unknown) => e);
      expect(Date.now() - started).toBeLessThan(6_000);
      expect(err).toBeInstanceOf(GitOpsError);
      expect((err as GitOpsError).kind).toBe("timeout");
      expect((err as Error).message).not.toContain(TOKEN);
    } finally {
      await cleanup();
      for (const s of sockets) s.destroy();
      await new Promise((r) => blackhole.close(r));
    }
  });

  it("keeps every foreign commit while transactions race another bot over HTTP", async () => {
    const url = await newRemote("c.git");
    const { repo, cleanup } = await openRepo(url, { auth: { kind: "token", token: TOKEN, username: USER } });
    // Over the in-process CGI server on a loaded 2-core box one push round trip takes 100-500 ms: keep the bot
    // busy but not faster than that (real image automation pushes every few minutes at most).
    const pusher = await startForeignPusher({ url, env: authEnv, intervalMs: 1000, pauseFactor: 2 });
    try {
      while (pusher.commits < 2) await new Promise((r) => setTimeout(r, 20));
      let raced = false;
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          repo.transact(async () => {
            await new Promise((r) => setTimeout(r, 10));
            if (i === 5 && !raced) {
              // Make sure at least one push loses the race, whatever the bot's timing.
              raced = true;
              await pushForeignCommit({
                url,
                env: authEnv,
                path: "image-automation/extra.txt",
                content: "x",
                subject: "image-automation: extra",
              });
            }
            return change(`berth: write ${i}`, { [`teams/t${i}.yaml`]: `${i}\n` });
          }, origin),
        ),
      );
      const foreign = await pusher.stop();
      const state = await inspectRemote(url, "main", authEnv);
      for (let i = 0; i < 20; i++) expect(state.files.get(`teams/t${i}.yaml`)).toBe(`${i}\n`);
      for (const f of foreign.files) expect(state.files.has(f)).toBe(true);
      const subjects = state.commits.map((c) => c.subject);
      for (let i = 0; i < 20; i++) expect(subjects.filter((s) => s === `berth: write ${i}`)).toHaveLength(1);
      expect(subjects.filter((s) => s.startsWith("image-automation:"))).toHaveLength(foreign.commits + 1);
      expect(state.files.get("image-automation/extra.txt")).toBe("x");
      expect(repo.stats().pushRejections).toBeGreaterThan(0);
      expect(new Set(results.map((r) => r.revision)).size).toBe(20);
    } finally {
      await pusher.stop().catch(() => {});
      await cleanup();
    }
  });
});
