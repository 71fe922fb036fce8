/**
 * Git remotes for tests: bare repositories reachable as file:// URLs, a plain `git` runner with a clean
 * environment, and `inspectRemote`, which answers "what does a fresh clone of this remote hold?".
 */
import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { pathToFileURL } from "node:url";

export interface BareRepo {
  /** The bare repository on disk. */
  dir: string;
  /** file:// URL of it. */
  url: string;
  /** Deletes it (and the temp folder createBareRepo made for it). */
  remove(): Promise<void>;
}

/** process.env without GIT_* variables that would redirect git (GIT_DIR, GIT_WORK_TREE, GIT_CONFIG_*...). */
export function cleanGitEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith("GIT_") && !["GIT_SSL_CAINFO", "GIT_SSL_CAPATH"].includes(k)) continue;
    env[k] = v;
  }
  return { ...env, GIT_TERMINAL_PROMPT: "0", LC_ALL: "C", ...extra };
}

/** Runs `git <args>`; rejects with stderr on a non-zero exit. */
export function git(
  args: string[],
  opts: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      "git",
      args,
      { cwd: opts.cwd, env: cleanGitEnv(opts.env), maxBuffer: 64 * 1024 * 1024, timeout: opts.timeoutMs ?? 30_000 },
      (err, stdout, stderr) => {
        if (err)
          reject(
            Object.assign(new Error(`git ${args.join(" ")} failed: ${stderr || err.message}`), {
              stderr: String(stderr),
            }),
          );
        else resolve(String(stdout));
      },
    );
  });
}

export function makeTempDir(prefix = "berth-git-"): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

/**
 * Which of `paths` git itself ignores under the gitignore `rules` (`git check-ignore` in a scratch repository): how
 * a fetch filter written as gitignore rules is checked against what it means.
 */
export async function ignoredByGit(rules: string, paths: readonly string[]): Promise<Set<string>> {
  const repo = await makeTempDir("berth-ignore-");
  try {
    await git(["init", "-q", repo]);
    await writeFile(join(repo, ".gitignore"), rules);
    const ignored = new Set<string>();
    for (const path of paths) {
      // Exit 0: ignored; 1: not ignored (git rejects, so does this call).
      const answer = await git(["-C", repo, "check-ignore", "-q", "--no-index", path]).then(
        () => true,
        (err: { stderr?: string }) => {
          if (err.stderr) throw err;
          return false;
        },
      );
      if (answer) ignored.add(path);
    }
    return ignored;
  } finally {
    await rm(repo, { recursive: true, force: true });
  }
}

/** An empty bare repository whose HEAD names `branch` (default main); the branch itself does not exist yet. */
export async function createBareRepo(dir?: string, opts: { branch?: string } = {}): Promise<BareRepo> {
  const owned = dir === undefined ? await makeTempDir("berth-remote-") : undefined;
  const target = dir ?? join(owned as string, "flux.git");
  await git(["init", "--quiet", "--bare", `--initial-branch=${opts.branch ?? "main"}`, target]);
  // Accept pushes over smart HTTP too (git-http-server.ts serves these).
  await git(["config", "http.receivepack", "true"], { cwd: target });
  return {
    dir: target,
    url: pathToFileURL(target).href,
    remove: () => rm(owned ?? target, { recursive: true, force: true }),
  };
}

/**
 * Moves a bare repository's `branch` to a new commit of `tree` with `parents` (none: a new root), as a force-push of a
 * rewritten history leaves it; returns the commit.
 */
export async function forceCommit(
  remote: BareRepo,
  branch: string,
  tree: string,
  message: string,
  parents: string[] = [],
): Promise<string> {
  const identity = ["-c", "user.name=Hand", "-c", "user.email=hand@example.test"];
  const commit = (
    await git([
      ...identity,
      "--git-dir",
      remote.dir,
      "commit-tree",
      tree,
      ...parents.flatMap((p) => ["-p", p]),
      "-m",
      message,
    ])
  ).trim();
  await git(["--git-dir", remote.dir, "update-ref", `refs/heads/${branch}`, commit]);
  return commit;
}

export interface RemoteCommit {
  sha: string;
  subject: string;
  /** The whole message. */
  message: string;
  trailers: Record<string, string>;
}

export interface RemoteState {
  /** Branch head, undefined when the branch does not exist. */
  head: string | undefined;
  /** Every file at the head, by path. */
  files: Map<string, string>;
  /** Commits reachable from the head, newest first. */
  commits: RemoteCommit[];
}

async function walk(root: string, dir: string, out: Map<string, string>): Promise<void> {
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.name === ".git" && dir === root) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) await walk(root, p, out);
    else out.set(relative(root, p).split("\\").join("/"), await readFile(p, "utf8"));
  }
}

/**
 * Clones `url` afresh and reports what the branch holds. `env` passes auth for HTTP remotes, e.g.
 * `{ GIT_CONFIG_COUNT: "1", GIT_CONFIG_KEY_0: "http.extraHeader", GIT_CONFIG_VALUE_0: "Authorization: Basic ..." }`.
 */
export async function inspectRemote(
  url: string,
  branch = "main",
  env: Record<string, string> = {},
): Promise<RemoteState> {
  const heads = await git(["ls-remote", "--heads", url, `refs/heads/${branch}`], { env });
  const head = heads.split("\t")[0]?.trim() || undefined;
  if (!head) return { head: undefined, files: new Map(), commits: [] };
  const tmp = await makeTempDir("berth-inspect-");
  try {
    const dir = join(tmp, "clone");
    await git(["clone", "--quiet", "--branch", branch, "--", url, dir], { env });
    const files = new Map<string, string>();
    await walk(dir, dir, files);
    const log = await git(["log", "--format=%H%x00%B%x1e", "HEAD"], { cwd: dir });
    const commits: RemoteCommit[] = [];
    for (const rec of log.split("\x1e")) {
      const r = rec.replace(/^\n/, "");
      if (!r.trim()) continue;
      const [sha = "", message = ""] = r.split("\0");
      const trailers: Record<string, string> = {};
      const paragraphs = message.trimEnd().split("\n\n");
      const last = paragraphs.length > 1 ? (paragraphs[paragraphs.length - 1] ?? "") : "";
      for (const line of last.split("\n")) {
        const m = /^([A-Za-z0-9-]+): (.*)$/.exec(line);
        if (m) trailers[m[1] as string] = m[2] as string;
      }
      commits.push({ sha, subject: message.split("\n")[0] ?? "", message, trailers });
    }
    return { head, files, commits };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/** Basic-auth header config for `git` over HTTP, as env (never an argument). */
export function basicAuthEnv(username: string, password: string): Record<string, string> {
  const b64 = Buffer.from(`${username}:${password}`).toString("base64");
  return {
    GIT_CONFIG_COUNT: "1",
    GIT_CONFIG_KEY_0: "http.extraHeader",
    GIT_CONFIG_VALUE_0: `Authorization: Basic ${b64}`,
  };
}

/**
 * Commits every file of local folder `dir` (its relative paths become repo paths) on top of the branch, as
 * someone other than Berth would (e.g. a hand-written tree), and pushes it; `remove` lists repo paths the
 * commit deletes. Resolves with the new head.
 */
export async function pushTree(opts: {
  url: string;
  dir: string;
  branch?: string;
  subject?: string;
  env?: Record<string, string>;
  remove?: string[];
}): Promise<string> {
  const branch = opts.branch ?? "main";
  const env = opts.env ?? {};
  const tmp = await makeTempDir("berth-push-tree-");
  try {
    const work = join(tmp, "work");
    await git(["clone", "--quiet", "--", opts.url, work], { env });
    const exists = (await git(["ls-remote", "--heads", opts.url, `refs/heads/${branch}`], { env })).trim() !== "";
    if (exists) await git(["checkout", "--quiet", branch], { cwd: work });
    else await git(["checkout", "--quiet", "--orphan", branch], { cwd: work });
    // Paths the commit deletes (the folder only adds and changes files).
    if (opts.remove?.length)
      await git(["rm", "--quiet", "-r", "--ignore-unmatch", "--", ...opts.remove], { cwd: work });
    await cp(opts.dir, work, { recursive: true });
    // A seeded fleet of thousands of teams is tens of thousands of files: give its add, commit and push minutes, not
    // git()'s default 30 s, which a loaded machine can take for the add alone.
    const timeoutMs = 5 * 60_000;
    await git(["add", "-A"], { cwd: work, timeoutMs });
    // No automatic gc: with a fleet's files it would run detached and still be writing while the folder is removed.
    await git(
      [
        "-c",
        "gc.auto=0",
        "-c",
        "maintenance.auto=false",
        "-c",
        "user.name=Platform Team",
        "-c",
        "user.email=platform@example.test",
        "commit",
        "--quiet",
        "--no-verify",
        "-m",
        opts.subject ?? "hand-written manifests",
      ],
      { cwd: work, timeoutMs },
    );
    await git(["push", "--quiet", "origin", `HEAD:refs/heads/${branch}`], { cwd: work, env, timeoutMs });
    return (await git(["rev-parse", "HEAD"], { cwd: work })).trim();
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/**
 * A hand edit of the remote, as a person makes one: writes (string or a function of the old content) or
 * deletes (null) files in a fresh clone, commits without Berth's trailers, pushes to `branch` (with `env`'s
 * credentials); resolves with the commit pushed.
 */
export async function handEdit(
  url: string,
  files: Record<string, string | null | ((old: string) => string)>,
  opts: { branch?: string; env?: Record<string, string> } = {},
): Promise<string> {
  const { branch = "main", env = {} } = opts;
  const dir = await makeTempDir("berth-hand-edit-");
  try {
    await git(["clone", "--quiet", url, dir], { env });
    for (const [path, content] of Object.entries(files)) {
      const full = join(dir, path);
      if (content === null) await rm(full);
      else {
        await mkdir(dirname(full), { recursive: true });
        await writeFile(full, typeof content === "function" ? content(await readFile(full, "utf8")) : content);
      }
    }
    await git(["add", "-A"], { cwd: dir });
    await git(
      ["-c", "user.name=Someone", "-c", "user.email=someone@example.test", "commit", "--quiet", "-m", "quick fix"],
      { cwd: dir },
    );
    await git(["push", "--quiet", "origin", `HEAD:${branch}`], { cwd: dir, env });
    return (await git(["rev-parse", "HEAD"], { cwd: dir })).trim();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
