import { z } from "zod";
import { GitOpsError } from "./errors.js";

/**
 * A forge's pull requests, as pull-request mode uses them (docs/decisions/0030-pull-request-mode.md): Berth pushes
 * a branch with git, then opens (or finds) its pull request, reads where review stands, and closes one it gives up.
 * Merging is the reviewers'. One interface for Gitea/Forgejo (their REST API, GiteaForge) and GitHub (Octokit,
 * GitHubForge).
 */
export type ReviewState = "open" | "approved" | "changes-requested" | "merged" | "closed";

export interface PullRequest {
  number: number;
  url: string;
  head: string;
  base: string;
  state: ReviewState;
  /** The merge commit on the base branch, once merged. */
  mergeCommit?: string;
  /** The branch's commit the pull request proposes (its last push). */
  headCommit: string;
  /** When it was merged or closed (ISO 8601). */
  closedAt?: string;
}

export interface Forge {
  /** The open pull request from `head` into `base`, opened when there is none (a retry finds the first). */
  openPullRequest(request: { head: string; base: string; title: string; body: string }): Promise<PullRequest>;
  /** The open pull request from `head` into `base`, if there is one. */
  findOpenPullRequest(head: string, base: string): Promise<PullRequest | undefined>;
  /**
   * The pull request that last proposed `head` into `base`: the open one, else the most recently closed or merged
   * among the last `RECENTLY_CLOSED` closed, else undefined.
   */
  latestPullRequest(head: string, base: string): Promise<PullRequest | undefined>;
  /** Every open pull request into `base` whose branch starts with `headPrefix`, with where its review stands. */
  openPullRequests(base: string, headPrefix: string): Promise<PullRequest[]>;
  pullRequest(number: number): Promise<PullRequest>;
  /** Closes it without merging (nothing of it reaches the base branch). */
  closePullRequest(number: number): Promise<PullRequest>;
  deleteBranch(branch: string): Promise<void>;
}

/**
 * The forge refused or did not answer, in the adapter's one vocabulary (`auth` for 401/403, `unavailable` when no
 * answer came, the forge failed or its rate limit stopped the request (429), `invalid-change` for any other
 * refusal); `status` is the forge's HTTP status (0: no answer). The token is never in it.
 */
export class ForgeError extends GitOpsError {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(
      status === 401 || status === 403
        ? "auth"
        : status === 0 || status === 429 || status >= 500
          ? "unavailable"
          : "invalid-change",
      message,
    );
  }
}

/**
 * A pull request as Gitea's and GitHub's APIs answer it (the same field names): what Berth reads of it. `merged` is in
 * Gitea's answers and GitHub's single reads, not in GitHub's listings, where `merged_at` says it.
 */
export const forgePull = z.object({
  number: z.number().int(),
  html_url: z.string(),
  state: z.enum(["open", "closed"]),
  merged: z.boolean().optional(),
  merged_at: z.string().nullable().optional(),
  closed_at: z.string().nullable().optional(),
  merge_commit_sha: z.string().nullable().optional(),
  head: z.object({ ref: z.string(), sha: z.string() }),
  base: z.object({ ref: z.string() }),
});
export type ForgePull = z.infer<typeof forgePull>;

/**
 * The pull request Berth works with, from the forge's answer; `verdicts` (its reviews, read only while it is open)
 * says where review stands.
 */
export async function pullRequestOf(pull: ForgePull, verdicts: () => Promise<ReviewVerdict[]>): Promise<PullRequest> {
  const common = {
    number: pull.number,
    url: pull.html_url,
    head: pull.head.ref,
    base: pull.base.ref,
    headCommit: pull.head.sha,
  };
  const closedAt = pull.merged_at ?? pull.closed_at;
  const closed = { ...common, ...(closedAt ? { closedAt } : {}) };
  if (pull.merged ?? Boolean(pull.merged_at))
    return { ...closed, state: "merged", ...(pull.merge_commit_sha ? { mergeCommit: pull.merge_commit_sha } : {}) };
  if (pull.state === "closed") return { ...closed, state: "closed" };
  return { ...common, state: reviewStateOf(await verdicts()) };
}

/**
 * Reviews, oldest first, as verdicts: `counts` false for a review that is no verdict (a comment; on Gitea a dismissed
 * or stale one); a counted review in neither of the forge's two words withdraws the reviewer's verdict.
 */
export function verdictsOf(
  reviews: ReadonlyArray<{ reviewer: number | undefined; state: string; counts: boolean }>,
  words: { approved: string; changesRequested: string },
): ReviewVerdict[] {
  return reviews.flatMap(({ reviewer, state, counts }) =>
    reviewer !== undefined && counts
      ? [
          {
            reviewer,
            verdict:
              state === words.approved ? "approved" : state === words.changesRequested ? "changes-requested" : "none",
          },
        ]
      : [],
  );
}

/** A reviewer's verdict, oldest first; `none` when the reviewer's last review withdrew one (dismissed, pending). */
export interface ReviewVerdict {
  reviewer: number;
  verdict: "approved" | "changes-requested" | "none";
}

/** Where an open pull request's review stands: each reviewer's latest verdict counts, a request for changes first. */
export function reviewStateOf(verdicts: readonly ReviewVerdict[]): ReviewState {
  const latest = new Map(verdicts.map((v) => [v.reviewer, v.verdict]));
  const standing = [...latest.values()];
  return standing.includes("changes-requested")
    ? "changes-requested"
    : standing.includes("approved")
      ? "approved"
      : "open";
}

/**
 * How far back a closed pull request is looked for: a team's change closed longer ago than the last this many is no
 * longer news (its status then shows what the Flux repo holds, without the review).
 */
export const RECENTLY_CLOSED = 200;
/** Pull requests per page of a listing (Gitea's default maximum). */
const PAGE = 50;

const giteaReview = z.object({
  state: z.string(),
  dismissed: z.boolean().optional(),
  stale: z.boolean().optional(),
  user: z.object({ id: z.number() }).nullable(),
});

/** Where a forge adapter finds the fleet repository, and how it authenticates. */
export interface ForgeOptions {
  /** Gitea: its base URL, e.g. https://git.example.com (the API is under /api/v1). GitHub: the REST API's base URL. */
  url: string;
  owner: string;
  repo: string;
  /** Read for each request: a mounted Secret may be rotated. */
  token: () => Promise<string>;
  fetch?: typeof fetch;
  timeoutMs?: number;
}
export type GiteaForgeOptions = ForgeOptions;

/** Gitea and Forgejo through Gitea's REST API (v1). */
export class GiteaForge implements Forge {
  private readonly base: string;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly options: GiteaForgeOptions) {
    this.base = `${options.url.replace(/\/+$/, "")}/api/v1/repos/${encodeURIComponent(options.owner)}/${encodeURIComponent(options.repo)}`;
    this.fetchImpl = options.fetch ?? fetch;
  }

  async openPullRequest(request: { head: string; base: string; title: string; body: string }): Promise<PullRequest> {
    const existing = await this.findOpenPullRequest(request.head, request.base);
    if (existing) return existing;
    const created = forgePull.parse(await this.call("POST", "/pulls", request));
    return this.withReviews(created);
  }

  async pullRequest(number: number): Promise<PullRequest> {
    return this.withReviews(forgePull.parse(await this.call("GET", `/pulls/${number}`)));
  }

  async closePullRequest(number: number): Promise<PullRequest> {
    return this.withReviews(forgePull.parse(await this.call("PATCH", `/pulls/${number}`, { state: "closed" })));
  }

  async deleteBranch(branch: string): Promise<void> {
    await this.call("DELETE", `/branches/${encodeURIComponent(branch)}`, undefined, [404]);
  }

  /** Open pull requests are few (one per team with a pending change): the list is read page by page. */
  async findOpenPullRequest(head: string, base: string): Promise<PullRequest | undefined> {
    for (let page = 1; ; page++) {
      const pulls = await this.openPage(page);
      const found = pulls.find((p) => p.head.ref === head && p.base.ref === base);
      if (found) return this.withReviews(found);
      if (pulls.length < PAGE) return undefined;
    }
  }

  async openPullRequests(base: string, headPrefix: string): Promise<PullRequest[]> {
    const matching: Array<ForgePull> = [];
    for (let page = 1; ; page++) {
      const pulls = await this.openPage(page);
      matching.push(...pulls.filter((p) => p.base.ref === base && p.head.ref.startsWith(headPrefix)));
      if (pulls.length < PAGE) break;
    }
    // One reviews read per pull request (Gitea's list does not carry them), a few at a time.
    const out: PullRequest[] = [];
    for (let i = 0; i < matching.length; i += 8)
      out.push(...(await Promise.all(matching.slice(i, i + 8).map((p) => this.withReviews(p)))));
    return out;
  }

  private async openPage(page: number) {
    return z.array(forgePull).parse(await this.call("GET", `/pulls?state=open&limit=${PAGE}&page=${page}`));
  }

  async latestPullRequest(head: string, base: string): Promise<PullRequest | undefined> {
    const open = await this.findOpenPullRequest(head, base);
    if (open) return open;
    for (let page = 1; page <= RECENTLY_CLOSED / PAGE; page++) {
      const pulls = z
        .array(forgePull)
        .parse(
          await this.call(
            "GET",
            `/pulls?state=closed&sort=recentclose&base_branch=${encodeURIComponent(base)}&limit=${PAGE}&page=${page}`,
          ),
        );
      const found = pulls.find((p) => p.head.ref === head && p.base.ref === base);
      if (found) return this.withReviews(found);
      if (pulls.length < PAGE) return undefined;
    }
    return undefined;
  }

  /** Where review stands: each reviewer's latest review counts; a comment, or a dismissed or stale review, does not. */
  private withReviews(pull: ForgePull): Promise<PullRequest> {
    return pullRequestOf(pull, async () =>
      verdictsOf(
        z
          .array(giteaReview)
          .parse(await this.call("GET", `/pulls/${pull.number}/reviews`))
          .map((r) => ({
            reviewer: r.user?.id,
            state: r.state,
            counts: !r.dismissed && !r.stale && r.state !== "COMMENT",
          })),
        { approved: "APPROVED", changesRequested: "REQUEST_CHANGES" },
      ),
    );
  }

  private async call(method: string, path: string, body?: unknown, tolerated: number[] = []): Promise<unknown> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.options.timeoutMs ?? 30_000);
    let res: Response;
    try {
      res = await this.fetchImpl(`${this.base}${path}`, {
        method,
        headers: {
          authorization: `token ${await this.options.token()}`,
          accept: "application/json",
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        redirect: "error",
        signal: controller.signal,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      if (res.ok || tolerated.includes(res.status)) return text ? JSON.parse(text) : undefined;
      // Gitea's error body is `{ message, url }`; the message names the problem, never the token.
      const message = (() => {
        try {
          return String((JSON.parse(text) as { message?: unknown }).message ?? "");
        } catch {
          return "";
        }
      })();
      throw new ForgeError(`Gitea refused ${method} ${path}: ${res.status}${message ? ` ${message}` : ""}`, res.status);
    } catch (err) {
      if (err instanceof ForgeError) throw err;
      throw new ForgeError(`Gitea did not answer ${method} ${path}: ${(err as Error).message}`, 0);
    } finally {
      clearTimeout(timer);
    }
  }
}
