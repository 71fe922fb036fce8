import { BerthClient, DEFAULT_LIMITS } from "./client.js";
import { parseDuration } from "./duration.js";
import { checkServerUrl, configPath, findContext, loadCliConfig, type CliConfig, type Context } from "./config.js";
import { resolveToken } from "./credentials.js";
import { CliError, EXIT } from "./exit-codes.js";
import { colorEnabled, painter, type Io, type Paint } from "./io.js";

/** Options every command takes (before or after its own). */
export interface GlobalOptions {
  context?: string;
  server?: string;
  token?: string;
  tokenFile?: string;
  color?: boolean;
  /** --request-timeout: a bound on every request's total time, over each command's own. */
  requestTimeout?: string;
}

/**
 * What a command runs with: its streams, colours, the CLI config and, on demand, an API client for the
 * chosen context (--context, else the current one) with --server / BERTH_SERVER and the token sources
 * of credentials.ts applied on top.
 */
export class Runtime {
  readonly paint: Paint;
  readonly configFile: string;
  private config: CliConfig | undefined;

  constructor(
    readonly io: Io,
    readonly options: GlobalOptions,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {
    this.paint = painter(colorEnabled(io, options.color));
    this.configFile = configPath(io.env);
  }

  get isInteractive(): boolean {
    return Boolean(this.io.stdin.isTTY && this.io.stdout.isTTY);
  }

  async cliConfig(): Promise<CliConfig> {
    this.config ??= await loadCliConfig(this.configFile);
    return this.config;
  }

  async context(): Promise<Context | undefined> {
    const config = await this.cliConfig();
    const name = this.options.context ?? this.io.env.BERTH_CONTEXT;
    const context = findContext(config, name);
    if (name && !context)
      throw new CliError(`no context "${name}" in ${this.configFile}`, EXIT.usage, [
        "berth config get-contexts lists them",
      ]);
    return context;
  }

  async client(): Promise<BerthClient> {
    const context = await this.context();
    const server = this.options.server ?? this.io.env.BERTH_SERVER ?? context?.server;
    if (!server) {
      throw new CliError(
        "no Berth API to talk to: run berth login --server URL first, or pass --server / set BERTH_SERVER",
        EXIT.usage,
      );
    }
    const from =
      this.options.server !== undefined
        ? "--server"
        : this.io.env.BERTH_SERVER !== undefined
          ? "BERTH_SERVER"
          : `context ${context?.name}`;
    checkServerUrl(server, from);
    const token = await resolveToken({
      flagToken: this.options.token,
      flagTokenFile: this.options.tokenFile,
      env: this.io.env,
      cwd: this.io.cwd,
      context: context?.auth,
    });
    return this.clientFor(server, token);
  }

  /** An API client for `server` with this run's Ctrl-C and limits (--request-timeout). */
  clientFor(server: string, token: string): BerthClient {
    const bound = this.options.requestTimeout === undefined ? undefined : parseDuration(this.options.requestTimeout);
    if (bound !== undefined && bound <= 0) throw new CliError("--request-timeout must be more than 0", EXIT.usage);
    return new BerthClient(server, token, this.fetchImpl, this.io.signal, {
      ...DEFAULT_LIMITS,
      maxRequestTimeoutMs: bound,
    });
  }

  out(line = ""): void {
    this.io.stdout.write(`${line}\n`);
  }

  err(line = ""): void {
    this.io.stderr.write(`${line}\n`);
  }
}
