/**
 * GitHubForge (pull-request mode on GitHub, ADR 0030) through Octokit over HTTP:
 *
 * - against GitHub's recorded traffic (@octokit/fixtures, recorded by Octokit's maintainers on github.com): the branch
 *   deletion Berth sends is the recorded request (method, path, the `token` scheme), and the recorded answers (204;
 *   GitHub's 422 and 404 error bodies) are replayed to it byte for byte;
 * - against tests/support/fake-github.ts for the pull-request endpoints, which no recording here covers: its answers
 *   have the fields and types of GitHub's OpenAPI description, and so does what GitHubForge parses (checked below at
 *   compile time).
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import type { components } from "@octokit/openapi-types";
import { ForgeError, GitHubForge } from "@berth/gitops";
import { startFakeGitHub, type FakeGitHub } from "../support/fake-github.js";

const TOKEN = "ghp_fakeTokenThatMustNeverBeLogged0000000";

describe("GitHubForge against the fake GitHub (pull requests, reviews)", () => {
  let github: FakeGitHub;
  let forge: GitHubForge;
  beforeAll(async () => {
    github = await startFakeGitHub(TOKEN);
    forge = new GitHubForge({ url: github.url, owner: github.owner, repo: github.repo, token: async () => TOKEN });
  });
  afterAll(() => github.stop());
  afterEach(() => github.requests.splice(0));

  const request = { head: "berth/team/payments", base: "main", title: "Onboard payments", body: "…" };

  it("opens a pull request; a retry finds the same one without opening another (one POST)", async () => {
    const first = await forge.openPullRequest(request);
    expect(first).toMatchObject({ head: request.head, base: "main", state: "open" });
    expect(first.url).toBe(`https://github.example/platform/fleet/pull/${first.number}`);
    const again = await forge.openPullRequest(request);
    expect(again.number).toBe(first.number);
    expect(github.requests.filter((r) => r.method === "POST")).toHaveLength(1);
    // Found by GitHub's own head filter (owner:branch), one request, not by reading every open one.
    expect(github.requests[0]!.path).toContain(`head=${encodeURIComponent("platform:berth/team/payments")}`);
    expect(github.requests.every((r) => r.auth === "token")).toBe(true);
  });

  it("two writers opening the same branch's pull request at once get the same one (GitHub's 422 for the second)", async () => {
    const both = await Promise.all([1, 2].map(() => forge.openPullRequest({ ...request, head: "berth/team/race" })));
    expect(both[0]!.number).toBe(both[1]!.number);
    expect(github.requests.filter((r) => r.method === "POST")).toHaveLength(2);
  });

  it("reads where review stands: each reviewer's latest verdict, changes requested first, a dismissal withdraws", async () => {
    const pr = await forge.openPullRequest({ ...request, head: "berth/team/orders" });
    const state = async () => (await forge.pullRequest(pr.number)).state;
    expect(await state()).toBe("open");
    github.review(pr.number, 1, "COMMENTED");
    expect(await state()).toBe("open");
    const approval = github.review(pr.number, 1, "APPROVED");
    expect(await state()).toBe("approved");
    github.dismiss(pr.number, approval);
    expect(await state()).toBe("open");
    github.review(pr.number, 2, "CHANGES_REQUESTED");
    expect(await state()).toBe("changes-requested");
    github.review(pr.number, 2, "APPROVED");
    expect(await state()).toBe("approved");
    const withdrawn = github.review(pr.number, 3, "CHANGES_REQUESTED");
    expect(await state()).toBe("changes-requested");
    github.dismiss(pr.number, withdrawn);
    expect(await state()).toBe("approved");
  });

  it("reads again are conditional: an unchanged pull request costs 304s (no rate limit), a change is seen at once", async () => {
    const pr = await forge.openPullRequest({ ...request, head: "berth/team/polled" });
    await forge.pullRequest(pr.number);
    const before = github.notModified();
    expect(await forge.pullRequest(pr.number)).toEqual(await forge.pullRequest(pr.number));
    // Each read is the pull request and its reviews: all four answered 304.
    expect(github.notModified() - before).toBe(4);
    github.review(pr.number, 7, "APPROVED");
    expect((await forge.pullRequest(pr.number)).state).toBe("approved");
  });

  it("a merged pull request carries its merge commit; the branch's latest is found after it closed", async () => {
    const head = "berth/team/ledger";
    const pr = await forge.openPullRequest({ ...request, head });
    const mergeCommit = github.merge(pr.number);
    const merged = await forge.pullRequest(pr.number);
    expect(merged).toMatchObject({ state: "merged", mergeCommit });
    expect(merged.closedAt).toBeDefined();
    expect(await forge.findOpenPullRequest(head, "main")).toBeUndefined();
    // Found in a listing, which has no `merged` flag: merged_at says it.
    expect(await forge.latestPullRequest(head, "main")).toMatchObject({
      number: pr.number,
      state: "merged",
      mergeCommit,
    });
    // A second change to the team after the merge: a new pull request, the latest from then on.
    const next = await forge.openPullRequest({ ...request, head });
    expect(next.number).not.toBe(pr.number);
    github.close(next.number);
    expect(await forge.latestPullRequest(head, "main")).toMatchObject({ number: next.number, state: "closed" });
  });

  it("closePullRequest closes without merging", async () => {
    const pr = await forge.openPullRequest({ ...request, head: "berth/team/abandoned" });
    const closed = await forge.closePullRequest(pr.number);
    expect(closed.state).toBe("closed");
    expect(closed.mergeCommit).toBeUndefined();
  });

  it("openPullRequests reads every page and keeps Berth's branches only", async () => {
    github.seed(150, "someone-else/");
    const ours = await Promise.all(
      ["a", "b", "c"].map((t) => forge.openPullRequest({ ...request, head: `berth/team/page-${t}` })),
    );
    const open = await forge.openPullRequests("main", "berth/team/page-");
    expect(open.map((p) => p.number).sort()).toEqual(ours.map((p) => p.number).sort());
    expect(github.requests.filter((r) => r.path.startsWith("/repos/platform/fleet/pulls?")).length).toBeGreaterThan(
      1 + 3,
    );
  });

  it("a refusal is a ForgeError in the adapter's vocabulary, naming GitHub's message and never the token", async () => {
    const bad = new GitHubForge({ url: github.url, owner: "platform", repo: "fleet", token: async () => "wrong" });
    const auth = await bad.pullRequest(1).catch((e: unknown) => e);
    expect(auth).toBeInstanceOf(ForgeError);
    expect(auth).toMatchObject({ kind: "auth", status: 401 });
    expect((auth as Error).message).toContain("Bad credentials");

    github.failNext(502, "Server Error");
    const down = await forge.pullRequest(1).catch((e: unknown) => e);
    expect(down).toMatchObject({ kind: "unavailable", status: 502 });

    // A spent rate limit is GitHub's 403 with x-ratelimit-remaining 0: a wait, not a refused token.
    github.failNext(403, "API rate limit exceeded for installation ID 1.", undefined, {
      "x-ratelimit-remaining": "0",
      "x-ratelimit-reset": "1796083200",
    });
    const limited = await forge.pullRequest(1).catch((e: unknown) => e);
    expect(limited).toMatchObject({ kind: "unavailable", status: 429 });
    expect((limited as Error).message).toContain("until 2026-12-01T00:00:00.000Z");

    const gone = new GitHubForge({ url: "http://127.0.0.1:9", owner: "o", repo: "r", token: async () => TOKEN });
    const noAnswer = await gone.pullRequest(1).catch((e: unknown) => e);
    expect(noAnswer).toMatchObject({ kind: "unavailable", status: 0 });
    for (const e of [auth, down, limited, noAnswer]) expect(JSON.stringify(e) + String(e)).not.toContain(TOKEN);
  });

  it("deleting a branch that is already gone succeeds (GitHub's 422 Reference does not exist)", async () => {
    await expect(forge.deleteBranch("berth/team/never-existed")).resolves.toBeUndefined();
  });

  it("what GitHubForge reads has the names and types of GitHub's OpenAPI description", () => {
    type Pull = components["schemas"]["pull-request-simple"];
    type Read = Pick<Pull, "number" | "html_url" | "merged_at" | "closed_at" | "merge_commit_sha"> & {
      head: Pick<Pull["head"], "ref" | "sha">;
      base: Pick<Pull["base"], "ref">;
    };
    expectTypeOf<Read>().toMatchTypeOf<{
      number: number;
      html_url: string;
      merged_at: string | null;
      closed_at: string | null;
      merge_commit_sha: string | null;
      head: { ref: string; sha: string };
      base: { ref: string };
    }>();
    expectTypeOf<components["schemas"]["pull-request-review"]["state"]>().toEqualTypeOf<string>();
  });
});

/** One recorded exchange of @octokit/fixtures' normalized scenarios. */
interface Recorded {
  method: string;
  path: string;
  status: number;
  response: unknown;
  reqheaders: Record<string, string>;
  headers: Record<string, string>;
}

const fixtures = dirname(createRequire(import.meta.url).resolve("@octokit/fixtures/package.json"));
const scenario = (name: string) =>
  JSON.parse(
    readFileSync(join(fixtures, "scenarios", "api.github.com", name, "normalized-fixture.json"), "utf8"),
  ) as Recorded[];

/**
 * Answers each request with the recorded exchange of the same method and path, as GitHub answered it. Paths compare
 * decoded: Octokit encodes a ref's slashes (`heads%2Ftest`), as every Octokit user's deleteRef does on github.com.
 */
async function replaying(exchanges: Recorded[]) {
  const seen: Array<{ method: string; path: string; authorization: string | undefined }> = [];
  const server: Server = createServer((req, res) => {
    const path = decodeURIComponent(req.url ?? "");
    seen.push({ method: req.method ?? "", path, authorization: req.headers.authorization });
    const recorded = exchanges.find((e) => e.method.toUpperCase() === req.method && e.path === path);
    if (!recorded) {
      res.writeHead(599);
      return res.end();
    }
    const { "content-length": _, "transfer-encoding": __, ...headers } = recorded.headers;
    res.writeHead(recorded.status, headers);
    res.end(recorded.response === "" ? undefined : JSON.stringify(recorded.response));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe("GitHubForge against GitHub's recorded traffic (@octokit/fixtures)", () => {
  it("deletes a branch with the recorded request and takes the recorded 204", async () => {
    const recorded = scenario("git-refs").find((e) => e.method === "delete")!;
    expect(recorded).toMatchObject({ path: "/repos/octokit-fixture-org/git-refs/git/refs/heads/test", status: 204 });
    const github = await replaying([recorded]);
    try {
      const token = recorded.reqheaders.authorization!.split(" ")[1]!;
      const forge = new GitHubForge({
        url: github.url,
        owner: "octokit-fixture-org",
        repo: "git-refs",
        token: async () => token,
      });
      await forge.deleteBranch("test");
      expect(github.seen).toEqual([
        { method: "DELETE", path: recorded.path, authorization: recorded.reqheaders.authorization },
      ]);
    } finally {
      await github.stop();
    }
  });

  it("GitHub's recorded error bodies (422 Validation Failed, 404) become ForgeErrors with GitHub's message", async () => {
    const validation = scenario("errors").find((e) => e.status === 422)!;
    const notFound = scenario("branch-protection").find((e) => e.status === 404)!;
    // The same recorded answers, to the requests GitHubForge sends for a pull request.
    const github = await replaying([
      { ...notFound, method: "get", path: "/repos/o/r/pulls/7" },
      { ...validation, method: "patch", path: "/repos/o/r/pulls/8" },
    ]);
    try {
      const forge = new GitHubForge({ url: github.url, owner: "o", repo: "r", token: async () => TOKEN });
      const missing = await forge.pullRequest(7).catch((e: unknown) => e);
      expect(missing).toBeInstanceOf(ForgeError);
      expect(missing).toMatchObject({ kind: "invalid-change", status: 404 });
      expect((missing as Error).message).toContain((notFound.response as { message: string }).message);
      const refused = await forge.closePullRequest(8).catch((e: unknown) => e);
      expect(refused).toMatchObject({ kind: "invalid-change", status: 422 });
      expect((refused as Error).message).toContain("Validation Failed");
    } finally {
      await github.stop();
    }
  });
});
