import { parseAllDocuments, parseDocument } from "yaml";
import { SHARD } from "./layout.js";
import { allClusters, type Platform } from "./platform.js";
import { ClusterInstallError, editDocuments, resourcesOf, withoutResource, withResource } from "./fleet-files.js";
import {
  cutOfFile,
  sliceFiles,
  sliceMarkers,
  sliceOptions,
  slicesFile,
  withTeamsRepositorySettings,
} from "./team-slices.js";

/**
 * Moving an installed cluster from its slices to the platform config's (ADR 0034, 0036): `berth cluster slices`, one
 * step per run, each refused when it would delete what Flux applied or make two generators race.
 */

export interface SliceMove {
  platform: Platform;
  /** The cluster whose slices move: one of platform.environments' clusters, installed. */
  cluster: string;
  /** A file of the fleet repository, by path from its root; undefined when absent. */
  read: (path: string) => string | undefined;
  /** Every file under a folder of the fleet repository, by path from its root. */
  list: (dir: string) => readonly string[];
}

/** What moveSlices decided: the step, and the files to write (text) or delete (null), by path from the fleet's root. */
export interface SliceMoveResult {
  step: "install" | "retire" | "refetch" | "none";
  files: Map<string, string | null>;
}

/**
 * The next step that moves an installed cluster from its slices (first-letter, or hash slices of another count) to the
 * platform config's hash slices (ADR 0034; docs/install.md, "Moving to hash slices"), for a platform config on a new
 * artifactPrefix:
 *
 * - `install`: the new slices beside the installed ones, whose Kustomizations are suspended and orphan what they
 *   applied: the new slices take every team Kustomization over (the cluster side of every cut is the same shard
 *   folders), and the old generators keep cutting the old artifacts until each team is moved.
 * - `retire` (once a same-version rollout put every team folder in its shard's and every team Kustomization on the new
 *   prefix): the old slices and their markers removed; their Kustomizations orphan, their generators delete only
 *   artifacts nothing reads.
 * - `refetch` (the config's slices installed, fetched the other way: platform.layout.slices.fetch, ADR 0036): the
 *   slices file written again, and GitRepository berth-teams suspended (per-slice) or fetching again (whole).
 * - `none`: nothing left to do.
 *
 * Refused (ClusterInstallError) when a step would delete or race: the same artifact prefix for two cuts, old
 * Kustomizations not orphaning, or teams not moved yet.
 */
export function moveSlices(input: SliceMove): SliceMoveResult {
  const { platform, cluster, read } = input;
  const cut = platform.layout.slices;
  if (cut.by !== "hash")
    throw new ClusterInstallError("platform.layout.slices.by is first-letter: set it to hash first (ADR 0034)");
  const { clustersDir, teamsDir } = platform.layout;
  const dir = `${clustersDir}/${cluster}`;
  const teamsPath = `${dir}/berth-teams.yaml`;
  const teams = read(teamsPath);
  if (teams === undefined) throw new ClusterInstallError(`${teamsPath} is missing: is ${cluster} installed?`);
  const perSlice = cut.fetch === "per-slice";
  const options = sliceOptions(platform, cluster, { text: teams, path: teamsPath });
  const indexPath = `${dir}/kustomization.yaml`;
  const index = read(indexPath);
  if (index === undefined) throw new ClusterInstallError(`${indexPath} is missing: is ${cluster} installed?`);
  const desired = slicesFile(cut);
  /** The slices files a cluster's index lists and its folder holds. */
  const installedOn = (name: string) =>
    resourcesOf(read(`${clustersDir}/${name}/kustomization.yaml`)).flatMap((file) => {
      const sliceCut = cutOfFile(file);
      // Only a slices file is read: the index also lists folders (flux-system).
      const text = sliceCut ? read(`${clustersDir}/${name}/${file}`) : undefined;
      const path = `${clustersDir}/${name}/${file}`;
      return sliceCut && text !== undefined
        ? [{ file, cut: sliceCut, text, path, fetch: fetchOfSlices(text, path) }]
        : [];
    });
  const installed = installedOn(cluster);
  const old = installed.filter((i) => i.file !== desired);
  const files = new Map<string, string | null>();

  if (!installed.some((i) => i.file === desired)) {
    for (const { path, text } of old) {
      const prefix = artifactPrefixOf(text, path);
      if (prefix === options.artifactPrefix)
        throw new ClusterInstallError(
          `platform.fluxSource.artifactPrefix is ${prefix}, the prefix ${path} names its artifacts with: two ` +
            "generators would make the same artifacts; set a new one (e.g. team-hashed-)",
        );
      files.set(path, retiringSlices(text, path));
    }
    for (const [path, text] of sliceFiles(options)) if (read(path) === undefined) files.set(path, text);
    files.set(indexPath, withResource(index, indexPath, desired));
    // berth-teams goes on fetching for the old slices' generators until the retire step.
    files.set(
      teamsPath,
      withTeamsRepositorySettings(teams, teamsPath, platform, cluster, perSlice && old.length === 0),
    );
    return { step: "install", files };
  }
  if (old.length === 0) {
    // The same slices fetched the other way (ADR 0036): one commit. Each slice's Kustomization and team generator keep
    // their names and read the slice's new source; the team artifacts keep names and contents, so no team reconciles.
    const current = installed.find((i) => i.file === desired);
    if (!current || current.fetch === cut.fetch) return { step: "none", files };
    for (const [path, text] of sliceFiles(options))
      if (path === current.path || read(path) === undefined) files.set(path, text);
    files.set(teamsPath, withTeamsRepositorySettings(teams, teamsPath, platform, cluster, perSlice));
    return { step: "refetch", files };
  }

  const unmoved = new Set(
    input.list(teamsDir).flatMap((path) => {
      const [folder, ...rest] = path.slice(teamsDir.length + 1).split("/");
      return folder !== undefined && rest.length > 0 && !SHARD.test(folder) ? [folder] : [];
    }),
  );
  // Each team Kustomization on this cluster must read its artifact under the new prefix before the old generators go.
  for (const path of input.list(`${dir}/teams`)) {
    if (!path.endsWith(".yaml")) continue;
    const o = parseDocument(read(path) ?? "").toJS() as {
      kind?: string;
      spec?: { sourceRef?: { name?: string } };
    } | null;
    const source = o?.kind === "Kustomization" ? o.spec?.sourceRef?.name : undefined;
    if (source !== undefined && !source.startsWith(options.artifactPrefix))
      unmoved.add(path.slice(path.lastIndexOf("/") + 1, -".yaml".length));
  }
  if (unmoved.size > 0) {
    const names = [...unmoved].sort();
    throw new ClusterInstallError(
      `${names.length} teams are not on the new slices yet (${names.slice(0, 3).join(", ")}${names.length > 3 ? ", …" : ""}): ` +
        "move them first with a same-version rollout (POST /v1/rollouts) of the API on the platform config, and wait " +
        "until every team is Ready",
    );
  }
  for (const { path, text } of old) {
    const deleting = orphaningKustomizations(text, path).find((k) => !k.orphans);
    if (deleting)
      throw new ClusterInstallError(
        `${path}: Kustomization ${deleting.name} does not orphan (deletionPolicy: Orphan): removing it would ` +
          "delete every team it applied; run the install step first",
      );
  }
  let next = index;
  for (const { path, file } of old) {
    files.set(path, null);
    next = withoutResource(next, indexPath, file);
  }
  files.set(indexPath, next);
  if (perSlice) files.set(teamsPath, withTeamsRepositorySettings(teams, teamsPath, platform, cluster, true));
  // The teams folder's markers are every cluster's: kept while any installed cut of any cluster needs them.
  const kept = new Set(sliceMarkers(options).keys());
  for (const other of allClusters(platform))
    for (const otherCut of other.name === cluster
      ? []
      : installedOn(other.name).map((i) => ({ cut: i.cut, fetch: i.fetch })))
      for (const path of sliceMarkers({ ...options, cluster: other.name, ...otherCut }).keys())
        if (path.startsWith(`${teamsDir}/`)) kept.add(path);
  for (const { cut: oldCut, fetch } of old)
    for (const path of sliceMarkers({ ...options, cut: oldCut, fetch }).keys())
      if (!kept.has(path) && read(path) !== undefined) files.set(path, null);
  return { step: "retire", files };
}

/** How an installed slices file fetches: per slice when its slices have GitRepositories of their own. */
function fetchOfSlices(text: string, path: string): "whole" | "per-slice" {
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors[0]) throw new ClusterInstallError(`${path}: ${doc.errors[0].message}`);
    if ((doc.toJS() as { kind?: string } | null)?.kind === "GitRepository") return "per-slice";
  }
  return "whole";
}

/** The Kustomizations of a slices file, and whether each orphans what it applied when deleted. */
function orphaningKustomizations(text: string, path: string): Array<{ name: string; orphans: boolean }> {
  const kustomizations: Array<{ name: string; orphans: boolean }> = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors[0]) throw new ClusterInstallError(`${path}: ${doc.errors[0].message}`);
    const o = doc.toJS() as { kind?: string; metadata?: { name?: string }; spec?: { deletionPolicy?: string } } | null;
    if (o?.kind === "Kustomization")
      kustomizations.push({ name: o.metadata?.name ?? "", orphans: o.spec?.deletionPolicy === "Orphan" });
  }
  return kustomizations;
}

/** The artifact prefix a slices file's team generators name artifacts with (`<prefix>{team}`). */
function artifactPrefixOf(text: string, path: string): string {
  for (const doc of parseAllDocuments(text)) {
    const o = doc.toJS() as { kind?: string; spec?: { artifacts?: Array<{ name?: string }> } } | null;
    const name = o?.kind === "ArtifactGenerator" ? o.spec?.artifacts?.[0]?.name : undefined;
    if (name?.endsWith("{team}")) return name.slice(0, -"{team}".length);
  }
  throw new ClusterInstallError(`${path} holds no team artifact generator: is it Berth's slices?`);
}

/** Slices being retired: their Kustomizations suspended and orphaning; every other document byte for byte. */
function retiringSlices(text: string, path: string): string {
  return editDocuments(text, path, (doc, o) => {
    if (o.kind !== "Kustomization") return false;
    doc.setIn(["spec", "suspend"], true);
    doc.setIn(["spec", "deletionPolicy"], "Orphan");
    return true;
  });
}
