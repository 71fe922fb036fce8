/**
 * Team statuses as apps/controller writes them, for tests that stand where the controller would (the status page,
 * Backstage's wait action) on a real kube-apiserver.
 */

/** The controller's condition types, in chain order (apps/controller/src/reconcile/status.ts). */
export const CHAIN = [
  "Rendered",
  "ResourceGroupReady",
  "IdentityReady",
  "FederatedCredentialsReady",
  "FederationMatchesIssuer",
  "RoleAssignmentsReady",
  "KustomizationReady",
  "CredentialWritten",
];

/**
 * A Team status as the controller writes it: conditions before `blockedAt` True, the one at `blockedAt`
 * False (with ASO's reason and severity when given) or Unknown, the rest Unknown; Ready summarises.
 */
export function teamStatus(
  blockedAt: string | undefined,
  failure?: { reason: string; severity: string; message: string },
) {
  const now = new Date().toISOString();
  const index = blockedAt ? CHAIN.indexOf(blockedAt) : CHAIN.length;
  const conditions = CHAIN.map((type, i) => {
    if (i < index)
      return {
        type,
        status: "True",
        reason: "Succeeded",
        message: `${type} is True`,
        lastTransitionTime: now,
        observedGeneration: 1,
      };
    if (i === index && failure)
      return {
        type,
        status: "False",
        reason: failure.reason,
        severity: failure.severity,
        message: failure.message,
        lastTransitionTime: now,
        observedGeneration: 1,
      };
    return {
      type,
      status: "Unknown",
      reason: "Pending",
      message: `${type} has no Ready condition yet`,
      lastTransitionTime: now,
      observedGeneration: 1,
    };
  });
  const blocked = conditions[index];
  const ready = blocked
    ? {
        type: "Ready",
        status: "False",
        reason: failure ? "Failed" : "Waiting",
        message: `${blocked.type}: ${blocked.reason}: ${blocked.message}`,
        lastTransitionTime: now,
        observedGeneration: 1,
      }
    : {
        type: "Ready",
        status: "True",
        reason: "Ready",
        message: "the team's namespace, Azure resources and credential are in place",
        lastTransitionTime: now,
        observedGeneration: 1,
      };
  return {
    conditions: [...conditions, ready],
    revision: "main@sha1:0123abcd",
    observedGeneration: 1,
    ...(blocked ? {} : { identity: { clientId: "44444444-4444-4444-8444-444444444444" } }),
  };
}
