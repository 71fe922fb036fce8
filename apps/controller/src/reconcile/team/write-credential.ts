import { teamNames } from "@berth/core";
import { errorKind } from "../../kube.js";
import { CLIENT_ID_ANNOTATION } from "../../names.js";
import {
  classifyDrift,
  desiredTeamCredential,
  tamperMessage,
  teamCredentialSecret,
  workloadServiceAccountPatch,
} from "../credential.js";
import type { FactsState } from "../facts.js";
import type { SecretLike } from "../objects.js";
import type { CredentialState } from "../status.js";
import type { IdentitySource } from "./identity.js";
import { credentialRef, type TeamPass } from "./pass.js";

/**
 * Step "credential": the team's aso-credential Secret and its workload ServiceAccount's client-id annotation, from
 * the facts and the identity; a credential changed by anyone else is put back (and said so). Never an empty or
 * partial credential: without values, the one in place stays.
 */
export async function writeCredential(
  { team, caches, writer, deps }: TeamPass,
  secret: SecretLike | undefined,
  state: FactsState,
  source: IdentitySource,
): Promise<CredentialState> {
  const { platform, events, logger } = deps;
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
  const ref = credentialRef(team, secret);
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
