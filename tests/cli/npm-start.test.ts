/**
 * The README's `npm start`: it builds the API and the CLI, starts the API, and prints the curl, the
 * `berth` commands to try and the /ui URL. This test runs it (with its local state in a temp folder) and
 * then runs every printed line in a shell, as a person pastes them: each must work as printed.
 */
// needs: dist
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/berth.js";
import { ensureBuilt } from "../support/build.js";
import { freePort } from "../support/ports.js";

/** Runs `script` in bash with `env`; resolves with the exit code and output. */
function bash(
  script: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["--norc", "--noprofile", "-c", script], { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += String(d)));
    child.stderr.on("data", (d) => (stderr += String(d)));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("npm start prints commands that work as printed", () => {
  let start: ChildProcess;
  let output = "";
  let home: string;

  beforeAll(async () => {
    await ensureBuilt();
    home = await mkdtemp(join(tmpdir(), "berth-npm-start-"));
    const port = await freePort();
    start = spawn(process.execPath, [join(REPO_ROOT, "scripts", "run.mjs"), "start"], {
      cwd: REPO_ROOT,
      // As on a fresh shell: none of the caller's BERTH_* settings, local state in a temp folder.
      env: {
        ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("BERTH_"))),
        BERTH_STATE_DIR: join(home, "state"),
        BERTH_PORT: String(port),
        BERTH_METRICS_PORT: "0",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    start.stdout!.on("data", (d) => (output += String(d)));
    start.stderr!.on("data", (d) => (output += String(d)));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`npm start printed no CLI commands within 5 minutes:\n${output}`)),
        300_000,
      );
      const check = () => {
        if (/The development token .* is in /.test(output)) {
          clearTimeout(timer);
          resolve();
        }
      };
      start.stdout!.on("data", check);
      start.once("exit", (code) => reject(new Error(`npm start exited with ${code}:\n${output}`)));
    });
  }, 600_000);

  afterAll(async () => {
    if (start && start.exitCode === null) {
      const exited = new Promise((resolve) => start.once("exit", resolve));
      start.kill("SIGTERM");
      await exited;
    }
  });

  const printed = () => {
    const lines = output.split("\n");
    const curl = lines.find((l) => l.trim().startsWith("curl "))!.trim();
    const from = lines.findIndex((l) => l.startsWith("Or with the berth CLI"));
    const commands = lines
      .slice(from + 1)
      .filter((l) => l.startsWith("  "))
      .map((l) => l.trim());
    const ui = /Status page: (\S+)/.exec(output)![1]!;
    return { curl, commands, ui };
  };

  it("warns at start of each layout flux/ no longer installs that the embedded default is on, with its end date", () => {
    // infra/local/berth.yaml keeps the defaults: the fleet's GitRepository and the cluster indexes.
    const warnings = output
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as { level: number; msg: string })
      .filter((l) => l.level === 40 && / is .* until \d{4}-\d{2}-\d{2}/.test(l.msg))
      .map((l) => l.msg.split(" ").slice(0, 3).join(" "));
    expect(warnings).toEqual([
      "platform.fluxSource.kind is GitRepository",
      "platform.layout.appliedBy is cluster-index",
    ]);
  });

  it("prints the curl, the berth commands and the /ui URL", () => {
    const { curl, commands, ui } = printed();
    expect(curl).toMatch(/^curl -sS -X POST http:\/\/127\.0\.0\.1:\d+\/v1\/teams /);
    expect(commands[0]).toMatch(/^export PATH=\S+\/state\/bin:"\$PATH"$/);
    expect(commands.slice(1).map((c) => c.split(" ").slice(0, 2).join(" "))).toEqual([
      "berth login",
      "berth diff",
      "berth apply",
      "berth get",
      "berth status",
    ]);
    expect(ui).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/ui$/);
  });

  it("runs every printed berth command as printed, in one shell", async () => {
    const { commands } = printed();
    // One shell, like a terminal: the export applies to the lines after it. Each line's exit code is echoed.
    const label = (c: string) => (c.startsWith("export") ? "export" : c.split(" ").slice(0, 2).join(" "));
    const script = commands.map((c) => `${c}\necho "EXIT[${label(c)}]=$?"`).join("\n");
    const result = await bash(script, { PATH: process.env.PATH, HOME: home, LANG: "C.UTF-8" });
    const codes = Object.fromEntries(
      [...result.stdout.matchAll(/^EXIT\[(.+)\]=(\d+)$/gm)].map((m) => [m[1], Number(m[2])]),
    );
    expect(codes, `${result.stdout}\n${result.stderr}`).toEqual({
      export: 0,
      "berth login": 0,
      // diff before the team exists shows every file it would add: exit code 1 means "there is a difference".
      "berth diff": 1,
      "berth apply": 0,
      "berth get": 0,
      "berth status": 0,
    });
    expect(result.stdout).toContain("Logged in to http://127.0.0.1:");
    expect(result.stdout).toContain("+++ b/teams/payments/base/team.yaml");
    expect(result.stdout).toMatch(/^team\/payments created \(commit [0-9a-f]{7}/m);
    expect(result.stdout).toMatch(/^payments\s+dev\s+0\/1\s+Not observed\s+Payments: card and SEPA processing$/m);
    expect(result.stdout).toContain("Team payments · commit");
  }, 120_000);

  it("serves the status page at the printed URL", async () => {
    const { ui } = printed();
    const page = await fetch(ui, { redirect: "manual" });
    expect(page.status).toBe(303);
    expect(page.headers.get("location")).toBe("/ui/sign-in?next=%2Fui");
    expect((await fetch(`${ui}/sign-in`)).status).toBe(200);
  });
});
