/**
 * Simulates another bot committing to the Flux repo branch (Flux image-automation): from its own clone it
 * keeps pushing unrelated commits (`image-automation/<n>.txt`) until stopped, counting the ones that landed.
 * It uses plain `git` (not @berth/gitops), rebuilding on the fresh remote head when a push is rejected.
 */
import { mkdir, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { git, makeTempDir } from "./git-remotes.js";

export interface ForeignPusherOptions {
  url: string;
  branch?: string;
  /** Folder (in the repo) its files go to. Default "image-automation". */
  prefix?: string;
  /** Pause between two commits. Default 0 (as fast as git goes). */
  intervalMs?: number;
  /**
   * The pause is at least this many times the bot's own last commit-and-push. Wall-clock pauses do not slow
   * down with the machine while every git command does, so on a loaded machine a fixed pause makes the bot
   * relatively faster and faster until nobody else can push; scaling with its own git time keeps it as busy
   * relative to the machine as on a quiet one. Default 0 (the fixed pause only).
   */
  pauseFactor?: number;
  /** Extra git environment, e.g. basicAuthEnv() for the HTTP test server. */
  env?: Record<string, string>;
  /** Subject prefix of its commits. Default "image-automation: update". */
  subject?: string;
}

export interface ForeignPusher {
  /** Commits that reached the remote so far. */
  readonly commits: number;
  /** Its pushes the remote rejected because someone else pushed first. */
  readonly rejections: number;
  /** Stops after the current iteration; resolves with the totals and the paths of every landed file. */
  stop(): Promise<{ commits: number; rejections: number; files: string[]; subjects: string[] }>;
}

const REJECTED =
  /\(fetch first\)|\(non-fast-forward\)|cannot lock ref|failed to update ref|incorrect old value|stale info/;

/** One commit on top of the branch (or the first commit of a missing branch), pushed; retried on rejection. */
async function commitOnce(
  work: string,
  branch: string,
  path: string,
  content: string,
  subject: string,
  env: Record<string, string>,
): Promise<"pushed" | "rejected"> {
  const fetched = await git(["fetch", "--quiet", "origin", `+refs/heads/${branch}:refs/remotes/origin/${branch}`], {
    cwd: work,
    env,
  }).then(
    () => true,
    (e: { stderr?: string }) => {
      if (/couldn't find remote ref/.test(e.stderr ?? "")) return false;
      throw e;
    },
  );
  if (fetched)
    await git(["checkout", "--quiet", "--force", "-B", branch, `refs/remotes/origin/${branch}`], { cwd: work });
  else {
    await git(
      ["checkout", "--quiet", "--force", "--orphan", `orphan-${Date.now()}-${Math.random().toString(36).slice(2)}`],
      { cwd: work },
    );
    await git(["rm", "-r", "--quiet", "--cached", "--ignore-unmatch", "."], { cwd: work });
  }
  await git(["clean", "-fdxq"], { cwd: work });
  const file = join(work, path);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, content);
  await git(["add", "--", path], { cwd: work });
  await git(
    [
      "-c",
      "user.name=image-automation",
      "-c",
      "user.email=bot@example.test",
      "commit",
      "--quiet",
      "--no-verify",
      "-m",
      subject,
    ],
    {
      cwd: work,
    },
  );
  try {
    await git(["push", "--quiet", "origin", `HEAD:refs/heads/${branch}`], { cwd: work, env });
    return "pushed";
  } catch (e) {
    if (REJECTED.test((e as { stderr?: string }).stderr ?? "")) return "rejected";
    throw e;
  }
}

async function newClone(url: string, env: Record<string, string>): Promise<{ tmp: string; work: string }> {
  const tmp = await makeTempDir("berth-foreign-");
  const work = join(tmp, "clone");
  await git(["init", "--quiet", work]);
  await git(["remote", "add", "origin", url], { cwd: work, env });
  return { tmp, work };
}

/** Pushes one foreign commit writing `path` (retrying until it lands); resolves with the new head sha. */
export async function pushForeignCommit(opts: {
  url: string;
  branch?: string;
  path: string;
  content: string;
  subject?: string;
  env?: Record<string, string>;
}): Promise<string> {
  const env = opts.env ?? {};
  const branch = opts.branch ?? "main";
  const { tmp, work } = await newClone(opts.url, env);
  try {
    for (let i = 0; i < 50; i++) {
      if (
        (await commitOnce(
          work,
          branch,
          opts.path,
          opts.content,
          opts.subject ?? `foreign: write ${opts.path}`,
          env,
        )) === "pushed"
      ) {
        return (await git(["rev-parse", "HEAD"], { cwd: work })).trim();
      }
    }
    throw new Error("pushForeignCommit: rejected 50 times");
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

export async function startForeignPusher(opts: ForeignPusherOptions): Promise<ForeignPusher> {
  const env = opts.env ?? {};
  const branch = opts.branch ?? "main";
  const prefix = opts.prefix ?? "image-automation";
  const subjectPrefix = opts.subject ?? "image-automation: update";
  const { tmp, work } = await newClone(opts.url, env);
  let stopping = false;
  let commits = 0;
  let rejections = 0;
  const files: string[] = [];
  const subjects: string[] = [];
  let failure: unknown;

  const loop = (async () => {
    while (!stopping) {
      const n = commits + 1;
      const path = `${prefix}/${n}.txt`;
      const subject = `${subjectPrefix} ${n}`;
      const started = performance.now();
      try {
        const r = await commitOnce(work, branch, path, `image tag ${n}\n`, subject, env);
        if (r === "pushed") {
          commits = n;
          files.push(path);
          subjects.push(subject);
        } else rejections += 1;
      } catch (e) {
        failure = e;
        return;
      }
      const pause = Math.max(opts.intervalMs ?? 0, (opts.pauseFactor ?? 0) * (performance.now() - started));
      if (pause > 0) await new Promise((r) => setTimeout(r, pause));
    }
  })();

  return {
    get commits() {
      return commits;
    },
    get rejections() {
      return rejections;
    },
    async stop() {
      stopping = true;
      await loop;
      await rm(tmp, { recursive: true, force: true });
      if (failure) throw failure;
      return { commits, rejections, files: [...files], subjects: [...subjects] };
    },
  };
}
