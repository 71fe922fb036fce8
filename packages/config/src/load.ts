import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parse } from "yaml";
import { z } from "zod";
import { YAML_PARSE_OPTIONS } from "@berth/core";
import { berthConfigSchema, type BerthConfig } from "./schema.js";

/** Invalid configuration: the message lists every problem, one per line, for a clear failure at start. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
  constructor(readonly problems: string[]) {
    super(`invalid Berth configuration:\n  - ${problems.join("\n  - ")}`);
  }
}

export type Env = Readonly<Record<string, string | undefined>>;

/** Sets obj[path] = value, creating objects on the way; skips undefined values. */
function put(obj: Record<string, unknown>, path: string[], value: unknown): void {
  if (value === undefined) return;
  const leaf = path.at(-1);
  if (leaf === undefined) throw new Error("put: the path to set is empty");
  let node = obj;
  for (const key of path.slice(0, -1)) {
    if (node[key] === null || typeof node[key] !== "object") node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[leaf] = value;
}

function readSecretFile(path: string | undefined, name: string, problems: string[]): string | undefined {
  if (!path) return undefined;
  try {
    return readFileSync(path, "utf8").trim();
  } catch (err) {
    problems.push(`${name}: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? "error"}`);
    return undefined;
  }
}

export const portFromEnv = z.coerce.number().int().min(0).max(65535);

/**
 * Reads the YAML config file (BERTH_CONFIG_FILE) as a raw mapping, unvalidated; `base` is the file's
 * folder (relative paths in it resolve there), or `cwd` without a file. Problems are appended, not thrown.
 * Shared by the API's loadConfig and the controller's loadControllerConfig.
 */
export function readConfigFile(
  file: string | undefined,
  cwd: string,
  problems: string[],
): { raw: Record<string, unknown>; base: string } {
  if (!file) return { raw: {}, base: cwd };
  const path = resolve(cwd, file);
  try {
    const parsed: unknown = parse(readFileSync(path, "utf8"), YAML_PARSE_OPTIONS);
    if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed))
      return { raw: parsed as Record<string, unknown>, base: dirname(path) };
    problems.push(`${path}: must be a YAML mapping`);
  } catch (err) {
    problems.push(`${path}: ${(err as Error).message.split("\n")[0]}`);
  }
  return { raw: {}, base: dirname(path) };
}

/**
 * Loads the configuration from BERTH_CONFIG_FILE (YAML) and BERTH_* variables. Relative paths in the
 * file resolve against the file's folder. Throws ConfigError with every problem found.
 */
export function loadConfig(env: Env = process.env, cwd = process.cwd()): BerthConfig {
  const problems: string[] = [];
  const { raw, base } = readConfigFile(env.BERTH_CONFIG_FILE, cwd, problems);

  put(raw, ["logLevel"], env.BERTH_LOG_LEVEL);
  put(raw, ["templatesDir"], env.BERTH_TEMPLATES_DIR);
  put(raw, ["fluxRepo", "url"], env.BERTH_GIT_URL);
  put(raw, ["fluxRepo", "branch"], env.BERTH_GIT_BRANCH);
  put(raw, ["fluxRepo", "workDir"], env.BERTH_GIT_WORKDIR);
  put(raw, ["api", "host"], env.BERTH_HOST);
  if (env.BERTH_PORT !== undefined) {
    const port = portFromEnv.safeParse(env.BERTH_PORT);
    if (port.success) put(raw, ["api", "port"], port.data);
    else problems.push(`BERTH_PORT: must be a port number, got "${env.BERTH_PORT}"`);
  }
  if (env.BERTH_METRICS_PORT !== undefined) {
    const port = portFromEnv.safeParse(env.BERTH_METRICS_PORT);
    if (port.success) put(raw, ["api", "metricsPort"], port.data);
    else problems.push(`BERTH_METRICS_PORT: must be a port number, got "${env.BERTH_METRICS_PORT}"`);
  }

  const token = env.BERTH_GIT_TOKEN ?? readSecretFile(env.BERTH_GIT_TOKEN_FILE, "BERTH_GIT_TOKEN_FILE", problems);
  if (token !== undefined) {
    const auth = ((raw.fluxRepo as Record<string, unknown> | undefined)?.auth ?? {}) as Record<string, unknown>;
    put(raw, ["fluxRepo", "auth"], {
      kind: "token",
      username: env.BERTH_GIT_USERNAME ?? auth.username ?? "x-access-token",
      token,
    });
  }
  const forgeToken =
    env.BERTH_FORGE_TOKEN ?? readSecretFile(env.BERTH_FORGE_TOKEN_FILE, "BERTH_FORGE_TOKEN_FILE", problems);
  if (forgeToken !== undefined) {
    const review = (raw.fluxRepo as { review?: { mode?: unknown } } | undefined)?.review;
    if (review?.mode === "pull-request") put(raw, ["fluxRepo", "review", "token"], forgeToken);
    else problems.push("BERTH_FORGE_TOKEN(_FILE): set, but fluxRepo.review.mode is not pull-request");
  }
  const webhookSecret =
    env.BERTH_FORGE_WEBHOOK_SECRET ??
    readSecretFile(env.BERTH_FORGE_WEBHOOK_SECRET_FILE, "BERTH_FORGE_WEBHOOK_SECRET_FILE", problems);
  if (webhookSecret !== undefined) {
    const review = (raw.fluxRepo as { review?: { mode?: unknown } } | undefined)?.review;
    if (review?.mode === "pull-request") put(raw, ["fluxRepo", "review", "webhookSecret"], webhookSecret);
    else problems.push("BERTH_FORGE_WEBHOOK_SECRET(_FILE): set, but fluxRepo.review.mode is not pull-request");
  }
  if (env.BERTH_GIT_SSH_KEY_FILE) {
    put(raw, ["fluxRepo", "auth"], {
      kind: "ssh",
      privateKeyPath: env.BERTH_GIT_SSH_KEY_FILE,
      knownHostsPath: env.BERTH_GIT_KNOWN_HOSTS_FILE,
    });
  }

  const mode = env.BERTH_AUTH_MODE;
  if (mode === "dev") {
    put(raw, ["api", "auth"], { mode: "dev", token: env.BERTH_DEV_TOKEN });
  } else if (mode === "oidc" || env.BERTH_OIDC_ISSUER) {
    const current = ((raw.api as Record<string, unknown> | undefined)?.auth ?? {}) as Record<string, unknown>;
    put(raw, ["api", "auth"], {
      ...(current.mode === "oidc" ? current : {}),
      mode: "oidc",
      ...(env.BERTH_OIDC_ISSUER ? { issuer: env.BERTH_OIDC_ISSUER } : {}),
      ...(env.BERTH_OIDC_AUDIENCE ? { audience: env.BERTH_OIDC_AUDIENCE } : {}),
      ...(env.BERTH_OIDC_JWKS_URI ? { jwksUri: env.BERTH_OIDC_JWKS_URI } : {}),
      ...(env.BERTH_OIDC_TENANT_ID ? { tenantId: env.BERTH_OIDC_TENANT_ID } : {}),
    });
  } else if (mode !== undefined) {
    problems.push(`BERTH_AUTH_MODE: must be "oidc" or "dev", got "${mode}"`);
  }

  if (env.BERTH_STATUS_CACHE_SECONDS !== undefined) {
    const seconds = z.coerce.number().min(0).max(300).safeParse(env.BERTH_STATUS_CACHE_SECONDS);
    if (seconds.success) put(raw, ["api", "statusCacheSeconds"], seconds.data);
    else
      problems.push(
        `BERTH_STATUS_CACHE_SECONDS: must be a number of seconds (0-300), got "${env.BERTH_STATUS_CACHE_SECONDS}"`,
      );
  }
  put(raw, ["api", "ui", "publicUrl"], env.BERTH_UI_PUBLIC_URL);
  if (env.BERTH_UI_CLIENT_ID) put(raw, ["api", "ui", "oidc", "clientId"], env.BERTH_UI_CLIENT_ID);
  const uiSecret =
    env.BERTH_UI_CLIENT_SECRET ??
    readSecretFile(env.BERTH_UI_CLIENT_SECRET_FILE, "BERTH_UI_CLIENT_SECRET_FILE", problems);
  if (uiSecret !== undefined) put(raw, ["api", "ui", "oidc", "clientSecret"], uiSecret);
  put(
    raw,
    ["api", "ui", "sessionSecret"],
    env.BERTH_UI_SESSION_SECRET ??
      readSecretFile(env.BERTH_UI_SESSION_SECRET_FILE, "BERTH_UI_SESSION_SECRET_FILE", problems),
  );

  // Paths in the file are relative to the file, so a config and its templates can travel together.
  // BERTH_STATUS_KUBECONFIGS="aks-dev-weu=/etc/berth/dev.kubeconfig,aks-prod-weu=/etc/berth/prod.kubeconfig"
  if (env.BERTH_STATUS_KUBECONFIGS) {
    for (const pair of env.BERTH_STATUS_KUBECONFIGS.split(",").filter(Boolean)) {
      const [cluster, path] = pair.split("=", 2);
      if (!cluster || !path) problems.push(`BERTH_STATUS_KUBECONFIGS: "${pair}" is not cluster=path`);
      else put(raw, ["api", "clusters", cluster.trim()], { kubeconfig: path.trim() });
    }
  }
  const clusters = (raw.api as Record<string, unknown> | undefined)?.clusters;
  if (clusters && typeof clusters === "object") {
    for (const access of Object.values(clusters as Record<string, Record<string, unknown>>)) {
      if (access && typeof access.kubeconfig === "string") access.kubeconfig = resolve(base, access.kubeconfig);
    }
  }
  const receivers = (raw.api as Record<string, unknown> | undefined)?.fluxReceivers;
  if (receivers && typeof receivers === "object") {
    for (const [cluster, receiver] of Object.entries(receivers as Record<string, Record<string, unknown>>)) {
      if (!receiver || typeof receiver.tokenFile !== "string") continue;
      const tokenFile = resolve(base, receiver.tokenFile);
      receiver.tokenFile = tokenFile;
      // Read now only to fail at start: the notifier reads it at each notification (a rotated Secret).
      if (readSecretFile(tokenFile, `api.fluxReceivers.${cluster}.tokenFile`, problems) === "")
        problems.push(`api.fluxReceivers.${cluster}.tokenFile: ${tokenFile} is empty`);
    }
  }

  const templatesDir = raw.templatesDir;
  raw.templatesDir = resolve(base, typeof templatesDir === "string" ? templatesDir : "templates");
  const fluxRepo = raw.fluxRepo as Record<string, unknown> | undefined;
  if (fluxRepo && typeof fluxRepo.workDir === "string") fluxRepo.workDir = resolve(base, fluxRepo.workDir);

  const parsed = berthConfigSchema.safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) problems.push(`${issue.path.join(".") || "(root)"}: ${issue.message}`);
  }
  if (parsed.success) {
    const known = new Set(parsed.data.platform.environments.flatMap((e) => e.clusters.map((c) => c.name)));
    for (const cluster of Object.keys(parsed.data.api.clusters)) {
      if (!known.has(cluster)) problems.push(`api.clusters.${cluster}: not a cluster of platform.environments`);
    }
    for (const cluster of Object.keys(parsed.data.api.fluxReceivers)) {
      if (!known.has(cluster)) problems.push(`api.fluxReceivers.${cluster}: not a cluster of platform.environments`);
    }
    const notify = parsed.data.api.fluxNotify;
    if (notify.minDelayMs > notify.maxDelayMs) problems.push("api.fluxNotify.minDelayMs: must not exceed maxDelayMs");
  }
  if (problems.length || !parsed.success) throw new ConfigError(problems);
  return parsed.data;
}
