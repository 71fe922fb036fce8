/**
 * A staged rollout gated on what real Flux reports: template version v4 renders a LimitRange the apiserver
 * refuses (`type: Containers`; Berth's own checks do not know LimitRange types). Wave 1 (alpha) is committed;
 * kustomize-controller's dry-run fails, Flux reports the failure on team-alpha at the wave's revision, the
 * controller carries it into the Team status, and the gate halts at once on it (not at its timeout), with Flux's
 * reason in the halt report. Wave 2 (bravo) is never committed: its files and its objects on the cluster stay v1.
 */
// needs: cluster dist
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/berth.js";
import { ASO_NAMESPACE, startFluxPlatform, type FluxPlatform } from "../support/flux-platform.js";
import { inspectRemote } from "../support/git-remotes.js";
import { eventually } from "../support/wait.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";

describe("a rollout halts on the failure real Flux reports; wave 2 is untouched", () => {
  let platform: FluxPlatform;
  let templates: string;

  beforeAll(async () => {
    templates = await mkdtemp(join(tmpdir(), "berth-templates-"));
    await cp(join(REPO_ROOT, "templates"), templates, { recursive: true });
    await cp(join(templates, "v1"), join(templates, "v4"), { recursive: true });
    const limits = await readFile(join(templates, "v4", "limit-range.yaml"), "utf8");
    if (!limits.includes("type: Container"))
      throw new Error("templates/v1/limit-range.yaml changed: pick another refused value");
    await writeFile(join(templates, "v4", "limit-range.yaml"), limits.replace("type: Container", "type: Containers"));
    const set = await readFile(join(templates, "v4", "templateset.yaml"), "utf8");
    await writeFile(join(templates, "v4", "templateset.yaml"), set.replace("name: v1", "name: v4"));
    platform = await startFluxPlatform({
      berthConfig: (raw) => {
        raw.templatesDir = templates;
        raw.api.rollouts = { pollIntervalMs: 500, gateTimeoutSeconds: 600 };
      },
    });
    const revisions: string[] = [];
    for (const name of ["alpha", "bravo"]) {
      const res = await platform.request("POST", "/v1/teams", { name, owners: [OWNER], environments: ["dev"] });
      expect(res.statusCode, res.body).toBe(201);
      revisions.push(`main@sha1:${res.json.revision as string}`);
    }
    // Each team Ready at its own commit or a later one: with team artifacts (ADR 0019) Flux cuts alpha's artifact
    // from whichever commit it fetches first, and bravo's commit does not reconcile alpha again.
    for (const [i, name] of ["alpha", "bravo"].entries()) {
      await eventually(
        `team-${name} Ready at its commit or later`,
        async () => {
          const status = (await platform.kustomization(ASO_NAMESPACE, `team-${name}`))?.status as
            { lastAppliedOriginRevision?: string; conditions?: Array<{ type: string; status: string }> } | undefined;
          return (
            status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") &&
            revisions.slice(i).includes(status.lastAppliedOriginRevision ?? "")
          );
        },
        180_000,
      );
    }
  }, 400_000);

  afterAll(async () => {
    await platform?.stop();
    if (templates) await rm(templates, { recursive: true, force: true });
  });

  it("halts on Flux's failure at the wave's revision, with Flux's reason, long before the gate's timeout", async () => {
    const bravoBefore = (await platform.admin.get("v1", "LimitRange", "bravo", "container-defaults"))!.metadata
      .resourceVersion;
    const t0 = Date.now();
    const res = await platform.request("POST", "/v1/rollouts", {
      description: "v4 (a LimitRange the apiserver refuses)",
      target: { templateVersion: "v4" },
      waves: [{ name: "first", selector: { names: ["alpha"] } }, { name: "rest" }],
      gate: { timeoutSeconds: 600 },
    });
    expect(res.statusCode, res.body).toBe(201);
    const id = res.json.rollout.metadata.name as string;
    const halted = await eventually(
      "the rollout halts",
      async () => {
        const r = (await platform.request("GET", `/v1/rollouts/${id}`)).json;
        return r.rollout.status.phase === "Halted" ? r.rollout : undefined;
      },
      240_000,
    );
    const haltedAfterMs = Date.now() - t0;
    console.log(`[tests/flux/rollout] halted ${haltedAfterMs} ms after the rollout started (gate timeout 600 s)`);
    expect(halted.status.halt.reason).toBe("Failed");
    expect(halted.status.halt.teams[0]).toMatchObject({
      team: "alpha",
      cluster: "aks-dev-weu",
      result: "failed",
      condition: "Rendered",
      reason: "ReconciliationFailed",
      severity: "Error",
    });
    expect(halted.status.halt.teams[0].message).toMatch(/Containers/);
    // Flux's own view: team-alpha failed at the wave's revision and still runs the revision before it.
    const ks = (await platform.kustomization(ASO_NAMESPACE, "team-alpha"))!;
    const status = ks.status as {
      lastAppliedRevision: string;
      lastAttemptedRevision: string;
      conditions: Array<{ type: string; status: string; reason: string }>;
    };
    expect(status.conditions.find((c) => c.type === "Ready")).toMatchObject({ status: "False" });
    expect(status.lastAttemptedRevision).not.toBe(status.lastAppliedRevision);
    // Wave 2 untouched: bravo's files are v1 in the repo, its objects on the cluster unchanged.
    const remote = await inspectRemote(platform.repoUrl, "main", platform.gitEnv);
    expect(remote.files.get("teams/bravo/base/team.yaml")).toContain("templateVersion: v1");
    expect(remote.files.get("teams/alpha/base/team.yaml")).toContain("templateVersion: v4");
    expect(
      (await platform.admin.get("v1", "LimitRange", "bravo", "container-defaults"))!.metadata.resourceVersion,
    ).toBe(bravoBefore);
  });
});
