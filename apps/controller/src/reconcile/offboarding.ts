import { ACCESS_FINALIZER, CREDENTIAL_FINALIZER } from "../names.js";
import { isDeleting, type KubeObject, type SecretLike, type TeamObject } from "./objects.js";

/**
 * Offboarding decisions (pure). The team's aso-credential carries the finalizer berth.dev/aso-credential
 * so that it outlives every ASO resource in the team namespace: ASO needs the credential to delete those
 * resources in Azure, and a credential deleted first leaves them stuck (ASO #4679).
 *
 *   team active, secret not being deleted   → apply (credential with finalizer)
 *   otherwise, ASO resources remain          → hold (keep the finalizer, look again shortly)
 *   team gone, secret still there            → delete it, then release the finalizer
 *   secret being deleted                     → release the finalizer
 *   team gone, no secret                     → nothing (and never re-create it)
 *
 * The controller can write the Secret only through the RoleBinding berth-controller in the team namespace,
 * which the templates render with the finalizer berth.dev/controller-access: when the namespace is deleted,
 * the binding (which authorizes until it is gone) waits for the credential. See `accessAction`.
 */

export type CredentialAction =
  | { action: "apply" }
  | { action: "hold"; remaining: string[] }
  | { action: "delete" }
  | { action: "release" }
  | { action: "none" };

export interface OffboardingInputs {
  team: TeamObject | undefined;
  secret: SecretLike | undefined;
  /** `Kind/name` of the ASO resources still in the team namespace; undefined when not looked up. */
  remainingAso?: string[] | undefined;
}

/** Whether the offboarding path applies, i.e. whether remainingAso must be looked up. */
export function isOffboarding(team: TeamObject | undefined, secret: SecretLike | undefined): boolean {
  return !team || isDeleting(team) || isDeleting(secret);
}

export function credentialAction({ team, secret, remainingAso }: OffboardingInputs): CredentialAction {
  if (!isOffboarding(team, secret)) return { action: "apply" };
  if (!secret) return { action: "none" };
  if (remainingAso === undefined) throw new Error("credentialAction: offboarding needs the remaining ASO resources");
  if (remainingAso.length) return { action: "hold", remaining: remainingAso };
  if (!isDeleting(secret)) return { action: "delete" };
  return hasFinalizer(secret, CREDENTIAL_FINALIZER) ? { action: "release" } : { action: "none" };
}

/**
 * The controller's access (RoleBinding berth-controller and its finalizer berth.dev/controller-access):
 *
 *   binding not being deleted, or without our finalizer   → none
 *   being deleted, the credential still has its finalizer  → keep (it is the only way to release that one)
 *   being deleted, the credential is gone or released      → release (the binding goes; nothing is stuck)
 *
 * "Gone" is what the cache says; the reconciler confirms it on the server before it releases, since a
 * credential written moments ago may not be in the cache yet.
 */
export type AccessAction = { action: "none" } | { action: "keep" } | { action: "release" };

export function accessAction(roleBinding: KubeObject | undefined, secret: SecretLike | undefined): AccessAction {
  if (!roleBinding || !isDeleting(roleBinding) || !hasFinalizer(roleBinding, ACCESS_FINALIZER))
    return { action: "none" };
  return credentialFinalizerPending(secret) ? { action: "keep" } : { action: "release" };
}

/** Whether the credential still carries the finalizer only the controller (through its RoleBinding) releases. */
export function credentialFinalizerPending(secret: KubeObject | undefined): boolean {
  return hasFinalizer(secret, CREDENTIAL_FINALIZER);
}

/**
 * While its RoleBinding is being deleted, the controller writes no new credential: it may not be able to
 * release a finalizer it adds now.
 */
export function accessEnding(roleBinding: KubeObject | undefined): boolean {
  return isDeleting(roleBinding);
}

const hasFinalizer = (o: KubeObject | undefined, finalizer: string) =>
  Boolean(o?.metadata?.finalizers?.includes(finalizer));

/** The finalizers left after removing `finalizer` (ours; the merge patch keeps everyone else's). */
export function withoutFinalizer(obj: KubeObject, finalizer: string = CREDENTIAL_FINALIZER): string[] {
  return (obj.metadata?.finalizers ?? []).filter((f) => f !== finalizer);
}
