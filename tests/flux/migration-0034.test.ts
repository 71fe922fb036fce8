/**
 * ADR 0034's migration with real Flux: a cluster on flux/'s first-letter slices (team folders at teams/<team>/,
 * artifacts team-files-<team>) moves to 16 hash slices in docs/install.md's three steps ("Moving to hash slices"):
 *   1. the platform config on hash slices and a new artifact prefix, and what `berth cluster slices` writes for it
 *      (core's moveSlices, committed here): the hash slices beside the first-letter ones, which are suspended and
 *      orphan what they applied; the hash slices take every team Kustomization over;
 *   2. the API on that config, and a same-version rollout: every team folder moves into its shard's, and every team
 *      Kustomization reads the artifact its hash slice cuts (the first-letter generators drop the old artifacts);
 *   3. `berth cluster slices` again: the first-letter slices and their markers removed; they orphan, their generators
 *      delete only what nothing reads.
 * Then from 16 to 32 hash slices the same way (4-6: install beside, rollout onto a new prefix, retire), and (7) the 32
 * fetched per slice instead (ADR 0036): one commit, `berth cluster slices`' refetch step.
 * Every delete request the apiserver answers is in its audit log: none in step 1, in step 2 only the old team
 * artifacts, in step 3 only the first-letter objects and their artifacts, in 4-6 only the 16 slices' objects and
 * their artifacts, in 7 only the cutter and its slice artifacts (and no team reconciles). Not one team's Kustomization, namespace or
 * ASO object; the same objects (uids) from start to end, and a team onboarded after.
 */
// needs: cluster dist
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import {
  moveSlices,
  platformSchema,
  SLICE_LETTERS,
  sliceBranch,
  sliceFluxFiles,
  sliceHolding,
  slicesOf,
  teamShard,
  type Platform,
} from "@berth/core";
import type { RunningBerth } from "../support/berth.js";
import { kustomizationReconciles, reconciledSince } from "../support/flux.js";
import { devTeamsSeed } from "../support/fleet-seed.js";
import {
  answeredDeletes,
  apiRequest,
  appliedBy,
  deletedObjects,
  ASO_NAMESPACE,
  readyCondition,
  startFluxPlatform,
  type FluxPlatform,
} from "../support/flux-platform.js";
import { handEdit, inspectRemote } from "../support/git-remotes.js";
import { eventually } from "../support/wait.js";
import type { Obj } from "../controller/helpers.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const SEEDED = ["alpha", "bravo", "kilo"];
const TEAMS = [...SEEDED, "delta"];
const CLUSTER = "aks-dev-weu";
const COUNT = 16;
const NEW_PREFIX = "team-hashed-";
const PLATFORM_CONFIG = "berth/platform/berth.yaml";
const SOURCE_WATCHER = "source.extensions.fluxcd.io/v1beta1";
const EXTERNAL_ARTIFACT = "source.toolkit.fluxcd.io/v1";
/** The hash slice that holds `team` (16 slices: by the shard's first digit). */
const hashSlice = (team: string, count = COUNT) => sliceHolding({ by: "hash", count }, team).id;
const DOUBLED = 2 * COUNT;
const DOUBLED_PREFIX = "team-hashed32-";

type Ks = Obj & { spec: { sourceRef: { kind: string; name: string }; path: string; suspend?: boolean } };

/** The fleet's platform config on `count` hash slices, artifacts under `prefix`. */
const onHashSlices =
  (count = COUNT, prefix = NEW_PREFIX) =>
  (p: Record<string, unknown> & { layout?: object; fluxSource?: object }) => {
    p.layout = { ...p.layout, slices: { by: "hash", count } };
    p.fluxSource = { ...p.fluxSource, artifactPrefix: prefix };
  };

describe("moving a cluster to hash slices (ADR 0034) with real Flux: nothing a team reads is deleted", () => {
  let platform: FluxPlatform;
  let api: RunningBerth;
  const uids = new Map<string, string>();

  beforeAll(async () => {
    platform = await startFluxPlatform({ seed: devTeamsSeed(SEEDED, OWNER) });
  }, 300_000);

  afterAll(async () => {
    await platform?.stop();
  });

  const deletes = () => answeredDeletes(platform);
  /** Distinct objects asked to be deleted (a finalizer racing its requeue may ask twice, the second answered 404). */
  const deletedSince = async (before: number) => deletedObjects((await deletes()).slice(before));
  const teamKs = async (team: string) =>
    (await platform.kustomization(ASO_NAMESPACE, `team-${team}`)) as Ks | undefined;
  const sameObjects = async () => {
    for (const team of TEAMS) {
      expect((await teamKs(team))!.metadata.uid).toBe(uids.get(`ks/${team}`));
      expect((await platform.admin.get("v1", "Namespace", undefined, team))!.metadata.uid).toBe(uids.get(team));
    }
  };
  /** The next step `berth cluster slices` writes for the fleet's platform config, committed. */
  const sliceStep = async (step: "install" | "retire" | "refetch", config?: (p: Record<string, unknown>) => void) => {
    const { files } = await inspectRemote(platform.repoUrl, "main", platform.gitEnv);
    const raw = parse(files.get(PLATFORM_CONFIG)!) as { platform: Record<string, unknown> };
    config?.(raw.platform);
    const fleetPlatform: Platform = platformSchema.parse(raw.platform);
    const list = (dir: string) => [...files.keys()].filter((p) => p.startsWith(`${dir}/`));
    const move = moveSlices({ platform: fleetPlatform, cluster: CLUSTER, read: (p) => files.get(p), list });
    expect(move.step).toBe(step);
    const edit: Record<string, string | null> = Object.fromEntries(move.files);
    if (config) edit[PLATFORM_CONFIG] = stringify(raw);
    return handEdit(platform.repoUrl, edit, { env: platform.gitEnv });
  };

  it("before: first-letter slices apply the teams, one onboarded through the API", async () => {
    const res = await platform.request("POST", "/v1/teams", { name: "delta", owners: [OWNER], environments: ["dev"] });
    expect(res.statusCode, res.body).toBe(201);
    await platform.waitKustomizationReady(ASO_NAMESPACE, "team-delta", res.json.revision, 180_000);
    for (const team of TEAMS) {
      // The seeded teams at the install's commit: delta's commit changed none of their slices.
      await eventually(
        `team-${team} Ready`,
        async () => readyCondition(await teamKs(team))?.status === "True",
        180_000,
      );
      const ks = await teamKs(team);
      expect(ks!.spec.sourceRef).toEqual({ kind: "ExternalArtifact", name: `team-files-${team}` });
      expect(appliedBy(ks)).toBe(`berth-teams-${team[0]}`);
      uids.set(`ks/${team}`, ks!.metadata.uid as string);
      uids.set(team, (await platform.admin.get("v1", "Namespace", undefined, team))!.metadata.uid as string);
    }
  }, 300_000);

  it("1. the hash slices beside the suspended first-letter ones take every team Kustomization over; nothing is deleted", async () => {
    const before = (await deletes()).length;
    const revision = await sliceStep("install", onHashSlices());
    await eventually(
      "the hash slices cut from the new commit",
      async () =>
        (
          (
            await platform.admin.get(
              EXTERNAL_ARTIFACT,
              "ExternalArtifact",
              ASO_NAMESPACE,
              `berth-team-slice-${hashSlice("alpha")}`,
            )
          )?.status as { artifact?: { metadata?: Record<string, string> } } | undefined
        )?.artifact?.metadata?.["org.opencontainers.image.revision"] === `main@sha1:${revision}`,
      180_000,
    );
    for (const team of TEAMS) {
      await eventually(
        `team-${team} applied by hash slice ${hashSlice(team)}`,
        async () => appliedBy(await teamKs(team)) === `berth-teams-${hashSlice(team)}`,
        180_000,
      );
      // Still on the first-letter generators' artifact until it is moved.
      expect((await teamKs(team))!.spec.sourceRef.name).toBe(`team-files-${team}`);
      expect(readyCondition(await teamKs(team))?.status).toBe("True");
    }
    for (const letter of new Set(TEAMS.map((t) => t[0]!)))
      expect(((await platform.kustomization(ASO_NAMESPACE, `berth-teams-${letter}`)) as Ks).spec.suspend).toBe(true);
    await sameObjects();
    expect(await deletedSince(before)).toEqual([]);
  }, 300_000);

  it("2. the API on hash slices and a same-version rollout: every team moves to its shard; only old artifacts go", async () => {
    const before = (await deletes()).length;
    api = await platform.startApi({ platform: onHashSlices() });
    const res = await apiRequest(api, "POST", "/v1/rollouts", { description: "hash slices (ADR 0034)" });
    expect(res.statusCode, res.body).toBe(201);
    const revision = res.json.revision as string;
    for (const team of TEAMS) {
      const k = (await platform.waitKustomizationReady(ASO_NAMESPACE, `team-${team}`, revision, 180_000)) as Ks;
      expect(k.spec.sourceRef).toEqual({ kind: "ExternalArtifact", name: `${NEW_PREFIX}${team}` });
      expect(k.spec.path).toBe(`./teams/${teamShard(team)}/${team}/clusters/${CLUSTER}`);
    }
    const { files } = await inspectRemote(platform.repoUrl, "main", platform.gitEnv);
    for (const team of TEAMS) {
      expect([...files.keys()].filter((p) => p.startsWith(`teams/${team}/`))).toEqual([]);
      expect(files.has(`teams/${teamShard(team)}/${team}/base/team.yaml`)).toBe(true);
    }
    await sameObjects();
    // The first-letter generators drop the artifacts of the folders that left; nothing reads them any more.
    await eventually(
      "the old team artifacts gone",
      async () =>
        (
          await Promise.all(
            TEAMS.map((t) =>
              platform.admin.get(EXTERNAL_ARTIFACT, "ExternalArtifact", ASO_NAMESPACE, `team-files-${t}`),
            ),
          )
        ).every((a) => a === undefined),
      120_000,
    );
    expect(await deletedSince(before)).toEqual(
      TEAMS.map((t) => `externalartifacts.source.toolkit.fluxcd.io ${ASO_NAMESPACE}/team-files-${t}`).sort(),
    );
  }, 300_000);

  it("3. the first-letter slices retired: only they and their artifacts are deleted, and onboarding goes on", async () => {
    const before = (await deletes()).length;
    await sliceStep("retire");
    await eventually(
      "the first-letter slices gone",
      async () =>
        !(await platform.admin.get(SOURCE_WATCHER, "ArtifactGenerator", ASO_NAMESPACE, "berth-team-slices")) &&
        !(await platform.kustomization(ASO_NAMESPACE, "berth-teams-a")) &&
        !(await platform.admin.get(SOURCE_WATCHER, "ArtifactGenerator", ASO_NAMESPACE, "berth-team-artifacts-z")),
      180_000,
    );
    const { files } = await inspectRemote(platform.repoUrl, "main", platform.gitEnv);
    expect([...files.keys()].filter((p) => /--slice$/.test(p) && !/\/[0-9a-f]{2}--slice$/.test(p))).toEqual([]);
    // A new team after the move.
    const res = await apiRequest(api, "POST", "/v1/teams", { name: "echo", owners: [OWNER], environments: ["dev"] });
    expect(res.statusCode, res.body).toBe(201);
    await platform.waitKustomizationReady(ASO_NAMESPACE, "team-echo", res.json.revision as string, 180_000);
    expect(appliedBy(await teamKs("echo"))).toBe(`berth-teams-${hashSlice("echo")}`);
    for (const team of TEAMS) expect(readyCondition(await teamKs(team))?.status, `team-${team}`).toBe("True");
    await sameObjects();

    const retired = [
      `artifactgenerators.source.extensions.fluxcd.io ${ASO_NAMESPACE}/berth-team-slices`,
      ...SLICE_LETTERS.flatMap((l) => [
        `artifactgenerators.source.extensions.fluxcd.io ${ASO_NAMESPACE}/berth-team-artifacts-${l}`,
        `externalartifacts.source.toolkit.fluxcd.io ${ASO_NAMESPACE}/berth-team-slice-${l}`,
        `kustomizations.kustomize.toolkit.fluxcd.io ${ASO_NAMESPACE}/berth-teams-${l}`,
      ]),
    ];
    expect(await deletedSince(before)).toEqual(retired.sort());
  }, 300_000);

  it(`4-6. doubling to ${DOUBLED} hash slices the same way: only the ${COUNT} slices and their artifacts are deleted`, async () => {
    const before = (await deletes()).length;
    const teams = [...TEAMS, "echo"];
    await sliceStep("install", onHashSlices(DOUBLED, DOUBLED_PREFIX));
    for (const team of teams)
      await eventually(
        `team-${team} applied by hash slice ${hashSlice(team, DOUBLED)}`,
        async () => appliedBy(await teamKs(team)) === `berth-teams-${hashSlice(team, DOUBLED)}`,
        180_000,
      );
    expect(await deletedSince(before)).toEqual([]);
    // Not before every team reads the new artifacts: the old generators would take theirs.
    await expect(sliceStep("retire")).rejects.toThrow(/5 teams are not on the new slices yet/);

    api = await platform.startApi({ platform: onHashSlices(DOUBLED, DOUBLED_PREFIX) });
    const res = await apiRequest(api, "POST", "/v1/rollouts", { description: `${DOUBLED} hash slices` });
    expect(res.statusCode, res.body).toBe(201);
    for (const team of teams) {
      const k = (await platform.waitKustomizationReady(
        ASO_NAMESPACE,
        `team-${team}`,
        res.json.revision,
        180_000,
      )) as Ks;
      expect(k.spec.sourceRef.name).toBe(`${DOUBLED_PREFIX}${team}`);
    }
    expect(await deletedSince(before)).toEqual([]);

    await sliceStep("retire");
    const gone = slicesOf({ by: "hash", count: COUNT });
    await eventually(
      `the ${COUNT} hash slices gone`,
      async () =>
        !(await platform.admin.get(
          SOURCE_WATCHER,
          "ArtifactGenerator",
          ASO_NAMESPACE,
          `berth-team-hash-slices-${COUNT}`,
        )) &&
        (await Promise.all(gone.map((g) => platform.kustomization(ASO_NAMESPACE, `berth-teams-${g.id}`)))).every(
          (k) => k === undefined,
        ) &&
        (
          await Promise.all(
            teams.map((t) =>
              platform.admin.get(EXTERNAL_ARTIFACT, "ExternalArtifact", ASO_NAMESPACE, `${NEW_PREFIX}${t}`),
            ),
          )
        ).every((a) => a === undefined),
      180_000,
    );
    for (const team of teams) expect(readyCondition(await teamKs(team))?.status, `team-${team}`).toBe("True");
    await sameObjects();
    expect(await deletedSince(before)).toEqual(
      [
        `artifactgenerators.source.extensions.fluxcd.io ${ASO_NAMESPACE}/berth-team-hash-slices-${COUNT}`,
        ...gone.flatMap((g) => [
          `artifactgenerators.source.extensions.fluxcd.io ${ASO_NAMESPACE}/berth-team-artifacts-${g.id}`,
          `externalartifacts.source.toolkit.fluxcd.io ${ASO_NAMESPACE}/berth-team-slice-${g.id}`,
          `kustomizations.kustomize.toolkit.fluxcd.io ${ASO_NAMESPACE}/berth-teams-${g.id}`,
        ]),
        ...teams.map((t) => `externalartifacts.source.toolkit.fluxcd.io ${ASO_NAMESPACE}/${NEW_PREFIX}${t}`),
      ].sort(),
    );
  }, 600_000);

  it(`7. the ${DOUBLED} slices fetched per slice (ADR 0036) in one commit: only the cutter and its artifacts go, no team reconciles`, async () => {
    const before = (await deletes()).length;
    const teams = [...TEAMS, "echo"];
    const reconciles = await kustomizationReconciles(platform.flux);
    const perSlice = (p: Record<string, unknown>) => {
      const layout = p.layout as { slices: object };
      p.layout = { ...layout, slices: { ...layout.slices, fetch: "per-slice" } };
    };
    const revision = await sliceStep("refetch", perSlice);
    // The API on the new config: at its start it puts each slice's branch at the commit, which the slices then follow.
    api = await platform.startApi({
      platform: (p) => {
        onHashSlices(DOUBLED, DOUBLED_PREFIX)(p);
        perSlice(p);
      },
    });
    const slices = [...new Set(teams.map((t) => hashSlice(t, DOUBLED)))];
    // berth-teams may still cut the commit for the old sources first: wait for the new source and the commit on it.
    for (const slice of slices)
      await eventually(
        `berth-teams-${slice} applied from its own GitRepository (its Flux files' artifact)`,
        async () => {
          const k = (await platform.kustomization(ASO_NAMESPACE, `berth-teams-${slice}`)) as Ks | undefined;
          const status = k?.status as { lastAppliedOriginRevision?: string } | undefined;
          const origin = status?.lastAppliedOriginRevision;
          return (
            k?.spec.sourceRef.kind === "ExternalArtifact" &&
            k.spec.sourceRef.name === sliceFluxFiles(slice) &&
            origin?.startsWith(`${sliceBranch(CLUSTER, slice)}@sha1:`) &&
            (await platform.fleetRevisions.is(origin, revision)) &&
            readyCondition(k)?.status === "True"
          );
        },
        180_000,
      );
    await eventually(
      "the cutter gone",
      async () =>
        !(await platform.admin.get(
          SOURCE_WATCHER,
          "ArtifactGenerator",
          ASO_NAMESPACE,
          `berth-team-hash-slices-${DOUBLED}`,
        )),
      180_000,
    );
    // Whatever the commit queued has run by now; give a straggler time to show.
    await new Promise((r) => setTimeout(r, 10_000));
    expect((await reconciledSince(platform.flux, reconciles)).filter((k) => k.includes("/team-"))).toEqual([]);
    for (const team of teams) expect(readyCondition(await teamKs(team))?.status, `team-${team}`).toBe("True");
    await sameObjects();
    // The commit changed the platform config, so flux-system may also have replaced the controller's config
    // ConfigMap (kustomize names it by its content's hash) within the window: not an object a team reads.
    const rotatedConfig = /^configmaps berth-system\/berth-config-[a-z0-9]{10}$/;
    expect((await deletedSince(before)).filter((o) => !rotatedConfig.test(o))).toEqual(
      [
        `artifactgenerators.source.extensions.fluxcd.io ${ASO_NAMESPACE}/berth-team-hash-slices-${DOUBLED}`,
        ...slicesOf({ by: "hash", count: DOUBLED }).map(
          (g) => `externalartifacts.source.toolkit.fluxcd.io ${ASO_NAMESPACE}/berth-team-slice-${g.id}`,
        ),
      ].sort(),
    );
    // A team onboarded after reaches the cluster through its slice's own source.
    const res = await apiRequest(api, "POST", "/v1/teams", { name: "foxtrot", owners: [OWNER], environments: ["dev"] });
    expect(res.statusCode, res.body).toBe(201);
    await platform.waitKustomizationReady(ASO_NAMESPACE, "team-foxtrot", res.json.revision as string, 180_000);
    expect(appliedBy(await teamKs("foxtrot"))).toBe(`berth-teams-${hashSlice("foxtrot", DOUBLED)}`);
  }, 400_000);
});
