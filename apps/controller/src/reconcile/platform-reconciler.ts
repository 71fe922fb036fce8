import { ValueUnavailableError, type ClusterFacts, type PlatformCredential } from "@berth/core";
import type { ReconcilerDeps } from "./team-reconciler.js";
import { PLATFORM_CREDENTIAL_SECRET, platformCredentialSecret, platformVarsConfigMap, platformVarsData, satisfies, type Decision } from "./platform.js";
import type { ObjectRef } from "./objects.js";

export interface ReconcileOutcome {
  requeueAfterMs: number;
}

/**
 * Keeps `platform-vars` and the platform `aso-credential` in the ASO namespace equal to what the
 * provider and platform config say. Level-triggered: it compares the cache with the desired objects and
 * applies only what differs, so a deleted or edited object is restored on the next watch event.
 */
export class PlatformReconciler {
  private lastProblem = "";

  constructor(private readonly deps: ReconcilerDeps) {}

  async reconcile(): Promise<ReconcileOutcome> {
    const { platform, cluster, provider, caches, writer, events, logger } = this.deps;
    const problems: string[] = [];

    const facts = await known(() => provider.clusterFacts(cluster), problems);
    const vars: Decision<Record<string, string>> | undefined = facts ? platformVarsData(platform, cluster, facts) : undefined;
    const cmRef: ObjectRef = { apiVersion: "v1", kind: "ConfigMap", name: platform.platformVarsConfigMap, namespace: platform.asoNamespace };
    if (vars && !vars.ok) problems.push(vars.message);
    if (vars?.ok) {
      const desired = platformVarsConfigMap(platform, vars.value);
      const current = caches.platformVars();
      if (!satisfies(current, desired)) {
        // Keys whose value differs from what the ConfigMap holds: a provider change (e.g. a new OIDC issuer) or an edit reverted.
        const changed = Object.keys(vars.value).filter((k) => current?.data?.[k] !== undefined && current.data[k] !== vars.value[k]);
        await writer.apply(desired);
        logger.info({ configMap: `${platform.asoNamespace}/${platform.platformVarsConfigMap}`, restored: Boolean(current), changed }, "platform-vars written");
        if (!current) events.normal(cmRef, "PlatformVarsWritten", `${Object.keys(vars.value).length} keys written for cluster ${cluster.name}`);
        else if (changed.length) events.normal(cmRef, "PlatformVarsUpdated", `${changed.join(", ")} set for cluster ${cluster.name} (${changed.includes("CLUSTER_OIDC_ISSUER_URL") ? `OIDC issuer now ${vars.value.CLUSTER_OIDC_ISSUER_URL}` : "values changed or an edit reverted"})`);
        else events.normal(cmRef, "PlatformVarsRestored", `${Object.keys(vars.value).length} keys restored for cluster ${cluster.name}`);
      }
    }

    const cred = await known(() => provider.platformCredential(cluster), problems);
    const secret = cred ? platformCredentialSecret(platform, cred) : undefined;
    if (secret && !secret.ok) problems.push(secret.message);
    if (secret?.ok) {
      const current = caches.platformSecret();
      if (!satisfies(current, secret.value)) {
        await writer.apply(secret.value);
        logger.info({ secret: `${platform.asoNamespace}/${PLATFORM_CREDENTIAL_SECRET}`, restored: Boolean(current) }, "platform aso-credential written");
      }
    }

    const problem = problems.join("; ");
    if (problem && problem !== this.lastProblem) {
      // Once per distinct problem: the reason nothing (or not everything) was written.
      logger.warn({ problem }, "platform values incomplete: not writing");
      events.warning(cmRef, "PlatformValuesUnavailable", problem);
    }
    this.lastProblem = problem;
    return { requeueAfterMs: problem ? this.deps.retryMs : this.deps.resyncMs };
  }
}

async function known<T extends ClusterFacts | PlatformCredential>(get: () => Promise<T>, problems: string[]): Promise<T | undefined> {
  try {
    return await get();
  } catch (err) {
    if (err instanceof ValueUnavailableError) {
      problems.push(err.message);
      return undefined;
    }
    throw err;
  }
}
