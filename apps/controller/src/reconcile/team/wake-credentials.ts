import { WAKE_ANNOTATION } from "../../names.js";
import type { ConditionLike, ObjectRef, WithConditions } from "../objects.js";
import type { TeamPass } from "./pass.js";

/**
 * Azure answers a new federated credential's PUT 201 with a relative `Location`, which ASO v2's poller refuses
 * (Ready=False, Warning, "invalid polling URL"): the credential is in Azure, and ASO PUTs it again (200) only after
 * its per-object backoff, which counts every earlier failure (30 s and more for a credential that waited for its
 * issuer ConfigMap). Only this state is woken: a credential Azure refused (409 while another write holds the
 * identity, AuthorizationFailed) would only fail again sooner, and lengthen ASO's backoff.
 */
const ACCEPTED_NOT_POLLED = /invalid polling URL/i;

export const waitsOutBackoffAfterWrite = (ready: ConditionLike | undefined): boolean =>
  ready?.status === "False" && ready.severity === "Warning" && ACCEPTED_NOT_POLLED.test(ready.message ?? "");

/**
 * Step "wake": ASO requeues a credential at once when the ConfigMap it reads its issuer from changes (it watches
 * ConfigMaps with no predicate; ADR 0035), so for each of the team's chained credentials that waits out its
 * backoff after Azure accepted it, the controller annotates that ConfigMap: once per state of the credential (the
 * annotation names its resourceVersion), so it never causes more PUTs than ASO's own attempts. The annotation is
 * all it may change there (RBAC and the ValidatingAdmissionPolicy berth-controller-configmap-wake).
 */
export async function wakeWaitingCredentials({ team, caches, writer, deps }: TeamPass): Promise<void> {
  const credentials: WithConditions[] = caches.asoObjects(team)["FederatedIdentityCredential"] ?? [];
  for (const credential of credentials) {
    const issuerConfigMap = issuerConfigMapOf(credential);
    const ready = credential.status?.conditions?.find((c) => c.type === "Ready");
    if (!issuerConfigMap || !waitsOutBackoffAfterWrite(ready)) continue;
    const configMap = caches.asoConfigMap(issuerConfigMap);
    // Missing: ASO is told when it appears, without Berth.
    if (!configMap) continue;
    const mark = `${credential.metadata?.name ?? ""}@${credential.metadata?.resourceVersion ?? ""}`;
    if (configMap.metadata?.annotations?.[WAKE_ANNOTATION] === mark) continue;
    const ref: ObjectRef = {
      apiVersion: "v1",
      kind: "ConfigMap",
      namespace: deps.platform.asoNamespace,
      name: issuerConfigMap,
    };
    const about = { team, credential: credential.metadata?.name, configMap: issuerConfigMap };
    try {
      await writer.annotate(ref, { [WAKE_ANNOTATION]: mark });
      deps.logger.info(
        about,
        "woke a federated credential Azure accepted: ASO writes it again now, not after its backoff",
      );
    } catch (err) {
      // Only a shortcut: ASO gets there after its backoff anyway, and the team's status must still be written.
      deps.logger.warn({ ...about, err }, "could not wake a federated credential; ASO retries it after its backoff");
    }
  }
}

function issuerConfigMapOf(credential: WithConditions): string | undefined {
  const from = (credential as { spec?: { issuerFromConfig?: { name?: unknown } } }).spec?.issuerFromConfig;
  return typeof from?.name === "string" && from.name ? from.name : undefined;
}
