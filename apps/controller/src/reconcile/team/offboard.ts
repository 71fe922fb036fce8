import { teamNames } from "@berth/core";
import { errorKind } from "../../kube.js";
import { ACCESS_FINALIZER, TEAM_ROLE_BINDING } from "../../names.js";
import type { KubeObject, ObjectRef, SecretLike, TeamObject } from "../objects.js";
import { accessAction, credentialAction, credentialFinalizerPending, withoutFinalizer } from "../offboarding.js";
import { credentialRef, type TeamPass } from "./pass.js";

/**
 * Step "offboard" (the Team is gone or going): hold the credential while ASO still has the team's resources,
 * then delete it or release its finalizer, then let the controller's RoleBinding go.
 */
export async function offboard(
  pass: TeamPass,
  teamObj: TeamObject | undefined,
  secret: SecretLike | undefined,
  roleBinding: KubeObject | undefined,
): Promise<{ requeueAfterMs?: number }> {
  const { team, writer, deps } = pass;
  const { events, logger } = deps;
  const names = teamNames(team);
  const remainingAso = secret ? await writer.listAsoResources(names.namespace) : [];
  const decision = credentialAction({ team: teamObj, secret, remainingAso });
  const ref = credentialRef(team);
  switch (decision.action) {
    case "hold":
      // The RoleBinding's finalizer is kept too (accessAction): it is what lets the controller release this one.
      logger.info(
        { team, remaining: decision.remaining },
        "offboarding: keeping aso-credential until ASO has deleted the team's resources",
      );
      return { requeueAfterMs: deps.offboardingPollMs };
    case "delete":
      await writer.delete(ref);
      events.normal(ref, "CredentialDeleted", `team ${team} is gone and no ASO resource remains in ${names.namespace}`);
      return { requeueAfterMs: deps.offboardingPollMs };
    case "release": {
      if (!secret)
        throw new Error(`offboarding team ${team}: a finalizer release was decided without a credential Secret`);
      await writer.setFinalizers(ref, withoutFinalizer(secret), secret.metadata?.resourceVersion);
      logger.info({ team }, "offboarding: finalizer released");
      return { requeueAfterMs: deps.offboardingPollMs };
    }
    default: {
      // The credential is gone or no longer ours to hold: the controller's RoleBinding may go.
      const access = await releaseAccess(pass, roleBinding, secret);
      if (access === "waiting") return { requeueAfterMs: deps.offboardingPollMs };
      // Released, or nothing of the team left to look after: the watches bring the key back if needed.
      if (access === "released" || !(teamObj || secret || roleBinding)) return {};
      return { requeueAfterMs: deps.resyncMs };
    }
  }
}

/**
 * Last step of offboarding: once the RoleBinding berth-controller is being deleted and the credential's
 * finalizer is released (or the Secret is gone), remove the binding's finalizer berth.dev/controller-access.
 * Until then the binding, though being deleted, still grants the controller what it needs to release the
 * credential.
 */
export async function releaseAccess(
  { team, writer, deps }: TeamPass,
  roleBinding: KubeObject | undefined,
  secret: SecretLike | undefined,
): Promise<"none" | "waiting" | "released"> {
  const { logger } = deps;
  const decision = accessAction(roleBinding, secret);
  // accessAction decides "none" without a binding too; naming that case here lets the code below use it.
  if (!roleBinding || decision.action === "none") return "none";
  if (decision.action === "keep") return "waiting";
  const names = teamNames(team);
  const secretRef = credentialRef(team);
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
