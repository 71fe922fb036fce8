/**
 * Security headers on every response, and the docs UI still working under the Content-Security-Policy:
 * rendered by Debian's Chromium (infra/test-tools/debian-packages.txt) through playwright-core.
 */
// needs: chromium
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, startBerth, type RunningBerth } from "../support/berth.js";
import { launchChromium } from "../support/browser.js";
import { createBareRepo, type BareRepo } from "../support/git-remotes.js";
import { rawRequest, requestBytes, type RawResponse } from "../support/raw-http.js";

function expectSecurityHeaders(res: RawResponse, label: string, opts: { api: boolean }) {
  const h = (name: string) => res.headers[name]?.[0];
  expect(h("x-content-type-options"), label).toBe("nosniff");
  expect(h("x-frame-options"), label).toBe("DENY");
  expect(h("referrer-policy"), label).toBe("no-referrer");
  expect(h("cross-origin-opener-policy"), label).toBe("same-origin");
  expect(h("cross-origin-resource-policy"), label).toBe("same-origin");
  const csp = h("content-security-policy") ?? "";
  expect(csp, label).toContain("default-src 'none'");
  expect(csp, label).toContain("frame-ancestors 'none'");
  expect(csp, label).toContain("script-src 'self'");
  expect(csp, label).not.toContain("unsafe-eval");
  if (opts.api) expect(h("cache-control"), label).toBe("no-store");
}

describe("security headers", () => {
  let remote: BareRepo;
  let berth: RunningBerth;
  let port: number;
  let browser: Browser | undefined;

  beforeAll(async () => {
    remote = await createBareRepo();
    berth = await startBerth({ remoteUrl: remote.url, listen: true });
    port = Number(new URL(berth.url).port);
  });
  afterAll(async () => {
    await browser?.close();
    await berth?.stop();
    await remote?.remove();
  });

  it("are on every kind of response: API answers, errors, docs, and errors raised before routing", async () => {
    const get = (path: string, headers: string[] = []) =>
      rawRequest(port, requestBytes([`GET ${path} HTTP/1.1`, "Host: berth.test", "Connection: close", ...headers]));
    const auth = [`Authorization: Bearer ${DEV_TOKEN}`];
    const cases: Array<[string, RawResponse, boolean]> = [
      ["GET /v1/teams", await get("/v1/teams", auth), true],
      ["401", await get("/v1/teams"), true],
      ["404 team", await get("/v1/teams/nobody", auth), true],
      ["404 route", await get("/nowhere"), true],
      ["422 bad name", await get("/v1/teams/Not_A_Name", auth), true],
      ["healthz", await get("/healthz"), true],
      ["openapi", await get("/openapi.json"), true],
      ["docs", await get("/docs/"), false],
      ["400 bad url", await get("/v1/teams/%zz", auth), true],
      ["414 long param", await get(`/v1/teams/${"a".repeat(200)}`, auth), true],
      ["400 unparseable", await rawRequest(port, Buffer.from("FOO BAR BAZ\r\n\r\n")), true],
    ];
    for (const [label, res, api] of cases) expectSecurityHeaders(res, `${label} (${res.status})`, { api });
  });

  it("let the docs UI render in Chromium, with no CSP violation", { timeout: 120_000 }, async () => {
    browser = await launchChromium();
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on("console", (msg) => {
      if (msg.type() === "error" || /Content.Security.Policy|Refused to/i.test(msg.text())) problems.push(msg.text());
    });
    page.on("pageerror", (err) => problems.push(err.message));
    // Browser-side code as text: the tests compile without the DOM library.
    await page.addInitScript({
      content:
        'document.addEventListener("securitypolicyviolation", (e) => console.error("CSP violation: " + e.violatedDirective + " " + e.blockedURI));',
    });
    const response = await page.goto(`${berth.url}/docs/`, { waitUntil: "load" });
    expect(response?.headers()["content-security-policy"]).toContain("default-src 'none'");
    // swagger-ui builds the page from /docs/json with React: the title and every operation appear only if
    // its scripts ran, its styles applied and its fetch of the document was allowed.
    await expect
      .poll(() => page.locator(".swagger-ui .info .title").textContent(), { timeout: 30_000 })
      .toContain("Berth onboarding API");
    await expect
      .poll(() => page.locator(".swagger-ui .opblock").count(), { timeout: 30_000 })
      .toBeGreaterThanOrEqual(8);
    const display = await page.locator(".swagger-ui .opblock").first().evaluate("(el) => getComputedStyle(el).display");
    expect(display).not.toBe("inline"); // swagger-ui.css applied
    // Opening an operation works (client-side rendering under the policy).
    await page.locator(".swagger-ui .opblock-summary").first().click();
    await expect.poll(() => page.locator(".swagger-ui .opblock-body").count(), { timeout: 30_000 }).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  });
});
