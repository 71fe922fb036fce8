// needs: cluster dist chromium
/// <reference lib="dom" />
// (page.evaluate callbacks run in the browser: they are typed against the DOM)
/**
 * The status page in headless Chromium (Debian's, through playwright-core), served by the built API
 * process, reading team status from a real kube-apiserver where the test writes Team objects with the
 * status the controller would write. A person signs in with the dev token, reads the fleet (states per
 * cell, counts, filter), watches a cell change without reloading, opens a team (its status chain with
 * ASO's reason and severity, its commits, its files) and signs out — with no console error, no CSP
 * violation, and no serious axe-core finding. Screenshots go to test-results/ui/.
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admin, INFRA, readManifests } from "../controller/helpers.js";
import { DEV_TOKEN } from "../support/berth.js";
import {
  accessibilityViolations,
  launchChromium,
  screenshot,
  UI_ARTIFACTS,
  watchPage,
  type PageProblems,
} from "../support/browser.js";
import { ensureBuilt } from "../support/build.js";
import { createBareRepo, type BareRepo } from "../support/git-remotes.js";
import { startKubeCluster, type KubeCluster } from "../support/kube-cluster.js";
import { startApiProcess, type AppProcess } from "../support/processes.js";
import { teamStatus } from "../support/team-status.js";
import { prepareCluster, writeTestPlatformConfig } from "../support/test-platform.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";

describe("the status page in Chromium", () => {
  let cluster: KubeCluster;
  let admin: Admin;
  let remote: BareRepo;
  let api: AppProcess & { url: string };
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let watch: PageProblems;

  const auth = { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" };
  const onboard = async (name: string, environments: string[], description = "") => {
    const res = await fetch(`${api.url}/v1/teams`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ name, description, owners: [OWNER], environments }),
    });
    expect(res.status).toBe(201);
  };
  const teamObject = async (name: string, status?: ReturnType<typeof teamStatus>) => {
    const team = {
      apiVersion: "berth.dev/v1alpha1",
      kind: "Team",
      metadata: { name },
      spec: { description: "", owners: [OWNER], environments: ["dev"] },
    };
    const created = await admin.create(team);
    if (status) await admin.setStatus(created, status);
  };
  const cell = (team: string, cluster: string) => page.locator(`tr[data-team="${team}"] td[data-cluster="${cluster}"]`);

  beforeAll(async () => {
    const built = ensureBuilt();
    cluster = await startKubeCluster({ crds: readManifests(join(INFRA, "crds")), startTimeoutMs: 240_000 });
    admin = new Admin(cluster.kubeConfig());
    await prepareCluster(admin);
    const dir = await mkdtemp(join(tmpdir(), "berth-ui-"));
    remote = await createBareRepo();
    await built;
    api = await startApiProcess({
      BERTH_CONFIG_FILE: await writeTestPlatformConfig(dir),
      BERTH_GIT_URL: remote.url,
      BERTH_GIT_WORKDIR: join(dir, "clone"),
      BERTH_AUTH_MODE: "dev",
      BERTH_DEV_TOKEN: DEV_TOKEN,
      BERTH_STATUS_KUBECONFIGS: `aks-dev-weu=${await cluster.writeKubeconfigFile("berth-api")}`,
      BERTH_STATUS_CACHE_SECONDS: "1",
    });
    // One team per state on aks-dev-weu, and one whose clusters the API cannot see.
    await onboard("payments", ["dev"], "Card and SEPA payments");
    await onboard("ledger", ["dev"], "Double-entry ledger");
    await onboard("search", ["dev"]);
    await onboard("orders", ["dev"]);
    await onboard("checkout", ["prod"]);
    await teamObject("payments", teamStatus(undefined));
    await teamObject(
      "ledger",
      teamStatus("IdentityReady", {
        reason: "AuthorizationFailed",
        severity: "Error",
        message:
          "ledger: The client does not have authorization to perform action Microsoft.ManagedIdentity/userAssignedIdentities/write",
      }),
    );
    await teamObject("search", teamStatus("ResourceGroupReady"));
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    watch = await watchPage(page, api.url);
  }, 900_000);

  afterAll(async () => {
    await browser?.close();
    await api?.stop();
    await cluster?.stop();
    await remote?.remove();
  });

  it("sends a visitor to sign in, and signs in with the development token", async () => {
    await page.goto(`${api.url}/ui`);
    expect(new URL(page.url()).pathname).toBe("/ui/sign-in");
    await expect(page.getByRole("heading", { name: "Sign in to Berth" }).isVisible()).resolves.toBe(true);
    await screenshot(page, "sign-in");
    expect(await accessibilityViolations(browser, context, page.url())).toEqual([]);

    await page.getByLabel("Development token").fill("not-the-token-at-all");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByRole("alert").textContent()).resolves.toContain("That token was not accepted.");

    await page.getByLabel("Development token").fill(DEV_TOKEN);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${api.url}/ui`);
    await expect(page.locator(".who").textContent()).resolves.toContain("developer");
    // The session is an httpOnly cookie: script cannot read it, and no storage holds a token.
    const cookies = await context.cookies();
    expect(cookies.find((c) => c.name === "berth-session")).toMatchObject({ httpOnly: true, sameSite: "Lax" });
    expect(await page.evaluate(() => document.cookie)).toBe("");
    expect(await page.evaluate(() => [localStorage.length, sessionStorage.length])).toEqual([0, 0]);
  }, 300_000);

  it("shows the fleet: each team's state per cluster, and counts by state", async () => {
    await page.waitForSelector('tr[data-team="ledger"] td[data-cluster="aks-dev-weu"][data-phase="failed"]', {
      timeout: 30_000,
    });
    const phases = async (team: string) =>
      Promise.all(
        ["aks-dev-weu", "aks-prod-weu", "aks-prod-neu"].map(
          async (c) => (await cell(team, c).getAttribute("data-phase")) ?? "none",
        ),
      );
    expect(await phases("payments")).toEqual(["ready", "none", "none"]);
    expect(await phases("ledger")).toEqual(["failed", "none", "none"]);
    expect(await phases("search")).toEqual(["progressing", "none", "none"]);
    expect(await phases("orders")).toEqual(["waiting", "none", "none"]);
    expect(await phases("checkout")).toEqual(["none", "unobserved", "unobserved"]);
    await expect(cell("ledger", "aks-dev-weu").textContent()).resolves.toContain("Failed");
    await expect(cell("ledger", "aks-dev-weu").locator(".badge").getAttribute("title")).resolves.toContain(
      "IdentityReady: AuthorizationFailed (severity Error)",
    );
    const count = (phase: string) => page.locator(`[data-phase-count="${phase}"] .count`).textContent();
    expect(await Promise.all(["ready", "failed", "progressing", "waiting", "unobserved"].map(count))).toEqual([
      "1",
      "1",
      "1",
      "1",
      "2",
    ]);
    await screenshot(page, "fleet");
    // The README's picture (docs/images/status-page.png is a copy of this one).
    await page.setViewportSize({ width: 960, height: 480 });
    await page.screenshot({ path: join(UI_ARTIFACTS, "readme-fleet.png") });
    await page.setViewportSize({ width: 1280, height: 900 });
    expect(await accessibilityViolations(browser, context, page.url())).toEqual([]);
  }, 120_000);

  it("filters by name as you type and by state, on the server", async () => {
    const rows = () => page.locator("tbody tr").evaluateAll((trs) => trs.map((r) => r.getAttribute("data-team")));
    const showsOnly = (team: string) =>
      page.waitForFunction(
        (t) => {
          const trs = document.querySelectorAll("tbody tr");
          return (
            trs.length === 1 &&
            trs[0]!.getAttribute("data-team") === t &&
            !document.getElementById("main")!.hasAttribute("aria-busy")
          );
        },
        team,
        { timeout: 15_000 },
      );
    await page.getByRole("searchbox", { name: "Team" }).fill("led");
    await showsOnly("ledger");
    expect(new URL(page.url()).search).toBe("?q=led");
    await page.getByRole("searchbox", { name: "Team" }).fill("");
    await page.getByLabel("State", { exact: true }).selectOption("waiting");
    await showsOnly("orders");
    expect(new URL(page.url()).search).toBe("?phase=waiting");
    expect(await rows()).toEqual(["orders"]);
    // The same filter works without script, as a plain GET.
    await page.goto(`${api.url}/ui?phase=unobserved`);
    expect(await rows()).toEqual(["checkout"]);
    await page.goto(`${api.url}/ui`);
  }, 120_000);

  it("refreshes itself when a cluster's status changes, asking with an ETag in between", async () => {
    const fragments: number[] = [];
    const onResponse = (r: { url(): string; status(): number }) => {
      if (r.url().includes("fragment=main")) fragments.push(r.status());
    };
    page.on("response", onResponse);
    const reloads: string[] = [];
    page.on("framenavigated", (f) => reloads.push(f.url()));
    // Unchanged status: the page asks, the server answers 304.
    const before = Number((await page.locator("#main").getAttribute("data-refreshes")) ?? 0);
    await page.waitForFunction(
      (n) => Number(document.getElementById("main")?.dataset.refreshes ?? 0) >= n + 2,
      before,
      { timeout: 30_000 },
    );
    expect(fragments).toContain(304);
    // Flux applies `orders`: its cell turns from Waiting to Progressing without a reload.
    await teamObject("orders", teamStatus("KustomizationReady"));
    await page.waitForSelector('tr[data-team="orders"] td[data-cluster="aks-dev-weu"][data-phase="progressing"]', {
      timeout: 60_000,
    });
    expect(fragments).toContain(200);
    expect(reloads).toEqual([]);
    page.off("response", onResponse);
  }, 120_000);

  it("shows a team's status chain with ASO's reason and severity, its last commits and its files", async () => {
    await page.getByRole("link", { name: "ledger", exact: true }).click();
    await page.waitForURL(`${api.url}/ui/teams/ledger`);
    const steps = page.locator('section[data-cluster="aks-dev-weu"] ol.timeline li');
    expect(
      await steps.evaluateAll((items) =>
        items.map((li) => `${li.getAttribute("data-step")}=${li.getAttribute("data-state")}`),
      ),
    ).toEqual([
      "committed=done",
      "flux=done",
      "resource-group=done",
      "identity=failed",
      "federation=waiting",
      "role-assignments=waiting",
      "credential=waiting",
      "ready=waiting",
    ]);
    const identity = await page.locator('li[data-step="identity"]').textContent();
    expect(identity).toContain("AuthorizationFailed");
    expect(identity).toContain("severity Error");
    expect(identity).toContain("does not have authorization");
    const commits = await page.getByRole("table").locator("tbody tr").allTextContents();
    expect(commits[0]).toContain("berth: onboard team ledger");
    expect(commits[0]).toContain("developer");
    const file = page.locator('details[data-path="teams/ledger/base/team.yaml"]');
    await file.locator("summary").click();
    await expect(file.locator("pre").textContent()).resolves.toContain("name: ledger");
    await screenshot(page, "team");
    expect(await accessibilityViolations(browser, context, page.url())).toEqual([]);
    // An open file stays open across a refresh of the page's content.
    const before = Number(await page.locator("#main").getAttribute("data-refreshes"));
    await page.waitForFunction((n) => Number(document.getElementById("main")?.dataset.refreshes ?? 0) > n, before, {
      timeout: 30_000,
    });
    expect(await file.evaluate((d) => (d as HTMLDetailsElement).open)).toBe(true);

    await page.goto(`${api.url}/ui/teams/nobody`);
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Team not found");
  }, 120_000);

  it("signs out, after which pages send the visitor to sign in again", async () => {
    await page.goto(`${api.url}/ui`);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(/\/ui\/sign-in/);
    expect((await context.cookies()).some((c) => c.name === "berth-session")).toBe(false);
    await page.goto(`${api.url}/ui/teams/payments`);
    expect(new URL(page.url()).pathname).toBe("/ui/sign-in");
    expect(new URL(page.url()).searchParams.get("next")).toBe("/ui/teams/payments");
  }, 60_000);

  it("had no console errors, no CSP violations and no failed requests on the way", async () => {
    expect(await watch.cspViolations()).toEqual([]);
    expect(watch.problems).toEqual([]);
  });
});
