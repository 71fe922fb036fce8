import { parseAllDocuments, stringify } from "yaml";
import { ClusterInstallError, editDocuments } from "./fleet-files.js";
import { teamShard } from "./layout.js";
import { allClusters, HASH_SLICE_COUNTS, type Platform } from "./platform.js";

/**
 * A cluster's team slices in the fleet repository (ADR 0022, 0034, 0036): how a cut divides the teams, and the Flux
 * objects and marker files that apply each slice's teams, derived from the platform config so that they cannot
 * disagree with what the API writes.
 */

/** Team names start with a lowercase letter (DNS labels, the team schema): one slice per letter. */
export const SLICE_LETTERS = [..."abcdefghijklmnopqrstuvwxyz"];

export const sliceArtifact = (slice: string) => `berth-team-slice-${slice}`;
/**
 * Fetched per slice (ADR 0036): the generator, and its one ExternalArtifact, of the slice's Flux files (its shards'
 * folders under the cluster's teams folder), which the slice's Kustomization applies.
 */
export const sliceFluxFiles = (slice: string) => `berth-team-flux-${slice}`;

/**
 * Fetched per slice: the branch a slice's GitRepository follows on a cluster. The API moves it to the main branch's
 * head only when a commit changed the slice's folders (ADR 0036), so a poll of a slice that no commit touched finds
 * its branch where it was and fetches nothing.
 */
export const sliceBranch = (cluster: string, slice: string) => `${SLICE_BRANCHES}${cluster}/${slice}`;
/** The folder of every slice branch. */
export const SLICE_BRANCHES = "berth-slices/";

/**
 * A slice's branch on a cluster, and the slice's shards (what of the main branch it follows: sameShardsOnCluster). Its
 * commits hold only `folders` of the main-branch commit they stand for: the slice's GitRepository clones N / K teams.
 */
export interface SliceBranch {
  branch: string;
  cluster: string;
  shards: string[];
  /** The folders the slice fetches (its GitRepository's sparse checkout), the only ones its branch's commits hold. */
  folders: string[];
}

/** Every slice's branch on every cluster of the platform config; none unless the slices are fetched per slice. */
export function sliceBranches(platform: Platform): SliceBranch[] {
  const cut = platform.layout.slices;
  if (cut.fetch !== "per-slice" || cut.by !== "hash") return [];
  const { teamsDir, clustersDir } = platform.layout;
  return allClusters(platform).flatMap(({ name: cluster }) =>
    slicesOf(cut).map((slice) => ({
      branch: sliceBranch(cluster, slice.id),
      cluster,
      shards: slice.shards,
      folders: sliceFolders({ teamsDir, clustersDir, cluster }, slice),
    })),
  );
}

/** The folders a slice fetches: its shards' under the teams folder and under the cluster's teams folder. */
const sliceFolders = (o: Pick<SliceOptions, "teamsDir" | "clustersDir" | "cluster">, slice: Slice) => [
  ...slice.shards.map((s) => `${o.teamsDir}/${s}`),
  ...slice.shards.map((s) => `${clusterTeams(o)}/${s}`),
];

const HEX = "0123456789abcdef";

/**
 * One slice of a cut: its name, the glob (a folder name pattern) that selects its folders under the teams folder and
 * under a cluster's teams folder, the marker file each of those globs matches when the slice holds no team, and the
 * shards it holds (hash slices; none for first-letter ones).
 */
export interface Slice {
  id: string;
  glob: string;
  marker: string;
  shards: string[];
}

/**
 * The slices of a cut. First letter: one per letter, globbing team folders by name (ADR 0022). Hash: `count` slices of
 * 256 / count consecutive shards each, globbing shard folders (ADR 0034): `a*` (K = 16), `a[01234567]*` (K = 32), ...,
 * `a7*` (K = 256); named by their first and last shard.
 */
export function slicesOf(cut: SliceCut): Slice[] {
  if (cut.by === "first-letter")
    return SLICE_LETTERS.map((l) => ({ id: l, glob: `${l}*`, marker: `${l}--slice`, shards: [] }));
  const width = 256 / cut.count;
  return Array.from({ length: cut.count }, (_, i) => {
    const first = i * width;
    const shards = Array.from({ length: width }, (_, j) => shardName(first + j));
    const high = HEX[first >> 4] ?? "";
    const lows = HEX.slice(first & 15, (first & 15) + Math.min(width, 16));
    const glob = width >= 16 ? `${high}*` : width === 1 ? `${shards[0]}*` : `${high}[${lows}]*`;
    const id = width === 1 ? shardName(first) : `${shards[0]}-${shards.at(-1)}`;
    return { id, glob, marker: `${shards[0]}--slice`, shards };
  });
}

/** Shard n (0–255) as its folder is named: two hex digits. */
const shardName = (n: number) => n.toString(16).padStart(2, "0");

/** The slice of a cut that holds `team`: by its first letter, or by its shard (teamShard) for hash slices. */
export function sliceHolding(cut: SliceCut, team: string): Slice {
  const shard = cut.by === "hash" ? teamShard(team) : undefined;
  const slice = slicesOf(cut).find((s) => (shard === undefined ? s.id === team[0] : s.shards.includes(shard)));
  if (!slice) throw new ClusterInstallError(`no slice of the cut holds ${team}`);
  return slice;
}

/** How the slices cut the fleet: platform.layout.slices. */
export type SliceCut = { by: "first-letter" } | { by: "hash"; count: number };

/**
 * The file of a cut's slices in `<clustersDir>/<cluster>/`, and the name of the generator that cuts them: apart for
 * the two cuts, so that both can be installed while a fleet moves from one to the other (ADR 0034).
 */
export const slicesFile = (cut: SliceCut) => `${slicesCutter(cut)}.yaml`;
const slicesCutter = (cut: SliceCut) =>
  cut.by === "hash" ? `berth-team-hash-slices-${cut.count}` : "berth-team-slices";
/** The cut a slices file of slicesFile's holds, or undefined for another file. */
export function cutOfFile(file: string): SliceCut | undefined {
  if (file === slicesFile({ by: "first-letter" })) return { by: "first-letter" };
  const count = Number(/^berth-team-hash-slices-(\d+)\.yaml$/.exec(file)?.[1]);
  return HASH_SLICE_COUNTS.some((n) => n === count) ? { by: "hash", count } : undefined;
}

/** What the slices depend on: the cluster and five settings of the platform config. */
export interface SliceOptions {
  cluster: string;
  /** platform.asoNamespace: where the team Kustomizations, their artifacts and the slices live. */
  namespace: string;
  /** platform.layout's folders. */
  teamsDir: string;
  clustersDir: string;
  /** platform.fluxSource.artifactPrefix: each team's artifact is `<prefix><team>`. */
  artifactPrefix: string;
  /** platform.layout.slices. */
  cut: SliceCut;
  /** platform.layout.slices.fetch: one GitRepository cut by source-watcher, or one sparse GitRepository per slice. */
  fetch: "whole" | "per-slice";
  /**
   * With per-slice fetch: the spec of the cluster's GitRepository berth-teams (its URL and credentials), which each
   * slice's GitRepository copies, so that the fleet's address stays set in one place (ADR 0036); its ref is the slice's
   * own branch.
   */
  repository?: Record<string, unknown>;
}

/**
 * The slices' settings from the platform config; refused when team Kustomizations would not read the slices. With
 * per-slice fetch, `teams` is the cluster's berth-teams.yaml (its text and path), whose GitRepository the slices copy.
 */
export function sliceOptions(
  platform: Platform,
  cluster: string,
  teams?: { text: string; path: string },
): SliceOptions {
  if (platform.fluxSource.kind !== "ExternalArtifact")
    throw new ClusterInstallError(
      `platform.fluxSource.kind is ${platform.fluxSource.kind}: team Kustomizations would not read the artifacts the ` +
        "slices cut; set it to ExternalArtifact (docs/install.md, step 4)",
    );
  return {
    cluster,
    namespace: platform.asoNamespace,
    teamsDir: platform.layout.teamsDir,
    clustersDir: platform.layout.clustersDir,
    artifactPrefix: platform.fluxSource.artifactPrefix,
    cut: platform.layout.slices,
    fetch: platform.layout.slices.fetch,
    ...(platform.layout.slices.fetch === "per-slice"
      ? { repository: teamsRepositorySpec(platform, cluster, teams) }
      : {}),
  };
}

/** GitRepository berth-teams's spec in a cluster's berth-teams.yaml, for the slices' own GitRepositories to copy. */
function teamsRepositorySpec(
  platform: Platform,
  cluster: string,
  teams: { text: string; path: string } | undefined,
): Record<string, unknown> {
  if (!teams)
    throw new ClusterInstallError(
      `per-slice fetch copies GitRepository berth-teams (clusters/${cluster}/berth-teams.yaml): it was not given`,
    );
  for (const doc of parseAllDocuments(teams.text)) {
    if (doc.errors[0]) throw new ClusterInstallError(`${teams.path}: ${doc.errors[0].message}`);
    const o = doc.toJS() as { kind?: string; metadata?: { name?: string }; spec?: Record<string, unknown> } | null;
    if (o?.kind === "GitRepository" && o.metadata?.name === "berth-teams" && typeof o.spec?.url === "string") {
      // What the slices set themselves, and what only berth-teams has (it is suspended: nothing reads it).
      const { ignore: _ignore, suspend: _suspend, sparseCheckout: _sparse, ...spec } = o.spec;
      return { ...spec, ignore: teamsRepositoryIgnore(platform, cluster) };
    }
  }
  throw new ClusterInstallError(`${teams.path} holds no GitRepository berth-teams with a url`);
}

/** A copy whose glob matches nothing fails its whole generator: each slice's globs match these at least. */
export function sliceMarkers(o: SliceOptions): Map<string, string> {
  if (o.fetch === "per-slice") return shardMarkers(o);
  const markers = new Map<string, string>();
  const adr = o.cut.by === "hash" ? "ADR 0034" : "ADR 0022";
  // First-letter slices glob the cluster's shard folders' files, hash slices the shard folders themselves.
  const clusterMarkers = o.cut.by === "hash" ? clusterTeams(o) : `${clusterTeams(o)}/slices`;
  const clusterGlob = (slice: Slice) =>
    o.cut.by === "hash" ? `${clusterTeams(o)}/${slice.glob}` : `${clusterTeams(o)}/*/${slice.glob}`;
  for (const slice of slicesOf(o.cut)) {
    const text = (where: string) =>
      `Slice ${slice.id} of Berth's teams (${adr}): source-watcher copies ${where}, and a copy that matches nothing fails.\n` +
      `Not a team: team names cannot contain "--". Keep this file.\n`;
    markers.set(`${o.teamsDir}/${slice.marker}`, text(`${o.teamsDir}/${slice.glob}`));
    markers.set(`${clusterMarkers}/${slice.marker}`, text(clusterGlob(slice)));
  }
  return markers;
}

/**
 * A sparse checkout fails when a folder it names is missing (source-controller checks each): with per-slice fetch,
 * every shard folder, under the teams folder and under the cluster's, holds a marker, a file no copy or build reads.
 */
function shardMarkers(o: SliceOptions): Map<string, string> {
  const markers = new Map<string, string>();
  const text =
    `Shard folder of Berth's teams (ADR 0036): each slice's GitRepository checks out its shards' folders, and a\n` +
    `missing folder fails it. Not a team: team names cannot contain "--". Keep this file.\n`;
  for (let i = 0; i < 256; i++) {
    markers.set(`${o.teamsDir}/${shardName(i)}/${SHARD_MARKER}`, text);
    markers.set(`${clusterTeams(o)}/${shardName(i)}/${SHARD_MARKER}`, text);
  }
  return markers;
}

/** The marker in each shard folder (per-slice fetch): not YAML, so no build reads it, and no team's name. */
export const SHARD_MARKER = "--shard";

/** The labels of a slice's GitRepository that the Receiver's filter reads: the first and last shard it fetches. */
export const SLICE_FIRST_SHARD = "berth.dev/first-shard";
export const SLICE_LAST_SHARD = "berth.dev/last-shard";

/** The cluster's teams folder: each team's Flux files, in shard folders (hash slices) or index folders. */
const clusterTeams = (o: Pick<SliceOptions, "clustersDir" | "cluster">) => `${o.clustersDir}/${o.cluster}/teams`;

/**
 * Each slice fetches its own shards' folders (ADR 0036): its GitRepository, the generator of its Flux files' artifact,
 * its Kustomization and its team artifacts. The Kustomization reads the artifact, not the GitRepository: every commit is
 * a new revision of every slice's GitRepository, and each poll after one would re-apply the slice's team
 * Kustomizations (a dry-run each) though none changed; an artifact's revision is its content's digest.
 */
function perSliceObjects(o: SliceOptions): object[] {
  const teamFolder = `${o.teamsDir}/{shard}/{team}`;
  if (!o.repository) throw new ClusterInstallError("per-slice fetch needs GitRepository berth-teams's spec");
  return slicesOf(o.cut).flatMap((slice) => {
    const { shards } = slice;
    const repository = { kind: "GitRepository", name: `berth-teams-${slice.id}`, namespace: "flux-system" };
    return [
      {
        apiVersion: "source.toolkit.fluxcd.io/v1",
        kind: "GitRepository",
        metadata: {
          name: repository.name,
          namespace: repository.namespace,
          labels: { [SLICE_SOURCE_LABEL]: "true", [SLICE_FIRST_SHARD]: shards[0], [SLICE_LAST_SHARD]: shards.at(-1) },
        },
        spec: {
          ...o.repository,
          ref: { branch: sliceBranch(o.cluster, slice.id) },
          sparseCheckout: sliceFolders(o, slice),
        },
      },
      {
        apiVersion: "source.extensions.fluxcd.io/v1beta1",
        kind: "ArtifactGenerator",
        metadata: { name: sliceFluxFiles(slice.id), namespace: o.namespace },
        spec: {
          sources: [{ alias: "slice", ...repository }],
          artifacts: [
            {
              name: sliceFluxFiles(slice.id),
              originRevision: "@slice",
              // The folder whole, at the same path: the checkout holds only the slice's shards of it.
              copy: [{ from: `@slice/${clusterTeams(o)}/`, to: `@artifact/${o.clustersDir}/${o.cluster}/` }],
            },
          ],
        },
      },
      ...sliceAppliers(
        o,
        slice,
        { apply: { kind: "ExternalArtifact", name: sliceFluxFiles(slice.id) }, cut: repository },
        teamFolder,
      ),
    ];
  });
}

type SourceRef = { kind: string; name: string; namespace?: string };

/**
 * What a slice applies: Kustomization berth-teams-<slice>, applying the slice's team Kustomizations from `apply`, and
 * ArtifactGenerator berth-team-artifacts-<slice>, cutting from `cut` one artifact per team with its folder at
 * `teamFolder` (the repository's path).
 */
function sliceAppliers(
  o: SliceOptions,
  slice: Slice,
  from: { apply: SourceRef; cut: SourceRef },
  teamFolder: string,
): object[] {
  return [
    {
      apiVersion: "kustomize.toolkit.fluxcd.io/v1",
      kind: "Kustomization",
      metadata: { name: `berth-teams-${slice.id}`, namespace: o.namespace },
      spec: {
        // It applies when its source moves (a commit that changed the slice's team Flux files); the interval only
        // re-checks the team Kustomizations for drift, a dry-run of each. At 1,000 teams in 64 slices, 10 minutes
        // put up to 18 slices' re-checks into one onboarding (bench, 2026-12-06 19:06).
        interval: "1h",
        retryInterval: "1m",
        path: `./${clusterTeams(o)}`,
        prune: true,
        // Team Kustomizations report their own health; this one only has to apply them.
        wait: false,
        sourceRef: from.apply,
      },
    },
    {
      apiVersion: "source.extensions.fluxcd.io/v1beta1",
      kind: "ArtifactGenerator",
      metadata: { name: `berth-team-artifacts-${slice.id}`, namespace: o.namespace },
      spec: {
        sources: [{ alias: "slice", ...from.cut }],
        pathPattern: `@slice/${teamFolder}/clusters/${o.cluster}`,
        artifacts: [
          {
            name: `${o.artifactPrefix}{team}`,
            originRevision: "@slice",
            copy: [
              { from: `@slice/${teamFolder}/base/`, to: `@artifact/${teamFolder}/` },
              { from: `@slice/${teamFolder}/clusters/${o.cluster}/`, to: `@artifact/${teamFolder}/clusters/` },
            ],
          },
        ],
      },
    },
  ];
}

export function sliceObjects(o: SliceOptions): object[] {
  if (o.fetch === "per-slice") return perSliceObjects(o);
  const teams = clusterTeams(o);
  const slices = slicesOf(o.cut);
  const byHash = o.cut.by === "hash";
  const cutter = {
    apiVersion: "source.extensions.fluxcd.io/v1beta1",
    kind: "ArtifactGenerator",
    metadata: { name: slicesCutter(o.cut), namespace: o.namespace },
    spec: {
      sources: [{ alias: "fleet", kind: "GitRepository", name: "berth-teams", namespace: "flux-system" }],
      artifacts: slices.map((slice) => ({
        name: sliceArtifact(slice.id),
        // The commit the slice was cut from; the team artifacts cut from the slice pass it on.
        originRevision: "@fleet",
        copy: byHash
          ? [
              { from: `@fleet/${o.teamsDir}/${slice.glob}`, to: "@artifact/" },
              // A shard folder holds only its own teams' Flux files, so it goes whole.
              { from: `@fleet/${teams}/${slice.glob}`, to: "@artifact/" },
            ]
          : [
              { from: `@fleet/${o.teamsDir}/${slice.glob}`, to: "@artifact/" },
              // Each shard's index lists all its teams, not only the slice's: without it Flux applies the files present.
              { from: `@fleet/${teams}/*/${slice.glob}`, to: "@artifact/", exclude: ["kustomization.yaml"] },
            ],
      })),
    },
  };
  // A team folder's path in the slice, and in the team's artifact: the same as in the repository.
  const teamFolder = byHash ? `${o.teamsDir}/{shard}/{team}` : `${o.teamsDir}/{team}`;
  const perSlice = slices.flatMap((slice) => {
    const artifact = { kind: "ExternalArtifact", name: sliceArtifact(slice.id) };
    return sliceAppliers(o, slice, { apply: artifact, cut: artifact }, teamFolder);
  });
  return [cutter, ...perSlice];
}

const SLICES_HEADER = (o: SliceOptions) => {
  const generated = `# Generated by \`berth cluster add\` (Berth's packages/core/src/team-slices.ts) - do not edit; run it again.\n#\n`;
  const perSlice = `# there. Per slice, Kustomization berth-teams-<slice> applies the slice's team Kustomizations, and ArtifactGenerator
# berth-team-artifacts-<slice> cuts one ExternalArtifact ${o.artifactPrefix}<team> per team (platform.fluxSource.artifactPrefix),
# which the team's Kustomization reads. Each slice needs its two marker files`;
  if (o.cut.by === "hash" && o.fetch === "per-slice")
    return `${generated}# This cluster's teams in ${o.cut.count} slices by the SHA-256 of the team name (ADR 0034), each fetching only its own
# shards (ADR 0036), so that a commit costs Flux work in proportion to what it changed, not to the fleet. A team's
# folder is ${o.teamsDir}/<hh>/<team>/ and its Flux file ${o.clustersDir}/${o.cluster}/teams/<hh>/<team>.yaml, hh the first two hex
# digits of the hash; each slice holds ${256 / o.cut.count} consecutive shards. Per slice, GitRepository flux-system/berth-teams-<slice>
# follows branch ${sliceBranch(o.cluster, "<slice>")}, which Berth moves to the main branch's head only when a commit changes the
# slice's shards, so that a poll of an untouched slice fetches nothing; it checks out its shards' folders
# (spec.sparseCheckout; the rest of its spec is GitRepository berth-teams's, in berth-teams.yaml, suspended); Receiver berth-teams wakes only the slices whose shards a push touched (labels
# ${SLICE_FIRST_SHARD} and ${SLICE_LAST_SHARD}). ArtifactGenerator ${sliceFluxFiles("<slice>")} cuts the slice's Flux files into
# ExternalArtifact ${sliceFluxFiles("<slice>")}, whose revision is its content's digest, so that Kustomization berth-teams-<slice>
# applies the slice's team Kustomizations again only when they change, not at every commit its GitRepository fetches;
# ArtifactGenerator berth-team-artifacts-<slice> cuts one ExternalArtifact ${o.artifactPrefix}<team> per team
# (platform.fluxSource.artifactPrefix), which the team's Kustomization reads. Every shard folder holds a marker
# (${o.teamsDir}/<hh>/${SHARD_MARKER}, ${o.clustersDir}/${o.cluster}/teams/<hh>/${SHARD_MARKER}): a sparse checkout of a missing folder fails.
`;
  if (o.cut.by === "hash")
    return `${generated}# This cluster's teams in ${o.cut.count} slices by the SHA-256 of the team name (ADR 0034), so that a commit costs Flux work in
# proportion to what it changed whatever the names. A team's folder is ${o.teamsDir}/<hh>/<team>/ and its Flux file
# ${o.clustersDir}/${o.cluster}/teams/<hh>/<team>.yaml, hh the first two hex digits of the hash; each slice holds ${256 / o.cut.count} consecutive
# shards. ArtifactGenerator ${slicesCutter(o.cut)} cuts each fetch of GitRepository berth-teams (berth-teams.yaml) into
# ExternalArtifact ${sliceArtifact("<slice>")}: its shards' team folders and Flux files on this cluster. An artifact's
# revision is its content's digest, so a slice that did not change stops
${perSlice} (${o.teamsDir}/<first shard>--slice and
# ${o.clustersDir}/${o.cluster}/teams/<first shard>--slice): a copy that matches nothing fails its generator.
`;
  return `${generated}# This cluster's teams in 26 slices by the team name's first letter (ADR 0022), so that a commit costs Flux work in
# proportion to what it changed. ArtifactGenerator berth-team-slices cuts each fetch of GitRepository berth-teams
# (berth-teams.yaml) into ExternalArtifact ${sliceArtifact("<l>")}: the folders of the teams starting with <l> and their
# Flux files on this cluster. An artifact's revision is its content's digest, so a slice that did not change stops
${perSlice.replaceAll("<slice>", "<l>")} (${o.teamsDir}/<l>--slice and
# ${o.clustersDir}/${o.cluster}/teams/slices/<l>--slice): a copy that matches nothing fails its generator.
`;
};

/** The slices' file and markers, by path from the fleet repository's root. */
export function sliceFiles(o: SliceOptions): Map<string, string> {
  const file =
    SLICES_HEADER(o) +
    sliceObjects(o)
      .map((obj) => "---\n" + stringify(obj, { lineWidth: 0 }))
      .join("");
  return new Map([[`${o.clustersDir}/${o.cluster}/${slicesFile(o.cut)}`, file], ...sliceMarkers(o)]);
}

/**
 * GitRepository berth-teams's `ignore`: only what Berth writes for this cluster (the teams' folders without other
 * clusters' parts, and this cluster's team Flux files), so source-watcher unpacks less at each commit.
 */
export function teamsRepositoryIgnore(platform: Platform, cluster: string): string {
  const { teamsDir, clustersDir } = platform.layout;
  // A team folder is one level down, or two when team folders sit in their shard's (hash slices).
  const teamFolders = platform.layout.slices.by === "hash" ? `${teamsDir}/*/*` : `${teamsDir}/*`;
  const rules = [
    "/*",
    ...keepFolder(teamsDir),
    `/${teamFolders}/clusters/*`,
    `!/${teamFolders}/clusters/${cluster}/`,
    ...keepFolder(clustersDir),
    `/${clustersDir}/*`,
    `!/${clustersDir}/${cluster}/`,
    `/${clustersDir}/${cluster}/*`,
    `!/${clustersDir}/${cluster}/teams/`,
  ];
  return [...new Set(rules)].join("\n") + "\n";
}

/**
 * A cluster's berth-teams.yaml (`text`, read from `path`) with GitRepository berth-teams's `ignore` for `cluster`,
 * the GitRepository suspended when `suspend` (per-slice fetch, where each slice fetches for itself from a copy of its
 * spec and nothing reads berth-teams, ADR 0036), and Receiver berth-teams waking the slices' GitRepositories too.
 */
export function withTeamsRepositorySettings(
  text: string,
  path: string,
  platform: Platform,
  cluster: string,
  suspend = false,
): string {
  return editDocuments(text, path, (doc, o) => {
    if (o.kind === "GitRepository" && o.name === "berth-teams") {
      doc.setIn(["spec", "ignore"], teamsRepositoryIgnore(platform, cluster));
      if (suspend) doc.setIn(["spec", "suspend"], true);
      else doc.deleteIn(["spec", "suspend"]);
      return true;
    }
    if (o.kind === "Receiver" && o.name === "berth-teams") {
      doc.setIn(["spec", "resources"], doc.createNode(TEAMS_RECEIVER_RESOURCES));
      doc.setIn(["spec", "resourceFilter"], TEAMS_RECEIVER_FILTER);
      return true;
    }
    return false;
  });
}

/** The label every slice's own GitRepository carries (per-slice fetch), by which Receiver berth-teams finds them. */
export const SLICE_SOURCE_LABEL = "berth.dev/team-slice";

/** What Receiver berth-teams wakes: GitRepository berth-teams (whole fetch) and each slice's (per-slice fetch). */
export const TEAMS_RECEIVER_RESOURCES = [
  { apiVersion: "source.toolkit.fluxcd.io/v1", kind: "GitRepository", name: "berth-teams" },
  {
    apiVersion: "source.toolkit.fluxcd.io/v1",
    kind: "GitRepository",
    name: "*",
    matchLabels: { [SLICE_SOURCE_LABEL]: "true" },
  },
];

/**
 * Receiver berth-teams's CEL filter: a slice's GitRepository only when the push touched one of its shards (the API
 * sends them, `shards`, in the signed body); anything else, or a push whose shards the API could not tell, always.
 */
export const TEAMS_RECEIVER_FILTER =
  `!has(req.shards) || !has(res.metadata.labels) || !('${SLICE_FIRST_SHARD}' in res.metadata.labels) || ` +
  `req.shards.exists(s, res.metadata.labels['${SLICE_FIRST_SHARD}'] <= s && s <= res.metadata.labels['${SLICE_LAST_SHARD}'])`;

/** gitignore rules that keep `a/b/c` while its parents' other entries stay ignored. */
function keepFolder(dir: string): string[] {
  const parts = dir.split("/");
  return parts.flatMap((_, i) => {
    const path = parts.slice(0, i + 1).join("/");
    return i === parts.length - 1 ? [`!/${path}/`] : [`!/${path}/`, `/${path}/*`];
  });
}
