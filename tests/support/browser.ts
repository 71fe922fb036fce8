/// <reference lib="dom" />
// (page.evaluate callbacks run in the browser: they are typed against the DOM)
/**
 * Headless Chromium from Debian (`/usr/bin/chromium`, package `chromium` in
 * infra/test-tools/debian-packages.txt) driven by playwright-core — never a downloaded browser.
 *
 * `watchPage` records what a person would call broken: console errors and warnings, uncaught page
 * errors, Content-Security-Policy violations (reported by the page itself through the
 * `securitypolicyviolation` event, and by Chromium's console), and failed same-origin requests.
 * `accessibilityViolations` runs axe-core in a separate context (axe's own script must not count as a CSP
 * violation of the page, so that context bypasses CSP; the page under test never does).
 */
import { mkdir, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { REPO_ROOT } from "./kube-cluster.js";
import { requireNeed } from "./needs.js";

export const CHROMIUM = "/usr/bin/chromium";
export const UI_ARTIFACTS = join(REPO_ROOT, "test-results", "ui");

export function launchChromium(): Promise<Browser> {
  requireNeed("chromium");
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // As root in a container there is no user namespace for Chromium's sandbox; /dev/shm may be small.
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
  });
}

export interface PageProblems {
  /** Console errors/warnings, page errors, failed requests, with where they happened. */
  readonly problems: string[];
  /** CSP violations the page reported (directive and blocked URI). */
  cspViolations(): Promise<string[]>;
}

/** Starts recording problems on `page` for URLs under `origin` (other sites, e.g. the identity provider, are not ours). */
export async function watchPage(page: Page, origin: string): Promise<PageProblems> {
  const problems: string[] = [];
  const violations: string[] = [];
  await page.addInitScript(() => {
    const seen: string[] = [];
    (window as unknown as { __berthCsp: string[] }).__berthCsp = seen;
    document.addEventListener("securitypolicyviolation", (e) =>
      seen.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}:${e.lineNumber}`),
    );
  });
  const ours = (url: string) => url.startsWith(origin);
  // A page answered with 401/404 is what the person asked for (and sees); Chromium still logs its status.
  const errorDocuments = new Set<string>();
  page.on("console", (message) => {
    const where = message.location().url || page.url();
    if (!ours(where) && !ours(page.url())) return;
    if (message.text().startsWith("Failed to load resource") && errorDocuments.has(where)) return;
    if (/Content Security Policy|Trusted Type/i.test(message.text())) violations.push(message.text());
    if (message.type() === "error" || message.type() === "warning")
      problems.push(`console ${message.type()} at ${where}: ${message.text()}`);
  });
  page.on("pageerror", (error) => {
    if (ours(page.url())) problems.push(`page error at ${page.url()}: ${error.message}`);
  });
  page.on("requestfailed", (request) => {
    // A navigation that replaces a page aborts its pending fetches: not a failure the person sees.
    if (ours(request.url()) && request.failure()?.errorText !== "net::ERR_ABORTED")
      problems.push(`request failed: ${request.method()} ${request.url()}: ${request.failure()?.errorText}`);
  });
  page.on("response", (response) => {
    if (response.request().resourceType() === "document" && response.status() >= 400)
      errorDocuments.add(response.url());
    if (ours(response.url()) && response.status() >= 400 && response.request().resourceType() !== "document") {
      problems.push(`HTTP ${response.status()} for ${response.request().resourceType()} ${response.url()}`);
    }
  });
  return {
    problems,
    async cspViolations() {
      const fromPage = ours(page.url())
        ? await page.evaluate(() => (window as unknown as { __berthCsp?: string[] }).__berthCsp ?? []).catch(() => [])
        : [];
      return [...violations, ...fromPage];
    },
  };
}

let axeSource: Promise<string> | undefined;
function loadAxe(): Promise<string> {
  axeSource ??= readFile(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
  return axeSource;
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/** axe-core (WCAG 2.x A and AA rules) on `url`, signed in with `context`'s cookies; serious and critical violations. */
export async function accessibilityViolations(
  browser: Browser,
  context: BrowserContext,
  url: string,
): Promise<AxeViolation[]> {
  const audit = await browser.newContext({ bypassCSP: true, viewport: { width: 1280, height: 900 } });
  try {
    await audit.addCookies(await context.cookies());
    const page = await audit.newPage();
    await page.goto(url);
    await page.evaluate(await loadAxe());
    const results = (await page.evaluate(() =>
      (window as unknown as { axe: { run(ctx: Document, opts: unknown): Promise<unknown> } }).axe.run(document, {
        runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] },
      }),
    )) as {
      violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: string[] }> }>;
    };
    return results.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(" ")) }));
  } finally {
    await audit.close();
  }
}

export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(UI_ARTIFACTS, { recursive: true });
  const path = join(UI_ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
