import { teamNames } from "@berth/core";
import type { RecordedReads } from "../../caches.js";
import { TEAM_ROLE_BINDING } from "../../names.js";
import { clusterFactsOrLastKnown } from "../facts.js";
import { accessEnding, isOffboarding } from "../offboarding.js";
import { teamIdentity } from "./identity.js";
import { offboard, releaseAccess } from "./offboard.js";
import { trackWrites, type TeamPass, type TeamReconcilerDeps } from "./pass.js";
import { writeCredential } from "./write-credential.js";
import { wakeWaitingCredentials } from "./wake-credentials.js";
import { writeStatus } from "./write-status.js";

/**
 * One team, level-triggered. The steps, in this order, each in its own file: offboard (when the Team is gone
 * or going), facts (the cluster's, from the provider or as last written), identity, credential, wake, status. Each
 * step reads the caches through the pass's recording view (and, before letting its RoleBinding go, the
 * credential on the server) and writes only through the pass's ClusterWriter. controller.md, "Adding a step".
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
    const { deps } = this;
    const { caches, reads } = deps.caches.recording();
    const tracked = trackWrites(signal && deps.writer.withSignal ? deps.writer.withSignal(signal) : deps.writer);
    const pass: TeamPass = { team, deps, caches, writer: tracked.writer };
    const teamObj = caches.team(team);
    const secret = caches.teamSecret(team);
    const roleBinding = caches.roleBinding(team);

    // isOffboarding covers a missing Team too; naming that case here lets the steps below use teamObj.
    if (!teamObj || isOffboarding(teamObj, secret)) {
      this.unchanged.delete(team);
      return offboard(pass, teamObj, secret, roleBinding);
    }

    const state = await clusterFactsOrLastKnown(deps);
    const facts = JSON.stringify([state.facts ?? null, state.values.fresh]);
    const memo = this.unchanged.get(team);
    if (memo && memo.facts === facts && memo.reads.unchanged()) return { requeueAfterMs: deps.resyncMs };
    this.unchanged.delete(team);

    if (!secret && accessEnding(roleBinding)) {
      // The namespace (or the binding) is being deleted: a credential written now would carry a finalizer
      // the controller might soon have no right to release. Write none, and let the binding go.
      await releaseAccess(pass, roleBinding, secret);
      await writeStatus(pass, teamObj, state, caches.identity(team), {
        written: false,
        reason: "AccessEnding",
        message: `RoleBinding ${teamNames(team).namespace}/${TEAM_ROLE_BINDING} is being deleted: no credential is written`,
      });
      return { requeueAfterMs: deps.retryMs };
    }

    const identity = await teamIdentity(pass, secret, state.values.fresh);
    const credential = await writeCredential(pass, secret, state, identity);
    await wakeWaitingCredentials(pass);
    await writeStatus(pass, teamObj, state, identity.identity, credential);

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
    return { requeueAfterMs: credential.written ? deps.resyncMs : deps.retryMs };
  }
}
