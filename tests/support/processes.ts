import { spawn, type ChildProcess } from "node:child_process";
import { API_ENTRY, CONTROLLER_ENTRY } from "./build.js";

/**
 * Berth's apps started from their built entry points (`apps/*\/dist/main.js`, the contract the image
 * runs), as their own processes. Logs are kept for assertions and failure messages.
 */
export interface AppProcess {
  child: ChildProcess;
  logs: string[];
  stop(): Promise<void>;
}

function startProcess(entry: string, env: Record<string, string>): AppProcess {
  const child = spawn(process.execPath, [entry], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const logs: string[] = [];
  child.stdout!.on("data", (d) => logs.push(String(d)));
  child.stderr!.on("data", (d) => logs.push(String(d)));
  return {
    child,
    logs,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const force = setTimeout(() => child.kill("SIGKILL"), 10_000);
        child.once("exit", () => {
          clearTimeout(force);
          resolve();
        });
        child.kill("SIGTERM");
      }),
  };
}

/** The API (`apps/api/dist/main.js`) on a free port; resolves with its URL once it listens. */
export async function startApiProcess(env: Record<string, string>): Promise<AppProcess & { url: string }> {
  const app = startProcess(API_ENTRY, { BERTH_HOST: "127.0.0.1", BERTH_PORT: "0", BERTH_METRICS_PORT: "0", ...env });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the API did not start within 60 s:\n${app.logs.join("")}`)),
      60_000,
    );
    const check = () => {
      const line = app.logs.join("").match(/"address":"(http:\/\/[^"]+)"[^\n]*berth api listening/);
      if (line) {
        clearTimeout(timer);
        resolve(line[1]!);
      }
    };
    app.child.stdout!.on("data", check);
    app.child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the API exited with ${code}:\n${app.logs.join("")}`));
    });
  });
  return { ...app, url };
}

/** The controller (`apps/controller/dist/main.js`) for one cluster; KUBECONFIG says as whom. */
export function startControllerProcess(env: Record<string, string>): AppProcess {
  return startProcess(CONTROLLER_ENTRY, { BERTH_METRICS_PORT: "0", BERTH_LOG_LEVEL: "info", ...env });
}
