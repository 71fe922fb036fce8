/**
 * ADR 0022's migration with real Flux: a cluster on ADR 0019's layout (infra/flux/upgrades/0019/berth-teams.yaml: Kustomization
 * flux-system/berth-teams applies every team Kustomization, ArtifactGenerator berth-team-artifacts cuts team-<team>)
 * moves to flux/ as it is now, in docs/install.md's three commits ("Moving to team slices"):
 *   1. the new berth-teams.yaml, berth-team-slices.yaml and its markers, and infra/flux/upgrades/0022's retired objects:
 *      the old Kustomization suspended and orphaning, the old generators kept; the slices take the team Kustomizations
 *      over;
 *   2. the API redeployed with platform.fluxSource.artifactPrefix team-files-, and a same-version rollout: every team
 *      Kustomization reads the artifact its slice cuts;
 *   3. the retired objects removed: their finalizers delete only what nothing reads any more.
 * Every delete request the apiserver answers is in its audit log: none before step 3, and in step 3 only the retired
 * objects and the artifacts they made. Not one team's Kustomization, namespace or ASO object. (The GitRepositories
 * poll every 5 s here, and the API tells the Receiver after its own pushes.)
 */
// needs: cluster dist
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { platformSchema, sliceFiles, sliceOptions } from "@berth/core";
import { REPO_ROOT, type RunningBerth } from "../support/berth.js";
import { devTeamsSeed } from "../support/fleet-seed.js";
import {
  answeredDeletes,
  apiRequest,
  appliedBy,
  deletedObjects,
  ASO_NAMESPACE,
  readyCondition,
  startFluxPlatform,
  withTeamsRepository,
  type FluxPlatform,
} from "../support/flux-platform.js";
import { handEdit, inspectRemote } from "../support/git-remotes.js";
import { eventually } from "../support/wait.js";
import type { Obj } from "../controller/helpers.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
// kilo: its slice's glob (`*/k*`) also matches each shard's kustomization.yaml, which the slice must leave out.
const SEEDED = ["alpha", "bravo", "kilo"];
const TEAMS = [...SEEDED, "delta"];
const CLUSTER = "aks-dev-weu";
const RETIRED = "berth-teams-0019-retired.yaml";
/** flux/'s platform config, which its slices are cut for. */
const shippedPlatform = () =>
  platformSchema.parse(
    (parse(readFileSync(join(REPO_ROOT, "flux", "berth", "platform", "berth.yaml"), "utf8")) as { platform: unknown })
      .platform,
  );
const SOURCE_WATCHER = "source.extensions.fluxcd.io/v1beta1";
const EXTERNAL_ARTIFACT = "source.toolkit.fluxcd.io/v1";

/** Berth's cluster indexes among a clone's files: the top one and each shard's. */
const indexesIn = (files: Map<string, string>) =>
  [...files.keys()].filter((p) => /^clusters\/[^/]+\/teams\/([0-9a-f]{2}\/)?kustomization\.yaml$/.test(p));

type Ks = Obj & { spec: { sourceRef: { kind: string; name: string }; suspend?: boolean } };

describe("moving a cluster to team slices (ADR 0022) with real Flux: only the retired objects are deleted", () => {
  let platform: FluxPlatform;
  let api: RunningBerth;
  const uids = new Map<string, string>();

  beforeAll(async () => {
    platform = await startFluxPlatform({
      install0019: true,
      seed: devTeamsSeed(SEEDED, OWNER),
    });
  }, 300_000);

  afterAll(async () => {
    await platform?.stop();
  });

  const deletes = () => answeredDeletes(platform);
  const teamKs = async (team: string) =>
    (await platform.kustomization(ASO_NAMESPACE, `team-${team}`)) as Ks | undefined;
  /** Every team's Kustomization and namespace are the objects they were before the migration. */
  const sameObjects = async () => {
    for (const team of TEAMS) {
      expect((await teamKs(team))!.metadata.uid).toBe(uids.get(`ks/${team}`));
      expect((await platform.admin.get("v1", "Namespace", undefined, team))!.metadata.uid).toBe(uids.get(team));
    }
  };

  it("before: ADR 0019's layout applies the teams, one onboarded through the API", async () => {
    const res = await platform.request("POST", "/v1/teams", { name: "delta", owners: [OWNER], environments: ["dev"] });
    expect(res.statusCode, res.body).toBe(201);
    for (const team of TEAMS) {
      await platform.waitKustomizationReady(ASO_NAMESPACE, `team-${team}`, res.json.revision, 180_000);
      const ks = await teamKs(team);
      expect(ks!.spec.sourceRef).toEqual({ kind: "ExternalArtifact", name: `team-${team}` });
      expect(appliedBy(ks)).toBe("berth-teams");
      uids.set(`ks/${team}`, ks!.metadata.uid as string);
      uids.set(team, (await platform.admin.get("v1", "Namespace", undefined, team))!.metadata.uid as string);
    }
  }, 300_000);

  it("1. the slices and the retired objects: the slices apply every team Kustomization; nothing is deleted", async () => {
    const before = await deletes();
    const flux = (path: string) => readFile(join(REPO_ROOT, "flux", path), "utf8");
    const index = parse(await flux(`clusters/${CLUSTER}/kustomization.yaml`)) as { resources: string[] };
    index.resources.push(RETIRED);
    const files: Record<string, string> = {
      [`clusters/${CLUSTER}/berth-teams.yaml`]: withTeamsRepository(
        await flux(`clusters/${CLUSTER}/berth-teams.yaml`),
        platform.repoUrl,
        "5s",
      ),
      [`clusters/${CLUSTER}/${RETIRED}`]: await readFile(
        join(REPO_ROOT, "infra", "flux", "upgrades", "0022", RETIRED),
        "utf8",
      ),
      [`clusters/${CLUSTER}/kustomization.yaml`]: stringify(index),
    };
    for (const [path, content] of sliceFiles(sliceOptions(shippedPlatform(), CLUSTER))) {
      // What flux/ holds is what the generator writes (tests/install/slices.test.ts); committed from flux/ here.
      files[path] = await flux(path);
      expect(files[path]).toBe(content);
    }
    const revision = await handEdit(platform.repoUrl, files, { env: platform.gitEnv });
    expect(indexesIn((await inspectRemote(platform.repoUrl, "main", platform.gitEnv)).files).length).toBeGreaterThan(0);

    // Cut from the commit with the markers (source-watcher passes the commit on as the slice's origin).
    await eventually(
      "the slices cut from the new commit",
      async () =>
        (
          (await platform.admin.get(EXTERNAL_ARTIFACT, "ExternalArtifact", ASO_NAMESPACE, "berth-team-slice-z"))
            ?.status as { artifact?: { metadata?: Record<string, string> } } | undefined
        )?.artifact?.metadata?.["org.opencontainers.image.revision"] === `main@sha1:${revision}`,
      180_000,
    );
    for (const team of TEAMS) {
      // Ready, at whichever commit the slice was first cut from: a slice whose content did not change since keeps
      // that revision (so no revision to wait for here).
      await eventually(
        `Kustomization berth-teams-${team[0]} Ready`,
        async () =>
          readyCondition(await platform.kustomization(ASO_NAMESPACE, `berth-teams-${team[0]}`))?.status === "True",
        180_000,
      );
      await eventually(
        `team-${team} applied by its slice`,
        async () => appliedBy(await teamKs(team)) === `berth-teams-${team[0]}`,
        60_000,
      );
      await eventually(
        `ExternalArtifact team-files-${team}`,
        () => platform.admin.get(EXTERNAL_ARTIFACT, "ExternalArtifact", ASO_NAMESPACE, `team-files-${team}`),
        120_000,
      );
    }
    const old = (await platform.kustomization("flux-system", "berth-teams")) as Ks;
    expect(old.spec.suspend).toBe(true);
    await sameObjects();
    expect(await deletes()).toEqual(before);
  }, 300_000);

  it("2. the API on team-files- and a same-version rollout: every team reads its slice's artifact; nothing is deleted", async () => {
    const before = await deletes();
    api = await platform.startApi({
      platform: (p) => {
        p.fluxSource = { ...p.fluxSource, artifactPrefix: shippedPlatform().fluxSource.artifactPrefix };
        p.layout = { ...p.layout, appliedBy: "slices" };
      },
    });
    const res = await apiRequest(api, "POST", "/v1/rollouts", { description: "team slices (ADR 0022)" });
    expect(res.statusCode, res.body).toBe(201);
    const revision = res.json.revision as string;
    for (const team of TEAMS) {
      const k = (await platform.waitKustomizationReady(ASO_NAMESPACE, `team-${team}`, revision, 180_000)) as Ks;
      expect(k.spec.sourceRef).toEqual({ kind: "ExternalArtifact", name: `team-files-${team}` });
    }
    await sameObjects();
    // The rollout's commit also deleted the cluster indexes ADR 0019's layout read, which nothing reads now (ADR 0032).
    const { files } = await inspectRemote(platform.repoUrl, "main", platform.gitEnv);
    expect(indexesIn(files)).toEqual([]);
    expect(await deletes()).toEqual(before);
    // From the cluster's start to here: not one delete request.
    expect(await deletes()).toEqual([]);
  }, 300_000);

  it("3. the retired objects removed: only they and their artifacts are deleted, and onboarding goes on", async () => {
    const index = parse(await readFile(join(REPO_ROOT, "flux", "clusters", CLUSTER, "kustomization.yaml"), "utf8"));
    await handEdit(
      platform.repoUrl,
      { [`clusters/${CLUSTER}/${RETIRED}`]: null, [`clusters/${CLUSTER}/kustomization.yaml`]: stringify(index) },
      { env: platform.gitEnv },
    );
    await eventually(
      "the retired objects gone",
      async () =>
        !(await platform.kustomization("flux-system", "berth-teams")) &&
        !(await platform.admin.get(SOURCE_WATCHER, "ArtifactGenerator", ASO_NAMESPACE, "berth-team-artifacts")) &&
        !(await platform.admin.get(SOURCE_WATCHER, "ArtifactGenerator", "flux-system", "berth-teams")),
      180_000,
    );
    // A new team after the migration, in a slice that had none.
    const res = await apiRequest(api, "POST", "/v1/teams", { name: "echo", owners: [OWNER], environments: ["dev"] });
    expect(res.statusCode, res.body).toBe(201);
    await platform.waitKustomizationReady(ASO_NAMESPACE, "team-echo", res.json.revision as string, 180_000);
    // The others are not reconciled by echo's commit (their artifacts did not change): still Ready, as before.
    for (const team of TEAMS) expect(readyCondition(await teamKs(team))?.status, `team-${team}`).toBe("True");
    await sameObjects();

    // Distinct objects: a finalizer that races its own requeue may ask twice for the same delete (the second answered
    // 404); what this guards is which objects are asked for, not how often.
    const deleted = deletedObjects(await deletes());
    expect(deleted).toEqual(
      [
        `artifactgenerators.source.extensions.fluxcd.io ${ASO_NAMESPACE}/berth-team-artifacts`,
        "artifactgenerators.source.extensions.fluxcd.io flux-system/berth-teams",
        "externalartifacts.source.toolkit.fluxcd.io flux-system/berth-teams",
        ...TEAMS.map((t) => `externalartifacts.source.toolkit.fluxcd.io ${ASO_NAMESPACE}/team-${t}`),
        "kustomizations.kustomize.toolkit.fluxcd.io flux-system/berth-teams",
      ].sort(),
    );
  }, 300_000);
});
