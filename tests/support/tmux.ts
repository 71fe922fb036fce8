import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { requireNeed } from "./needs.js";

/**
 * A real terminal for tests of TTY output: a tmux server of its own (private socket, so it never touches
 * anyone else's tmux), one window running bash, keys sent as a person types them, and the screen read
 * back with capture-pane. tmux is a Debian package in infra/test-tools/debian-packages.txt.
 */
export class TmuxTerminal {
  private constructor(
    private readonly socket: string,
    readonly width: number,
    readonly height: number,
  ) {}

  private static tmux(socket: string, args: string[]): Promise<string> {
    return new Promise((resolve, reject) => {
      execFile("tmux", ["-S", socket, ...args], { timeout: 30_000 }, (err, stdout, stderr) => {
        if (err) reject(new Error(`tmux ${args.join(" ")}: ${stderr || err.message}`));
        else resolve(String(stdout));
      });
    });
  }

  /** A terminal of `width`×`height` running bash in `cwd`, with exactly `env` (plus TERM and a UTF-8 locale). */
  static async start(options: {
    cwd: string;
    env: Record<string, string>;
    width?: number;
    height?: number;
  }): Promise<TmuxTerminal> {
    requireNeed("tmux");
    const socket = join(tmpdir(), `berth-tmux-${randomBytes(6).toString("hex")}`);
    const width = options.width ?? 110;
    const height = options.height ?? 40;
    const env = { LANG: "C.UTF-8", LC_ALL: "C.UTF-8", TERM: "xterm-256color", PS1: "$ ", ...options.env };
    // `env -i` so the shell gets exactly this environment (tmux's -e does not override PATH).
    const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    const command = [
      "env",
      "-i",
      ...Object.entries(env).map(([k, v]) => quote(`${k}=${v}`)),
      "bash",
      "--norc",
      "--noprofile",
    ].join(" ");
    await TmuxTerminal.tmux(socket, [
      "-f",
      "/dev/null",
      "new-session",
      "-d",
      "-s",
      "test",
      "-x",
      String(width),
      "-y",
      String(height),
      "-c",
      options.cwd,
      command,
    ]);
    const terminal = new TmuxTerminal(socket, width, height);
    return terminal;
  }

  /** Types `text` and presses Enter. */
  async run(text: string): Promise<void> {
    await TmuxTerminal.tmux(this.socket, ["send-keys", "-t", "test", "-l", text]);
    await TmuxTerminal.tmux(this.socket, ["send-keys", "-t", "test", "Enter"]);
  }

  async keys(...keys: string[]): Promise<void> {
    await TmuxTerminal.tmux(this.socket, ["send-keys", "-t", "test", ...keys]);
  }

  /** The visible screen, as text. */
  screen(): Promise<string> {
    return TmuxTerminal.tmux(this.socket, ["capture-pane", "-p", "-t", "test"]);
  }

  /** Waits until the screen matches; returns it. Throws with the last screen when it never does. */
  async waitFor(pattern: RegExp | ((screen: string) => boolean), timeoutMs = 60_000): Promise<string> {
    const test = typeof pattern === "function" ? pattern : (s: string) => pattern.test(s);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const last = await this.screen();
      if (test(last)) return last;
      if (Date.now() > deadline) throw new Error(`the terminal never showed ${String(pattern)}; it shows:\n${last}`);
      await sleep(200);
    }
  }

  async clear(): Promise<void> {
    await this.run("clear");
    await this.waitFor((s) => s.trim().split("\n").length <= 1, 10_000);
  }

  async stop(): Promise<void> {
    await TmuxTerminal.tmux(this.socket, ["kill-server"]).catch(() => undefined);
    await rm(this.socket, { force: true });
  }
}
