import { Command, CommanderError, Option } from "commander";
import { CLI_VERSION, DEFAULT_CHUNK_SIZE } from "./client.js";
import { currentContext, deleteContext, getContexts, login, useContext, viewConfig } from "./commands/login.js";
import {
  getRollouts,
  rolloutAction,
  rolloutPreview,
  rolloutStart,
  watchRollout,
  type RolloutOutput,
  type RolloutSource,
} from "./commands/rollouts.js";
import { clusterAdd, clusterSlices, type ClusterAddOptions, type ClusterSlicesOptions } from "./commands/cluster.js";
import { status } from "./commands/status.js";
import { parseDuration } from "./duration.js";
import { apply, deleteTeam, diff, getTeams, type OutputFormat } from "./commands/teams.js";
import { CliError, EXIT } from "./exit-codes.js";
import { colorEnabled, painter, type Io } from "./io.js";
import { reportError } from "./output/errors.js";
import { Runtime, type GlobalOptions } from "./runtime.js";

const collect = (value: string, previous: string[]) => [...previous, value];

function teamKind(kind: string): void {
  if (kind !== "team" && kind !== "teams")
    throw new CliError(`unknown resource "${kind}": berth knows "team" (or "teams")`, EXIT.usage);
}

/** The `berth` command line. Returns the exit code (docs/cli.md); never calls process.exit. */

/** --chunk-size: 0 (everything in one request) or the API's page size range, 1-1000. */
function parseChunkSize(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n > 1000)
    throw new CliError(`--chunk-size must be a whole number from 0 to 1000, not "${text}"`, EXIT.usage);
  return n;
}

export async function run(argv: string[], io: Io, fetchImpl: typeof fetch = fetch): Promise<number> {
  let code: number = EXIT.ok;
  const program = new Command("berth");
  const runtime = (cmd: Command) => new Runtime(io, cmd.optsWithGlobals<GlobalOptions>(), fetchImpl);
  /** Wraps an action: its result is the exit code. */
  const action =
    <A extends unknown[]>(fn: (...args: A) => Promise<number>) =>
    async (...args: A) => {
      code = await fn(...args);
    };

  program
    .description("The command line for Berth: onboard teams through GitOps and watch them become Ready.")
    .version(CLI_VERSION, "-v, --version")
    .option("--context <name>", "the context to use (default: the current one; env BERTH_CONTEXT)")
    .option("-s, --server <url>", "the Berth API URL, overriding the context's (env BERTH_SERVER)")
    .option("--token <token>", "a bearer token, overriding the context's (env BERTH_TOKEN)")
    .option("--token-file <path>", "read the bearer token from a file private to you (mode 0600)")
    .option("--no-color", "no colours (also NO_COLOR=1)")
    .option(
      "--request-timeout <duration>",
      "give up on any one request after this long, answer included (default: 2m; 5m for rollout start and preview)",
    )
    .showHelpAfterError("(run berth --help for usage)")
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    })
    .addHelpText(
      "after",
      `
Examples:
  berth login --server http://127.0.0.1:8080 --token-file .berth/dev-token
  berth apply -f team.yaml
  berth diff -f teams/
  berth get teams -o wide
  berth status payments --watch --timeout 15m
  berth rollout preview --to v3 --env dev
  berth rollout start -f rollout.yaml && berth rollout get ro-20261124-101500-a1b2c3 --watch
  berth cluster add aks-prod-weu --fleet ../fleet --client-id 11111111-2222-4333-8444-555555555555
  berth cluster slices aks-dev-weu --fleet ../fleet

Exit codes: 0 ok · 1 differences (diff) or the team failed (status) · 2 usage · 3 invalid team · 4 not found ·
5 unauthorized · 6 conflict · 7 API unavailable · 8 timed out · 130 interrupted. Details: docs/cli.md`,
    );

  program
    .command("login")
    .description(
      "save a context (the API URL and where its token comes from) and make it current; checks the token first",
    )
    .option("--token-stdin", "read the token from stdin (keeps it out of the shell history)")
    .option(
      "--azure-resource <id>",
      "get tokens from the Azure CLI: az account get-access-token --resource <id> (the API's app id URI)",
    )
    .option("--no-verify", "save without checking the token against the API")
    .addHelpText("after", '\nThe context is named by --context (default: the current one, else "default").')
    .action(
      action(async (opts: { tokenStdin?: boolean; azureResource?: string; verify: boolean }, cmd: Command) => {
        const rt = runtime(cmd);
        return login(rt, {
          ...opts,
          name: rt.options.context,
          server: rt.options.server,
          token: rt.options.token,
          tokenFile: rt.options.tokenFile,
        });
      }),
    );

  const config = program.command("config").description("show and switch contexts (like kubectl config)");
  config
    .command("get-contexts")
    .description("list the contexts; * marks the current one")
    .addOption(new Option("-o, --output <format>", "name prints names only").choices(["name"]))
    .action(action(async (opts: { output?: string }, cmd: Command) => getContexts(runtime(cmd), opts.output)));
  config
    .command("current-context")
    .description("print the current context's name")
    .action(action(async (_opts: unknown, cmd: Command) => currentContext(runtime(cmd))));
  config
    .command("use-context <name>")
    .description("make a context the current one")
    .action(action(async (name: string, _opts: unknown, cmd: Command) => useContext(runtime(cmd), name)));
  config
    .command("delete-context <name>")
    .description("forget a context (and its stored token)")
    .action(action(async (name: string, _opts: unknown, cmd: Command) => deleteContext(runtime(cmd), name)));
  config
    .command("view")
    .description("print the CLI config, stored tokens redacted")
    .action(action(async (_opts: unknown, cmd: Command) => viewConfig(runtime(cmd))));

  const cluster = program.command("cluster").description("a workload cluster's Flux files in the fleet repository");
  cluster
    .command("add <name>")
    .description(
      "write a new workload cluster's Flux files into a fleet checkout, from the platform config and an installed cluster",
    )
    .requiredOption("--fleet <dir>", "the fleet repository's checkout")
    .requiredOption("--client-id <uuid>", "the client id of the cluster's Berth Discovery Reader identity")
    .option("--platform-config <file>", "the platform config (default: <fleet>/berth/platform/berth.yaml)")
    .option("--like <cluster>", "the installed cluster to copy from (default: the first one in the platform config)")
    .action(action(async (name: string, opts: ClusterAddOptions) => clusterAdd(io, name, opts)));
  cluster
    .command("slices <name>")
    .description(
      "move an installed cluster to the platform config's hash slices, one step per run: install them beside the " +
        "first-letter slices, then (once a rollout moved every team) retire those",
    )
    .requiredOption("--fleet <dir>", "the fleet repository's checkout")
    .option("--platform-config <file>", "the platform config (default: <fleet>/berth/platform/berth.yaml)")
    .action(action(async (name: string, opts: ClusterSlicesOptions) => clusterSlices(io, name, opts)));

  const fileOptions = (cmd: Command) =>
    cmd
      .requiredOption(
        "-f, --filename <path>",
        "a team file (YAML or JSON, one or more documents), a folder of them, or - for stdin; repeatable",
        collect,
        [],
      )
      .option("-R, --recursive", "read sub-folders of a folder too", false);

  fileOptions(
    program
      .command("apply")
      .description("create or update the teams in the files (idempotent: an unchanged team makes no commit)")
      .option("--dry-run", "only say what would change (the API previews, nothing is committed)", false)
      .addOption(new Option("-o, --output <format>", "name prints team/NAME only").choices(["name"])),
  ).action(
    action(async (opts: { filename: string[]; recursive: boolean; dryRun: boolean; output?: "name" }, cmd: Command) =>
      apply(runtime(cmd), opts),
    ),
  );

  fileOptions(
    program
      .command("diff")
      .description(
        "show what applying the files would change in the Flux repo, as a unified diff; exit code 1 when anything would",
      ),
  ).action(action(async (opts: { filename: string[]; recursive: boolean }, cmd: Command) => diff(runtime(cmd), opts)));

  program
    .command("get <resource> [name]")
    .description("list teams (get teams) or show one (get team NAME)")
    .addOption(
      new Option("-o, --output <format>", "output format")
        .choices(["table", "wide", "json", "yaml", "name"])
        .default("table"),
    )
    .option(
      "--chunk-size <n>",
      "list teams in pages of this many (0: all in one request)",
      parseChunkSize,
      DEFAULT_CHUNK_SIZE,
    )
    .action(
      action(
        async (
          resource: string,
          name: string | undefined,
          opts: { output: OutputFormat; chunkSize: number },
          cmd: Command,
        ) => {
          teamKind(resource);
          return getTeams(runtime(cmd), name, opts.output, opts.chunkSize);
        },
      ),
    );

  program
    .command("delete <resource> <name>")
    .description("offboard a team in one commit (asks to type its name on a terminal; --yes otherwise)")
    .option("-y, --yes", "do not ask", false)
    .option("--ignore-not-found", "succeed when the team does not exist", false)
    .action(
      action(async (resource: string, name: string, opts: { yes: boolean; ignoreNotFound: boolean }, cmd: Command) => {
        teamKind(resource);
        return deleteTeam(runtime(cmd), name, opts);
      }),
    );

  program
    .command("status <team>")
    .description(
      "the team on every cluster it lands on: committed → Flux applied → Azure resources → credential → Ready",
    )
    .option("-w, --watch", "follow it live until Ready everywhere (exit 0), Failed (1) or --timeout (8)", false)
    .option("--timeout <duration>", "with --watch: give up after this long (90s, 10m, 1h)", "10m")
    .option("--interval <duration>", "with --watch: time between polls", "2s")
    .addOption(new Option("-o, --output <format>", "without --watch: print the API's answer").choices(["json", "yaml"]))
    .action(
      action(
        async (
          team: string,
          opts: { watch: boolean; timeout: string; interval: string; output?: "json" | "yaml" },
          cmd: Command,
        ) => {
          const intervalMs = parseDuration(opts.interval);
          if (intervalMs < 500) throw new CliError("--interval must be at least 500ms", EXIT.usage);
          return status(runtime(cmd), team, {
            watch: opts.watch,
            timeoutMs: parseDuration(opts.timeout),
            intervalMs,
            output: opts.output,
          });
        },
      ),
    );

  const rollout = program
    .command("rollout")
    .description(
      "move teams to a template version (or re-render them), in one commit or in waves gated on Ready: docs/rollouts.md",
    );
  const selection = (cmd: Command) =>
    cmd
      .option(
        "-f, --filename <path>",
        "the rollout as the API takes it (YAML or JSON: description, target, selector, waves, gate), or - for stdin",
      )
      .option("--to <version>", "move the teams to this template version (default: re-render each on its own)")
      .option("--team <name>", "select this team; repeatable", collect, [])
      .option("--env <environment>", "select teams that land on this environment; repeatable", collect, [])
      .option("--label <key=value>", "select teams with this label; repeatable", collect, [])
      .option("--description <text>", "why, for the rollout's record");
  selection(
    rollout
      .command("preview")
      .description(
        "what the rollout would change, per team, with diffs; nothing is committed (exit 3 when it would be refused)",
      ),
  )
    .option("--no-diffs", "the summary only (quick for a large fleet)")
    .action(
      action(async (opts: RolloutSource & { diffs: boolean }, cmd: Command) =>
        rolloutPreview(runtime(cmd), opts, { diffs: opts.diffs }),
      ),
    );
  selection(
    rollout
      .command("start")
      .description(
        "start it: without waves one commit for the whole selection (nothing partial); with waves, wave by wave",
      ),
  ).action(action(async (opts: RolloutSource, cmd: Command) => rolloutStart(runtime(cmd), opts)));
  rollout
    .command("get [id]")
    .description("list the rollouts, or show one: waves, gate, halt report, history")
    .addOption(
      new Option("-o, --output <format>", "output format").choices(["table", "json", "yaml", "name"]).default("table"),
    )
    .option(
      "-w, --watch",
      "follow the rollout until it completes (exit 0), halts, is paused or aborted (1), or --timeout (8)",
      false,
    )
    .option("--timeout <duration>", "with --watch: give up after this long (90s, 10m, 1h)", "1h")
    .option("--interval <duration>", "with --watch: time between polls", "5s")
    .action(
      action(
        async (
          id: string | undefined,
          opts: { output: RolloutOutput; watch: boolean; timeout: string; interval: string },
          cmd: Command,
        ) => {
          if (!opts.watch) return getRollouts(runtime(cmd), id, opts.output);
          if (id === undefined)
            throw new CliError("--watch follows one rollout: berth rollout get ID --watch", EXIT.usage);
          const intervalMs = parseDuration(opts.interval);
          if (intervalMs < 500) throw new CliError("--interval must be at least 500ms", EXIT.usage);
          return watchRollout(runtime(cmd), id, { timeoutMs: parseDuration(opts.timeout), intervalMs });
        },
      ),
    );
  for (const [name, description] of [
    ["pause", "commit no further wave until resumed"],
    ["resume", "go on with a paused or halted rollout (the wave's gate clock restarts)"],
    ["abort", "commit no further wave; nothing is reverted: says which version each team is on"],
  ] as const) {
    rollout
      .command(`${name} <id>`)
      .description(description)
      .action(action(async (id: string, _opts: unknown, cmd: Command) => rolloutAction(runtime(cmd), id, name)));
  }

  try {
    await program.parseAsync(argv);
    return code;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    return reportError(io, painter(colorEnabled(io, !argv.includes("--no-color"))), err);
  }
}
