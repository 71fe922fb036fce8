/**
 * A git-over-SSH server for tests: Debian's OpenSSH sshd on 127.0.0.1 with a throwaway config (its own host
 * key, one authorized deploy key, no passwords), serving bare repositories by absolute path as the user
 * running the tests. openssh-server comes from infra/test-tools/debian-packages.txt (`npm test` installs it).
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { freePort } from "./ports.js";
import { existsSync } from "node:fs";
import { chmod, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { userInfo } from "node:os";
import { join } from "node:path";
import { makeTempDir } from "./git-remotes.js";
import { requireNeed } from "./needs.js";

const SSHD = ["/usr/sbin/sshd", "/usr/bin/sshd"].find((p) => existsSync(p));

export function sshdAvailable(): boolean {
  return SSHD !== undefined && existsSync("/usr/bin/ssh-keygen");
}

export interface GitSshServer {
  port: number;
  /** ssh:// URL of a bare repository at an absolute path. */
  repoUrl(absPath: string): string;
  /** The authorized deploy key (private, OpenSSH format) and a known_hosts file holding the server's key. */
  privateKeyPath: string;
  knownHostsPath: string;
  /** A second key the server does not accept. */
  unauthorizedKeyPath: string;
  /** A known_hosts file with a different host key (a spoofed server). */
  wrongKnownHostsPath: string;
  stop(): Promise<void>;
}

function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, (err, stdout, stderr) =>
      err ? reject(new Error(`${cmd} failed: ${stderr || err.message}`)) : resolve(stdout),
    );
  });
}

async function waitForPort(port: number, proc: ChildProcess, stderr: () => string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`sshd exited (${proc.exitCode}): ${stderr()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const c = connect(port, "127.0.0.1");
      c.once("data", () => {
        c.destroy();
        resolve(true); // the SSH banner
      });
      c.once("error", () => resolve(false));
      c.setTimeout(500, () => {
        c.destroy();
        resolve(false);
      });
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`sshd did not listen on ${port}: ${stderr()}`);
}

async function keygen(path: string): Promise<string> {
  await run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "berth-test", "-f", path]);
  return (await readFile(`${path}.pub`, "utf8")).trim();
}

export async function startGitSshServer(): Promise<GitSshServer> {
  requireNeed("sshd");
  if (!SSHD || !sshdAvailable())
    throw new Error(
      "sshd or ssh-keygen is not installed: run `bash infra/test-tools/ensure-tools.sh` (apt-get install openssh-server)",
    );
  const dir = await makeTempDir("berth-sshd-");
  const hostKey = join(dir, "host_key");
  const hostPub = await keygen(hostKey);
  const otherHostPub = await keygen(join(dir, "other_host_key"));
  const deployKey = join(dir, "deploy_key");
  const deployPub = await keygen(deployKey);
  const strangerKey = join(dir, "stranger_key");
  await keygen(strangerKey);
  await writeFile(join(dir, "authorized_keys"), `restrict ${deployPub}\n`, { mode: 0o600 });
  const port = await freePort();
  const hostEntry = `[127.0.0.1]:${port}`;
  const knownHostsPath = join(dir, "known_hosts");
  const wrongKnownHostsPath = join(dir, "wrong_known_hosts");
  await writeFile(knownHostsPath, `${hostEntry} ${hostPub.split(" ").slice(0, 2).join(" ")}\n`);
  await writeFile(wrongKnownHostsPath, `${hostEntry} ${otherHostPub.split(" ").slice(0, 2).join(" ")}\n`);
  const config = join(dir, "sshd_config");
  await writeFile(
    config,
    [
      `Port ${port}`,
      "ListenAddress 127.0.0.1",
      `HostKey ${hostKey}`,
      `PidFile ${join(dir, "sshd.pid")}`,
      `AuthorizedKeysFile ${join(dir, "authorized_keys")}`,
      "PubkeyAuthentication yes",
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      "UsePAM no",
      "StrictModes no",
      "PermitRootLogin prohibit-password",
      "AllowTcpForwarding no",
      "X11Forwarding no",
      "PrintMotd no",
      "LogLevel ERROR",
      "",
    ].join("\n"),
  );
  await chmod(hostKey, 0o600);
  // Privilege separation needs this folder when sshd starts as root.
  if (process.getuid?.() === 0) await mkdir("/run/sshd", { recursive: true, mode: 0o755 });
  const proc = spawn(SSHD, ["-D", "-e", "-f", config], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  proc.stderr?.on("data", (b: Buffer) => {
    stderr = (stderr + b.toString()).slice(-4000);
  });
  try {
    await waitForPort(port, proc, () => stderr);
  } catch (e) {
    proc.kill("SIGKILL");
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
  const user = userInfo().username;
  return {
    port,
    repoUrl: (absPath: string) => `ssh://${user}@127.0.0.1:${port}${absPath}`,
    privateKeyPath: deployKey,
    knownHostsPath,
    unauthorizedKeyPath: strangerKey,
    wrongKnownHostsPath,
    async stop() {
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once("exit", r));
        proc.kill("SIGTERM");
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
