/**
 * The status page's HTTP contract, without a browser (fastify inject on the API as main.ts wires it):
 * the strict CSP and security headers on every /ui response, no inline script or style in any page,
 * sessions (redirects, 401 for live refreshes, cookie flags, tampering), no open redirect after
 * sign-in, ETag/304 on the live refresh and on GET /v1/status, and the pages kept out of the OpenAPI doc.
 */
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UI_CONTENT_SECURITY_POLICY } from "../../apps/api/src/http/ui/index.js";
import { html } from "../../apps/api/src/http/ui/html.js";
import { DEV_TOKEN, startBerth, type RunningBerth } from "../support/berth.js";
import { ManualClock } from "../support/clock.js";
import { createBareRepo, type BareRepo } from "../support/git-remotes.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const bearer = { authorization: `Bearer ${DEV_TOKEN}` };

describe("the status page over HTTP", () => {
  let remote: BareRepo;
  let berth: RunningBerth;
  let cookie: string;

  const signIn = async (b: RunningBerth, next = "/ui") => {
    const res = await b.server.inject({
      method: "POST",
      url: "/ui/sign-in",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({ token: DEV_TOKEN, next }).toString(),
    });
    return res;
  };
  const get = (url: string, headers: Record<string, string> = {}) =>
    berth.server.inject({ url, headers: { cookie, ...headers } });

  beforeAll(async () => {
    remote = await createBareRepo();
    berth = await startBerth({ remoteUrl: remote.url });
    const created = await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: bearer,
      payload: {
        name: "payments",
        description: `Payments & "refunds"`,
        owners: [OWNER],
        environments: ["dev", "prod"],
      },
    });
    expect(created.statusCode).toBe(201);
    const res = await signIn(berth);
    expect(res.statusCode).toBe(303);
    cookie = String(res.headers["set-cookie"]).split(";")[0]!;
  });
  afterAll(async () => {
    await berth?.stop();
    await remote?.remove();
  });

  it("sets the strict CSP and security headers on every /ui response, and pages hold no inline script or style", async () => {
    expect(UI_CONTENT_SECURITY_POLICY).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; require-trusted-types-for 'script'; trusted-types berth",
    );
    const responses = await Promise.all([
      get("/ui"),
      get("/ui/teams/payments"),
      get("/ui/teams/nobody"),
      get("/ui/no/such/page"),
      get("/ui/assets/ui.css"),
      get("/ui/assets/favicon.svg"),
      berth.server.inject({ url: "/ui" }),
      berth.server.inject({ url: "/ui/sign-in" }),
      berth.server.inject({
        method: "POST",
        url: "/ui/sign-in",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        payload: "token=wrong",
      }),
    ]);
    expect(responses.map((r) => r.statusCode)).toEqual([200, 200, 404, 404, 200, 200, 303, 200, 401]);
    for (const res of responses) {
      expect(res.headers["content-security-policy"]).toBe(UI_CONTENT_SECURITY_POLICY);
      expect(res.headers).toMatchObject({
        "x-content-type-options": "nosniff",
        "x-frame-options": "DENY",
        "referrer-policy": "no-referrer",
      });
      if (String(res.headers["content-type"]).startsWith("text/html")) {
        expect(res.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
        expect(res.body).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
        expect(res.headers["cache-control"]).toBe("no-store");
      }
    }
  });

  it("answers a JSON body it cannot read with 400 or 415, as /v1 does, and logs no error", async () => {
    const from = berth.logs.length;
    const send = (method: "POST" | "DELETE", url: string, contentType: string, payload: string) =>
      berth.server.inject({ method, url, headers: { "content-type": contentType }, payload });
    const answers = await Promise.all([
      send("POST", "/ui/sign-in", "application/json", "{not json"),
      send("POST", "/ui/sign-out", "application/json", '{"a": 1, "a": 2}'),
      send("POST", "/ui/no/such/page", "application/json", "{not json"),
      send("DELETE", "/ui", "application/json", "[".repeat(64)),
      send("POST", "/ui/sign-in", "application/json; charset=latin1", "{}"),
    ]);
    expect(answers.map((r) => r.statusCode)).toEqual([400, 400, 400, 400, 415]);
    for (const res of answers) {
      expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
      expect(res.headers["content-security-policy"]).toBe(UI_CONTENT_SECURITY_POLICY);
    }
    expect(answers[0]?.body).toContain("the body is not valid JSON");
    expect(answers[4]?.body).toContain("a JSON body must be UTF-8");
    // The same body under /v1 is a problem with the same status.
    const v1 = await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: { ...bearer, "content-type": "application/json" },
      payload: "{not json",
    });
    expect(v1.statusCode).toBe(400);
    const errors = berth.logEntries<{ level: number; msg: string }>(from).filter((l) => l.level >= 50);
    expect(errors).toEqual([]);

    // The rate limit, refused by the same API-wide hooks, keeps its 429 and Retry-After on the page too.
    const limited = await startBerth({
      remoteUrl: remote.url,
      api: { rateLimit: { windowSeconds: 60, unauthenticated: 1 } },
    });
    try {
      expect((await limited.server.inject({ url: "/ui/sign-in" })).statusCode).toBe(200);
      const refused = await limited.server.inject({ url: "/ui/sign-in" });
      expect(refused.statusCode).toBe(429);
      expect(refused.headers["retry-after"]).toMatch(/^\d+$/);
      expect(refused.body).toContain("Too Many Requests");
    } finally {
      await limited.stop();
    }
  });

  it("escapes what it shows", async () => {
    expect(html`<p title="${`"><script>`}">${"<b>&"}</p>`.value).toBe(
      '<p title="&quot;&gt;&lt;script&gt;">&lt;b&gt;&amp;</p>',
    );
    const page = await get("/ui/teams/payments");
    expect(page.body).toContain("Payments &amp; &quot;refunds&quot;");
  });

  it("sends visitors without a session to sign in (back to the page they asked for), and live refreshes get 401", async () => {
    const page = await berth.server.inject({ url: "/ui/teams/payments?x=1" });
    expect(page.statusCode).toBe(303);
    expect(page.headers.location).toBe("/ui/sign-in?next=%2Fui%2Fteams%2Fpayments%3Fx%3D1");
    const fragment = await berth.server.inject({ url: "/ui?fragment=main" });
    expect(fragment.statusCode).toBe(401);
    // A cookie that was tampered with, or sealed with another key, is no session.
    const [name, value] = cookie.split("=") as [string, string];
    const tampered = `${name}=${value.slice(0, -4)}${value.endsWith("AAAA") ? "BBBB" : "AAAA"}`;
    expect((await berth.server.inject({ url: "/ui", headers: { cookie: tampered } })).statusCode).toBe(303);
    const elsewhere = await startBerth({ remoteUrl: remote.url });
    try {
      expect((await elsewhere.server.inject({ url: "/ui", headers: { cookie } })).statusCode).toBe(303);
    } finally {
      await elsewhere.stop();
    }
  });

  it("goes back only to a page of /ui after signing in", async () => {
    for (const [next, location] of [
      ["/ui/teams/payments", "/ui/teams/payments"],
      ["/ui?q=pay&fragment=main", "/ui?q=pay"],
      ["//evil.example/ui", "/ui"],
      ["/\\evil.example", "/ui"],
      ["https://evil.example/ui", "/ui"],
      ["/ui/../v1/teams", "/ui"],
      ["/docs", "/ui"],
    ]) {
      const res = await signIn(berth, next);
      expect([next, res.headers.location]).toEqual([next, location]);
    }
    const wrong = await berth.server.inject({
      method: "POST",
      url: "/ui/sign-in",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: "token=not-the-token&next=/ui",
    });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.headers["set-cookie"]).toBeUndefined();
    expect(wrong.body).toContain("That token was not accepted.");
  });

  it("keeps the session in an httpOnly SameSite cookie, Secure with the __Host- prefix when served over https", async () => {
    const res = await signIn(berth);
    expect(String(res.headers["set-cookie"])).toMatch(
      /^berth-session=[\w.-]+; Max-Age=3600; Path=\/; HttpOnly; SameSite=Lax$/,
    );
    const https = await startBerth({
      remoteUrl: remote.url,
      env: {
        BERTH_UI_PUBLIC_URL: "https://berth.example.test",
        BERTH_UI_SESSION_SECRET: "a-session-secret-of-at-least-32-characters",
      },
    });
    try {
      const secure = await signIn(https);
      expect(String(secure.headers["set-cookie"])).toMatch(
        /^__Host-berth-session=[\w.-]+; Max-Age=3600; Path=\/; HttpOnly; Secure; SameSite=Lax$/,
      );
      const signOut = await https.server.inject({
        method: "POST",
        url: "/ui/sign-out",
        headers: { cookie: String(secure.headers["set-cookie"]).split(";")[0]! },
      });
      expect(signOut.headers.location).toBe("/ui/sign-in");
      expect(String(signOut.headers["set-cookie"])).toMatch(
        /^__Host-berth-session=; Max-Age=0; Path=\/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; Secure; SameSite=Lax$/,
      );
    } finally {
      await https.stop();
    }
  });

  it("signing out clears the cookie; a copy made before opens /ui on any replica for at most an hour after sign-in", async () => {
    // Two replicas with the same session key and one clock the test moves.
    const clock = new ManualClock();
    const replicas = await Promise.all(
      [1, 2].map(() =>
        startBerth({
          remoteUrl: remote.url,
          clock,
          startEngine: false,
          env: { BERTH_UI_SESSION_SECRET: "a-session-secret-of-at-least-32-characters" },
        }),
      ),
    );
    try {
      const [one, two] = replicas as [RunningBerth, RunningBerth];
      const signedIn = await signIn(one);
      expect(String(signedIn.headers["set-cookie"])).toMatch(/; Max-Age=3600;/);
      const copy = String(signedIn.headers["set-cookie"]).split(";")[0]!;
      const signOut = await one.server.inject({ method: "POST", url: "/ui/sign-out", headers: { cookie: copy } });
      expect(String(signOut.headers["set-cookie"])).toMatch(/^berth-session=; Max-Age=0;/);
      // Stateless sessions: nothing tells the replicas of the sign-out, so the copy still works until it expires.
      const opens = async (b: RunningBerth) =>
        (await b.server.inject({ url: "/ui", headers: { cookie: copy } })).statusCode;
      clock.advance(3_599_000);
      expect([await opens(one), await opens(two)]).toEqual([200, 200]);
      clock.advance(2_000);
      expect([await opens(one), await opens(two)]).toEqual([303, 303]);
    } finally {
      await Promise.all(replicas.map((b) => b.stop()));
    }
  });

  it("takes sign-in and sign-out forms only from its own origin (no cross-site forgery)", async () => {
    const form = { "content-type": "application/x-www-form-urlencoded" };
    const payload = new URLSearchParams({ token: DEV_TOKEN, next: "/ui" }).toString();
    const post = (url: string, headers: Record<string, string>) =>
      berth.server.inject({ method: "POST", url, headers: { ...form, ...headers }, payload });
    // inject's requests reach http://localhost:80: that is this page's origin here.
    // What a browser sends for the page's own form (Origin is null under the page's Referrer-Policy: no-referrer),
    // and what an older browser without Sec-Fetch-Site sends.
    expect((await post("/ui/sign-in", { origin: "null", "sec-fetch-site": "same-origin" })).statusCode).toBe(303);
    expect((await post("/ui/sign-in", { origin: "http://localhost" })).statusCode).toBe(303);
    const forgeries: Array<Record<string, string>> = [
      { origin: "https://evil.example" },
      { origin: "http://localhost:8080" },
      { origin: "null", "sec-fetch-site": "cross-site" },
      { origin: "http://localhost", "sec-fetch-site": "same-site" },
      { "sec-fetch-site": "cross-site" },
    ];
    for (const headers of forgeries) {
      const forged = await post("/ui/sign-in", headers);
      expect(forged.statusCode, JSON.stringify(headers)).toBe(403);
      expect(forged.headers["set-cookie"]).toBeUndefined();
      expect(forged.body).toContain("Cross-site request refused");
      const signOut = await post("/ui/sign-out", { ...headers, cookie });
      expect(signOut.statusCode, JSON.stringify(headers)).toBe(403);
      expect(signOut.headers["set-cookie"]).toBeUndefined();
    }
    // The session survived every forged sign-out.
    expect((await get("/ui")).statusCode).toBe(200);
  });

  it("answers a live refresh with 304 while nothing changed, and with the new content after a change", async () => {
    const first = await get("/ui?fragment=main");
    expect(first.statusCode).toBe(200);
    expect(first.body).not.toContain("<html");
    const etag = String(first.headers.etag);
    expect(etag).toMatch(/^W\/"[\w-]+"$/);
    expect((await get("/ui?fragment=main", { "if-none-match": etag })).statusCode).toBe(304);
    // The full page carries the same tag, so its first refresh is already a 304.
    expect((await get("/ui")).body).toContain(`data-etag="${etag.replace(/"/g, "&quot;")}"`);
    await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: bearer,
      payload: { name: "search", owners: [OWNER], environments: ["dev"] },
    });
    await berth.repo.snapshot(0);
    const changed = await get("/ui?fragment=main", { "if-none-match": etag });
    expect(changed.statusCode).toBe(200);
    expect(changed.body).toContain('data-team="search"');
  });

  it("lists rollouts and shows one, escaped, under the same CSP; unknown or malformed ids are 404", async () => {
    expect((await get("/ui/rollouts")).body).toContain("No rollouts yet.");
    const created = await berth.server.inject({
      method: "POST",
      url: "/v1/rollouts",
      headers: bearer,
      payload: { description: `Labels & "tags" for v3`, target: { templateVersion: "v3" } },
    });
    expect(created.statusCode, created.body).toBe(201);
    const id = (created.json() as { rollout: { metadata: { name: string } } }).rollout.metadata.name;
    await berth.repo.snapshot(0);

    const list = await get("/ui/rollouts");
    expect(list.statusCode).toBe(200);
    expect(list.body).toContain(`<tr data-rollout="${id}">`);
    expect(list.body).toContain("Labels &amp; &quot;tags&quot; for v3");
    expect(list.body).toContain('data-rollout-phase="Completed"');
    expect(list.body).toContain('<a href="/ui/rollouts">Rollouts</a>');

    const detail = await get(`/ui/rollouts/${id}`);
    expect(detail.statusCode).toBe(200);
    expect(detail.body).toContain("Labels &amp; &quot;tags&quot; for v3");
    expect(detail.body).toContain("to v3");
    expect(detail.body).toMatch(/<tr data-wave="all" data-wave-phase="[A-Za-z]+">/);
    expect(detail.body).toContain("none (one commit)");
    expect(detail.body).not.toContain("Halted in wave");

    for (const res of [list, detail]) {
      expect(res.headers["content-security-policy"]).toBe(UI_CONTENT_SECURITY_POLICY);
      expect(res.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(res.body).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    }
    const unknown = await get("/ui/rollouts/ro-20990101-000000-abcdef");
    expect(unknown.statusCode).toBe(404);
    expect(unknown.body).toContain("Rollout not found");
    expect((await get("/ui/rollouts/not-an-id%3Cb%3E")).statusCode).toBe(404);
    expect((await get("/ui/rollouts/not-an-id%3Cb%3E")).body).not.toContain("<b>");
    expect((await berth.server.inject({ url: `/ui/rollouts/${id}` })).statusCode).toBe(303);
  });

  it("reads the fleet's page number from the query, and a page it cannot read is the first", async () => {
    for (const query of ["page=2", "page=abc", "page=-1", "page=99999999", "q=pay&page=3"]) {
      const res = await get(`/ui?${query}`);
      expect(res.statusCode, query).toBe(200);
      expect(res.body, query).toContain('data-team="payments"'); // one page: every page past it shows it
      expect(res.body, query).not.toContain('class="pager"');
    }
  });

  it("serves the fleet at GET /v1/status with an ETag, and keeps the pages out of the OpenAPI document", async () => {
    const fleet = await berth.server.inject({ url: "/v1/status", headers: bearer });
    expect(fleet.statusCode).toBe(200);
    const body = fleet.json() as {
      teams: Array<{ team: string; ready: boolean; clusters: Array<{ cluster: string; state: string }> }>;
    };
    expect(body.teams.find((t) => t.team === "payments")).toMatchObject({
      ready: false,
      clusters: [
        { cluster: "aks-dev-weu", state: "not-configured" },
        { cluster: "aks-prod-weu", state: "not-configured" },
        { cluster: "aks-prod-neu", state: "not-configured" },
      ],
    });
    const again = await berth.server.inject({
      url: "/v1/status",
      headers: { ...bearer, "if-none-match": String(fleet.headers.etag) },
    });
    expect(again.statusCode).toBe(304);
    expect((await berth.server.inject({ url: "/v1/status" })).statusCode).toBe(401);
    const openapi = (await berth.server.inject({ url: "/openapi.json" })).json() as { paths: Record<string, unknown> };
    expect(Object.keys(openapi.paths)).toContain("/v1/status");
    expect(Object.keys(openapi.paths).filter((p) => p.startsWith("/ui"))).toEqual([]);
  });

  it("sends the fleet gzipped to a reader that accepts it, under the same weak ETag (Vary: accept-encoding)", async () => {
    const plain = await berth.server.inject({ url: "/v1/status", headers: bearer });
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(plain.headers.vary).toContain("accept-encoding");
    const zipped = await berth.server.inject({
      url: "/v1/status",
      headers: { ...bearer, "accept-encoding": "br;q=1, gzip;q=0.8" },
    });
    expect(zipped.statusCode).toBe(200);
    expect(zipped.headers["content-encoding"]).toBe("gzip");
    expect(zipped.headers["content-type"]).toContain("application/json");
    expect(zipped.headers.vary).toContain("accept-encoding");
    expect(gunzipSync(zipped.rawPayload).toString("utf8")).toBe(plain.body);
    expect(zipped.headers.etag).toBe(plain.headers.etag);
    const revalidated = await berth.server.inject({
      url: "/v1/status",
      headers: { ...bearer, "accept-encoding": "gzip", "if-none-match": String(zipped.headers.etag) },
    });
    expect(revalidated.statusCode).toBe(304);
    for (const refused of ["gzip;q=0", "br", "identity"]) {
      const res = await berth.server.inject({ url: "/v1/status", headers: { ...bearer, "accept-encoding": refused } });
      expect(res.headers["content-encoding"], refused).toBeUndefined();
      expect(res.body, refused).toBe(plain.body);
    }
  });

  it("names in the team's history whom a write was made for, beside who made it", async () => {
    const updated = await berth.server.inject({
      method: "PUT",
      url: "/v1/teams/payments",
      headers: { ...bearer, "berth-on-behalf-of": "user:default/jane.doe" },
      payload: { description: "Payments", owners: [OWNER], environments: ["dev", "prod"] },
    });
    expect(updated.statusCode).toBe(200);
    const page = await get("/ui/teams/payments");
    expect(page.body).toContain("<td>user:default/jane.doe via developer</td>");
    expect(page.body).toContain("<td>developer</td>"); // the onboarding, sent without the header
  });
});
