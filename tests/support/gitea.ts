/**
 * A real forge for the tests: Gitea, built from its Go module (infra/test-cluster/go/gitea, `ensure-binaries.sh
 * gitea`), run as a process on a free port of 127.0.0.1 in a temporary folder of its own: SQLite, no SSH, no
 * mailer, no LFS, offline, installed from its app.ini (INSTALL_LOCK) as Gitea's own CI sets it up. An admin user
 * is created with `gitea admin user create`, its access token through the REST API (Basic auth), as a user would.
 *
 *   const gitea = await startGitea();
 *   const repo = await gitea.createRepo("flux");   // an empty private repository; repo.cloneUrl is its HTTP URL
 *   await gitea.api(`/repos/${gitea.username}/flux/branches/main`);
 *   await gitea.stop();
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { requireNeed } from "./needs.js";
import { freePort, retryOnPortRace } from "./ports.js";
import { programPath } from "./test-cluster-binaries.js";

export interface GiteaRepo {
  owner: string;
  name: string;
  /** `http://127.0.0.1:<port>/<owner>/<name>.git` */
  cloneUrl: string;
}

export interface RunningGitea {
  /** `http://127.0.0.1:<port>` */
  url: string;
  username: string;
  password: string;
  /** An access token of the admin user (scopes write:repository, write:user). */
  token: string;
  /** Creates a repository of the admin user: empty (the default) or with an initial commit on `main`. */
  createRepo(name: string, opts?: { autoInit?: boolean; private?: boolean }): Promise<GiteaRepo>;
  /**
   * A branch as Gitea's API shows it, once its head is `sha` (any head without one). Gitea takes a push in through
   * its hooks and a queue: for a moment after `git push` returns, the API may still show the repository as before
   * (while it was empty: a 500, a nil repository in v1.27.3), so this polls until `timeoutMs`.
   */
  waitForBranch(
    repo: GiteaRepo,
    branch: string,
    sha?: string,
    timeoutMs?: number,
  ): Promise<{ name: string; commit: { id: string; message: string } }>;
  /** `fetch` of `/api/v1<path>` with the admin's token; the response as it came. */
  api(path: string, init?: RequestInit): Promise<Response>;
  /**
   * A user other than the admin, with write access to `repo` (a collaborator, as branch protection wants of a
   * reviewer) and a token scoped write:repository.
   */
  createReviewer(repo: GiteaRepo, username: string): Promise<{ username: string; token: string }>;
  /**
   * Merges a pull request as a reviewer would (the admin's token), once Gitea has tested it against its base: Gitea
   * tests each open pull request again in the background whenever the base moves, and answers "try again later" to a
   * merge meanwhile. A conflict, or a pull request that is not open, fails at once.
   */
  merge(repo: GiteaRepo, number: number, timeoutMs?: number): Promise<void>;
  /**
   * Protects `branch` as a fleet repository's main usually is: nobody pushes to it (the admin neither), a pull request
   * merges only once `requiredApprovals` reviewers other than its author approved it. `merge` then approves first, as
   * a reviewer created for it ("approver-<repo>").
   */
  protectBranch(repo: GiteaRepo, branch: string, opts?: { requiredApprovals?: number }): Promise<void>;
  /** Gitea's own log so far (its console output). */
  log(): string;
  stop(): Promise<void>;
}

const USERNAME = "berth-admin";
const EMAIL = "berth-admin@example.invalid";

function appIni(dir: string, port: number, staticRoot: string): string {
  const url = `http://127.0.0.1:${port}/`;
  return `APP_NAME = Berth tests
RUN_MODE = prod
WORK_PATH = ${dir}
; The tests (and CI) may run as root; Gitea refuses to without this.
I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = ${port}
ROOT_URL = ${url}
LOCAL_ROOT_URL = ${url}
APP_DATA_PATH = ${join(dir, "data")}
; A build without the bindata tag reads options/ (locales, ...) and templates/ from here: copied beside the binary.
STATIC_ROOT_PATH = ${staticRoot}
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false

[database]
DB_TYPE = sqlite3
PATH = ${join(dir, "data", "gitea.db")}

[repository]
ROOT = ${join(dir, "repositories")}
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = ${randomBytes(24).toString("hex")}

[service]
DISABLE_REGISTRATION = true

[mailer]
ENABLED = false

[oauth2]
ENABLED = false

[indexer]
ISSUE_INDEXER_TYPE = db

[session]
PROVIDER = memory

[cache]
ADAPTER = memory

[cron]
ENABLED = false

[webhook]
; The tests' Flux Receivers listen on 127.0.0.1 (Gitea's default refuses private and loopback hosts).
ALLOWED_HOST_LIST = loopback

[log]
MODE = console
LEVEL = Info
ROOT_PATH = ${join(dir, "log")}
`;
}

/** Starts Gitea; resolves once its API answers, with an admin user and a token. */
export async function startGitea(opts: { startTimeoutMs?: number } = {}): Promise<RunningGitea> {
  requireNeed("gitea");
  const binary = programPath("gitea", "gitea", "GITEA_BIN");
  return retryOnPortRace(() => startOnce(binary, opts.startTimeoutMs ?? 60_000));
}

async function startOnce(binary: string, startTimeoutMs: number): Promise<RunningGitea> {
  const dir = mkdtempSync(join(tmpdir(), "berth-gitea-"));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const config = join(dir, "custom", "conf", "app.ini");
  mkdirSync(join(dir, "custom", "conf"), { recursive: true });
  writeFileSync(config, appIni(dir, port, dirname(binary)));
  const logFile = join(dir, "gitea.log");
  const global = ["--work-path", dir, "--config", config];
  // Its own HOME: git's global configuration is Gitea's, not the machine's; `git` from PATH.
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: dir, GITEA_WORK_DIR: dir, GIT_TERMINAL_PROMPT: "0" };
  for (const key of ["GIT_DIR", "GIT_WORK_TREE", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"]) delete env[key];

  const logFd = openSync(logFile, "a");
  const child: ChildProcess = spawn(binary, [...global, "web"], { cwd: dir, env, stdio: ["ignore", logFd, logFd] });
  const log = () => {
    try {
      return readFileSync(logFile, "utf8");
    } catch {
      return "";
    }
  };
  const onExit = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  };
  process.on("exit", onExit);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    }
    process.off("exit", onExit);
    rmSync(dir, { recursive: true, force: true });
  };
  const failure = (what: string) =>
    new Error(`Gitea ${what}; its log (${logFile}):\n${log().split("\n").slice(-40).join("\n")}`);

  try {
    // Ready when the API answers; a process that exits (a taken port, a bad app.ini) fails at once.
    const deadline = Date.now() + startTimeoutMs;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw failure(`exited (${child.exitCode ?? child.signalCode}) before answering`);
      if (Date.now() > deadline) throw failure(`did not answer on ${url}/api/healthz within ${startTimeoutMs} ms`);
      const ok = await fetch(`${url}/api/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      await new Promise((r) => setTimeout(r, 200));
    }

    const password = randomBytes(12).toString("hex");
    const created = spawnSync(
      binary,
      [
        ...global,
        "admin",
        "user",
        "create",
        "--admin",
        "--username",
        USERNAME,
        "--password",
        password,
        "--email",
        EMAIL,
        "--must-change-password=false",
      ],
      { cwd: dir, env, encoding: "utf8", timeout: 60_000 },
    );
    if (created.status !== 0)
      throw failure(`admin user create failed (${created.status}): ${created.stderr}${created.stdout}`);

    const basic = `Basic ${Buffer.from(`${USERNAME}:${password}`).toString("base64")}`;
    const tokenRes = await fetch(`${url}/api/v1/users/${USERNAME}/tokens`, {
      method: "POST",
      headers: { authorization: basic, "content-type": "application/json" },
      body: JSON.stringify({ name: "berth-tests", scopes: ["write:repository", "write:user"] }),
    });
    if (tokenRes.status !== 201) throw failure(`refused a token (${tokenRes.status}): ${await tokenRes.text()}`);
    const token = ((await tokenRes.json()) as { sha1: string }).sha1;

    /** Per protected repository: the token of the reviewer `merge` approves as. */
    const approvers = new Map<string, string>();
    const api = (path: string, init: RequestInit = {}) =>
      fetch(`${url}/api/v1${path}`, {
        ...init,
        headers: { authorization: `token ${token}`, "content-type": "application/json", ...init.headers },
      });
    const running: RunningGitea = {
      url,
      username: USERNAME,
      password,
      token,
      api,
      log,
      stop,
      async waitForBranch(repo, branch, sha, timeoutMs = 20_000) {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const res = await api(`/repos/${repo.owner}/${repo.name}/branches/${branch}`);
          const body = await res.text();
          const found =
            res.status === 200
              ? (JSON.parse(body) as { name: string; commit: { id: string; message: string } })
              : undefined;
          if (found && (!sha || found.commit.id === sha)) return found;
          const last = found ? `head ${found.commit.id}` : `${res.status} ${body.slice(0, 300)}`;
          if (Date.now() > deadline)
            throw failure(`did not show ${branch} of ${repo.owner}/${repo.name} at ${sha ?? "any commit"}: ${last}`);
          await new Promise((r) => setTimeout(r, 200));
        }
      },
      async protectBranch(repo, branch, protectOpts = {}) {
        // One reviewer per repository: a user name is the whole instance's.
        const approver = await running.createReviewer(repo, `approver-${repo.name}`);
        const res = await api(`/repos/${repo.owner}/${repo.name}/branch_protections`, {
          method: "POST",
          body: JSON.stringify({
            rule_name: branch,
            enable_push: false,
            required_approvals: protectOpts.requiredApprovals ?? 1,
            block_on_rejected_reviews: true,
            dismiss_stale_approvals: true,
          }),
        });
        if (res.status !== 201) throw failure(`did not protect ${branch} (${res.status}): ${await res.text()}`);
        approvers.set(`${repo.owner}/${repo.name}`, approver.token);
      },
      async merge(repo, number, timeoutMs = 120_000) {
        const path = `/repos/${repo.owner}/${repo.name}/pulls/${number}`;
        const approverToken = approvers.get(`${repo.owner}/${repo.name}`);
        if (approverToken) {
          const approved = await fetch(`${url}/api/v1${path}/reviews`, {
            method: "POST",
            headers: { authorization: `token ${approverToken}`, "content-type": "application/json" },
            body: JSON.stringify({ event: "APPROVED", body: "approved for the test" }),
          });
          if (approved.status !== 200) throw failure(`did not approve #${number}: ${await approved.text()}`);
        }
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const pull = (await (await api(path)).json()) as { mergeable: boolean; state: string; merged: boolean };
          if (pull.state !== "open") throw new Error(`pull request #${number} is ${pull.merged ? "merged" : "closed"}`);
          if (pull.mergeable) {
            const res = await api(`${path}/merge`, { method: "POST", body: JSON.stringify({ Do: "merge" }) });
            if (res.status === 200) return;
            const text = await res.text();
            if (!/try again later/i.test(text)) throw new Error(`merge #${number}: ${res.status} ${text}`);
          }
          if (Date.now() > deadline) throw failure(`did not merge pull request #${number} within ${timeoutMs} ms`);
          await new Promise((r) => setTimeout(r, 200));
        }
      },
      async createReviewer(repo, username) {
        // The admin's token is scoped to repositories; creating a user takes the admin's password, as in Gitea's UI.
        const userPassword = randomBytes(12).toString("hex");
        const created = await fetch(`${url}/api/v1/admin/users`, {
          method: "POST",
          headers: { authorization: basic, "content-type": "application/json" },
          body: JSON.stringify({
            username,
            email: `${username}@example.invalid`,
            password: userPassword,
            must_change_password: false,
          }),
        });
        if (created.status !== 201) throw failure(`did not create user ${username}: ${await created.text()}`);
        const collaborator = await api(`/repos/${repo.owner}/${repo.name}/collaborators/${username}`, {
          method: "PUT",
          body: JSON.stringify({ permission: "write" }),
        });
        if (collaborator.status !== 204) throw failure(`did not add ${username} as a collaborator`);
        const userToken = await fetch(`${url}/api/v1/users/${username}/tokens`, {
          method: "POST",
          headers: {
            authorization: `Basic ${Buffer.from(`${username}:${userPassword}`).toString("base64")}`,
            "content-type": "application/json",
          },
          body: JSON.stringify({ name: "review", scopes: ["write:repository"] }),
        });
        if (userToken.status !== 201) throw failure(`refused ${username} a token: ${await userToken.text()}`);
        return { username, token: ((await userToken.json()) as { sha1: string }).sha1 };
      },
      async createRepo(name, repoOpts = {}) {
        const res = await api("/user/repos", {
          method: "POST",
          body: JSON.stringify({
            name,
            auto_init: repoOpts.autoInit ?? false,
            default_branch: "main",
            private: repoOpts.private ?? true,
          }),
        });
        if (res.status !== 201) throw failure(`did not create repository ${name} (${res.status}): ${await res.text()}`);
        const repo = (await res.json()) as { name: string; owner: { login: string }; clone_url: string };
        return { owner: repo.owner.login, name: repo.name, cloneUrl: repo.clone_url };
      },
    };
    return running;
  } catch (err) {
    await stop();
    throw err;
  }
}
