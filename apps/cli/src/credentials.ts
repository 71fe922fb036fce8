import { execFile } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { delimiter, join, resolve } from "node:path";
import type { ContextAuth } from "./config.js";
import { CliError, EXIT } from "./exit-codes.js";

/**
 * Where a command's bearer token comes from, first match wins:
 *   --token  →  $BERTH_TOKEN  →  --token-file  →  the context's token, token file, or `az account get-access-token`.
 * A token file must be private to its owner (mode 0600, like an SSH key): anything looser is refused.
 */

export interface TokenSources {
  flagToken?: string | undefined;
  flagTokenFile?: string | undefined;
  env: NodeJS.ProcessEnv;
  cwd: string;
  context?: ContextAuth | undefined;
}

export async function readTokenFile(path: string, cwd: string): Promise<string> {
  const file = resolve(cwd, path);
  let mode: number;
  try {
    mode = (await stat(file)).mode;
  } catch (err) {
    throw new CliError(
      `cannot read the token file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      EXIT.unauthorized,
    );
  }
  if (process.platform !== "win32" && (mode & 0o077) !== 0) {
    throw new CliError(
      `the token file ${file} is readable by others (mode ${(mode & 0o777).toString(8)}): run chmod 600 ${file}`,
      EXIT.unauthorized,
    );
  }
  const token = (await readFile(file, "utf8")).trim();
  if (!token) throw new CliError(`the token file ${file} is empty`, EXIT.unauthorized);
  return token;
}

/** The `az` executable on PATH, or undefined. */
export function findAz(env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, process.platform === "win32" ? "az.cmd" : "az");
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** An Entra ID access token for `resource` from the Azure CLI's signed-in account. */
export function azureToken(resource: string, env: NodeJS.ProcessEnv): Promise<string> {
  const az = findAz(env);
  if (!az) {
    return Promise.reject(
      new CliError("this context gets its token from the Azure CLI, but `az` is not on PATH", EXIT.unauthorized, [
        "install the Azure CLI and run `az login`, or log in with --token-file",
      ]),
    );
  }
  return new Promise((resolvePromise, reject) => {
    execFile(
      az,
      ["account", "get-access-token", "--resource", resource, "--query", "accessToken", "--output", "tsv"],
      { env, timeout: 60_000, maxBuffer: 1024 * 1024 },
      (err, stdout, stderr) => {
        const token = String(stdout).trim();
        if (err || !token) {
          const why =
            String(stderr)
              .trim()
              .split("\n")
              .find((l) => l.trim()) ??
            (err as Error | null)?.message ??
            "no token printed";
          reject(
            new CliError(`az account get-access-token failed: ${why}`, EXIT.unauthorized, [
              "run `az login` (and check the resource id of the Berth API)",
            ]),
          );
        } else {
          resolvePromise(token);
        }
      },
    );
  });
}

export async function resolveToken(sources: TokenSources): Promise<string> {
  if (sources.flagToken) return sources.flagToken;
  if (sources.env.BERTH_TOKEN) return sources.env.BERTH_TOKEN;
  if (sources.flagTokenFile) return readTokenFile(sources.flagTokenFile, sources.cwd);
  const auth = sources.context;
  if (auth && "token" in auth) return auth.token;
  if (auth && "tokenFile" in auth) return readTokenFile(auth.tokenFile, sources.cwd);
  if (auth && "azure" in auth) return azureToken(auth.azure.resource, sources.env);
  throw new CliError(
    "no token: log in first (berth login --server URL --token-file FILE), or pass --token / set BERTH_TOKEN",
    EXIT.unauthorized,
  );
}
