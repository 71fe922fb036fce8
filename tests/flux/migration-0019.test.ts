/**
 * ADR 0019's migration with real Flux: a cluster installed before team artifacts (tests/fixtures/flux-install-
 * before-0019: berth-teams and every team Kustomization read GitRepository flux-system) moves to ADR 0019's layout
 * (infra/flux/upgrades/0019; from there migration-0022.test.ts moves on to flux/'s slices), in docs/operations.md's
 * order:
 *   1. Flux gets source-watcher, notification-controller and kustomize-controller's ExternalArtifact gate (here from
 *      the start: the harness's controllers are processes), and the Receiver's Secret;
 *   2. the platform engineer commits the new berth-teams.yaml: berth-teams now reads the cluster's artifact of team
 *      Flux files, source-watcher cuts one artifact per team; the team Kustomizations still read the GitRepository;
 *   3. the API is redeployed with platform.fluxSource.kind ExternalArtifact, and a same-version rollout re-renders
 *      every team's Flux file to read its own artifact.
 * The Kustomization objects keep their names and namespaces and every team's objects stay in their inventories, so
 * Flux must delete nothing: every delete request the apiserver answers is in its audit log, and there must be none.
 */
// needs: cluster dist
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT, type RunningBerth } from "../support/berth.js";
import { devTeamsSeed } from "../support/fleet-seed.js";
import {
  answeredDeletes,
  apiRequest,
  ASO_NAMESPACE,
  startFluxPlatform,
  withTeamsRepository,
  type FluxPlatform,
} from "../support/flux-platform.js";
import { pushTree } from "../support/git-remotes.js";
import { eventually } from "../support/wait.js";
import type { Obj } from "../controller/helpers.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const SEEDED = ["alpha", "bravo", "charlie"];
const TEAMS = [...SEEDED, "delta"];

type Ks = Obj & { spec: { sourceRef: { kind: string; name: string } } };

describe("moving a cluster to team artifacts (ADR 0019) with real Flux: nothing is deleted on the cluster", () => {
  let platform: FluxPlatform;
  let api: RunningBerth;
  const uids = new Map<string, string>();

  beforeAll(async () => {
    platform = await startFluxPlatform({
      teamSource: "GitRepository",
      // docs/install.md step 0 for team artifacts, done before the migration.
      flux: {
        controllers: ["source-controller", "kustomize-controller", "notification-controller", "source-watcher"],
        featureGates: { "kustomize-controller": ["ExternalArtifact=true"] },
      },
      seed: devTeamsSeed(SEEDED, OWNER),
    });
  }, 300_000);

  afterAll(async () => {
    await platform?.stop();
  });

  const deletes = () => answeredDeletes(platform);
  const teamKs = async (team: string) =>
    (await platform.kustomization(ASO_NAMESPACE, `team-${team}`)) as Ks | undefined;

  it("before: Flux applies the teams from the GitRepository, one onboarded through the API", async () => {
    const res = await platform.request("POST", "/v1/teams", { name: "delta", owners: [OWNER], environments: ["dev"] });
    expect(res.statusCode, res.body).toBe(201);
    for (const team of TEAMS) {
      await platform.waitKustomizationReady(ASO_NAMESPACE, `team-${team}`, res.json.revision, 180_000);
      expect((await teamKs(team))!.spec.sourceRef).toMatchObject({ kind: "GitRepository", name: "flux-system" });
      const ns = await platform.admin.get("v1", "Namespace", undefined, team);
      uids.set(team, ns!.metadata.uid as string);
    }
    for (const team of TEAMS) uids.set(`ks/${team}`, (await teamKs(team))!.metadata.uid as string);
  }, 300_000);

  it("the new berth-teams.yaml: berth-teams reads its artifact, team artifacts are cut; nothing is deleted", async () => {
    const before = await deletes();
    await platform.admin.create({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "berth-teams-receiver", namespace: "flux-system" },
      stringData: { token: "a-key-for-the-receiver-0123456789" },
    } as Obj);
    const dir = await mkdtemp(join(tmpdir(), "berth-migrate-0019-"));
    try {
      const file = join(dir, "clusters", "aks-dev-weu", "berth-teams.yaml");
      await mkdir(join(dir, "clusters", "aks-dev-weu"), { recursive: true });
      await writeFile(
        file,
        withTeamsRepository(
          await readFile(join(REPO_ROOT, "infra", "flux", "upgrades", "0019", "berth-teams.yaml"), "utf8"),
          platform.repoUrl,
          "5s",
        ),
      );
      await pushTree({ url: platform.repoUrl, dir, subject: "Team artifacts (ADR 0019)", env: platform.gitEnv });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    await platform.reconcileSource();
    await eventually(
      "Kustomization berth-teams Ready from ExternalArtifact berth-teams",
      async () => {
        const k = (await platform.kustomization("flux-system", "berth-teams")) as Ks | undefined;
        const ready = (
          k?.status as { conditions?: Array<{ type: string; status: string }> } | undefined
        )?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
        return k?.spec.sourceRef.kind === "ExternalArtifact" &&
          ready &&
          (k.status as { lastAppliedOriginRevision?: string }).lastAppliedOriginRevision
          ? k
          : undefined;
      },
      180_000,
    );
    for (const team of TEAMS)
      await eventually(
        `ExternalArtifact team-${team}`,
        () => platform.admin.get("source.toolkit.fluxcd.io/v1", "ExternalArtifact", ASO_NAMESPACE, `team-${team}`),
        120_000,
      );
    expect(await deletes()).toEqual(before);
  }, 300_000);

  it("the API on ExternalArtifact and a same-version rollout: every team reads its own artifact; nothing is deleted", async () => {
    const before = await deletes();
    api = await platform.startApi({ platform: (p) => (p.fluxSource = { ...p.fluxSource, kind: "ExternalArtifact" }) });
    const res = await apiRequest(api, "POST", "/v1/rollouts", { description: "team artifacts (ADR 0019)" });
    expect(res.statusCode, res.body).toBe(201);
    const revision = res.json.revision as string;
    const teamsRepo = { namespace: "flux-system", name: "berth-teams" };
    await platform.admin.mergePatch(
      "source.toolkit.fluxcd.io/v1",
      "GitRepository",
      teamsRepo.namespace,
      teamsRepo.name,
      { metadata: { annotations: { "reconcile.fluxcd.io/requestedAt": new Date().toISOString() } } },
      "flux",
    );
    for (const team of TEAMS) {
      const k = (await platform.waitKustomizationReady(ASO_NAMESPACE, `team-${team}`, revision, 180_000)) as Ks;
      expect(k.spec.sourceRef).toEqual({ kind: "ExternalArtifact", name: `team-${team}` });
      expect(k.metadata.uid).toBe(uids.get(`ks/${team}`));
      expect((await platform.admin.get("v1", "Namespace", undefined, team))!.metadata.uid).toBe(uids.get(team));
    }
    expect(await deletes()).toEqual(before);
    // And from the cluster's start on: not one delete request.
    expect(await deletes()).toEqual([]);
  }, 300_000);
});
