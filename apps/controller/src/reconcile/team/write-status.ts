import { errorKind } from "../../kube.js";
import { ARTIFACT_ORIGIN_REVISION, EXTERNAL_ARTIFACT_API_VERSION, TEAM_API_VERSION } from "../../names.js";
import type { FactsState } from "../facts.js";
import type { ConfigMapLike, KubeObject, KustomizationLike, ObjectRef, TeamObject } from "../objects.js";
import {
  failedArtifactAttempt,
  FEDERATION_CONDITION,
  ISSUER_CHANGED,
  sameStatus,
  statusBody,
  teamStatusView,
  type CredentialState,
} from "../status.js";
import type { TeamPass } from "./pass.js";

/**
 * Step "status": the Team's status chain from what this pass found (Flux's Kustomization, the ASO objects, the
 * identity, the credential, the values), written only when it changed; an OIDC issuer mismatch is an Event once.
 */
export async function writeStatus(
  pass: TeamPass,
  teamObj: TeamObject,
  state: FactsState,
  identity: ConfigMapLike | undefined,
  credential: CredentialState,
): Promise<void> {
  const { team, caches, writer, deps } = pass;
  const { events, logger } = deps;
  const facts = state.facts;
  const kustomization = caches.kustomization(team);
  const view = teamStatusView({
    team: teamObj,
    kustomization,
    attemptedOrigin: await attemptedOrigin(pass, kustomization),
    asoObjects: caches.asoObjects(team),
    identity,
    credential,
    values: state.values,
    clusterIssuer: facts?.oidcIssuerUrl,
    previous: teamObj.status?.conditions,
    now: deps.now?.() ?? new Date(),
  });
  // The issuer check changes state only when the cluster's issuer or a federated credential changes:
  // tell people once per change (the recorder merges repeats), on the Team.
  const before = teamObj.status?.conditions?.find((c) => c.type === FEDERATION_CONDITION);
  const after = view.conditions.find((c) => c.type === FEDERATION_CONDITION);
  const teamRef: ObjectRef = {
    apiVersion: TEAM_API_VERSION,
    kind: "Team",
    name: team,
    ...(teamObj.metadata?.uid ? { uid: teamObj.metadata.uid } : {}),
  };
  if (
    after?.status === "False" &&
    after.reason === ISSUER_CHANGED &&
    (before?.status !== "False" || before.message !== after.message)
  ) {
    logger.warn({ team, issuer: facts?.oidcIssuerUrl }, after.message);
    events.warning(teamRef, ISSUER_CHANGED, after.message);
  } else if (after?.status === "True" && before?.status === "False" && before.reason === ISSUER_CHANGED) {
    logger.info({ team, issuer: facts?.oidcIssuerUrl }, "federated credentials trust the cluster's OIDC issuer again");
    events.normal(teamRef, "IssuerMatches", after.message);
  }
  if (sameStatus(view, teamObj.status)) return;
  // The status subresource takes the object with its status (KubeObject itself declares no status).
  const withStatus: KubeObject & { status: Record<string, unknown> } = {
    apiVersion: TEAM_API_VERSION,
    kind: "Team",
    metadata: { name: team },
    status: statusBody(view),
  };
  try {
    await writer.applyStatus(withStatus);
  } catch (err) {
    if (errorKind(err) !== "not-found") throw err; // deleted meanwhile
  }
}

/**
 * The commit behind the team's ExternalArtifact when Flux failed to apply it (ADR 0019): the artifact's origin
 * revision, while the artifact is still the one that failed. Read only on such a failure, so no watch of artifacts
 * (source-watcher rewrites every team's artifact status at each commit).
 */
async function attemptedOrigin(
  { writer, deps }: TeamPass,
  kustomization: KustomizationLike | undefined,
): Promise<string | undefined> {
  const attempt = failedArtifactAttempt(kustomization);
  const source = kustomization?.spec?.sourceRef;
  if (!attempt || source?.kind !== "ExternalArtifact" || !source.name) return undefined;
  // The artifact the Kustomization names (its name depends on the cluster's generators: fluxSource.artifactPrefix).
  const ref = {
    apiVersion: EXTERNAL_ARTIFACT_API_VERSION,
    kind: "ExternalArtifact",
    namespace: source.namespace ?? kustomization?.metadata?.namespace ?? deps.platform.asoNamespace,
    name: source.name,
  };
  const artifact = (await writer.read(ref).catch(() => undefined)) as
    { status?: { artifact?: { revision?: string; metadata?: Record<string, string> } } } | undefined;
  const current = artifact?.status?.artifact;
  return current?.revision === attempt ? current.metadata?.[ARTIFACT_ORIGIN_REVISION] : undefined;
}
