/** Names the controller writes and watches (docs/controller.md; fixed by docs/controller-contract.md). */

/** Field manager of every server-side apply the controller makes. */
export const FIELD_MANAGER = "berth-controller";
/** Lease name in the controller's namespace. */
export const LEASE_NAME = "berth-controller";
/** On each team's aso-credential Secret: held while ASO resources remain in the team namespace (ASO #4679). */
export const CREDENTIAL_FINALIZER = "berth.dev/aso-credential";
/**
 * The per-team RoleBinding (templates/v1/controller-rolebinding.yaml) that grants the controller its
 * writes in a team namespace, and the finalizer it is rendered with: when the namespace is deleted, the
 * binding (still authorizing while it is being deleted) outlives the credential's finalizer, which the
 * controller can only release through it. The controller removes this finalizer last.
 */
export const TEAM_ROLE_BINDING = "berth-controller";
export const ACCESS_FINALIZER = "berth.dev/controller-access";

export const TEAM_LABEL = "berth.dev/team";
/** On a chained credential's issuer ConfigMap: `<credential>@<resourceVersion>` it was last woken for (ADR 0035). */
export const WAKE_ANNOTATION = "berth.dev/woke-credential";
export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
export const MANAGED_BY = "berth";
export const CLIENT_ID_ANNOTATION = "azure.workload.identity/client-id";

export { TEAM_API_VERSION, TEAM_GROUP, TEAM_PLURAL, TEAM_VERSION } from "@berth/core";

export const FLUX_KUSTOMIZATION = {
  group: "kustomize.toolkit.fluxcd.io",
  version: "v1",
  plural: "kustomizations",
  kind: "Kustomization",
} as const;
/** A team's ExternalArtifact (ADR 0019), and the metadata key where source-watcher records the commit it was cut from. */
export const EXTERNAL_ARTIFACT_API_VERSION = "source.toolkit.fluxcd.io/v1";
export const ARTIFACT_ORIGIN_REVISION = "org.opencontainers.image.revision";

/** The ASO kinds Berth renders, in the order their conditions chain (one table, in core). */
export { ASO_KINDS, type AsoKind } from "@berth/core";

/** Work queue keys: one for the platform objects, one per team. */
export const PLATFORM_KEY = "platform";
export const teamKey = (team: string) => `team/${team}`;
export function parseKey(key: string): { kind: "platform" } | { kind: "team"; team: string } | undefined {
  if (key === PLATFORM_KEY) return { kind: "platform" };
  if (key.startsWith("team/") && key.length > 5) return { kind: "team", team: key.slice(5) };
  return undefined;
}
