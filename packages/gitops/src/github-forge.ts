import { Octokit, type RestEndpointMethodTypes } from "@octokit/rest";
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
  }

  async openPullRequest(request: { head: string; base: string; title: string; body: string }): Promise<PullRequest> {
    const existing = await this.findOpenPullRequest(request.head, request.base);
    if (existing) return existing;
    const created = await this.call("POST /pulls", (signal) =>
      this.octokit.rest.pulls.create({ ...this.repo, ...request, request: { signal } }),
    );
    return this.withReviews(forgePull.parse(created));
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
      const status = (err as { response?: { status?: number } }).response?.status;
      if (status !== undefined && tolerated.includes(status)) return undefined;
      // Octokit's message is GitHub's (`message` of the error body): it names the problem, never the token.
      const message = (err as Error).message;
      throw status === undefined
        ? new ForgeError(`GitHub did not answer ${what}: ${message}`, 0)
        : new ForgeError(`GitHub refused ${what}: ${status} ${message}`, status);
    }
  }
}
