/**
 * A smart-HTTP git server for tests: Node's http server in front of `git http-backend` (CGI), behind HTTP
 * Basic auth, pushes enabled. Serves every bare repository under `root` as /<name>.
 */
import { spawn } from "node:child_process";
import { timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface GitHttpServerOptions {
  /** Folder holding the bare repositories (GIT_PROJECT_ROOT). */
  root: string;
  username: string;
  password: string;
}

export interface GitHttpServer {
  /** http://127.0.0.1:<port> */
  baseUrl: string;
  /** URL of the repository at `<root>/<name>` (e.g. "flux.git"). */
  repoUrl(name: string): string;
  /** Requests seen, and how many were refused for bad or missing credentials. */
  readonly stats: { requests: number; unauthorized: number };
  stop(): Promise<void>;
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function authorized(req: IncomingMessage, username: string, password: string): boolean {
  const h = req.headers.authorization;
  if (!h?.startsWith("Basic ")) return false;
  const decoded = Buffer.from(h.slice(6).trim(), "base64").toString("utf8");
  const i = decoded.indexOf(":");
  if (i < 0) return false;
  return sameSecret(decoded.slice(0, i), username) && sameSecret(decoded.slice(i + 1), password);
}

function cgi(req: IncomingMessage, res: ServerResponse, opts: GitHttpServerOptions): void {
  const url = new URL(req.url ?? "/", "http://localhost");
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    GIT_PROJECT_ROOT: opts.root,
    GIT_HTTP_EXPORT_ALL: "1",
    // Pushes are allowed whatever the repository's own config says.
    GIT_CONFIG_COUNT: "1",
    GIT_CONFIG_KEY_0: "http.receivepack",
    GIT_CONFIG_VALUE_0: "true",
    GIT_HTTP_MAX_REQUEST_BUFFER: "100M",
    REQUEST_METHOD: req.method ?? "GET",
    PATH_INFO: decodeURIComponent(url.pathname),
    QUERY_STRING: url.search.startsWith("?") ? url.search.slice(1) : url.search,
    CONTENT_TYPE: req.headers["content-type"] ?? "",
    REMOTE_USER: opts.username,
    REMOTE_ADDR: req.socket.remoteAddress ?? "127.0.0.1",
    SERVER_PROTOCOL: `HTTP/${req.httpVersion}`,
  };
  if (req.headers["content-length"]) env.CONTENT_LENGTH = req.headers["content-length"];
  if (req.headers["content-encoding"]) env.HTTP_CONTENT_ENCODING = req.headers["content-encoding"];
  if (req.headers["git-protocol"]) env.GIT_PROTOCOL = String(req.headers["git-protocol"]);

  const child = spawn("git", ["http-backend"], { env, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (b: Buffer) => {
    stderr = (stderr + b.toString()).slice(-4000);
  });
  child.stdin.on("error", () => {});
  req.pipe(child.stdin);

  let head = Buffer.alloc(0);
  let headersDone = false;
  child.stdout.on("data", (chunk: Buffer) => {
    if (headersDone) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    let end = head.indexOf("\r\n\r\n");
    let sep = 4;
    if (end < 0) {
      end = head.indexOf("\n\n");
      sep = 2;
    }
    if (end < 0) return;
    headersDone = true;
    let status = 200;
    for (const line of head.subarray(0, end).toString("latin1").split(/\r?\n/)) {
      const i = line.indexOf(":");
      if (i < 0) continue;
      const name = line.slice(0, i).trim();
      const value = line.slice(i + 1).trim();
      if (name.toLowerCase() === "status") status = Number.parseInt(value, 10) || 500;
      else res.setHeader(name, value);
    }
    res.statusCode = status;
    const rest = head.subarray(end + sep);
    if (rest.length > 0) res.write(rest);
  });
  child.on("error", (e) => {
    if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
    res.end(`git http-backend failed to start: ${e.message}`);
  });
  child.on("close", (code) => {
    if (!headersDone) {
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
      res.end(`git http-backend exited ${code}: ${stderr}`);
      return;
    }
    res.end();
  });
  res.on("close", () => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
}

/** Starts the server on 127.0.0.1 and an ephemeral port. */
export async function startGitHttpServer(opts: GitHttpServerOptions): Promise<GitHttpServer> {
  const stats = { requests: 0, unauthorized: 0 };
  const server = createServer((req, res) => {
    stats.requests += 1;
    if (!authorized(req, opts.username, opts.password)) {
      stats.unauthorized += 1;
      req.resume();
      res.writeHead(401, { "WWW-Authenticate": 'Basic realm="berth-test-git"', "content-type": "text/plain" });
      res.end("unauthorized\n");
      return;
    }
    cgi(req, res, opts);
  });
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const baseUrl = `http://127.0.0.1:${port}`;
  return {
    baseUrl,
    repoUrl: (name: string) => `${baseUrl}/${name.replace(/^\/+/, "")}`,
    stats,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
