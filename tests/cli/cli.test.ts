/**
 * (Each test runs the CLI as a process a dozen times: on a loaded machine that is a few seconds each.)
 *
 * The built `berth` CLI, run as a process the way a platform engineer runs it, against the real API
 * (infra/local/berth.yaml, dev auth) and a real git remote: login and contexts, apply (YAML documents,
 * JSON, folders; idempotent), diff (exit codes, colours), get (table, yaml/json/name), delete, and how
 * errors read. `status` runs against a real cluster in watch.test.ts.
 */
// needs: dist
import { chmod, mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { createServer, connect, type AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { DEV_TOKEN, startBerth, type RunningBerth } from "../support/berth.js";
import { ensureBuilt } from "../support/build.js";
import { CliHarness } from "../support/cli.js";
import { createBareRepo, inspectRemote, makeTempDir, type BareRepo } from "../support/git-remotes.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";

describe("berth CLI against the API and a git remote", () => {
  let remote: BareRepo;
  let berth: RunningBerth;
  let cli: CliHarness;
  let tokenFile: string;
  let work: string;

  beforeAll(async () => {
    await ensureBuilt();
    remote = await createBareRepo();
    berth = await startBerth({ remoteUrl: remote.url, listen: true });
    cli = await CliHarness.create();
    tokenFile = join(cli.home, "token");
    await writeFile(tokenFile, `${DEV_TOKEN}\n`, { mode: 0o600 });
    work = join(cli.home, "work");
    await mkdir(join(work, "teams"), { recursive: true });
  }, 600_000);
  afterAll(async () => {
    await berth?.stop();
    await remote?.remove();
  });

  const berthCli = (args: string[], options: Parameters<CliHarness["run"]>[1] = {}) =>
    cli.run(args, { cwd: work, ...options });
  const head = async () => (await inspectRemote(remote.url)).head;

  it("login checks the token before saving a context, keeps the config private, and refuses a token file others can read", async () => {
    const wrong = join(cli.home, "wrong-token");
    await writeFile(wrong, "not-the-token-0123456789\n", { mode: 0o600 });
    const refused = await berthCli(["login", "--server", berth.url, "--token-file", wrong]);
    expect(refused.code).toBe(5);
    expect(refused.stderr).toContain("Unauthorized");
    await expect(stat(cli.configFile)).rejects.toThrow(/ENOENT/);

    const open = join(cli.home, "open-token");
    await writeFile(open, `${DEV_TOKEN}\n`, { mode: 0o644 });
    await chmod(open, 0o644);
    const loose = await berthCli(["login", "--server", berth.url, "--token-file", open]);
    expect(loose.code).toBe(5);
    expect(loose.stderr).toContain("chmod 600");

    const ok = await berthCli(["login", "--server", berth.url, "--token-file", tokenFile, "--context", "local"]);
    expect(ok.stderr).toBe("");
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain(`Logged in to ${berth.url} as context "local"`);
    expect((await stat(cli.configFile)).mode & 0o777).toBe(0o600);
    const saved = parse(await readFile(cli.configFile, "utf8")) as {
      currentContext: string;
      contexts: Array<{ name: string; auth: Record<string, unknown> }>;
    };
    expect(saved.currentContext).toBe("local");
    // The context names the file; the token itself is not copied into the config.
    expect(saved.contexts[0]!.auth).toEqual({ tokenFile });
    expect(await readFile(cli.configFile, "utf8")).not.toContain(DEV_TOKEN);
  }, 240_000);

  it("switches contexts like kubectl and redacts stored tokens in config view", async () => {
    const second = await berthCli([
      "login",
      "--context",
      "other",
      "--server",
      "http://127.0.0.1:9",
      "--token",
      "stored-secret-token",
      "--no-verify",
    ]);
    expect(second.code).toBe(0);
    const contexts = await berthCli(["config", "get-contexts"]);
    expect(contexts.stdout).toMatch(/^CURRENT\s+NAME\s+SERVER\s+AUTH$/m);
    expect(contexts.stdout).toMatch(/^\*\s+other\s+http:\/\/127\.0\.0\.1:9\s+token \(stored\)$/m);
    const view = await berthCli(["config", "view"]);
    expect(view.stdout).toContain("REDACTED");
    expect(view.stdout).not.toContain("stored-secret-token");
    // The unreachable context is current now: commands fail with the "unavailable" code...
    expect((await berthCli(["get", "teams"])).code).toBe(7);
    // ...unless --context picks another, or the current one is switched back.
    expect((await berthCli(["--context", "local", "get", "teams"])).code).toBe(0);
    expect((await berthCli(["config", "use-context", "local"])).code).toBe(0);
    expect((await berthCli(["config", "current-context"])).stdout.trim()).toBe("local");
    expect((await berthCli(["config", "delete-context", "other"])).code).toBe(0);
  }, 240_000);

  it("apply creates every team of a folder (YAML documents, a Team object, JSON), and applying again commits nothing", async () => {
    await writeFile(
      join(work, "teams", "payments.yaml"),
      [
        `name: payments\ndescription: Payments team\nowners: [${OWNER}]\nenvironments: [dev]\nlabels:\n  cost-center: cc-1234\n`,
        `apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata:\n  name: search\nspec:\n  owners: [${OWNER}]\n  environments: [dev, prod]\n  roleAssignments: [{ role: rg-contributor }]\n`,
      ].join("---\n"),
    );
    await writeFile(
      join(work, "teams", "checkout.json"),
      JSON.stringify({ name: "checkout", owners: [OWNER], environments: ["prod"] }),
    );
    await writeFile(join(work, "teams", "README.md"), "not a team file");

    const first = await berthCli(["apply", "-f", "teams"]);
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^team\/checkout created \(commit [0-9a-f]{7}, \d+ files written\)$/m);
    expect(first.stdout).toMatch(/^team\/payments created /m);
    expect(first.stdout).toMatch(/^team\/search created /m);
    const state = await inspectRemote(remote.url);
    expect(state.commits.map((c) => c.subject).sort()).toEqual([
      "berth: onboard team checkout",
      "berth: onboard team payments",
      "berth: onboard team search",
    ]);
    expect(parse(state.files.get("teams/search/base/team.yaml")!)).toMatchObject({
      spec: { roleAssignments: [{ role: "rg-contributor" }] },
    });

    const again = await berthCli(["apply", "-f", "teams"]);
    expect(again.code).toBe(0);
    expect(again.stdout.trim().split("\n").sort()).toEqual([
      "team/checkout unchanged",
      "team/payments unchanged",
      "team/search unchanged",
    ]);
    expect(await head()).toBe(state.head);
  }, 240_000);

  it("diff shows the change as a coloured unified diff with exit code 1, and 0 when nothing would change; it never commits", async () => {
    const before = await head();
    const same = await berthCli(["diff", "-f", "teams/payments.yaml"]);
    expect(same).toMatchObject({ code: 0, stdout: "" });

    const changed = join(work, "payments-changed.yaml");
    await writeFile(
      changed,
      `name: payments\ndescription: Payments and refunds\nowners: [${OWNER}]\nenvironments: [dev]\nlabels:\n  cost-center: cc-1234\n`,
    );
    const plain = await berthCli(["diff", "-f", changed]);
    expect(plain.code).toBe(1);
    expect(plain.stdout).toContain("--- a/teams/payments/base/team.yaml");
    expect(plain.stdout).toContain("+  description: Payments and refunds");
    expect(plain.stdout).not.toContain("\u001b[");

    const colored = await berthCli(["diff", "-f", changed], { env: { NO_COLOR: "", FORCE_COLOR: "1" } });
    expect(colored.code).toBe(1);
    expect(colored.stdout).toContain("\u001b[32m+  description: Payments and refunds\u001b[39m");
    expect(colored.stdout).toContain("\u001b[31m-  description: Payments team\u001b[39m");

    const fresh = join(work, "new.yaml");
    await writeFile(fresh, `name: ledger\nowners: [${OWNER}]\nenvironments: [dev]\n`);
    const added = await berthCli(["diff", "-f", fresh]);
    expect(added.code).toBe(1);
    expect(added.stdout).toContain("+++ b/teams/ledger/base/team.yaml");
    expect(await head()).toBe(before);
  }, 240_000);

  it("apply updates a changed team in one commit, touching only what changed", async () => {
    const result = await berthCli(["apply", "-f", join(work, "payments-changed.yaml")]);
    expect(result.code).toBe(0);
    const changed = /^team\/payments configured \(commit [0-9a-f]{7}, (\d+) files? changed\)$/m.exec(result.stdout);
    expect(changed, result.stdout).not.toBeNull();
    const state = await inspectRemote(remote.url);
    const teamFiles = [...state.files.keys()].filter((p) => p.includes("payments")).length;
    // The spec and what renders the description (the namespace's annotation), not every file of the team.
    expect(Number(changed![1])).toBeGreaterThan(0);
    expect(Number(changed![1])).toBeLessThan(teamFiles);
    expect(state.commits[0]!.subject).toBe("berth: update team payments");
    expect(state.files.get("teams/payments/base/team.yaml")).toContain("Payments and refunds");
  }, 240_000);

  it("get prints aligned tables, follows the API's pages, and -o yaml round-trips through apply", async () => {
    const table = await berthCli(["get", "teams"]);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^NAME\s+ENVIRONMENTS\s+READY\s+STATUS\s+DESCRIPTION$/);
    expect(lines.slice(1).map((l) => l.split(/\s{3,}/)[0])).toEqual(["checkout", "payments", "search"]);
    // Aligned: every column starts at the same offset on every line.
    const start = (line: string, column: number) => [...line.matchAll(/(?:^|\s{3})(\S)/g)][column]!.index;
    for (const line of lines.slice(1)) expect(start(line, 1)).toBe(start(lines[0]!, 1));
    expect(table.stdout).toMatch(/^search\s+dev,prod\s+0\/3\s+Not observed\s*$/m);

    const wide = await berthCli(["get", "teams", "-o", "wide"]);
    expect(wide.stdout).toMatch(/^NAME\s+ENVIRONMENTS\s+READY\s+STATUS\s+ROLES\s+OWNERS\s+CLUSTERS\s+DESCRIPTION$/m);
    expect(wide.stdout).toContain("aks-dev-weu=unobserved,aks-prod-weu=unobserved,aks-prod-neu=unobserved");

    expect((await berthCli(["get", "teams", "-o", "name"])).stdout).toBe("team/checkout\nteam/payments\nteam/search\n");
    // Pages of one team each: the CLI follows the API's `continue` to the last page.
    expect((await berthCli(["get", "teams", "-o", "name", "--chunk-size", "1"])).stdout).toBe(
      "team/checkout\nteam/payments\nteam/search\n",
    );
    expect((await berthCli(["get", "teams", "--chunk-size", "1001"])).code).toBe(2);
    const list = JSON.parse((await berthCli(["get", "teams", "-o", "json"])).stdout) as {
      kind: string;
      items: Array<{ metadata: { name: string } }>;
    };
    expect(list.kind).toBe("TeamList");
    expect(list.items.map((i) => i.metadata.name)).toEqual(["checkout", "payments", "search"]);

    const yaml = await berthCli(["get", "team", "search", "-o", "yaml"]);
    expect(parse(yaml.stdout)).toEqual({
      apiVersion: "berth.dev/v1alpha1",
      kind: "Team",
      metadata: { name: "search" },
      // The API records the template version a team is rendered with (the default, v1, for a new team).
      spec: {
        description: "",
        owners: [OWNER],
        environments: ["dev", "prod"],
        roleAssignments: [{ role: "rg-contributor" }],
        labels: {},
        templateVersion: "v1",
      },
    });
    const before = await head();
    const roundTrip = await berthCli(["apply", "-f", "-"], {
      input: (await berthCli(["get", "teams", "-o", "yaml"])).stdout,
    });
    expect(roundTrip.stdout.trim().split("\n")).toEqual([
      "team/checkout unchanged",
      "team/payments unchanged",
      "team/search unchanged",
    ]);
    expect(await head()).toBe(before);
  }, 240_000);

  it("refuses an invalid file before sending, with the API's own messages and field paths", async () => {
    const bad = { name: "billing", owners: ["not-a-uuid"], environments: ["dev"], labels: { "berth.dev/team": "x" } };
    await writeFile(
      join(work, "bad.yaml"),
      `name: billing\nowners: [not-a-uuid]\nenvironments: [dev]\nlabels:\n  berth.dev/team: x\n`,
    );
    const before = await head();
    const local = await berthCli(["apply", "-f", "bad.yaml"]);
    expect(local.code).toBe(3);
    expect(local.stderr).toContain("error: invalid team files: nothing was sent");
    // The same rules as the API: the API's 422 for the same team lists the same field/rule pairs.
    const api = await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: { authorization: `Bearer ${DEV_TOKEN}` },
      payload: bad,
    });
    expect(api.statusCode).toBe(422);
    for (const issue of (api.json() as { errors: Array<{ field: string; rule: string }> }).errors) {
      expect(local.stderr).toContain(`bad.yaml (team billing): ${issue.field}: ${issue.rule}`);
    }

    // Platform rules live in the API: its problem+json comes back as a message with the field paths.
    await writeFile(
      join(work, "bad-env.yaml"),
      `name: billing\nowners: [${OWNER}]\nenvironments: [staging]\nroleAssignments: [{ role: not-in-catalog }]\n`,
    );
    const remoteCheck = await berthCli(["apply", "-f", "bad-env.yaml"]);
    expect(remoteCheck.code).toBe(3);
    expect(remoteCheck.stderr).toContain("error: team/billing (bad-env.yaml): Invalid team");
    expect(remoteCheck.stderr).toContain("  environments.0: must be one of the platform's environments: dev, prod");
    expect(remoteCheck.stderr).toContain("  roleAssignments.0.role: must be one of the role catalog's ids:");
    expect(remoteCheck.stderr).toMatch(/ {2}request id: \S+/);

    await writeFile(join(work, "broken.yaml"), "name: [unclosed\n");
    const broken = await berthCli(["apply", "-f", "broken.yaml"]);
    expect(broken.code).toBe(3);
    expect(broken.stderr).toMatch(/broken\.yaml: not valid YAML \(line \d+\)/);
    await writeFile(join(work, "pod.yaml"), "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n");
    expect((await berthCli(["apply", "-f", "pod.yaml"])).stderr).toContain(
      "pod.yaml: not a Berth team (apiVersion v1, kind Pod)",
    );
    expect(await head()).toBe(before);
  }, 240_000);

  it("delete needs --yes without a terminal, offboards in one commit, and says when there is nothing to delete", async () => {
    const refused = await berthCli(["delete", "team", "checkout"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("pass --yes");
    expect((await inspectRemote(remote.url)).files.has("teams/checkout/base/team.yaml")).toBe(true);

    const deleted = await berthCli(["delete", "team", "checkout", "--yes"]);
    expect(deleted.code).toBe(0);
    expect(deleted.stdout).toMatch(/^team\/checkout deleted \(commit [0-9a-f]{7}, \d+ files removed\)$/m);
    const state = await inspectRemote(remote.url);
    expect(state.commits[0]!.subject).toBe("berth: offboard team checkout");
    expect([...state.files.keys()].some((p) => p.includes("checkout"))).toBe(false);

    const again = await berthCli(["delete", "team", "checkout", "--yes"]);
    expect(again.code).toBe(4);
    expect(again.stderr).toContain('Team not found: team "checkout" does not exist');
    expect((await berthCli(["delete", "team", "checkout", "--yes", "--ignore-not-found"])).code).toBe(0);
  }, 240_000);

  it("reports auth, reachability and usage errors with their documented exit codes", async () => {
    expect((await berthCli(["get", "teams"], { env: { BERTH_CLI_CONFIG: join(cli.home, "none.yaml") } })).code).toBe(2);
    const noToken = await berthCli(["--server", berth.url, "get", "teams"], {
      env: { BERTH_CLI_CONFIG: join(cli.home, "none.yaml") },
    });
    expect(noToken.code).toBe(5);
    expect(noToken.stderr).toContain("no token");
    const badToken = await berthCli(["get", "teams"], { env: { BERTH_TOKEN: "wrong-token-0123456789" } });
    expect(badToken.code).toBe(5);
    expect(badToken.stderr).toContain("error: Unauthorized: the bearer token is missing or not valid");
    const down = await berthCli(["--server", "http://127.0.0.1:9", "get", "teams"]);
    expect(down.code).toBe(7);
    expect(down.stderr).toContain("cannot reach the Berth API at http://127.0.0.1:9");
    expect((await berthCli(["get", "team", "nobody"])).code).toBe(4);
    expect((await berthCli(["frobnicate"])).code).toBe(2);
    expect((await berthCli(["get", "pods"])).code).toBe(2);
    expect((await berthCli(["apply"])).code).toBe(2);
    expect((await berthCli(["status", "payments", "--watch", "--timeout", "soon"])).code).toBe(2);
    const help = await berthCli(["--help"]);
    expect(help.code).toBe(0);
    for (const command of ["login", "config", "apply", "diff", "get", "delete", "status"])
      expect(help.stdout).toMatch(new RegExp(`^  ${command}\\b`, "m"));
  }, 240_000);

  it("sends a write again with the same Idempotency-Key when its answer is lost: one commit, the original outcome", async () => {
    // A proxy in front of the API that passes everything, except that it cuts the connection as the API's
    // answer to the first POST starts to come back: the team is committed, and the CLI never hears so.
    const apiPort = Number(new URL(berth.url).port);
    let dropped = false;
    const proxy = createServer((client) => {
      const upstream = connect(apiPort, "127.0.0.1");
      let dropNextAnswer = false;
      client.on("data", (chunk: Buffer) => {
        if (!dropped && chunk.toString("latin1").startsWith("POST /v1/teams ")) dropped = dropNextAnswer = true;
        upstream.write(chunk);
      });
      upstream.on("data", (chunk: Buffer) => {
        if (dropNextAnswer) {
          client.destroy();
          upstream.destroy();
        } else client.write(chunk);
      });
      for (const [a, b] of [
        [client, upstream],
        [upstream, client],
      ] as const) {
        a.on("error", () => b.destroy());
        a.on("close", () => b.destroy());
      }
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const server = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      const logsBefore = berth.logs.length;
      const file = join(cli.home, "lost-answer.yaml");
      await writeFile(file, `name: ledger\nowners: [${OWNER}]\nenvironments: [dev]\n`);
      const applied = await cli.run(["apply", "-f", file, "--server", server, "--token-file", tokenFile]);
      expect(applied.stderr).toBe("");
      expect(applied.code).toBe(0);
      expect(applied.stdout).toMatch(/^team\/ledger created \(commit [0-9a-f]{7}/);
      expect(dropped).toBe(true);

      expect(
        (await inspectRemote(remote.url)).commits.filter((c) => c.subject === "berth: onboard team ledger"),
      ).toHaveLength(1);
      const audits = berth
        .logEntries<{ audit?: { action: string; team: string; idempotencyKey: string | null; outcome: string } }>(
          logsBefore,
        )
        .map((entry) => entry.audit)
        .filter((a) => a?.action === "create" && a.team === "ledger");
      // The first POST committed (its answer lost), the second, with the same key, got that outcome back.
      expect(audits.map((a) => a!.outcome)).toEqual(["committed", "replayed"]);
      expect(audits[0]!.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
      expect(audits[1]!.idempotencyKey).toBe(audits[0]!.idempotencyKey);
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  }, 240_000);
});

/**
 * An API (with `api` settings over infra/local/berth.yaml's) on a fresh remote, and a CLI pointed at it
 * through BERTH_SERVER/BERTH_TOKEN, for the describe block that calls it.
 */
function apiAndCli(api: () => Promise<Record<string, unknown>> | Record<string, unknown>) {
  const env = {} as { remote: BareRepo; berth: RunningBerth; cli: CliHarness };
  beforeAll(async () => {
    await ensureBuilt();
    env.remote = await createBareRepo();
    env.berth = await startBerth({ remoteUrl: env.remote.url, listen: true, api: await api() });
    env.cli = await CliHarness.create({ BERTH_SERVER: env.berth.url, BERTH_TOKEN: DEV_TOKEN });
  }, 600_000);
  afterAll(async () => {
    await env.berth?.stop();
    await env.remote?.remove();
  });
  return env;
}

describe("berth CLI under the API's rate limits", () => {
  // One read and two writes per 3 s window for the dev token's principal.
  const env = apiAndCli(() => ({ rateLimit: { reads: 1, writes: 2, windowSeconds: 3 } }));

  it("waits out a 429 on reads (Retry-After), and reports a refused write with exit code 7 and nothing committed", async () => {
    const file = join(env.cli.home, "teams.yaml");
    await writeFile(
      file,
      `name: payments\nowners: [${OWNER}]\nenvironments: [dev]\n---\nname: orders\nowners: [${OWNER}]\nenvironments: [dev]\n`,
    );
    // payments: PUT (404) and POST use the two writes; orders' PUT is the third, refused.
    const applied = await env.cli.run(["apply", "-f", file]);
    expect(applied.stdout).toContain("team/payments created");
    expect(applied.code).toBe(7);
    expect(applied.stderr).toMatch(/Too Many Requests: more than 2 writes in 3 s; retry after \d+ s/);
    expect((await inspectRemote(env.remote.url)).commits.map((c) => c.subject)).toEqual([
      "berth: onboard team payments",
    ]);

    // A table needs two reads (the teams, then their status): the second waits for the next window.
    const table = await env.cli.run(["get", "teams"]);
    expect(table.stderr).toBe("");
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^payments\s+dev\s+0\/1\s+/m);
  }, 240_000);
});

describe("berth rollout against the API and a git remote", () => {
  // Every cluster's status is read through a kubeconfig whose apiserver refuses connections: a staged
  // rollout's gate waits on every team ("the cluster cannot be reached"), then halts on its 10 s timeout.
  const env = apiAndCli(async () => {
    const kubeconfig = join(await makeTempDir("berth-cli-rollout-"), "unreachable.kubeconfig");
    await writeFile(
      kubeconfig,
      "apiVersion: v1\nkind: Config\nclusters: [{ name: gone, cluster: { server: 'https://127.0.0.1:9' } }]\nusers: [{ name: u, user: { token: t } }]\ncontexts: [{ name: gone, context: { cluster: gone, user: u } }]\ncurrent-context: gone\n",
    );
    const clusters = Object.fromEntries(
      ["aks-dev-weu", "aks-prod-weu", "aks-prod-neu"].map((c) => [c, { kubeconfig }]),
    );
    return { clusters, rollouts: { pollIntervalMs: 300, gateTimeoutSeconds: 10 } };
  });
  beforeAll(async () => {
    const teams = join(env.cli.home, "teams.yaml");
    await writeFile(
      teams,
      ["alpha", "bravo", "charlie"]
        .map(
          (name) => `name: ${name}\nowners: [${OWNER}]\nenvironments: [${name === "charlie" ? "dev, prod" : "dev"}]\n`,
        )
        .join("---\n"),
    );
    expect((await env.cli.run(["apply", "-f", teams])).code).toBe(0);
  }, 120_000);

  const commits = async () => (await inspectRemote(env.remote.url)).commits.length;

  it("previews a rollout from flags with diffs and no commit; refuses a bad request before sending it", async () => {
    const before = await commits();
    const preview = await env.cli.run(["rollout", "preview", "--to", "v3", "--team", "alpha"]);
    expect(preview.stderr).toBe("");
    expect(preview.code).toBe(0);
    expect(preview.stdout).toMatch(/^Rollout preview at commit [0-9a-f]{7}: 1 team selected, to v3$/m);
    // v3 writes alpha's federated credentials one after another: one added file on its one cluster (dev).
    expect(preview.stdout).toMatch(
      /^ {2}1 would change \(\d+ files: 1 added, \d+ modified, 0 deleted\), 0 unchanged, 0 cannot be rendered$/m,
    );
    expect(preview.stdout).toContain("--- a/teams/alpha/");
    expect(preview.stdout).not.toContain("teams/bravo/");
    const summary = await env.cli.run(["rollout", "preview", "--to", "v3", "--no-diffs"]);
    expect(summary.stdout).toMatch(/3 teams selected, to v3/);
    expect(summary.stdout).not.toContain("--- a/");

    const bad = await env.cli.run(["rollout", "preview", "--to", "not a version"]);
    expect(bad.code).toBe(3);
    expect(bad.stderr).toContain("invalid rollout request: nothing was sent");
    expect(bad.stderr).toContain("flags: target.templateVersion:");
    const both = await env.cli.run(["rollout", "start", "-f", "-", "--to", "v3"], { input: "{}" });
    expect(both.code).toBe(2);
    expect(await commits()).toBe(before);
  }, 120_000);

  it("starts an unstaged rollout in one commit, lists it, and shows it as JSON", async () => {
    const before = await commits();
    const started = await env.cli.run([
      "rollout",
      "start",
      "--to",
      "v3",
      "--team",
      "alpha",
      "--description",
      "cli: alpha to v3",
    ]);
    expect(started.stderr).toBe("");
    expect(started.code).toBe(0);
    const id =
      /^rollout\/(ro-[0-9-]+-[0-9a-f]{6}) completed: 1 team to v3 in one commit \([0-9a-f]{7}, \d+ files\)$/m.exec(
        started.stdout,
      )?.[1];
    expect(id, started.stdout).toBeDefined();
    expect(await commits()).toBe(before + 1);

    const list = await env.cli.run(["rollout", "get"]);
    expect(list.stdout).toMatch(new RegExp(`^${id}\\s+Completed\\s+1/1\\s+v3\\s+1\\s+\\S+\\s+cli: alpha to v3$`, "m"));
    const json = JSON.parse((await env.cli.run(["rollout", "get", id!, "-o", "json"])).stdout) as {
      metadata: { name: string };
      status: { phase: string };
    };
    expect(json).toMatchObject({ metadata: { name: id }, status: { phase: "Completed" } });
    // Already there: the watch ends at once with 0.
    const watched = await env.cli.run(["rollout", "get", id!, "--watch"]);
    expect(watched.code).toBe(0);
    expect(watched.stdout).toContain(`rollout/${id}: Completed · wave 1/1`);
    // Done is done: a second abort is a conflict, an unknown id is not found.
    expect((await env.cli.run(["rollout", "abort", id!])).code).toBe(6);
    expect((await env.cli.run(["rollout", "get", "ro-20000101-000000-abcdef"])).code).toBe(4);
  }, 120_000);

  it("pauses, resumes and aborts a staged rollout from a file, and watches one halt on its gate (exit 1, with the report)", async () => {
    const file = join(env.cli.home, "rollout.yaml");
    await writeFile(
      file,
      "description: bravo first, then charlie\ntarget: { templateVersion: v3 }\nselector: { names: [bravo, charlie] }\nwaves:\n  - { name: canary, selector: { names: [bravo] } }\n  - { name: rest }\ngate: { timeoutSeconds: 10 }\n",
    );
    const started = await env.cli.run(["rollout", "start", "-f", file]);
    expect(started.code, started.stderr).toBe(0);
    const id = /rollout\/(ro-\S+) started: 2 teams to v3 in waves canary \(1\) → rest \(1\), each gated on Ready/.exec(
      started.stdout,
    )?.[1];
    expect(id, started.stdout).toBeDefined();
    expect(started.stderr).toContain(`berth rollout get ${id} --watch`);

    expect((await env.cli.run(["rollout", "pause", id!])).stdout).toMatch(
      new RegExp(`^rollout/${id} paused \\(phase Paused, commit [0-9a-f]{7}\\)$`, "m"),
    );
    const shown = await env.cli.run(["rollout", "get", id!]);
    expect(shown.stdout).toMatch(/^Rollout ro-\S+: Paused$/m);
    expect(shown.stdout).toMatch(/^1\s+canary\s+(Pending|Committed)\s+1\s/m);
    expect(shown.stdout).toMatch(/^2\s+rest\s+Pending\s+1\s/m);
    expect((await env.cli.run(["rollout", "resume", id!])).stdout).toContain("resumed (phase Running");

    // The gate cannot see any cluster here: the canary wave halts on its timeout, and the watch says why.
    const watched = await env.cli.run(["rollout", "get", id!, "--watch", "--interval", "1s", "--timeout", "90s"]);
    expect(watched.code).toBe(1);
    expect(watched.stdout).toContain(`rollout/${id}: Running · wave 1/2 canary`);
    expect(watched.stdout).toMatch(/Halted in wave canary \(Timeout, /);
    expect(watched.stdout).toMatch(/^ {2}bravo on aks-dev-weu: waiting: the cluster cannot be reached$/m);

    const aborted = await env.cli.run(["rollout", "abort", id!]);
    expect(aborted.code).toBe(0);
    expect(aborted.stdout).toMatch(
      new RegExp(
        `^rollout/${id} aborted \\(commit [0-9a-f]{7}\\); nothing was reverted, each team is on one version: v1: 1 team, v3: 1 team$`,
        "m",
      ),
    );
    expect((await env.cli.run(["rollout", "get"])).stdout).toMatch(new RegExp(`^${id}\\s+Aborted\\s`, "m"));
  }, 180_000);
});
