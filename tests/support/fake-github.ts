/**
 * GitHub's REST API as pull-request mode uses it (ADR 0030), on 127.0.0.1: pull requests (list with the `head`,
 * `base` and `state` filters, paging; create; read; close), their reviews, and branch deletion. Not recorded traffic:
 * no recording of GitHub's pull-request endpoints is available here (@octokit/fixtures records refs and errors,
 * not pulls), so the answers are typed by GitHub's own OpenAPI description (@octokit/openapi-types: every field the
 * fake answers has the schema's name and type) and tests/github/forge.test.ts replays the recorded traffic there is
 * (a branch deleted, GitHub's error bodies) through the same client. What a person does on GitHub (review, merge,
 * close) the test does with `review`, `merge` and `close`.
 */
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { components } from "@octokit/openapi-types";

type Schema = components["schemas"];
/** What the fake answers of a pull request: the schema's fields Berth reads, with the schema's types. */
type FakePull = Pick<
  Schema["pull-request"],
  "number" | "html_url" | "state" | "merged" | "merged_at" | "closed_at" | "merge_commit_sha" | "title" | "body"
> & {
  head: Pick<Schema["pull-request"]["head"], "ref" | "sha" | "label">;
  base: Pick<Schema["pull-request"]["base"], "ref" | "sha" | "label">;
  updated_at: Schema["pull-request"]["updated_at"];
};
type FakeReview = Pick<Schema["pull-request-review"], "id" | "state" | "body" | "submitted_at"> & {
  user: Pick<Schema["simple-user"], "id" | "login">;
};
type ErrorBody = Pick<Schema["basic-error"], "message" | "documentation_url">;

export interface FakeGitHub {
  /** The API's base URL, as GitHubForge takes it (what https://api.github.com is to github.com). */
  url: string;
  owner: string;
  repo: string;
  /** Every request, in order: method, path with its query, and the authorization header's scheme. */
  requests: Array<{ method: string; path: string; auth: string | undefined }>;
  /** Conditional reads answered 304 (an unchanged answer; GitHub does not count them against the rate limit). */
  notModified(): number;
  /** A reviewer's review, as GitHub records it (APPROVED, CHANGES_REQUESTED, COMMENTED); its id. */
  review(number: number, reviewer: number, state: FakeReview["state"]): number;
  /** The reviewer's earlier review dismissed, as a maintainer does on GitHub. */
  dismiss(number: number, reviewId: number): void;
  merge(number: number): string;
  close(number: number): void;
  /** Open pull requests made outside Berth (e.g. another tool's), to fill pages. */
  seed(count: number, headPrefix: string): void;
  /** The next request (of `method`, when given) answers `status` with GitHub's error body (and `headers`). */
  failNext(status: number, message: string, method?: string, headers?: Record<string, string>): void;
  stop(): Promise<void>;
}

const sha = (n: number) => n.toString(16).padStart(40, "0");
const DOCS = "https://docs.github.com/rest/pulls/pulls";

export async function startFakeGitHub(token: string, owner = "platform", repo = "fleet"): Promise<FakeGitHub> {
  const pulls: FakePull[] = [];
  const reviews = new Map<number, FakeReview[]>();
  const requests: FakeGitHub["requests"] = [];
  let failure:
    { status: number; message: string; method: string | undefined; headers: Record<string, string> } | undefined;
  let clock = Date.parse("2026-12-01T00:00:00Z");
  const now = () => new Date((clock += 1000)).toISOString();
  let commits = 100;
  let reviewIds = 1;
  let notModified = 0;
  const repoPath = `/repos/${owner}/${repo}`;
  const url = (n: number) => `https://github.example/${owner}/${repo}/pull/${n}`;

  const open = (title: string, head: string, base: string, body: string | null) => {
    const pull: FakePull = {
      number: pulls.length + 1,
      html_url: url(pulls.length + 1),
      state: "open",
      merged: false,
      merged_at: null,
      closed_at: null,
      merge_commit_sha: null,
      title,
      body,
      head: { ref: head, sha: sha(commits++), label: `${owner}:${head}` },
      base: { ref: base, sha: sha(1), label: `${owner}:${base}` },
      updated_at: now(),
    };
    pulls.push(pull);
    return pull;
  };
  const pull = (n: number) => {
    const found = pulls[n - 1];
    if (!found) throw new Error(`no pull request #${n}`);
    return found;
  };

  const server: Server = createServer((req, res) => {
    void (async () => {
      const answer = (status: number, body?: unknown, headers: Record<string, string> = {}) => {
        // GitHub tags every read; a read whose If-None-Match is the answer's tag is 304, and costs no rate limit.
        if (req.method === "GET" && status === 200) {
          const etag = `W/"${createHash("sha256").update(JSON.stringify(body)).digest("hex").slice(0, 32)}"`;
          if (req.headers["if-none-match"] === etag) {
            notModified++;
            res.writeHead(304, { etag });
            return res.end();
          }
          headers = { ...headers, etag };
        }
        res.writeHead(status, {
          ...headers,
          ...(body === undefined ? {} : { "content-type": "application/json; charset=utf-8" }),
        });
        res.end(body === undefined ? undefined : JSON.stringify(body));
      };
      const error = (status: number, message: string, headers: Record<string, string> = {}) =>
        answer(status, { message, documentation_url: DOCS } satisfies ErrorBody, headers);
      const address = new URL(req.url ?? "/", "http://127.0.0.1");
      requests.push({
        method: req.method ?? "",
        path: `${address.pathname}${address.search}`,
        auth: req.headers.authorization?.split(" ")[0],
      });
      if (req.headers.authorization !== `token ${token}`) return error(401, "Bad credentials");
      if (failure && (failure.method === undefined || failure.method === req.method)) {
        const { status, message, headers } = failure;
        failure = undefined;
        return error(status, message, headers);
      }
      if (!address.pathname.startsWith(`${repoPath}/`)) return error(404, "Not Found");
      // Octokit encodes a ref's slashes (heads%2Fberth%2F...); GitHub takes them decoded.
      const route = `${req.method} ${decodeURIComponent(address.pathname.slice(repoPath.length))}`;
      const q = address.searchParams;
      let m: RegExpExecArray | null;
      if (route === "GET /pulls") {
        const state = q.get("state") ?? "open";
        const head = q.get("head");
        const base = q.get("base");
        const perPage = Number(q.get("per_page") ?? 30);
        const page = Number(q.get("page") ?? 1);
        const matching = pulls
          .filter((p) => state === "all" || p.state === state)
          .filter((p) => !head || p.head.label === head)
          .filter((p) => !base || p.base.ref === base)
          // GitHub's default sort is `created` descending; Berth asks `updated` descending for a branch's.
          .sort((a, b) =>
            q.get("sort") === "updated" ? b.updated_at.localeCompare(a.updated_at) : b.number - a.number,
          );
        // A listing is GitHub's pull-request-simple: no `merged` flag (merged_at says it).
        return answer(
          200,
          matching.slice((page - 1) * perPage, page * perPage).map(({ merged: _, ...simple }) => simple),
        );
      }
      if (route === "POST /pulls") {
        const body = JSON.parse(await text(req)) as { title: string; head: string; base: string; body?: string };
        if (pulls.some((p) => p.state === "open" && p.head.ref === body.head && p.base.ref === body.base))
          return answer(422, {
            message: "Validation Failed",
            errors: [
              {
                resource: "PullRequest",
                code: "custom",
                message: `A pull request already exists for ${owner}:${body.head}.`,
              },
            ],
            documentation_url: `${DOCS}#create-a-pull-request`,
          });
        return answer(201, open(body.title, body.head, body.base, body.body ?? null));
      }
      if ((m = /^GET \/pulls\/(\d+)$/.exec(route))) return answer(200, pull(Number(m[1])));
      if ((m = /^PATCH \/pulls\/(\d+)$/.exec(route))) {
        const body = JSON.parse(await text(req)) as { state?: "open" | "closed" };
        const p = pull(Number(m[1]));
        if (body.state === "closed" && p.state === "open") Object.assign(p, { state: "closed", closed_at: now() });
        p.updated_at = now();
        return answer(200, p);
      }
      if ((m = /^GET \/pulls\/(\d+)\/reviews$/.exec(route))) return answer(200, reviews.get(Number(m[1])) ?? []);
      if ((m = /^DELETE \/git\/refs\/heads\/(.+)$/.exec(route))) {
        // GitHub answers a missing ref 422 "Reference does not exist".
        const exists = pulls.some((p) => p.head.ref === m![1]);
        return exists ? answer(204) : error(422, "Reference does not exist");
      }
      return error(404, "Not Found");
    })().catch((err: unknown) => {
      res.writeHead(500);
      res.end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}`,
    owner,
    repo,
    requests,
    notModified: () => notModified,
    review(number, reviewer, state) {
      const list = reviews.get(number) ?? [];
      list.push({
        id: reviewIds++,
        state,
        body: "",
        submitted_at: now(),
        user: { id: reviewer, login: `reviewer-${reviewer}` },
      });
      reviews.set(number, list);
      return reviewIds - 1;
    },
    dismiss(number, reviewId) {
      const review = reviews.get(number)?.find((r) => r.id === reviewId);
      if (review) review.state = "DISMISSED";
    },
    merge(number) {
      const p = pull(number);
      const at = now();
      Object.assign(p, {
        state: "closed",
        merged: true,
        merged_at: at,
        closed_at: at,
        merge_commit_sha: sha(commits++),
      });
      p.updated_at = at;
      return p.merge_commit_sha!;
    },
    close(number) {
      const p = pull(number);
      Object.assign(p, { state: "closed", closed_at: now() });
      p.updated_at = p.closed_at!;
    },
    seed(count, headPrefix) {
      for (let i = 0; i < count; i++) open(`seeded ${i}`, `${headPrefix}${i}`, "main", null);
    },
    failNext(status, message, method, headers = {}) {
      failure = { status, message, method, headers };
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function text(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
