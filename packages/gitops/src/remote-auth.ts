import { existsSync } from "node:fs";
import { join } from "node:path";
import type { FluxRepoAuth } from "./config.js";

/**
 * The environment every git child process runs with, and the secrets that must never leave this module
 * in clear text.
 *
 * Credentials travel as per-command configuration in the environment (GIT_CONFIG_COUNT/KEY_n/VALUE_n), the
 * env-var form of `git -c key=value`: nothing is written to .git/config or the remote URL, and unlike a
 * `-c` argument it is not visible in `ps` / /proc/<pid>/cmdline to other users, nor in simple-git's task
 * and error objects (which carry the argument list).
 */

/** Inherited GIT_* variables that are safe and useful to keep (this machine sets GIT_SSL_CAINFO). */
const INHERITED_GIT_VARS = new Set([
  "GIT_SSL_CAINFO",
  "GIT_SSL_CAPATH",
  "GIT_HTTP_LOW_SPEED_LIMIT",
  "GIT_HTTP_LOW_SPEED_TIME",
]);
/** Non-GIT_ variables git would run as programs; simple-git refuses them, and we never want them. */
const DROPPED_VARS = new Set(["editor", "visual", "pager", "prefix", "ssh_askpass", "ssh_askpass_require"]);

export interface GitEnvironment {
  env: Record<string, string>;
  /** For simple-git's environment guard: every GIT_* key we set on purpose. */
  allowEnvironment: string[];
  /** simple-git unsafe flags our own configuration needs (askpass, env config, ssh command). */
  unsafe: {
    allowUnsafeConfigEnvCount: true;
    allowUnsafeAskPass: true;
    allowUnsafeCredentialHelper: true;
    allowUnsafeSshCommand?: true;
  };
  redact(text: string): string;
}

/** POSIX shell single-quoting, for the one place a path goes through a shell (core.sshCommand). */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

function askPassProgram(): string {
  return existsSync("/bin/true") ? "/bin/true" : "true";
}

export function buildGitEnvironment(opts: {
  gitDir: string;
  auth: FluxRepoAuth;
  connectTimeoutSec: number;
}): GitEnvironment {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined) continue;
    const k = key.toLowerCase();
    if (k.startsWith("git_")) {
      if (INHERITED_GIT_VARS.has(key.toUpperCase())) env[key] = value;
      continue;
    }
    if (DROPPED_VARS.has(k)) continue;
    env[key] = value;
  }
  Object.assign(env, {
    // Only ever our own bare clone: no repository discovery from the working directory.
    GIT_DIR: opts.gitDir,
    GIT_TERMINAL_PROMPT: "0",
    GIT_ASKPASS: askPassProgram(),
    // Stable, English messages: push rejections and auth failures are recognised by their text.
    LC_ALL: "C",
    LANGUAGE: "C",
  });
  // glibc gives freed memory back to the system as soon as the top of the heap is free, and asks for it
  // again with the next allocation: git fast-import does that for every blob, and on these machines each
  // brk() costs ~160 µs, so writing 8,000 files took 28 s, 98 % of it in brk (strace -c). A 64 MiB pad
  // (address space, not resident memory) made it 0.4 s. An operator's own setting wins.
  if (env.MALLOC_TOP_PAD_ === undefined) env.MALLOC_TOP_PAD_ = String(64 * 1024 * 1024);

  const config: [string, string][] = [
    // No credential helper from the user's global config may answer (or store) anything.
    ["credential.helper", ""],
    // Never follow a redirect after the first request (the Authorization header would follow it).
    ["http.followRedirects", "initial"],
  ];
  const secrets: string[] = [];
  const unsafe: GitEnvironment["unsafe"] = {
    allowUnsafeConfigEnvCount: true,
    allowUnsafeAskPass: true,
    allowUnsafeCredentialHelper: true,
  };

  if (opts.auth.kind === "token") {
    const user = opts.auth.username ?? "x-access-token";
    const basic = Buffer.from(`${user}:${opts.auth.token}`, "utf8").toString("base64");
    config.push(["http.extraHeader", `Authorization: Basic ${basic}`]);
    secrets.push(basic, opts.auth.token, `${user}:${opts.auth.token}`);
  } else if (opts.auth.kind === "ssh") {
    const knownHosts = opts.auth.knownHostsPath ?? join(opts.gitDir, "berth_known_hosts");
    const strict = opts.auth.knownHostsPath ? "yes" : "accept-new";
    const ssh = [
      "ssh",
      `-i ${shellQuote(opts.auth.privateKeyPath)}`,
      "-o IdentitiesOnly=yes",
      "-o BatchMode=yes",
      `-o StrictHostKeyChecking=${strict}`,
      `-o UserKnownHostsFile=${shellQuote(knownHosts)}`,
      `-o ConnectTimeout=${opts.connectTimeoutSec}`,
      "-F /dev/null",
    ].join(" ");
    config.push(["core.sshCommand", ssh]);
    unsafe.allowUnsafeSshCommand = true;
  }

  env.GIT_CONFIG_COUNT = String(config.length);
  config.forEach(([k, v], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = k;
    env[`GIT_CONFIG_VALUE_${i}`] = v;
  });

  const sorted = secrets.filter((s) => s.length >= 4).sort((a, b) => b.length - a.length);
  const redact = (text: string): string => {
    let out = text.replace(/(authorization:\s*)(basic|bearer)\s+\S+/gi, "$1$2 ***");
    for (const s of sorted) out = out.split(s).join("***");
    return out;
  };

  return {
    env,
    allowEnvironment: Object.keys(env).filter((k) => k.toLowerCase().startsWith("git_")),
    unsafe,
    redact,
  };
}
