import { ValueUnavailableError, type PlatformCredential } from "@berth/core";
import type { ReconcilerDeps } from "./deps.js";
import { clusterFactsOrLastKnown } from "./facts.js";
import {
  PLATFORM_CREDENTIAL_SECRET,
  platformCredentialSecret,
  platformVarsConfigMap,
  platformVarsData,
  satisfies,
  type Decision,
} from "./platform.js";
import type { ObjectRef } from "./objects.js";
import { platformFindings } from "./platform-checks.js";

export interface ReconcileOutcome {
  requeueAfterMs: number;
}

export interface PlatformReconcilerDeps extends ReconcilerDeps {
  /** Told after every pass whether the provider answered (a gauge on /metrics: the platform's own status). */
  onFreshness?: (fresh: boolean) => void;
  /** Told the number of platform findings in Azure after every pass that could check (a gauge on /metrics). */
  onFindings?: (count: number) => void;
}

/**
 * Keeps `platform-vars` and the platform `aso-credential` in the ASO namespace equal to what the
 * provider and platform config say. Level-triggered: it compares the cache with the desired objects and
 * applies only what differs, so a deleted or edited object is restored on the next watch event.
 *
 * platform-vars is written only from facts the provider gives now. The platform credential is a
 * workload-identity credential: it is written only while the cluster has an OIDC issuer — fresh, or the
 * last known one during a passing outage — never for a cluster that has none (it could not authenticate).
 */
export class PlatformReconciler {
  private lastProblem = "";
  /** The findings of the last check, one message each: a Warning Event is recorded when one appears. */
  private lastFindings = new Set<string>();
  private lastSkipped = "";

  constructor(private readonly deps: PlatformReconcilerDeps) {}

  async reconcile(signal?: AbortSignal): Promise<ReconcileOutcome> {
    const { platform, cluster, provider, caches, events, logger } = this.deps;
    const writer = signal && this.deps.writer.withSignal ? this.deps.writer.withSignal(signal) : this.deps.writer;
    const problems: string[] = [];
    const cmRef: ObjectRef = {
      apiVersion: "v1",
      kind: "ConfigMap",
      name: platform.platformVarsConfigMap,
      namespace: platform.asoNamespace,
    };
    const secretRef: ObjectRef = {
      apiVersion: "v1",
      kind: "Secret",
      name: PLATFORM_CREDENTIAL_SECRET,
      namespace: platform.asoNamespace,
    };

    const { facts, values } = await clusterFactsOrLastKnown(this.deps);
    this.deps.onFreshness?.(values.fresh);
    if (!values.fresh) problems.push(values.message);
    const vars: Decision<Record<string, string>> | undefined =
      facts && values.fresh ? platformVarsData(platform, cluster, facts) : undefined;
    if (vars && !vars.ok) problems.push(vars.message);
    if (vars?.ok) {
      const desired = platformVarsConfigMap(platform, vars.value);
      const current = caches.platformVars();
      if (!satisfies(current, desired)) {
        // Keys whose value differs from what the ConfigMap holds: a provider change (e.g. a new OIDC issuer) or an edit reverted.
        const changed = Object.keys(vars.value).filter(
          (k) => current?.data?.[k] !== undefined && current.data[k] !== vars.value[k],
        );
        await writer.apply(desired);
        logger.info(
          {
            configMap: `${platform.asoNamespace}/${platform.platformVarsConfigMap}`,
            restored: Boolean(current),
            changed,
          },
          "platform-vars written",
        );
        if (!current)
          events.normal(
            cmRef,
            "PlatformVarsWritten",
            `${Object.keys(vars.value).length} keys written for cluster ${cluster.name}`,
          );
        else if (changed.length)
          events.normal(
            cmRef,
            "PlatformVarsUpdated",
            `${changed.join(", ")} set for cluster ${cluster.name} (${changed.includes("CLUSTER_OIDC_ISSUER_URL") ? `OIDC issuer now ${vars.value.CLUSTER_OIDC_ISSUER_URL}` : "values changed or an edit reverted"})`,
          );
        else
          events.normal(
            cmRef,
            "PlatformVarsRestored",
            `${Object.keys(vars.value).length} keys restored for cluster ${cluster.name}`,
          );
      }
    }

    let refusal = "";
    if (!facts?.oidcIssuerUrl) {
      // No issuer (none known now, none to stand in): a workload-identity credential cannot authenticate.
      refusal = `not writing the platform aso-credential (workload identity) for cluster ${cluster.name}: ${values.fresh ? "no OIDC issuer" : values.message}`;
      problems.push(refusal);
    } else {
      const cred = await this.known(() => provider.platformCredential(cluster), problems);
      const secret = cred ? platformCredentialSecret(platform, cred) : undefined;
      if (secret && !secret.ok) problems.push(secret.message);
      if (secret?.ok) {
        const current = caches.platformSecret();
        if (!satisfies(current, secret.value)) {
          await writer.apply(secret.value);
          logger.info(
            { secret: `${platform.asoNamespace}/${PLATFORM_CREDENTIAL_SECRET}`, restored: Boolean(current) },
            "platform aso-credential written",
          );
        }
      }
    }

    if (facts && values.fresh) await this.checkAzure(facts.subscriptionId, cmRef);

    const problem = problems.join("; ");
    if (problem && problem !== this.lastProblem) {
      // Once per distinct problem: the reason nothing (or not everything) was written.
      logger.warn({ problem }, "platform values incomplete: not writing");
      events.warning(cmRef, "PlatformValuesUnavailable", problem);
      if (refusal && !values.fresh && values.severity === "Error")
        events.warning(secretRef, "WorkloadIdentityUnavailable", refusal);
    }
    this.lastProblem = problem;
    return { requeueAfterMs: problem ? this.deps.retryMs : this.deps.resyncMs };
  }

  /** Platform checks in Azure (role catalog, resource providers): Warning Events on platform-vars, the platform's status object. */
  private async checkAzure(subscriptionId: string, ref: ObjectRef): Promise<void> {
    const { provider, platform, cluster, events, logger } = this.deps;
    const findings = await platformFindings(provider, platform, cluster, subscriptionId);
    if (!findings) return;
    if (!Array.isArray(findings)) {
      // E.g. the role lacks Microsoft.Authorization/roleDefinitions/read: said once, the last findings stand.
      if (findings.skipped !== this.lastSkipped)
        logger.info({ reason: findings.skipped }, "platform check in Azure skipped: Azure did not answer");
      this.lastSkipped = findings.skipped;
      return;
    }
    this.lastSkipped = "";
    this.deps.onFindings?.(findings.length);
    const now = new Set(findings.map((f) => f.message));
    const appeared = findings.filter((f) => !this.lastFindings.has(f.message));
    for (const f of appeared) events.warning(ref, f.reason, f.message);
    if (appeared.length)
      logger.warn(
        { findings: findings.map((f) => `${f.reason}: ${f.message}`) },
        "platform check in Azure: problems found",
      );
    else if (now.size === 0 && this.lastFindings.size > 0) {
      logger.info("platform check in Azure: the problems found before are gone");
      events.normal(
        ref,
        "PlatformChecksPassed",
        `role catalog and resource providers check out in Azure for cluster ${cluster.name}`,
      );
    }
    this.lastFindings = now;
  }

  private async known(
    get: () => Promise<PlatformCredential>,
    problems: string[],
  ): Promise<PlatformCredential | undefined> {
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
}
