// needs: dist chromium
/// <reference lib="dom" />
// (page.evaluate callbacks run in the browser: they are typed against the DOM)
/**
 * Production sign-in to the status page, in Chromium: OIDC authorization code + PKCE against the
 * project's test issuer (tests/support/oidc-issuer.ts), with the built API in oidc mode. A person clicks
 * "Sign in", picks their account at the issuer, and lands back on the page they asked for; someone without
 * the read role is refused; a forged or replayed callback signs nobody in; the session cookie is no API
 * credential, and no token reaches the page.
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/berth.js";
import {
  accessibilityViolations,
  launchChromium,
  screenshot,
  watchPage,
  type PageProblems,
} from "../support/browser.js";
import { ensureBuilt } from "../support/build.js";
import { createBareRepo, type BareRepo } from "../support/git-remotes.js";
import { startTestIssuer, type TestIssuer } from "../support/oidc-issuer.js";
import { startApiProcess, type AppProcess } from "../support/processes.js";
import { freePort } from "../support/ports.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const CLIENT_ID = "berth-status-page";
const CLIENT_SECRET = "status-page-client-secret-0123456789";

describe("status page sign-in with OIDC authorization code + PKCE", () => {
  let issuer: TestIssuer;
  let remote: BareRepo;
  let api: AppProcess & { url: string };
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let watch: PageProblems;

  beforeAll(async () => {
    const built = ensureBuilt();
    const port = await freePort();
    issuer = await startTestIssuer("api://berth", {
      clients: [
        { clientId: CLIENT_ID, secret: CLIENT_SECRET, redirectUris: [`http://127.0.0.1:${port}/ui/auth/callback`] },
      ],
      users: [
        { username: "alice@example.test", roles: ["Berth.Read"] },
        { username: "mallory@example.test", roles: [] },
      ],
    });
    const dir = await mkdtemp(join(tmpdir(), "berth-oidc-ui-"));
    remote = await createBareRepo();
    await built;
    api = await startApiProcess({
      BERTH_CONFIG_FILE: join(REPO_ROOT, "infra", "local", "berth.yaml"),
      BERTH_PORT: String(port),
      BERTH_GIT_URL: remote.url,
      BERTH_GIT_WORKDIR: join(dir, "clone"),
      BERTH_AUTH_MODE: "oidc",
      BERTH_OIDC_ISSUER: issuer.issuer,
      BERTH_OIDC_AUDIENCE: "api://berth",
      BERTH_UI_CLIENT_ID: CLIENT_ID,
      BERTH_UI_CLIENT_SECRET: CLIENT_SECRET,
      BERTH_UI_PUBLIC_URL: `http://127.0.0.1:${port}`,
      BERTH_UI_SESSION_SECRET: "a-session-secret-of-at-least-32-characters",
    });
    const writer = await issuer.sign({ sub: "ci", preferred_username: "ci@example.test", roles: ["Berth.Write"] });
    const created = await fetch(`${api.url}/v1/teams`, {
      method: "POST",
      headers: { authorization: `Bearer ${writer}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "payments", owners: [OWNER], environments: ["dev"] }),
    });
    expect(created.status).toBe(201);
    browser = await launchChromium();
  }, 600_000);

  afterAll(async () => {
    await browser?.close();
    await api?.stop();
    await issuer?.stop();
    await remote?.remove();
  });

  const freshPage = async () => {
    await context?.close();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    watch = await watchPage(page, api.url);
  };

  const signInAs = async (username: string, next = "/ui/teams/payments") => {
    await page.goto(`${api.url}${next}`);
    expect(new URL(page.url()).pathname).toBe("/ui/sign-in");
    await page.getByRole("link", { name: /^Sign in with 127\.0\.0\.1:\d+$/ }).click();
    await page.waitForURL(`${issuer.issuer}/authorize?**`);
    await page.getByRole("button", { name: `Continue as ${username}` }).click();
  };

  it("signs a reader in at the issuer and brings them back to the page they asked for", async () => {
    await freshPage();
    await signInAs("alice@example.test");
    await page.waitForURL(`${api.url}/ui/teams/payments`).catch(async (err: unknown) => {
      throw new Error(
        `${(err as Error).message}\npage: ${await page.locator("main").textContent()}\nAPI log:\n${api.logs.join("").slice(-3000)}`,
      );
    });
    await expect(page.locator(".who").textContent()).resolves.toContain("alice@example.test");
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toContain("payments");
    await screenshot(page, "oidc-signed-in");

    const authorize = issuer.requests.find((r) => r.endpoint === "authorize" && r.method === "GET")!.params;
    expect(authorize).toMatchObject({
      client_id: CLIENT_ID,
      response_type: "code",
      code_challenge_method: "S256",
      redirect_uri: `${api.url}/ui/auth/callback`,
    });
    expect(authorize.scope!.split(" ")).toEqual(expect.arrayContaining(["openid", "api://berth/.default"]));
    expect(authorize.state).toMatch(/^[\w-]{20,}$/);
    expect(authorize.nonce).toMatch(/^[\w-]{20,}$/);
    const token = issuer.requests.find((r) => r.endpoint === "token")!.params;
    expect(token).toMatchObject({
      grant_type: "authorization_code",
      client_id: CLIENT_ID,
      client_secret: "[redacted]",
    });
    expect(token.code_verifier).toMatch(/^[\w-]{43,128}$/);

    // The browser holds an encrypted session cookie, not the tokens.
    const session = (await context.cookies()).find((c) => c.name === "berth-session")!;
    expect(session).toMatchObject({ httpOnly: true, sameSite: "Lax" });
    expect(session.value.split(".")).toHaveLength(5); // a JWE, opaque to the browser
    expect(await page.evaluate(() => [document.cookie, localStorage.length, sessionStorage.length])).toEqual([
      "",
      0,
      0,
    ]);
    // ...and that cookie is no credential for the API, which wants a bearer token.
    const withCookie = await fetch(`${api.url}/v1/teams`, { headers: { cookie: `berth-session=${session.value}` } });
    expect(withCookie.status).toBe(401);

    expect(await accessibilityViolations(browser, context, `${api.url}/ui`)).toEqual([]);
    expect(await watch.cspViolations()).toEqual([]);
    expect(watch.problems).toEqual([]);
  }, 180_000);

  it("refuses a signed-in account without the read role", async () => {
    await freshPage();
    await signInAs("mallory@example.test");
    await page.waitForURL(`${api.url}/ui/auth/callback?**`);
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Not allowed");
    await expect(page.getByRole("alert").textContent()).resolves.toContain(
      "mallory@example.test is signed in but lacks Berth's read role",
    );
    expect((await context.cookies()).some((c) => c.name === "berth-session")).toBe(false);
    await page.goto(`${api.url}/ui`);
    expect(new URL(page.url()).pathname).toBe("/ui/sign-in");
  }, 180_000);

  it("signs nobody in from a forged state or a replayed code", async () => {
    await freshPage();
    // Start a sign-in, but come back with another state than the one this browser was given.
    await page.goto(`${api.url}/ui/auth/login?next=/ui`);
    await page.waitForURL(`${issuer.issuer}/authorize?**`);
    await page.getByRole("button", { name: "Continue as alice@example.test" }).click();
    await page.waitForURL(`${api.url}/ui**`);
    const issued = issuer.requests.filter((r) => r.endpoint === "authorize" && r.method === "POST").at(-1)!.params;
    expect(issued.state).toBeTruthy();

    // A callback replayed in a browser that never started a sign-in (or whose sign-in was consumed).
    await freshPage();
    await page.goto(`${api.url}/ui/auth/callback?code=stolen-code&state=${issued.state}`);
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Sign-in failed");
    await expect(page.getByRole("alert").textContent()).resolves.toContain("expired or was started in another browser");

    // A sign-in in progress, answered with a forged state.
    await page.goto(`${api.url}/ui/auth/login?next=/ui`);
    await page.waitForURL(`${issuer.issuer}/authorize?**`);
    await page.goto(
      `${api.url}/ui/auth/callback?code=anything&state=forged-state&iss=${encodeURIComponent(issuer.issuer)}`,
    );
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Sign-in failed");
    expect((await context.cookies()).some((c) => c.name === "berth-session")).toBe(false);
  }, 180_000);

  it("offers no sign-in when the issuer has no client configured for the page", async () => {
    const other = await startApiProcess({
      BERTH_CONFIG_FILE: join(REPO_ROOT, "infra", "local", "berth.yaml"),
      BERTH_GIT_URL: remote.url,
      BERTH_GIT_WORKDIR: join(await mkdtemp(join(tmpdir(), "berth-oidc-ui-")), "clone"),
      BERTH_AUTH_MODE: "oidc",
      BERTH_OIDC_ISSUER: issuer.issuer,
      BERTH_OIDC_AUDIENCE: "api://berth",
    });
    try {
      const res = await fetch(`${other.url}/ui/sign-in`);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain("Sign-in is not configured");
    } finally {
      await other.stop();
    }
  }, 120_000);
});
