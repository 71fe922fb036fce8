/**
 * The team Kustomization's health checks with real Flux: ASO writes `observedGeneration` on each condition, not on
 * `status`, so Flux's own generation check does not see that an ASO object's Ready describes an older spec. The
 * templates' `healthCheckExprs` must: when a commit changes an identity's spec, Flux waits for ASO's answer to the new
 * spec instead of judging the new revision by the old answer. Each team here is rolled from v6 to a v7 that adds a tag
 * to its identity, while the ASO stand-in holds its answer (ASO has not reconciled the change yet):
 *
 *   1. the identity had failed (severity Error): Flux does not fail the new revision on that old failure, and the
 *      rollout, which the new spec fixes, completes instead of halting;
 *   2. the identity was Ready: Flux does not report the new revision Ready before ASO has reconciled it.
 */
// needs: cluster dist
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/berth.js";
import { devTeamsSeed } from "../support/fleet-seed.js";
import { ASO_API_VERSIONS } from "../support/aso-stand-in.js";
import { ASO_NAMESPACE, requestReconcile, startFluxPlatform, type FluxPlatform } from "../support/flux-platform.js";
import { eventually } from "../support/wait.js";
import type { Obj } from "../controller/helpers.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const KUSTOMIZATION_API = "kustomize.toolkit.fluxcd.io/v1";
/** Longer than kustomize-controller's health check poll (5 s): a check that passes or fails on stale data has by then. */
const PAST_ONE_POLL_MS = 7_000;

type Condition = { type: string; status: string; reason?: string; message?: string };
const conditionOf = (k: Obj | undefined, type: string) =>
  ((k?.status as { conditions?: Condition[] } | undefined)?.conditions ?? []).find((c) => c.type === type);

describe("team health checks with real Flux: an ASO condition of an older generation is not the new spec's answer", () => {
  let platform: FluxPlatform;
  let templates: string;

  beforeAll(async () => {
    templates = await mkdtemp(join(tmpdir(), "berth-templates-"));
    await cp(join(REPO_ROOT, "templates"), templates, { recursive: true });
    await cp(join(templates, "v6"), join(templates, "v7"), { recursive: true });
    const identity = await readFile(join(templates, "v7", "identity.yaml"), "utf8");
    const tagged = identity.replace(
      /^( +)berth-team: .*$/m,
      (line, indent: string) => `${line}\n${indent}spec-change: "v7"`,
    );
    if (tagged === identity) throw new Error("templates/v6/identity.yaml changed: add the tag elsewhere");
    await writeFile(join(templates, "v7", "identity.yaml"), tagged);
    const set = await readFile(join(templates, "v7", "templateset.yaml"), "utf8");
    await writeFile(join(templates, "v7", "templateset.yaml"), set.replace("name: v6", "name: v7"));
    platform = await startFluxPlatform({
      platform: (p) => (p.templateVersion = "v6"),
      seed: devTeamsSeed(["alpha", "bravo"], OWNER),
      berthConfig: (raw) => {
        raw.templatesDir = templates;
        raw.api.rollouts = { pollIntervalMs: 300, gateTimeoutSeconds: 300 };
      },
    });
    const seeded = await platform.head();
    for (const team of ["alpha", "bravo"])
      await platform.waitKustomizationReady(ASO_NAMESPACE, `team-${team}`, seeded, 180_000);
  }, 400_000);

  afterAll(async () => {
    await platform?.stop();
    if (templates) await rm(templates, { recursive: true, force: true });
  });

  const identityOf = (team: string) =>
    platform.admin.get(ASO_API_VERSIONS.UserAssignedIdentity, "UserAssignedIdentity", ASO_NAMESPACE, team);
  const kustomization = (team: string) => platform.kustomization(ASO_NAMESPACE, `team-${team}`);
  const startRollout = async (team: string) => {
    const res = await platform.request("POST", "/v1/rollouts", {
      target: { templateVersion: "v7" },
      selector: { names: [team] },
      waves: [{ name: "only" }], // one gated wave: an unstaged rollout completes at its commit
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json.rollout.metadata.name as string;
  };
  const rolloutPhase = async (id: string) =>
    (await platform.request("GET", `/v1/rollouts/${id}`)).json.rollout.status.phase as string;

  /**
   * Rolls the team to v7 while ASO holds its answer, until Flux has applied the new spec and decided about its health:
   * returns the Kustomization once its health check has run for longer than one poll on the new revision, or has
   * ended there (which, while ASO holds its answer, it may only do on stale data).
   */
  const rollHeld = async (team: string) => {
    const before = (await identityOf(team))!.metadata.generation as number;
    const previous = (await kustomization(team))!;
    const attemptedBefore = (previous.status as { lastAttemptedRevision?: string }).lastAttemptedRevision;
    const healthyBefore = JSON.stringify(conditionOf(previous, "Healthy"));
    platform.aso!.hold(team);
    const id = await startRollout(team);
    await eventually(
      `Flux applied ${team}'s v7 identity`,
      async () => ((await identityOf(team))?.metadata.generation as number) > before,
      120_000,
    );
    const decided = await eventually(
      `team-${team} checking or done with the new revision`,
      async () => {
        const k = await kustomization(team);
        const healthy = conditionOf(k, "Healthy");
        // Healthy exactly as the revision before left it is no answer about the new one: a read can see the new
        // lastAttemptedRevision before the health check replaced that condition (fresh-ci once saw the old
        // HealthCheckFailed here, 2 s into test 1). A check of the new revision writes it anew (Progressing first).
        if (JSON.stringify(healthy) === healthyBefore) return undefined;
        const attempted = (k?.status as { lastAttemptedRevision?: string }).lastAttemptedRevision;
        if (healthy?.reason === "Progressing" && !healthy.message?.includes(attemptedBefore ?? "")) return k;
        return attempted !== attemptedBefore && healthy?.status !== "Unknown" ? k : undefined;
      },
      60_000,
    );
    if (conditionOf(decided, "Healthy")?.reason === "Progressing") await sleep(PAST_ONE_POLL_MS);
    return { id, k: (await kustomization(team))! };
  };

  it("1. an identity that had failed: Flux waits for ASO's answer to the new spec, and the rollout that fixes it completes", async () => {
    platform.aso!.fail("alpha", "UserAssignedIdentity", {
      reason: "SubscriptionMismatch",
      severity: "Error",
      message: "the namespace's credential is for another subscription than the resource's",
    });
    await eventually(
      "ASO reported alpha's identity failed",
      async () => conditionOf(await identityOf("alpha"), "Ready")?.reason === "SubscriptionMismatch",
      30_000,
    );
    // Flux does not watch what it applied: it sees the failure at its next reconcile (`flux reconcile ks`).
    await requestReconcile(platform.admin, KUSTOMIZATION_API, "Kustomization", ASO_NAMESPACE, "team-alpha");
    await eventually(
      "team-alpha failed on the identity",
      async () => conditionOf(await kustomization("alpha"), "Ready")?.reason === "HealthCheckFailed",
      120_000,
    );
    platform.aso!.failures.clear(); // the new spec is what fixes it; ASO has not reconciled it yet
    const { id, k } = await rollHeld("alpha");
    expect(conditionOf(k, "Healthy"), "Flux judged the new revision by ASO's answer to the old spec").toMatchObject({
      status: "Unknown",
      reason: "Progressing",
    });
    expect(await rolloutPhase(id)).toBe("Running");
    platform.aso!.release("alpha");
    await eventually("the rollout Completed", async () => (await rolloutPhase(id)) === "Completed", 120_000);
    expect(conditionOf(await kustomization("alpha"), "Ready")?.status).toBe("True");
  }, 300_000);

  it("2. an identity that was Ready: Flux does not report the new revision Ready before ASO has reconciled it", async () => {
    const { id, k } = await rollHeld("bravo");
    expect(conditionOf(k, "Healthy"), "Flux judged the new revision by ASO's answer to the old spec").toMatchObject({
      status: "Unknown",
      reason: "Progressing",
    });
    expect(conditionOf(k, "Ready")?.status).not.toBe("True");
    platform.aso!.release("bravo");
    await eventually("the rollout Completed", async () => (await rolloutPhase(id)) === "Completed", 120_000);
    expect(conditionOf(await kustomization("bravo"), "Ready")?.status).toBe("True");
  }, 300_000);
});
