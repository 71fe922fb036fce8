import { spawn } from "node:child_process";
import { mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { REPO_ROOT } from "./kube-cluster.js";
import { requireNeed } from "./needs.js";

/**
 * Builds what tests run as processes (the `berth` CLI, the API's dist with the status page's script, the
 * controller's dist entry) through turbo, so an unchanged tree costs a cache hit. Test files run in
 * parallel: a lock folder keeps two of them from writing the same dist/ at once.
 */

const LOCK = join(REPO_ROOT, ".berth", "test-build.lock");
const PACKAGES = ["@berth/cli...", "@berth/api...", "@berth/controller..."];
let built: Promise<void> | undefined;

/** Whether the process that took the lock is gone (killed mid-build): then the lock is stale. */
async function stale(): Promise<boolean> {
  const pid = Number(await readFile(join(LOCK, "pid"), "utf8").catch(() => ""));
  if (!pid) return Date.now() - (await stat(LOCK).catch(() => ({ mtimeMs: Date.now() }))).mtimeMs > 60_000;
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ESRCH";
  }
}

async function acquire(): Promise<void> {
  await mkdir(join(REPO_ROOT, ".berth"), { recursive: true });
  for (let i = 0; ; i++) {
    try {
      await mkdir(LOCK);
      await writeFile(join(LOCK, "pid"), String(process.pid));
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      if (await stale()) await rm(LOCK, { recursive: true, force: true });
      if (i > 3600) throw new Error(`waited too long for ${LOCK}`, { cause: err });
      await sleep(500);
    }
  }
}

function turboBuild(): Promise<void> {
  return new Promise((resolve, reject) => {
    const args = ["run", "build", "--output-logs=errors-only", ...PACKAGES.map((p) => `--filter=${p}`)];
    const child = spawn(join(REPO_ROOT, "node_modules", ".bin", "turbo"), args, {
      cwd: REPO_ROOT,
      env: { ...process.env, TURBO_TELEMETRY_DISABLED: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d) => (output += String(d)));
    child.stderr.on("data", (d) => (output += String(d)));
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`turbo build failed (${code}):\n${output.slice(-4000)}`)),
    );
  });
}

export function ensureBuilt(): Promise<void> {
  requireNeed("dist");
  built ??= (async () => {
    await acquire();
    try {
      await turboBuild();
    } finally {
      await rm(LOCK, { recursive: true, force: true });
    }
  })();
  return built;
}

export const CLI_ENTRY = join(REPO_ROOT, "apps", "cli", "dist", "main.js");
export const API_ENTRY = join(REPO_ROOT, "apps", "api", "dist", "main.js");
export const CONTROLLER_ENTRY = join(REPO_ROOT, "apps", "controller", "dist", "main.js");
