/**
 * Berth's API as its own process, started the way the container starts it (apps/api/src/main.ts, run from
 * sources under tsx's loader in one node process), so a test can kill it with SIGKILL mid-request.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { DEV_TOKEN, REPO_ROOT, writeConfigFile } from "./berth.js";

export interface BerthProcess {
  url: string;
  pid: number;
  /** Every stdout/stderr line so far. */
  output: string[];
  /** SIGKILL, then waits for the process to be gone. */
  kill(): Promise<void>;
}

export async function startBerthProcess(options: {
  remoteUrl: string;
  workDir: string;
  configDir: string;
  api?: Record<string, unknown>;
  timeoutMs?: number;
}): Promise<BerthProcess> {
  const configFile = await writeConfigFile(options.configDir, options.api ?? {});
  const child: ChildProcess = spawn(
    process.execPath,
    ["--import", "tsx", join(REPO_ROOT, "apps", "api", "src", "main.ts")],
    {
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        TSX_TSCONFIG_PATH: join(REPO_ROOT, "apps", "api", "tsconfig.json"),
        BERTH_CONFIG_FILE: configFile,
        BERTH_GIT_URL: options.remoteUrl,
        BERTH_GIT_WORKDIR: options.workDir,
        BERTH_AUTH_MODE: "dev",
        BERTH_DEV_TOKEN: DEV_TOKEN,
        BERTH_HOST: "127.0.0.1",
        BERTH_PORT: "0",
        BERTH_METRICS_PORT: "0",
        BERTH_LOG_LEVEL: "info",
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const output: string[] = [];
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(
          new Error(`berth did not start within ${options.timeoutMs ?? 120_000} ms:\n${output.join("").slice(-3000)}`),
        ),
      options.timeoutMs ?? 120_000,
    );
    const onLine = (chunk: Buffer) => {
      for (const line of chunk.toString("utf8").split("\n")) {
        if (!line) continue;
        output.push(`${line}\n`);
        const address = /"address":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(line)?.[1];
        if (address && line.includes("berth api listening")) {
          clearTimeout(timer);
          resolve(address);
        }
      }
    };
    child.stdout!.on("data", onLine);
    child.stderr!.on("data", onLine);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`berth exited (${code}) before listening:\n${output.join("").slice(-3000)}`));
    });
  });
  return {
    url,
    pid: child.pid!,
    output,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}
