import { Octokit, type RestEndpointMethodTypes } from "@octokit/rest";
import { LRUCache } from "lru-cache";
import { z } from "zod";
import {
  ForgeError,
  forgePull,
  pullRequestOf,
  RECENTLY_CLOSED,
  verdictsOf,
  type Forge,
  type ForgeOptions,
  type ForgePull,
  type PullRequest,
} from "./forge.js";

/** Pull requests per page of a listing (GitHub's maximum). */
const PAGE = 100;

const githubReview = z.object({ state: z.string(), user: z.object({ id: z.number() }).nullable() });

/** `url`: https://api.github.com, or https://<host>/api/v3 for GitHub Enterprise Server. */
export type GitHubForgeOptions = ForgeOptions;

/**
 * GitHub (github.com and Enterprise Server) through Octokit. A branch's pull requests are found with the API's own
 * `head` filter (`owner:branch`), so finding one costs one request however many are open.
 */
export class GitHubForge implements Forge {
  private readonly octokit: Octokit;
  private readonly repo: { owner: string; repo: string };

  constructor(private readonly options: GitHubForgeOptions) {
    this.repo = { owner: options.owner, repo: options.repo };
    this.octokit = new Octokit({
      baseUrl: options.url.replace(/\/+$/, ""),
      userAgent: "berth",
      // Octokit's own log writes to the console; Berth's errors say what failed.
      log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
      request: { ...(options.fetch ? { fetch: options.fetch } : {}), redirect: "error" },
    });
    // The token is read for each request (a mounted Secret may be rotated), never stored in the client's options.
    this.octokit.hook.before("request", async (request) => {
      request.headers.authorization = `token ${await options.token()}`;
    });
    // Reads are conditional: GitHub answers an unchanged one 304, which costs no rate limit (status polls ask the
    // same few questions every few seconds).
    const answered = new LRUCache<string, { etag: string; data: unknown }>({ max: 1_000 });
    this.octokit.hook.wrap("request", async (request, options) => {
      const { method, url } = this.octokit.request.endpoint(options);
      const known = method === "GET" ? answered.get(url) : undefined;
      if (known) options.headers = { ...options.headers, "if-none-match": known.etag };
      try {
        const response = await request(options);
        const etag = response.headers.etag;
        if (method === "GET" && etag) answered.set(url, { etag, data: response.data });
        return response;
      } catch (err) {
        if (known && (err as { status?: number }).status === 304)
          return { status: 200, url, headers: {}, data: known.data } as Awaited<ReturnType<typeof request>>;
        throw err;
      }
    });
  }

  async openPullRequest(request: { head: string; base: string; title: string; body: string }): Promise<PullRequest> {
    const existing = await this.findOpenPullRequest(request.head, request.base);
    if (existing) return existing;
    try {
      const created = await this.call("POST /pulls", (signal) =>
        this.octokit.rest.pulls.create({ ...this.repo, ...request, request: { signal } }),
      );
      return await this.withReviews(forgePull.parse(created));
    } catch (err) {
      // 422: another writer (a retry, another replica) opened the branch's pull request since the lookup.
      const raced =
        err instanceof ForgeError && err.status === 422
          ? await this.findOpenPullRequest(request.head, request.base)
          : undefined;
      if (raced) return raced;
      throw err;
    }
  }

  async findOpenPullRequest(head: string, base: string): Promise<PullRequest | undefined> {
    const [found] = await this.branchPulls("open", head, base);
    return found && this.withReviews(found);
  }

  async latestPullRequest(head: string, base: string): Promise<PullRequest | undefined> {
    const open = await this.findOpenPullRequest(head, base);
    if (open) return open;
    // Most recently updated first: a branch's last closed or merged pull request is the one updated last.
    const [latest] = await this.branchPulls("closed", head, base);
    return latest && this.withReviews(latest);
  }

  async openPullRequests(base: string, headPrefix: string): Promise<PullRequest[]> {
    const matching: ForgePull[] = [];
    for (let page = 1; ; page++) {
      const pulls = await this.list(`GET /pulls?state=open&base=${base}&page=${page}`, {
        state: "open",
        base,
        page,
        per_page: PAGE,
      });
      matching.push(...pulls.filter((p) => p.head.ref.startsWith(headPrefix)));
      if (pulls.length < PAGE) break;
    }
    // One reviews read per pull request (a listing does not carry them), a few at a time.
    const out: PullRequest[] = [];
    for (let i = 0; i < matching.length; i += 8)
      out.push(...(await Promise.all(matching.slice(i, i + 8).map((p) => this.withReviews(p)))));
    return out;
  }

  async pullRequest(number: number): Promise<PullRequest> {
    const pull = await this.call(`GET /pulls/${number}`, (signal) =>
      this.octokit.rest.pulls.get({ ...this.repo, pull_number: number, request: { signal } }),
    );
    return this.withReviews(forgePull.parse(pull));
  }

  async closePullRequest(number: number): Promise<PullRequest> {
    const pull = await this.call(`PATCH /pulls/${number}`, (signal) =>
      this.octokit.rest.pulls.update({ ...this.repo, pull_number: number, state: "closed", request: { signal } }),
    );
    return this.withReviews(forgePull.parse(pull));
  }

  async deleteBranch(branch: string): Promise<void> {
    // A branch already gone is what was asked for: GitHub answers 422 "Reference does not exist" (404 on some servers).
    await this.call(
      `DELETE /git/refs/heads/${branch}`,
      (signal) => this.octokit.rest.git.deleteRef({ ...this.repo, ref: `heads/${branch}`, request: { signal } }),
      [404, 422],
    );
  }

  /** The branch's pull requests into `base` in `state`, most recently updated first (the newest RECENTLY_CLOSED). */
  private async branchPulls(state: "open" | "closed", head: string, base: string): Promise<ForgePull[]> {
    return this.list(`GET /pulls?state=${state}&head=${head}&base=${base}`, {
      state,
      head: `${this.options.owner}:${head}`,
      base,
      sort: "updated",
      direction: "desc",
      per_page: Math.min(PAGE, RECENTLY_CLOSED),
    });
  }

  private async list(
    what: string,
    query: Omit<RestEndpointMethodTypes["pulls"]["list"]["parameters"], "owner" | "repo">,
  ): Promise<ForgePull[]> {
    const pulls = await this.call(what, (signal) =>
      this.octokit.rest.pulls.list({ ...this.repo, ...query, request: { signal } }),
    );
    return z.array(forgePull).parse(pulls);
  }

  /**
   * Where review stands: each reviewer's latest verdict counts; a comment or a pending review is no verdict, and a
   * dismissed one (GitHub sets its state to DISMISSED) withdraws the reviewer's.
   */
  private withReviews(pull: ForgePull): Promise<PullRequest> {
    return pullRequestOf(pull, async () => {
      const reviews = await this.call(`GET /pulls/${pull.number}/reviews`, (signal) =>
        this.octokit.rest.pulls.listReviews({
          ...this.repo,
          pull_number: pull.number,
          per_page: PAGE,
          request: { signal },
        }),
      );
      return verdictsOf(
        z
          .array(githubReview)
          .parse(reviews)
          .map((r) => ({
            reviewer: r.user?.id,
            state: r.state,
            counts: r.state !== "COMMENTED" && r.state !== "PENDING",
          })),
        { approved: "APPROVED", changesRequested: "CHANGES_REQUESTED" },
      );
    });
  }

  /** One request, in the adapter's one error vocabulary (ForgeError); `tolerated` statuses answer undefined. */
  private async call<T>(
    what: string,
    request: (signal: AbortSignal) => Promise<{ data: T }>,
    tolerated: number[] = [],
  ): Promise<T | undefined> {
    try {
      return (await request(AbortSignal.timeout(this.options.timeoutMs ?? 30_000))).data;
    } catch (err) {
      const response = (err as { response?: { status?: number; headers?: Record<string, string | undefined> } })
        .response;
      const status = response?.status;
      if (status !== undefined && tolerated.includes(status)) return undefined;
      // Octokit's message is GitHub's (`message` of the error body): it names the problem, never the token.
      const message = (err as Error).message;
      if (status === undefined) throw new ForgeError(`GitHub did not answer ${what}: ${message}`, 0);
      // GitHub answers a spent rate limit 403 (or 429) with these headers: a wait, not a token it refuses.
      const headers = response?.headers ?? {};
      if (status === 429 || (status === 403 && (headers["x-ratelimit-remaining"] === "0" || headers["retry-after"]))) {
        const reset = Number(headers["x-ratelimit-reset"]);
        const until = reset > 0 ? ` until ${new Date(reset * 1000).toISOString()}` : "";
        throw new ForgeError(`GitHub's rate limit stopped ${what}${until}: ${message}`, 429);
      }
      throw new ForgeError(`GitHub refused ${what}: ${status} ${message}`, status);
    }
  }
}
