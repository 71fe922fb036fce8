import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { dirname, join, relative, resolve, sep } from "node:path";
import {
  allClusters,
  ClusterInstallError,
  clusterInstallSources,
  moveSlices,
  newClusterFiles,
  platformSchema,
  type Platform,
  type SliceMoveResult,
} from "@berth/core";
import { parse } from "yaml";
import { CliError, EXIT } from "../exit-codes.js";
import type { Io } from "../io.js";

export interface ClusterAddOptions {
  /** The fleet repository's checkout. */
  fleet: string;
  /** The platform config; default `<fleet>/berth/platform/berth.yaml`, where docs/install.md puts it. */
  platformConfig?: string;
  /** The installed cluster to copy from; default the first one of the platform config with Berth installed. */
  like?: string;
  clientId: string;
}

/**
 * `berth cluster add <name>`: writes a new workload cluster's Flux files into a fleet checkout (docs/install.md,
 * step 3). Works on files only, not through the API: it runs before the cluster has any Berth. Writes nothing when
 * any file it would write is already there.
 */
export async function clusterAdd(io: Io, cluster: string, opts: ClusterAddOptions): Promise<number> {
  const fleet = resolve(io.cwd, opts.fleet);
  const configPath = resolve(io.cwd, opts.platformConfig ?? join(fleet, "berth", "platform", "berth.yaml"));
  const platform = readPlatform(configPath);
  const read = (path: string) => {
    const file = join(fleet, path);
    return existsSync(file) ? readFileSync(file, "utf8") : undefined;
  };
  const like =
    opts.like ??
    allClusters(platform)
      .map((c) => c.name)
      .find((name) => name !== cluster && read(clusterInstallSources(platform, name).teams) !== undefined);
  if (!like)
    throw new CliError(
      `no cluster of ${configPath} has Berth's files in ${fleet} to copy from; install the first one as docs/install.md says`,
      EXIT.invalid,
    );
  let files: Map<string, string>;
  try {
    files = newClusterFiles({ platform, cluster, like, read, controllerClientId: opts.clientId });
  } catch (err) {
    if (err instanceof ClusterInstallError) throw new CliError(err.message, EXIT.invalid);
    throw err;
  }
  const present = [...files.keys()].filter((path) => existsSync(join(fleet, path)));
  if (present.length > 0)
    throw new CliError(
      `cluster ${cluster} has files already (${present.slice(0, 3).join(", ")}${present.length > 3 ? ", …" : ""}); nothing written`,
      EXIT.conflict,
    );
  for (const [path, text] of files) {
    await mkdir(dirname(join(fleet, path)), { recursive: true });
    await writeFile(join(fleet, path), text);
  }
  io.stdout.write(
    `wrote ${files.size} files for cluster ${cluster} (from ${like}) under ${fleet}\n` +
      `next: flux bootstrap the cluster with --path ${platform.layout.clustersDir}/${cluster}, then commit and push ` +
      `(docs/install.md)\n`,
  );
  return EXIT.ok;
}

export interface ClusterSlicesOptions {
  fleet: string;
  platformConfig?: string;
}

/**
 * `berth cluster slices <name>`: the next step of moving an installed cluster to hash slices (docs/install.md,
 * "Moving to hash slices"), written into a fleet checkout (files deleted where a step retires them). Refuses a step
 * that would delete what Flux applied.
 */
export async function clusterSlices(io: Io, cluster: string, opts: ClusterSlicesOptions): Promise<number> {
  const fleet = resolve(io.cwd, opts.fleet);
  const configPath = resolve(io.cwd, opts.platformConfig ?? join(fleet, "berth", "platform", "berth.yaml"));
  const platform = readPlatform(configPath);
  if (!allClusters(platform).some((c) => c.name === cluster))
    throw new CliError(`cluster ${cluster} is not in the platform config ${configPath}`, EXIT.invalid);
  const read = (path: string) => {
    const file = join(fleet, path);
    return existsSync(file) ? readFileSync(file, "utf8") : undefined;
  };
  const list = (dir: string) => {
    const root = join(fleet, dir);
    if (!existsSync(root)) return [];
    return readdirSync(root, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => relative(fleet, join(e.parentPath, e.name)).split(sep).join("/"));
  };
  let result: SliceMoveResult;
  try {
    result = moveSlices({ platform, cluster, read, list });
  } catch (err) {
    if (err instanceof ClusterInstallError) throw new CliError(err.message, EXIT.invalid);
    throw err;
  }
  for (const [path, text] of result.files) {
    if (text === null) await rm(join(fleet, path), { force: true });
    else {
      await mkdir(dirname(join(fleet, path)), { recursive: true });
      await writeFile(join(fleet, path), text);
    }
  }
  const changed = `${result.files.size} files under ${fleet}`;
  const next = {
    install:
      `installed ${platform.layout.slices.count} hash slices on ${cluster} beside its slices before, which now ` +
      `orphan what they applied (${changed})\nnext: commit and push; once the hash slices are Ready and the API runs ` +
      "on this platform config, move every team with a same-version rollout (berth rollout start), then run this " +
      "again (docs/install.md)\n",
    retire: `retired ${cluster}'s slices before the hash slices (${changed})\nnext: commit and push (docs/install.md)\n`,
    refetch:
      `${cluster}'s hash slices now fetch ${platform.layout.slices.fetch === "per-slice" ? "each its own shards" : "the whole repository, cut by source-watcher"} ` +
      `(${changed})\nnext: commit and push; no team reconciles (docs/install.md)\n`,
    none: `${cluster} is on the platform config's hash slices: nothing to do\n`,
  }[result.step];
  io.stdout.write(next);
  return EXIT.ok;
}

function readPlatform(path: string): Platform {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    throw new CliError(`cannot read the platform config ${path} (--platform-config)`, EXIT.usage);
  }
  const config = parse(text) as { platform?: unknown } | null;
  const parsed = platformSchema.safeParse(config?.platform ?? {});
  if (!parsed.success)
    throw new CliError(
      `${path}: platform is not valid: ${parsed.error.issues.map((i) => `${i.path.join(".")} ${i.message}`).join("; ")}`,
      EXIT.invalid,
    );
  return parsed.data;
}
