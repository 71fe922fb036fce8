/**
 * `berth status --watch` as a person sees it: in a real terminal (tmux), against a platform running real Flux
 * (tests/support/flux-platform.ts: Berth's controller from its dist entry, the fleet repo over smart HTTP), for
 * teams onboarded through the CLI. Flux fetches only when the test asks (`flux reconcile source git`, the
 * GitRepository's interval is an hour), and ASO answers one kind at a time (AsoStandIn hold/release), so the
 * test checks after each step that the screen walked the chain: Waiting → Flux applied → resource group →
 * identity → federated credential → credential → Ready (exit 0); and a team whose identity ASO reports an Error
 * ends with exit 1 and ASO's reason and severity on screen. Screens are saved in test-results/cli/.
 *
 * ASO is scripted here (AsoStandIn), on purpose: the real one (tests/flux/aso.test.ts) answers at its own pace,
 * not one kind at a time when the test says, and reaches an Error only on a subscription mismatch or a request ARM
 * refuses as malformed, which these tests' Azure never gives it. The scripted Error is one real ASO reports.
 */
// needs: cluster dist tmux
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../support/wait.js";
import { DEV_TOKEN, REPO_ROOT } from "../support/berth.js";
import { CLI_ENTRY } from "../support/build.js";
import { CliHarness } from "../support/cli.js";
import { startFluxPlatform, type FluxPlatform } from "../support/flux-platform.js";
import { TmuxTerminal } from "../support/tmux.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const ARTIFACTS = join(REPO_ROOT, "test-results", "cli");

describe("berth status --watch on a terminal, with real Flux and the controller on a real cluster", () => {
  let platform: FluxPlatform;
  let cli: CliHarness;
  let term: TmuxTerminal;
  let work: string;

  const save = async (name: string, screen: string) => {
    await mkdir(ARTIFACTS, { recursive: true });
    await writeFile(join(ARTIFACTS, `${name}.txt`), screen);
  };

  beforeAll(async () => {
    // Flux fetches only when a test says so (reconcileSource), so each screen shows the state the test set up: no
    // Receiver notification (it would apply a team within a second or two) and an hour's poll.
    platform = await startFluxPlatform({
      pollInterval: "1h",
      notify: false,
      berthConfig: (raw) => (raw.api.statusCacheSeconds = 1),
    });
    cli = await CliHarness.create();
    work = join(cli.home, "work");
    await mkdir(work, { recursive: true });
    const tokenFile = join(cli.home, "token");
    await writeFile(tokenFile, DEV_TOKEN, { mode: 0o600 });
    expect((await cli.run(["login", "--server", platform.berth.url, "--token-file", tokenFile])).code).toBe(0);
    // `berth` on PATH in the terminal, exactly as a person would have it.
    const bin = join(cli.home, "bin");
    await mkdir(bin);
    await writeFile(join(bin, "berth"), `#!/bin/sh\nexec "${process.execPath}" "${CLI_ENTRY}" "$@"\n`, { mode: 0o755 });
    term = await TmuxTerminal.start({
      cwd: work,
      width: 150,
      env: { ...cli.baseEnv, PATH: `${bin}:${cli.baseEnv.PATH}`, NO_COLOR: "" },
    });
  }, 900_000);

  afterAll(async () => {
    await term?.stop();
    await platform?.stop();
  });

  const onboard = async (name: string) => {
    platform.aso!.hold(name);
    await writeFile(
      join(work, `${name}.yaml`),
      `name: ${name}\ndescription: Team ${name}\nowners: [${OWNER}]\nenvironments: [dev]\n`,
    );
    const applied = await cli.run(["apply", "-f", `${name}.yaml`], { cwd: work });
    expect(applied.stdout).toMatch(new RegExp(`^team/${name} created`, "m"));
  };

  it("walks a team from Waiting to Ready across the status chain and exits 0", async () => {
    await onboard("payments");
    await term.run("berth status payments --watch --timeout 10m --interval 1s; echo EXIT:$?");

    // Committed, but Flux has not applied anything yet.
    let screen = await term.waitFor(/aks-dev-weu \(dev\)\s+Waiting/);
    expect(screen).toContain("waiting for Flux to apply the team");
    expect(screen).toMatch(/✔ committed › \S+ Flux applied › · resource group/);
    await save("1-waiting", screen);

    // Flux fetches and applies the team: the controller reports the chain; ASO has not answered yet.
    await platform.reconcileSource();
    screen = await term.waitFor(/✔ Flux applied › \S+ resource group/, 120_000);
    expect(screen).toMatch(/aks-dev-weu \(dev\)\s+Progressing\s+\d+:\d\d/);
    expect(screen).toContain("ResourceGroupReady");
    await save("2-flux-applied", screen);

    platform.aso!.release("payments", "ResourceGroup");
    screen = await term.waitFor(/✔ resource group › \S+ identity/, 60_000);
    await save("3-resource-group", screen);

    platform.aso!.release("payments", "UserAssignedIdentity");
    screen = await term.waitFor(/✔ identity › \S+ federated credential/, 60_000);
    await save("4-identity", screen);

    platform.aso!.release("payments", "FederatedIdentityCredential");
    platform.aso!.release("payments", "RoleAssignment");
    screen = await term.waitFor(/EXIT:\d+/, 120_000);
    await save("5-ready", screen);
    expect(screen).toMatch(/✔ aks-dev-weu \(dev\)\s+Ready\s+\d+:\d\d/);
    expect(screen).toMatch(
      /✔ committed › ✔ Flux applied › ✔ resource group › ✔ identity › ✔ federated credential › ✔ role assignments › ✔ credential written › ✔ Ready/,
    );
    expect(screen).toMatch(/team payments is Ready on 1 cluster \(\d+:\d\d\)/);
    expect(screen).toContain("EXIT:0");
  }, 300_000);

  it("prints one line per change without a terminal, and the same Ready state", async () => {
    const piped = await cli.run(["status", "payments", "--watch", "--timeout", "2m", "--interval", "1s"], {
      cwd: work,
    });
    expect(piped.code).toBe(0);
    expect(piped.stdout).toMatch(/^\[0:\d\d\] team payments: in the Flux repo at [0-9a-f]{7}; watching 1 cluster$/m);
    expect(piped.stdout).toMatch(/^\[0:\d\d\] aks-dev-weu: Ready: Ready$/m);
    expect(piped.stdout).not.toContain("\u001b[");
    const once = await cli.run(["status", "payments", "-o", "json"], { cwd: work });
    expect(JSON.parse(once.stdout)).toMatchObject({
      team: "payments",
      ready: true,
      clusters: [{ cluster: "aks-dev-weu", state: "reported", ready: true }],
    });
  }, 300_000);

  it("gives up with exit code 8 at --timeout, saying where each cluster stands", async () => {
    await onboard("orders");
    const result = await cli.run(["status", "orders", "--watch", "--timeout", "3s", "--interval", "1s"], { cwd: work });
    expect(result.code).toBe(8);
    expect(result.stderr).toContain("error: timed out after 0:03 waiting for team orders to be Ready");
    expect(result.stderr).toContain("  aks-dev-weu: waiting for Flux to apply the team");
  }, 300_000);

  it("ends non-zero with ASO's reason and severity when the team's identity reports an Error", async () => {
    await term.clear();
    await onboard("ledger");
    await term.run("berth status ledger --watch --timeout 10m --interval 1s; echo EXIT:$?");
    await term.waitFor(/aks-dev-weu \(dev\)\s+Waiting/);
    await platform.reconcileSource();
    platform.aso!.release("ledger", "ResourceGroup");
    await term.waitFor(/✔ resource group/, 120_000);
    // ASO's words when a namespace's credential moved to another subscription than the resource's (checkSubscription).
    platform.aso!.fail("ledger", "UserAssignedIdentity", {
      reason: "SubscriptionMismatch",
      severity: "Error",
      message:
        'SubscriptionID "22222222-2222-4222-8222-222222222220" for "/subscriptions/22222222-2222-4222-8222-222222222220/resourceGroups/rg-ledger--aks-dev-weu/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-ledger--aks-dev-weu" resource does not match with Client Credential: "22222222-2222-4222-8222-222222222229"',
    });
    platform.aso!.release("ledger", "UserAssignedIdentity");
    const screen = await term.waitFor(/EXIT:\d+/, 120_000);
    await save("6-failed", screen);
    expect(screen).toMatch(/✖ aks-dev-weu \(dev\)\s+Failed/);
    expect(screen).toMatch(/✔ resource group › ✖ identity/);
    expect(screen).toContain(
      "error: team ledger failed on aks-dev-weu: IdentityReady: SubscriptionMismatch (severity Error)",
    );
    expect(screen).toContain("EXIT:1");
  }, 300_000);

  it("asks on a terminal before deleting, and deletes only when the name is typed", async () => {
    await term.clear();
    await term.run("berth delete team ledger; echo EXIT:$?");
    await term.waitFor(/Type the team name to confirm:/);
    await term.run("payments");
    let screen = await term.waitFor(/EXIT:\d+/);
    expect(screen).toContain("Not deleted: the name did not match.");
    expect(screen).toContain("EXIT:2");
    expect((await cli.run(["get", "team", "ledger"], { cwd: work })).code).toBe(0);

    await term.clear();
    await term.run("berth delete team ledger; echo EXIT:$?");
    await term.waitFor(/Type the team name to confirm:/);
    await term.run("ledger");
    screen = await term.waitFor(/EXIT:\d+/);
    expect(screen).toMatch(/team\/ledger deleted \(commit [0-9a-f]{7}/);
    expect(screen).toContain("EXIT:0");
    await eventually(
      "ledger gone",
      async () => (await cli.run(["get", "team", "ledger"], { cwd: work })).code === 4,
      30_000,
    );
  }, 300_000);
});
