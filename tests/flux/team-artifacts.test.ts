/**
 * Team artifacts, team slices and the Receiver with real Flux (ADR 0019, 0020, 0022), on a platform installed as
 * docs/install.md says (flux/: GitRepository berth-teams, the slices' ArtifactGenerators and Kustomizations, Receiver;
 * source-watcher, notification-controller and kustomize-controller's ExternalArtifact gate):
 *
 *   1. with the GitRepository polling every 10 minutes, a team onboarded through the API is on the cluster at once:
 *      the API's notification to the Receiver made source-controller fetch (its own status says it handled the
 *      request), not the poll;
 *   2. another team's commit does not reconcile the first team's Kustomization, nor its slice's: counted from
 *      kustomize-controller's own reconcile metric and the Kustomization's status, next to what it does reconcile;
 *   3. with notification-controller down, the write still succeeds (the failed notification is counted) and the team
 *      arrives at the next poll, with no fetch request handled.
 */
// needs: cluster dist
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kustomizationReconciles, reconciledSince } from "../support/flux.js";
import { ASO_NAMESPACE, startFluxPlatform, type FluxPlatform } from "../support/flux-platform.js";
import { sample } from "../support/prometheus.js";
import { eventually } from "../support/wait.js";
import type { Obj } from "../controller/helpers.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const GIT = "source.toolkit.fluxcd.io/v1";

type KsStatus = {
  lastAppliedRevision?: string;
  lastAttemptedRevision?: string;
  lastAppliedOriginRevision?: string;
  lastHandledReconcileAt?: string;
};

async function teamsRepository(
  platform: FluxPlatform,
): Promise<{ lastHandledReconcileAt?: string; artifact?: { revision?: string } }> {
  const o = (await platform.admin.get(GIT, "GitRepository", "flux-system", "berth-teams")) as Obj | undefined;
  return (o?.status ?? {}) as { lastHandledReconcileAt?: string; artifact?: { revision?: string } };
}

const notifications = async (platform: FluxPlatform, result: string) =>
  sample(await platform.berth.services.metrics.registry.metrics(), "berth_api_flux_notifications_total", {
    cluster: platform.name,
    result,
  }) ?? 0;

describe("team slices with real Flux: a commit reconciles only what it changed, and Flux fetches when Berth pushes", () => {
  let platform: FluxPlatform;

  beforeAll(async () => {
    platform = await startFluxPlatform({ pollInterval: "10m" });
  }, 300_000);

  afterAll(async () => {
    await platform?.stop();
  });

  let alphaRevision = "";

  it("a team onboarded through the API is on the cluster without waiting for the 10-minute poll", async () => {
    const before = await teamsRepository(platform);
    const res = await platform.request("POST", "/v1/teams", { name: "alpha", owners: [OWNER], environments: ["dev"] });
    expect(res.statusCode, res.body).toBe(201);
    alphaRevision = res.json.revision as string;
    // Well inside the poll interval: only a fetch on request gets it there.
    await eventually(
      "namespace alpha on the cluster",
      () => platform.admin.get("v1", "Namespace", undefined, "alpha"),
      180_000,
    );
    await platform.waitKustomizationReady(ASO_NAMESPACE, "team-alpha", alphaRevision, 180_000);
    // source-controller's own record: it handled a reconcile request (the Receiver's) and fetched the commit.
    const after = await teamsRepository(platform);
    expect(after.lastHandledReconcileAt).toBeDefined();
    expect(after.lastHandledReconcileAt).not.toBe(before.lastHandledReconcileAt);
    expect(after.artifact?.revision).toBe(`main@sha1:${alphaRevision}`);
    expect(await notifications(platform, "delivered")).toBeGreaterThanOrEqual(1);
  }, 300_000);

  it("another team's commit does not reconcile it (kustomize-controller's own reconcile count)", async () => {
    const alpha0 = (await platform.kustomization(ASO_NAMESPACE, "team-alpha"))!.status as KsStatus;
    const counts0 = await kustomizationReconciles(platform.flux);
    expect(counts0.get(`${ASO_NAMESPACE}/team-alpha`)).toBeGreaterThan(0);

    const res = await platform.request("POST", "/v1/teams", { name: "bravo", owners: [OWNER], environments: ["dev"] });
    expect(res.statusCode, res.body).toBe(201);
    const revision = res.json.revision as string;
    await platform.waitKustomizationReady(ASO_NAMESPACE, "team-bravo", revision, 180_000);
    await platform.waitKustomizationReady(ASO_NAMESPACE, "berth-teams-b", revision, 180_000);
    // Whatever the commit queued has run by now; give a straggler time to show.
    await new Promise((r) => setTimeout(r, 10_000));

    const moved = await reconciledSince(platform.flux, counts0);
    // What the commit changed is reconciled (the new team, and its slice for its new Flux file); alpha and alpha's
    // slice are not.
    expect(moved).toContain(`${ASO_NAMESPACE}/team-bravo`);
    expect(moved).toContain(`${ASO_NAMESPACE}/berth-teams-b`);
    expect(moved).not.toContain(`${ASO_NAMESPACE}/team-alpha`);
    expect(moved).not.toContain(`${ASO_NAMESPACE}/berth-teams-a`);
    const alpha = (await platform.kustomization(ASO_NAMESPACE, "team-alpha"))!.status as KsStatus;
    expect(alpha.lastAttemptedRevision).toBe(alpha0.lastAttemptedRevision);
    expect(alpha.lastAppliedOriginRevision).toBe(`main@sha1:${alphaRevision}`);
  }, 300_000);
});

describe("team artifacts with real Flux: a cluster whose Receiver is down gets the team at the next poll", () => {
  let platform: FluxPlatform;

  beforeAll(async () => {
    platform = await startFluxPlatform({ pollInterval: "30s" });
  }, 300_000);

  afterAll(async () => {
    await platform?.stop();
  });

  it("the write succeeds, the failed notification is counted, the poll brings the team", async () => {
    await platform.flux.stopController("notification-controller");
    const before = await teamsRepository(platform);
    const failed0 = await notifications(platform, "failed");

    const res = await platform.request("POST", "/v1/teams", {
      name: "charlie",
      owners: [OWNER],
      environments: ["dev"],
    });
    expect(res.statusCode, res.body).toBe(201);
    const revision = res.json.revision as string;
    await eventually(
      "the API counted a notification the cluster did not take",
      async () => (await notifications(platform, "failed")) > failed0,
      30_000,
    );

    await platform.waitKustomizationReady(ASO_NAMESPACE, "team-charlie", revision, 240_000);
    expect(await platform.admin.get("v1", "Namespace", undefined, "charlie")).toBeDefined();
    // Fetched by the poll: source-controller handled no reconcile request meanwhile.
    const after = await teamsRepository(platform);
    expect(after.artifact?.revision).toBe(`main@sha1:${revision}`);
    expect(after.lastHandledReconcileAt).toBe(before.lastHandledReconcileAt);
    expect(await notifications(platform, "delivered")).toBe(0);
  }, 300_000);
});
