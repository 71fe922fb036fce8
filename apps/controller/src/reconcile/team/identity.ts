import { GUID, teamNames } from "@berth/core";
import { isDeleting, unb64, type ConfigMapLike, type SecretLike } from "../objects.js";
import { foreignDataOwners } from "../platform.js";
import type { TeamPass } from "./pass.js";

/** Where the team's identity ids came from for this pass, and why there are none when there are none. */
export interface IdentitySource {
  /** ASO's ConfigMap, or the same ids from Azure (or from the credential in place) in its shape. */
  identity: ConfigMapLike | undefined;
  /** last-known: neither ASO's ConfigMap nor Azure can tell now; the credential the controller wrote earlier does. */
  from: "configmap" | "azure" | "last-known";
  problem?: { reason: string; message: string };
}

/** Step "identity": where this pass takes the team's identity ids from. Azure is asked only with fresh facts. */
export async function teamIdentity(
  pass: TeamPass,
  secret: SecretLike | undefined,
  fresh: boolean,
): Promise<IdentitySource> {
  return fresh ? fromConfigMapOrAzure(pass, secret) : withoutAzure(pass, secret);
}

/**
 * The team's identity ids: from ASO's `<team>-identity` ConfigMap (steady state: no Azure call). Only
 * when that ConfigMap is missing, and the provider can look identities up (live discovery), from Azure:
 * the provider caches the answer (60 min; "not found" 30 s), so this costs at most one ARM read per
 * team per TTL while ASO's ConfigMap is missing.
 */
async function fromConfigMapOrAzure(
  { team, caches, deps }: TeamPass,
  secret: SecretLike | undefined,
): Promise<IdentitySource> {
  const { provider, cluster, platform, logger } = deps;
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

/** In an outage: ASO's ConfigMap, else the ids of the credential in place (if only this controller wrote its data). */
function withoutAzure({ team, caches }: TeamPass, secret: SecretLike | undefined): IdentitySource {
  const cm = caches.identity(team);
  if (cm) return { identity: cm, from: "configmap" };
  const last = lastKnownIdentity(secret);
  return last ? { identity: last, from: "last-known" } : { identity: undefined, from: "configmap" };
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
