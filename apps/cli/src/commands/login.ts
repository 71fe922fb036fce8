import { resolve } from "node:path";
import { stringify } from "yaml";
import { listAllTeams } from "../client.js";
import {
  checkServerUrl,
  contextNameSchema,
  contextSchema,
  saveCliConfig,
  upsertContext,
  type Context,
  type ContextAuth,
} from "../config.js";
import { azureToken, findAz, readTokenFile } from "../credentials.js";
import { CliError, EXIT } from "../exit-codes.js";
import { formatTable } from "../output/table.js";
import { plural } from "../output/text.js";
import type { Runtime } from "../runtime.js";

export interface LoginOptions {
  server?: string;
  name?: string;
  token?: string;
  tokenFile?: string;
  tokenStdin?: boolean;
  azureResource?: string;
  verify: boolean;
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString("utf8").trim();
}

/**
 * `berth login`: saves a context (API URL + where its token comes from), makes it current, and checks
 * the token against the API first (a read), so a typo never gets saved.
 */
export async function login(rt: Runtime, options: LoginOptions): Promise<number> {
  const config = await rt.cliConfig();
  const name = options.name ?? rt.options.context ?? config.currentContext ?? "default";
  const parsedName = contextNameSchema.safeParse(name);
  if (!parsedName.success)
    throw new CliError(
      `context name "${name}" ${parsedName.error.issues[0]?.message ?? parsedName.error.message}`,
      EXIT.usage,
    );
  const existing = config.contexts.find((c) => c.name === name);
  const server = options.server ?? rt.options.server ?? existing?.server;
  if (!server)
    throw new CliError("berth login needs --server URL (the Berth API, e.g. http://127.0.0.1:8080)", EXIT.usage);
  checkServerUrl(server, "--server");

  const given = [
    options.token,
    options.tokenFile ?? rt.options.tokenFile,
    options.tokenStdin,
    options.azureResource,
  ].filter(Boolean).length;
  if (given > 1) throw new CliError("give one of --token, --token-file, --token-stdin or --azure-resource", EXIT.usage);
  let auth: ContextAuth | undefined;
  let token: string;
  const tokenFile = options.tokenFile ?? rt.options.tokenFile;
  const tokenFlag = options.token ?? rt.options.token;
  if (options.tokenStdin) {
    token = await readAll(rt.io.stdin);
    if (!token) throw new CliError("--token-stdin: nothing on stdin", EXIT.usage);
    auth = { token };
  } else if (tokenFlag) {
    token = tokenFlag;
    auth = { token };
  } else if (tokenFile) {
    const path = resolve(rt.io.cwd, tokenFile);
    token = await readTokenFile(path, rt.io.cwd);
    auth = { tokenFile: path };
  } else if (options.azureResource) {
    token = await azureToken(options.azureResource, rt.io.env);
    auth = { azure: { resource: options.azureResource } };
  } else if (existing?.auth) {
    auth = existing.auth;
    token =
      "token" in auth
        ? auth.token
        : "tokenFile" in auth
          ? await readTokenFile(auth.tokenFile, rt.io.cwd)
          : await azureToken(auth.azure.resource, rt.io.env);
  } else {
    const hint = findAz(rt.io.env)
      ? " (az is installed: --azure-resource <the API's app id URI> uses your az login)"
      : "";
    throw new CliError(
      `berth login needs a token: --token-file FILE (mode 0600), --token-stdin, --token or --azure-resource${hint}`,
      EXIT.usage,
    );
  }

  const context = contextSchema.safeParse({ name, server, auth } satisfies Context);
  if (!context.success)
    throw new CliError(
      `cannot save context ${name}`,
      EXIT.usage,
      context.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`),
    );

  let visible: number | undefined;
  if (options.verify) {
    visible = (await listAllTeams(rt.clientFor(server, token))).teams.length;
  }
  await saveCliConfig(rt.configFile, { ...upsertContext(config, context.data), currentContext: name });
  rt.out(
    `Logged in to ${server} as context "${name}"${visible === undefined ? "" : ` (${plural(visible, "team")} visible)`}; saved in ${rt.configFile}`,
  );
  return EXIT.ok;
}

function describeAuth(auth: ContextAuth | undefined): string {
  if (!auth) return "none";
  if ("token" in auth) return "token (stored)";
  if ("tokenFile" in auth) return `token file ${auth.tokenFile}`;
  return `az (${auth.azure.resource})`;
}

export async function getContexts(rt: Runtime, output: string | undefined): Promise<number> {
  const config = await rt.cliConfig();
  if (output === "name") {
    for (const c of config.contexts) rt.out(c.name);
    return EXIT.ok;
  }
  rt.out(
    formatTable(
      ["current", "name", "server", "auth"],
      config.contexts.map((c) => [c.name === config.currentContext ? "*" : "", c.name, c.server, describeAuth(c.auth)]),
    ),
  );
  return EXIT.ok;
}

export async function currentContext(rt: Runtime): Promise<number> {
  const config = await rt.cliConfig();
  if (!config.currentContext)
    throw new CliError("no current context: berth login or berth config use-context NAME", EXIT.notFound);
  rt.out(config.currentContext);
  return EXIT.ok;
}

export async function useContext(rt: Runtime, name: string): Promise<number> {
  const config = await rt.cliConfig();
  if (!config.contexts.some((c) => c.name === name))
    throw new CliError(`no context "${name}" in ${rt.configFile}`, EXIT.notFound);
  await saveCliConfig(rt.configFile, { ...config, currentContext: name });
  rt.out(`Switched to context "${name}".`);
  return EXIT.ok;
}

export async function deleteContext(rt: Runtime, name: string): Promise<number> {
  const config = await rt.cliConfig();
  if (!config.contexts.some((c) => c.name === name))
    throw new CliError(`no context "${name}" in ${rt.configFile}`, EXIT.notFound);
  const { currentContext: current, ...rest } = config;
  await saveCliConfig(rt.configFile, {
    ...rest,
    contexts: config.contexts.filter((c) => c.name !== name),
    ...(current && current !== name ? { currentContext: current } : {}),
  });
  rt.out(`Deleted context "${name}".`);
  return EXIT.ok;
}

/** The config with stored tokens replaced by REDACTED, so it can be pasted into a ticket. */
export async function viewConfig(rt: Runtime): Promise<number> {
  const config = await rt.cliConfig();
  const redacted = {
    ...config,
    contexts: config.contexts.map((c) => (c.auth && "token" in c.auth ? { ...c, auth: { token: "REDACTED" } } : c)),
  };
  rt.io.stdout.write(stringify(redacted));
  return EXIT.ok;
}
