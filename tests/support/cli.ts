import { spawn } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLI_ENTRY } from "./build.js";

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The built `berth` CLI as a person runs it: its own process, its own HOME and CLI config (so nothing
 * touches the developer's), no colours unless asked (FORCE_COLOR), stdin from `input` or closed.
 */
export class CliHarness {
  private constructor(
    readonly home: string,
    readonly baseEnv: Record<string, string>,
  ) {}

  static async create(env: Record<string, string> = {}): Promise<CliHarness> {
    const home = await mkdtemp(join(tmpdir(), "berth-cli-home-"));
    return new CliHarness(home, {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      BERTH_CLI_CONFIG: join(home, "config.yaml"),
      LANG: "C.UTF-8",
      NO_COLOR: "1",
      ...env,
    });
  }

  get configFile(): string {
    return this.baseEnv.BERTH_CLI_CONFIG!;
  }

  run(
    args: string[],
    options: { input?: string; env?: Record<string, string>; cwd?: string; timeoutMs?: number } = {},
  ): Promise<CliResult> {
    return new Promise((resolve, reject) => {
      const env = { ...this.baseEnv, ...options.env };
      for (const [k, v] of Object.entries(env)) if (v === "") delete env[k];
      const child = spawn(process.execPath, [CLI_ENTRY, ...args], {
        cwd: options.cwd ?? this.home,
        env,
        stdio: ["pipe", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d) => (stdout += String(d)));
      child.stderr.on("data", (d) => (stderr += String(d)));
      const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 60_000);
      child.on("error", reject);
      child.on("close", (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
      child.stdin.end(options.input ?? "");
    });
  }
}
