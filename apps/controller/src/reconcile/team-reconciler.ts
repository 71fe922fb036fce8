import {
  GUID,
  teamNames,
  ValueUnavailableError,
  type Cluster,
  type ClusterFacts,
  type Platform,
  type PlatformValuesProvider,
} from "@berth/core";
import type { Caches, RecordedReads } from "../caches.js";
import { errorKind, type ClusterWriter } from "../kube.js";
import {
  ACCESS_FINALIZER,
  ARTIFACT_ORIGIN_REVISION,
  CLIENT_ID_ANNOTATION,
  EXTERNAL_ARTIFACT_API_VERSION,
  TEAM_API_VERSION,
  TEAM_ROLE_BINDING,
} from "../names.js";
import type { Logger } from "@berth/logging";
import {
  classifyDrift,
  desiredTeamCredential,
  tamperMessage,
  teamCredentialSecret,
  workloadServiceAccountPatch,
} from "./credential.js";
import {
  isDeleting,
  unb64,
  type ConfigMapLike,
  type KubeObject,
  type KustomizationLike,
  type ObjectRef,
  type SecretLike,
  type TeamObject,
} from "./objects.js";
import { foreignDataOwners } from "./platform.js";
import {
  accessAction,
  accessEnding,
  credentialAction,
  credentialFinalizerPending,
  isOffboarding,
  withoutFinalizer,
} from "./offboarding.js";
import {
  failedArtifactAttempt,
  FEDERATION_CONDITION,
  ISSUER_CHANGED,
  sameStatus,
  statusBody,
  teamStatusView,
  type CredentialState,
  type ValuesState,
} from "./status.js";

/** Where the team's identity ids came from for this pass, and why there are none when there are none. */
interface IdentitySource {
  /** ASO's ConfigMap, or the same ids from Azure (or from the credential in place) in its shape. */
  identity: ConfigMapLike | undefined;
  /** last-known: neither ASO's ConfigMap nor Azure can tell now; the credential the controller wrote earlier does. */
  from: "configmap" | "azure" | "last-known";
  problem?: { reason: string; message: string };
}

/** Where the reconcilers report what they did (the runtime's EventRecorder). */
export interface Events {
  warning(ref: ObjectRef, reason: string, message: string): void;
  normal(ref: ObjectRef, reason: string, message: string): void;
}

/** What both reconcilers are given. */
export interface ReconcilerDeps {
  platform: Platform;
  cluster: Cluster;
  provider: PlatformValuesProvider;
  caches: Caches;
  writer: ClusterWriter;
  events: Events;
  logger: Logger;
  /** Periodic re-check when all is well. */
  resyncMs: number;
  /** Re-check while waiting for something outside the watches (namespace, RoleBinding, provider). */
  retryMs: number;
}

/**
 * The cluster's facts for one pass. In a passing outage (the provider says "Warning": Azure unreachable,
 * throttled) the last values the controller wrote to platform-vars stand in: they are what Flux substitutes
 * into every team right now, so a credential that matches them is still the right one. An authoritative
 * "no" (severity Error: no OIDC issuer, a value missing from config) has no stand-in.
 */
export interface FactsState {
  facts?: ClusterFacts;
  values: ValuesState;
}

export async function clusterFactsOrLastKnown(
  deps: Pick<ReconcilerDeps, "provider" | "cluster" | "caches" | "platform">,
): Promise<FactsState> {
  try {
    return { facts: await deps.provider.clusterFacts(deps.cluster), values: { fresh: true } };
  } catch (err) {
    if (!(err instanceof ValueUnavailableError)) throw err;
    const problem = { reason: err.reason, severity: err.severity, message: err.message };
    const last = err.severity === "Warning" ? lastKnownFacts(deps.caches.platformVars()?.data) : undefined;
    const source = `${deps.platform.asoNamespace}/${deps.platform.platformVarsConfigMap}`;
    return last
      ? { facts: last, values: { fresh: false, ...problem, lastKnownFrom: source } }
      : { values: { fresh: false, ...problem } };
  }
}

/** The facts platform-vars carries (as this controller wrote them), when all of them are there and well-formed. */
export function lastKnownFacts(data: Record<string, string> | undefined): ClusterFacts | undefined {
  const tenantId = data?.TENANT_ID;
  const subscriptionId = data?.SUBSCRIPTION_ID;
  const oidcIssuerUrl = data?.CLUSTER_OIDC_ISSUER_URL;
  const location = data?.AZURE_LOCATION;
  if (!tenantId || !subscriptionId || !oidcIssuerUrl || !location || !GUID.test(tenantId) || !GUID.test(subscriptionId))
    return undefined;
  return { tenantId, subscriptionId, oidcIssuerUrl, location };
}

/**
 * The identity ids of the credential in place, when its data is this controller's alone (by field
 * ownership): what the team was last given, to stand in while neither ASO's ConfigMap nor Azure can tell.
 */
export function lastKnownIdentity(secret: SecretLike | undefined): ConfigMapLike | undefined {
  if (!secret?.data || isDeleting(secret)) return undefined;
  const clientId = unb64(secret.data.AZURE_CLIENT_ID);
  const tenantId = unb64(secret.data.AZURE_TENANT_ID);
  if (!clientId || !tenantId || !GUID.test(clientId) || !GUID.test(tenantId)) return undefined;
  const ours =
    (secret.metadata?.managedFields?.length ?? 0) > 0 &&
    foreignDataOwners(secret, Object.keys(secret.data)).length === 0;
  return ours ? { data: { clientId, tenantId } } : undefined;
}

/** The writer, and whether anything was written through it (reads do not count). */
function trackWrites(inner: ClusterWriter): { writer: ClusterWriter; wrote(): boolean } {
  let wrote = false;
  const write =
    <A extends unknown[]>(f: (...a: A) => Promise<void>) =>
    (...a: A) => {
      wrote = true;
      return f(...a);
    };
  const writer: ClusterWriter = {
    apply: write((o) => inner.apply(o)),
    applyStatus: write((o) => inner.applyStatus(o)),
    delete: write((r) => inner.delete(r)),
    setFinalizers: write((r, f, v) => inner.setFinalizers(r, f, v)),
    replaceSecretData: write((c, d) => inner.replaceSecretData(c, d)),
    read: (r) => inner.read(r),
    listAsoResources: (ns) => inner.listAsoResources(ns),
  };
  return { writer, wrote: () => wrote };
}

export interface TeamReconcilerDeps extends ReconcilerDeps {
  /** Re-check while the finalizer holds for remaining ASO resources. */
  offboardingPollMs: number;
  now?: () => Date;
}

/**
 * One team, level-triggered: credential (Secret + ServiceAccount annotation), offboarding (the
 * credential's finalizer, then the finalizer of the controller's RoleBinding), then status. Reads the
 * caches (and, before letting its RoleBinding go, the credential on the server); writes only through the
 * ClusterWriter.
 */
export class TeamReconciler {
  /**
   * Per team, what the last pass that changed nothing saw: every read the caches handed it (with the
   * resourceVersions returned) and the provider's facts. A periodic re-check that finds the same is done
   * without recomputing anything: the steady state of thousands of teams costs a few cache lookups each.
   * The reads are recorded by the caches themselves, so a step that reads something new is in the memo too.
   */
  private readonly unchanged = new Map<string, { facts: string; reads: RecordedReads }>();

  constructor(private readonly deps: TeamReconcilerDeps) {}

  /** One pass; `signal` ends it before its next write (leadership lost, time limit). */
  async reconcile(team: string, signal?: AbortSignal): Promise<{ requeueAfterMs?: number }> {
    const { caches, reads } = this.deps.caches.recording();
    const tracked = trackWrites(
      signal && this.deps.writer.withSignal ? this.deps.writer.withSignal(signal) : this.deps.writer,
    );
    const writer = tracked.writer;
    const teamObj = caches.team(team);
    const secret = caches.teamSecret(team);
    const roleBinding = caches.roleBinding(team);
    // isOffboarding covers a missing Team too; naming that case here lets the code below use teamObj.
    if (!teamObj || isOffboarding(teamObj, secret)) {
      this.unchanged.delete(team);
      return this.offboard(writer, team, teamObj, secret, roleBinding);
    }
    const state = await clusterFactsOrLastKnown(this.deps);
    const facts = JSON.stringify([state.facts ?? null, state.values.fresh]);
    const memo = this.unchanged.get(team);
    if (memo && memo.facts === facts && memo.reads.unchanged()) return { requeueAfterMs: this.deps.resyncMs };
    this.unchanged.delete(team);
    if (!secret && accessEnding(roleBinding)) {
      // The namespace (or the binding) is being deleted: a credential written now would carry a finalizer
      // the controller might soon have no right to release. Write none, and let the binding go.
      await this.releaseAccess(writer, team, roleBinding, secret);
      const names = teamNames(team);
      await this.writeStatus(caches, writer, team, teamObj, state, caches.identity(team), {
        written: false,
        reason: "AccessEnding",
        message: `RoleBinding ${names.namespace}/${TEAM_ROLE_BINDING} is being deleted: no credential is written`,
      });
      return { requeueAfterMs: this.deps.retryMs };
    }

    // Ask Azure for the identity only with fresh facts: in an outage it cannot answer either.
    const identity: IdentitySource = state.values.fresh
      ? await this.identity(caches, team, secret)
      : this.identityWithoutAzure(caches, team, secret);
    const credential = await this.writeCredential(caches, writer, team, secret, state, identity);
    await this.writeStatus(caches, writer, team, teamObj, state, identity.identity, credential);
    // Only a pass that found everything in place, on values from the ConfigMap and a provider that answers,
    // is remembered (an identity read from Azure may change without any object here changing).
    if (
      credential.written &&
      state.values.fresh &&
      identity.from === "configmap" &&
      !tracked.wrote() &&
      reads.unchanged()
    )
      this.unchanged.set(team, { facts, reads });
    // Stale values do not shorten the period: the provider's recovery re-runs every team (observeFacts).
    return { requeueAfterMs: credential.written ? this.deps.resyncMs : this.deps.retryMs };
  }

  /**
   * The team's identity ids: from ASO's `<team>-identity` ConfigMap (steady state: no Azure call). Only
   * when that ConfigMap is missing, and the provider can look identities up (live discovery), from Azure:
   * the provider caches the answer (60 min; "not found" 30 s), so this costs at most one ARM read per
   * team per TTL while ASO's ConfigMap is missing.
   */
  /** In an outage: ASO's ConfigMap, else the ids of the credential in place (if only this controller wrote its data). */
  private identityWithoutAzure(caches: Caches, team: string, secret: SecretLike | undefined): IdentitySource {
    const cm = caches.identity(team);
    if (cm) return { identity: cm, from: "configmap" };
    const last = lastKnownIdentity(secret);
    return last ? { identity: last, from: "last-known" } : { identity: undefined, from: "configmap" };
  }

  private async identity(caches: Caches, team: string, secret: SecretLike | undefined): Promise<IdentitySource> {
    const { provider, cluster, platform, logger } = this.deps;
    const cm = caches.identity(team);
    if (cm || !provider.teamIdentity) return { identity: cm, from: "configmap" };
    const cmName = `${platform.asoNamespace}/${teamNames(team).identityConfigMap}`;
    try {
      const id = await provider.teamIdentity(team, cluster);
      if (!id) {
        return {
          identity: undefined,
          from: "azure",
          problem: {
            reason: "IdentityPending",
            message: `waiting for ASO to write ConfigMap ${cmName}; the team's identity does not exist in Azure yet either`,
          },
        };
      }
      logger.debug({ team, clientId: id.clientId }, "identity ConfigMap missing: identity ids from Azure");
      return {
        identity: {
          metadata: { name: teamNames(team).identityConfigMap },
          data: { clientId: id.clientId, principalId: id.principalId, tenantId: id.tenantId },
        },
        from: "azure",
      };
    } catch (err) {
      // ValueUnavailableError (Azure unreachable, throttled, circuit open) or a name Azure lookups refuse:
      // nothing is written, and the next pass tries again.
      const message = err instanceof Error ? err.message : String(err);
      const last = lastKnownIdentity(secret);
      if (last) return { identity: last, from: "last-known" };
      return {
        identity: undefined,
        from: "azure",
        problem: {
          reason: "IdentityUnavailable",
          message: `ConfigMap ${cmName} is missing and Azure could not be asked: ${message}`,
        },
      };
    }
  }

  private async writeCredential(
    caches: Caches,
    writer: ClusterWriter,
    team: string,
    secret: SecretLike | undefined,
    state: FactsState,
    source: IdentitySource,
  ): Promise<CredentialState> {
    const { platform, events, logger } = this.deps;
    const names = teamNames(team);
    const { facts } = state;
    if (!facts)
      return {
        written: false,
        reason: "ProviderUnavailable",
        message: state.values.fresh ? "the platform values are not known" : state.values.message,
      };
    if (source.problem) return { written: false, ...source.problem };
    const desired = desiredTeamCredential(team, source.identity, facts, platform.asoNamespace);
    // Never write an empty or partial credential: an existing one stays as it is until values are known.
    if (!desired.ok) return { written: false, reason: desired.reason, message: desired.message };

    const want = teamCredentialSecret(team, desired.value);
    const ref: ObjectRef = {
      apiVersion: "v1",
      kind: "Secret",
      name: names.asoCredentialSecret,
      namespace: names.namespace,
      ...(secret?.metadata?.uid ? { uid: secret.metadata.uid } : {}),
    };
    const drift = classifyDrift(secret, want, { get: (id) => caches.clientIdOwner(id) }, team);
    try {
      if (drift.kind === "tampered") {
        const message = tamperMessage(team, drift);
        logger.warn(
          {
            team,
            changed: drift.changed,
            extraKeys: drift.extraKeys,
            owners: drift.owners,
            otherTeam: drift.otherTeam,
          },
          "team credential tampered with: reverting",
        );
        events.warning(ref, "CredentialTampered", message);
        // SSA cannot remove keys another manager added: replace the data wholesale first.
        if (drift.extraKeys.length && secret) {
          if (!want.data)
            throw new Error(`the desired Secret ${names.namespace}/${names.asoCredentialSecret} has no data`);
          await writer.replaceSecretData(secret, want.data);
        }
      }
      if (drift.kind !== "in-sync") {
        await writer.apply(want);
        if (drift.kind === "missing")
          events.normal(ref, "CredentialWritten", `aso-credential written for identity ${desired.value.clientId}`);
        if (drift.kind === "rotated")
          events.normal(ref, "CredentialRotated", `client id ${drift.fromClientId ?? "(none)"} → ${drift.toClientId}`);
        logger.info({ team, drift: drift.kind, clientId: desired.value.clientId }, "team credential applied");
      }
      const sa = caches.serviceAccount(team);
      if (!sa)
        return {
          written: false,
          reason: "ServiceAccountMissing",
          message: `ServiceAccount ${names.namespace}/${names.serviceAccount} does not exist (yet); the credential Secret is written`,
        };
      if (sa.metadata?.annotations?.[CLIENT_ID_ANNOTATION] !== desired.value.clientId) {
        await writer.apply(workloadServiceAccountPatch(team, desired.value.clientId));
        logger.info({ team, clientId: desired.value.clientId }, "workload ServiceAccount annotated");
      }
    } catch (err) {
      const kind = errorKind(err);
      if (kind === "not-found")
        return {
          written: false,
          reason: "NamespaceMissing",
          message: `namespace ${names.namespace} does not exist (yet)`,
        };
      if (kind === "forbidden") {
        // Expected until Flux has applied the team's RoleBinding berth-controller, or while the namespace terminates.
        return {
          written: false,
          reason: "Forbidden",
          message: `not allowed to write in namespace ${names.namespace}: ${(err as Error).message}`,
        };
      }
      throw err;
    }
    const from =
      source.from === "azure"
        ? ` (from Azure: ConfigMap ${platform.asoNamespace}/${names.identityConfigMap} is missing)`
        : source.from === "last-known"
          ? ` (the identity in place: ConfigMap ${platform.asoNamespace}/${names.identityConfigMap} is missing and Azure cannot be asked now)`
          : "";
    return {
      written: true,
      reason: "Written",
      message: `aso-credential and ServiceAccount ${names.serviceAccount} use identity ${desired.value.clientId}${from}`,
    };
  }

  private async writeStatus(
    caches: Caches,
    writer: ClusterWriter,
    team: string,
    teamObj: TeamObject,
    state: FactsState,
    identity: ConfigMapLike | undefined,
    credential: CredentialState,
  ): Promise<void> {
    const { events, logger } = this.deps;
    const facts = state.facts;
    const kustomization = caches.kustomization(team);
    const view = teamStatusView({
      team: teamObj,
      kustomization,
      attemptedOrigin: await this.attemptedOrigin(writer, kustomization),
      asoObjects: caches.asoObjects(team),
      identity,
      credential,
      values: state.values,
      clusterIssuer: facts?.oidcIssuerUrl,
      previous: teamObj.status?.conditions,
      now: this.deps.now?.() ?? new Date(),
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
      logger.info(
        { team, issuer: facts?.oidcIssuerUrl },
        "federated credentials trust the cluster's OIDC issuer again",
      );
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
  private async attemptedOrigin(
    writer: ClusterWriter,
    kustomization: KustomizationLike | undefined,
  ): Promise<string | undefined> {
    const attempt = failedArtifactAttempt(kustomization);
    const source = kustomization?.spec?.sourceRef;
    if (!attempt || source?.kind !== "ExternalArtifact" || !source.name) return undefined;
    // The artifact the Kustomization names (its name depends on the cluster's generators: fluxSource.artifactPrefix).
    const ref = {
      apiVersion: EXTERNAL_ARTIFACT_API_VERSION,
      kind: "ExternalArtifact",
      namespace: source.namespace ?? kustomization?.metadata?.namespace ?? this.deps.platform.asoNamespace,
      name: source.name,
    };
    const artifact = (await writer.read(ref).catch(() => undefined)) as
      { status?: { artifact?: { revision?: string; metadata?: Record<string, string> } } } | undefined;
    const current = artifact?.status?.artifact;
    return current?.revision === attempt ? current.metadata?.[ARTIFACT_ORIGIN_REVISION] : undefined;
  }

  private async offboard(
    writer: ClusterWriter,
    team: string,
    teamObj: TeamObject | undefined,
    secret: SecretLike | undefined,
    roleBinding: KubeObject | undefined,
  ): Promise<{ requeueAfterMs?: number }> {
    const { events, logger } = this.deps;
    const names = teamNames(team);
    const remainingAso = secret ? await writer.listAsoResources(names.namespace) : [];
    const decision = credentialAction({ team: teamObj, secret, remainingAso });
    const ref: ObjectRef = {
      apiVersion: "v1",
      kind: "Secret",
      name: names.asoCredentialSecret,
      namespace: names.namespace,
    };
    switch (decision.action) {
      case "hold":
        // The RoleBinding's finalizer is kept too (accessAction): it is what lets the controller release this one.
        logger.info(
          { team, remaining: decision.remaining },
          "offboarding: keeping aso-credential until ASO has deleted the team's resources",
        );
        return { requeueAfterMs: this.deps.offboardingPollMs };
      case "delete":
        await writer.delete(ref);
        events.normal(
          ref,
          "CredentialDeleted",
          `team ${team} is gone and no ASO resource remains in ${names.namespace}`,
        );
        return { requeueAfterMs: this.deps.offboardingPollMs };
      case "release": {
        if (!secret)
          throw new Error(`offboarding team ${team}: a finalizer release was decided without a credential Secret`);
        await writer.setFinalizers(ref, withoutFinalizer(secret), secret.metadata?.resourceVersion);
        logger.info({ team }, "offboarding: finalizer released");
        return { requeueAfterMs: this.deps.offboardingPollMs };
      }
      default: {
        // The credential is gone or no longer ours to hold: the controller's RoleBinding may go.
        const access = await this.releaseAccess(writer, team, roleBinding, secret);
        if (access === "waiting") return { requeueAfterMs: this.deps.offboardingPollMs };
        // Released, or nothing of the team left to look after: the watches bring the key back if needed.
        if (access === "released" || !(teamObj || secret || roleBinding)) return {};
        return { requeueAfterMs: this.deps.resyncMs };
      }
    }
  }

  /**
   * Last step of offboarding: once the RoleBinding berth-controller is being deleted and the credential's
   * finalizer is released (or the Secret is gone), remove the binding's finalizer berth.dev/controller-access.
   * Until then the binding, though being deleted, still grants the controller what it needs to release the
   * credential.
   */
  private async releaseAccess(
    writer: ClusterWriter,
    team: string,
    roleBinding: KubeObject | undefined,
    secret: SecretLike | undefined,
  ): Promise<"none" | "waiting" | "released"> {
    const { logger } = this.deps;
    const decision = accessAction(roleBinding, secret);
    // accessAction decides "none" without a binding too; naming that case here lets the code below use it.
    if (!roleBinding || decision.action === "none") return "none";
    if (decision.action === "keep") return "waiting";
    const names = teamNames(team);
    const secretRef: ObjectRef = {
      apiVersion: "v1",
      kind: "Secret",
      name: names.asoCredentialSecret,
      namespace: names.namespace,
    };
    const bindingRef: ObjectRef = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      name: TEAM_ROLE_BINDING,
      namespace: names.namespace,
    };
    try {
      // The cache may not have a credential written moments ago yet: ask the server before letting go.
      if (credentialFinalizerPending(await writer.read(secretRef))) {
        logger.info(
          { team },
          "offboarding: keeping RoleBinding berth-controller: the credential's finalizer is still there",
        );
        return "waiting";
      }
      await writer.setFinalizers(
        bindingRef,
        withoutFinalizer(roleBinding, ACCESS_FINALIZER),
        roleBinding.metadata?.resourceVersion,
      );
    } catch (err) {
      // Forbidden: the binding is already gone (the cache lags), and with it anything left to do here.
      if (errorKind(err) === "forbidden") return "none";
      throw err;
    }
    logger.info({ team }, "offboarding: RoleBinding berth-controller released (finalizer removed)");
    return "released";
  }
}
