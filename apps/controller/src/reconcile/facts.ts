import { GUID, ValueUnavailableError, type ClusterFacts } from "@berth/core";
import type { ReconcilerDeps } from "./deps.js";
import type { ValuesState } from "./status.js";

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
