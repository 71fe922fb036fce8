import { chmod, mkdir, readFile, rename, stat, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { parse, stringify } from "yaml";
import { z } from "zod";
import { CliError, EXIT } from "./exit-codes.js";

/**
 * The CLI's own config, shaped like a kubeconfig: named contexts (one per Berth installation), each with
 * the API URL and where its token comes from, and the current one. Written with mode 0600 because a
 * context may hold a token.
 *
 * Location: $BERTH_CLI_CONFIG, else $XDG_CONFIG_HOME/berth/config.yaml, else ~/.config/berth/config.yaml.
 */

const contextName = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._@:-]{0,62}$/,
    "must be 1-63 letters, digits or . _ @ : - (starting with a letter or digit)",
  );

export const contextAuthSchema = z.union([
  z.object({ token: z.string().min(1) }).strict(),
  z.object({ tokenFile: z.string().min(1) }).strict(),
  /** `az account get-access-token --resource <resource>` (the API's app id URI), when az is installed. */
  z.object({ azure: z.object({ resource: z.string().min(1) }).strict() }).strict(),
]);
export type ContextAuth = z.infer<typeof contextAuthSchema>;

/** The API URL: http(s), and no `user:password@`, which would be printed wherever the server is named. */
export const serverUrlSchema = z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).refine((url) => {
  const parsed = new URL(url);
  return parsed.username === "" && parsed.password === "";
}, "must not hold a user name or password (user:password@): Berth takes a bearer token (--token-file)");

/**
 * The server from a flag, the environment or the config, checked before anything uses it. The refusal never
 * repeats the URL: it may hold a password.
 */
export function checkServerUrl(server: string, from: string): string {
  const parsed = serverUrlSchema.safeParse(server);
  if (!parsed.success)
    throw new CliError(
      `${from}: the server URL ${parsed.error.issues[0]?.message ?? parsed.error.message}`,
      EXIT.usage,
    );
  return parsed.data;
}

export const contextSchema = z
  .object({
    name: contextName,
    server: serverUrlSchema,
    auth: contextAuthSchema.optional(),
  })
  .strict();
export type Context = z.infer<typeof contextSchema>;

export const cliConfigSchema = z
  .object({
    apiVersion: z.literal("berth.dev/v1").default("berth.dev/v1"),
    kind: z.literal("CliConfig").default("CliConfig"),
    currentContext: z.string().optional(),
    contexts: z.array(contextSchema).default([]),
  })
  .strict()
  .refine((c) => new Set(c.contexts.map((x) => x.name)).size === c.contexts.length, {
    message: "context names must be unique",
    path: ["contexts"],
  });
export type CliConfig = z.infer<typeof cliConfigSchema>;

export { contextName as contextNameSchema };

export function configPath(env: NodeJS.ProcessEnv): string {
  if (env.BERTH_CLI_CONFIG) return env.BERTH_CLI_CONFIG;
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), ".config");
  return join(base, "berth", "config.yaml");
}

export async function loadCliConfig(path: string): Promise<CliConfig> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return cliConfigSchema.parse({});
    throw new CliError(`cannot read the CLI config ${path}: ${(err as Error).message}`, EXIT.usage);
  }
  let raw: unknown;
  try {
    raw = parse(text) ?? {};
  } catch (err) {
    throw new CliError(`${path} is not valid YAML: ${(err as Error).message.split("\n")[0]}`, EXIT.usage);
  }
  const parsed = cliConfigSchema.safeParse(raw);
  if (!parsed.success) {
    throw new CliError(
      `${path} is not a valid berth CLI config`,
      EXIT.usage,
      parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`),
    );
  }
  // A stored token in a file others can read is refused, as a token file is (credentials.ts).
  const holdsToken = parsed.data.contexts.some((c) => c.auth !== undefined && "token" in c.auth);
  const mode = (await stat(path)).mode & 0o777;
  if (holdsToken && process.platform !== "win32" && (mode & 0o077) !== 0) {
    throw new CliError(
      `the CLI config ${path} holds a token and is readable by others (mode ${mode.toString(8)}): run chmod 600 ${path}`,
      EXIT.unauthorized,
    );
  }
  return parsed.data;
}

/** Writes the whole file at once (temp file + rename), owner-only. */
export async function saveCliConfig(path: string, config: CliConfig): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.tmp`;
  await writeFile(temp, stringify(cliConfigSchema.parse(config)), { mode: 0o600 });
  await chmod(temp, 0o600);
  await rename(temp, path);
}

export function findContext(config: CliConfig, name: string | undefined): Context | undefined {
  const wanted = name ?? config.currentContext;
  return wanted === undefined ? undefined : config.contexts.find((c) => c.name === wanted);
}

export function upsertContext(config: CliConfig, context: Context): CliConfig {
  const contexts = config.contexts.filter((c) => c.name !== context.name);
  return { ...config, contexts: [...contexts, context].sort((a, b) => a.name.localeCompare(b.name)) };
}
