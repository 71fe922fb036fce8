import { isMap, isScalar, isSeq, parseDocument, type YAMLMap } from "yaml";
import { allClusters, type Platform } from "./platform.js";
import { ClusterInstallError, editDocuments, resourcesOf } from "./fleet-files.js";
import { cutOfFile, sliceFiles, sliceOptions, slicesFile, withTeamsRepositorySettings } from "./team-slices.js";

/**
 * A workload cluster's Flux files in the fleet repository (docs/install.md, step 3): what applies the cluster's
 * teams, derived from the platform config so that they cannot disagree with what the API writes. The slices
 * come whole from team-slices.ts; the files that do not depend on the cluster are taken as they are from a cluster
 * already installed, and the fields that do are set here, never by replacing text.
 */

/** The files of an installed cluster (`like`) that a new cluster's are made from, by path from the fleet's root. */
export const clusterInstallSources = (platform: Platform, like: string) => ({
  index: `${platform.layout.clustersDir}/${like}/kustomization.yaml`,
  controller: `${platform.layout.clustersDir}/${like}/berth.yaml`,
  teams: `${platform.layout.clustersDir}/${like}/berth-teams.yaml`,
  tenancy: `${platform.layout.clustersDir}/${like}/berth-tenancy.yaml`,
  overlay: `berth/overlays/${like}/kustomization.yaml`,
});

export interface NewCluster {
  platform: Platform;
  /** The new cluster: one of platform.environments' clusters. */
  cluster: string;
  /** An installed cluster of the same fleet, whose cluster-independent files are taken as they are. */
  like: string;
  /**
   * A file of the fleet repository, by path from its root, undefined when absent: the files clusterInstallSources
   * names, and with per-slice fetch the shard markers in the teams folder (written when missing).
   */
  read: (path: string) => string | undefined;
  /** The client id of the cluster's "Berth Discovery Reader" identity (docs/install.md, step 2). */
  controllerClientId: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Every Flux file a new workload cluster needs, by path from the fleet's root: `clusters/<cluster>/` (without
 * `flux-system`, which `flux bootstrap` writes) and `berth/overlays/<cluster>/`. Refused (ClusterInstallError) when
 * the cluster is not in the platform config, a source file is missing or not as Berth installs it, or a written file
 * would still name `like`.
 */
export function newClusterFiles(input: NewCluster): Map<string, string> {
  const { platform, cluster, like, read } = input;
  const known = allClusters(platform).map((c) => c.name);
  if (!known.includes(cluster))
    throw new ClusterInstallError(
      `cluster ${cluster} is not in the platform config (platform.environments[].clusters: ${known.join(", ") || "none"}); add it there first`,
    );
  if (cluster === like) throw new ClusterInstallError(`cluster ${cluster} is the cluster to copy from`);
  if (!UUID.test(input.controllerClientId))
    throw new ClusterInstallError(`the controller's client id must be a UUID, not "${input.controllerClientId}"`);
  const sources = clusterInstallSources(platform, like);
  const source = (path: string) => {
    const text = read(path);
    if (text === undefined)
      throw new ClusterInstallError(`${path} is missing: is ${like} installed as docs/install.md says?`);
    return text;
  };
  const target = clusterInstallSources(platform, cluster);
  const files = new Map<string, string>();

  const index = source(sources.index);
  // The slices written below are applied only by an index that lists them: a cluster on an earlier layout moves first.
  const slices = slicesFile(platform.layout.slices);
  if (!resourcesOf(index).includes(slices))
    throw new ClusterInstallError(
      `${sources.index} does not list ${slices}: ${like} is on a layout before the platform config's slices; move it ` +
        'first (docs/install.md, "Moving to team slices"), or copy from a cluster on them (--like)',
    );
  // A cluster mid-move also lists the slices it moves from, whose files are not copied: the copy would not build.
  const moving = resourcesOf(index).filter((file) => file !== slices && cutOfFile(file));
  if (moving.length)
    throw new ClusterInstallError(
      `${sources.index} also lists ${moving.join(", ")}: ${like} is moving to ${slices} (berth cluster slices); ` +
        "finish its move (the retire step) first, or copy from a cluster that is not moving (--like)",
    );
  files.set(target.index, index);
  files.set(target.tenancy, source(sources.tenancy));
  files.set(
    target.controller,
    editDocuments(source(sources.controller), sources.controller, (doc, o) => {
      if (o.kind === "Kustomization" && o.name === "berth-controller") {
        doc.setIn(["spec", "path"], `./berth/overlays/${cluster}`);
        return true;
      }
      return false;
    }),
  );
  const perSlice = platform.layout.slices.fetch === "per-slice";
  files.set(
    target.teams,
    withTeamsRepositorySettings(source(sources.teams), sources.teams, platform, cluster, perSlice),
  );
  files.set(target.overlay, overlayFor(source(sources.overlay), sources.overlay, cluster, input.controllerClientId));
  const teams = { text: source(sources.teams), path: sources.teams };
  // The teams folder's markers are every cluster's: written only when missing (a fleet's first per-slice cluster).
  for (const [path, text] of sliceFiles(sliceOptions(platform, cluster, perSlice ? teams : undefined)))
    if (!path.startsWith(`${platform.layout.teamsDir}/`) || (perSlice && read(path) === undefined))
      files.set(path, text);

  // Every field that names the cluster is set above; a mention left would be a field this code does not know.
  const mention = new RegExp(`(^|[^a-z0-9-])${like.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}([^a-z0-9-]|$)`);
  for (const [path, text] of files) {
    const lines = text.split("\n");
    const line = lines.findIndex((l) => mention.test(l));
    if (line !== -1)
      throw new ClusterInstallError(
        `${path} would still name ${like} (line ${line + 1}: ${lines[line]?.trim()}); set that field by hand`,
      );
  }
  return files;
}

/** The controller's overlay: the cluster's name and its identity's client id, in the two patches that set them. */
function overlayFor(text: string, path: string, cluster: string, clientId: string): string {
  const doc = parseDocument(text);
  let name = false;
  let identity = false;
  for (const item of mapsOf(doc.get("patches"))) {
    const node = item.get("patch", true);
    if (!isScalar(node) || typeof node.value !== "string") continue;
    const patch = parseDocument(node.value);
    if (patch.get("kind") === "Deployment") {
      for (const container of mapsOf(patch.getIn(["spec", "template", "spec", "containers"])))
        for (const env of mapsOf(container.get("env")))
          if (env.get("name") === "BERTH_CLUSTER_NAME") {
            env.set("value", cluster);
            name = true;
          }
    } else if (patch.get("kind") === "ServiceAccount" && patch.hasIn(["metadata", "annotations", CLIENT_ID])) {
      patch.setIn(["metadata", "annotations", CLIENT_ID], clientId);
      identity = true;
    }
    node.value = patch.toString({ lineWidth: 0 }).trimEnd();
  }
  if (!name || !identity)
    throw new ClusterInstallError(
      `${path} does not hold the patches Berth installs (BERTH_CLUSTER_NAME and the ${CLIENT_ID} annotation)`,
    );
  return doc.toString({ lineWidth: 0, flowCollectionPadding: false });
}

const CLIENT_ID = "azure.workload.identity/client-id";

/** The mappings of a YAML sequence node (none for anything else). */
const mapsOf = (node: unknown): YAMLMap[] => (isSeq(node) ? node.items.filter((i): i is YAMLMap => isMap(i)) : []);
