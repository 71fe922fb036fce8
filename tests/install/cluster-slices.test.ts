/**
 * `berth cluster slices` (docs/install.md, "Moving to hash slices"), run as the built CLI on a fleet repository made
 * from flux/: each run takes the next step and refuses a step that would delete what Flux applied or make two
 * generators race. tests/flux/migration-0034.test.ts runs the same steps (core's moveSlices) on real Flux.
 */
// needs: dist
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAllDocuments, parseDocument } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { platformSchema, teamShard, teamsRepositoryIgnore } from "@berth/core";
import { REPO_ROOT } from "../support/berth.js";
import { ensureBuilt } from "../support/build.js";
import { CliHarness } from "../support/cli.js";
import { ignoredByGit } from "../support/git-remotes.js";
import { kustomizeBuild, type KubeObject } from "../support/kustomize.js";

const CLUSTER = "aks-dev-weu";
const DIR = `clusters/${CLUSTER}`;

describe("berth cluster slices", () => {
  let fleet: string;
  let cli: CliHarness;
  const configFile = () => join(fleet, "berth", "platform", "berth.yaml");
  const slices = () => cli.run(["cluster", "slices", CLUSTER, "--fleet", fleet]);
  const read = (path: string) => readFileSync(join(fleet, path), "utf8");
  const setConfig = (path: string[], value: unknown) => {
    const config = parseDocument(read("berth/platform/berth.yaml"));
    config.setIn(["platform", ...path], value);
    writeFileSync(configFile(), config.toString());
  };
  const resources = () =>
    (parseDocument(read(`${DIR}/kustomization.yaml`)).toJS() as { resources: string[] }).resources;
  const objects = (path: string) =>
    parseAllDocuments(read(path)).map((d) => d.toJS() as KubeObject & { spec: Record<string, unknown> });

  beforeAll(async () => {
    await ensureBuilt();
    cli = await CliHarness.create();
    fleet = mkdtempSync(join(tmpdir(), "berth-fleet-"));
    cpSync(join(REPO_ROOT, "flux"), fleet, { recursive: true, dereference: true });
    // An installed cluster with a team on the first-letter slices.
    mkdirSync(join(fleet, "teams", "alpha", "base"), { recursive: true });
    writeFileSync(join(fleet, "teams", "alpha", "base", "team.yaml"), "kind: Team\n");
    mkdirSync(join(fleet, DIR, "flux-system"), { recursive: true });
    writeFileSync(join(fleet, DIR, "flux-system", "kustomization.yaml"), "resources: []\n");
  }, 120_000);
  afterAll(() => rmSync(fleet, { recursive: true, force: true }));

  it("refuses a platform config on first-letter slices, or on the first-letter slices' artifact prefix", async () => {
    const letters = await slices();
    expect(letters.code).toBe(3);
    expect(letters.stderr).toContain("platform.layout.slices.by is first-letter");
    setConfig(["layout", "slices"], { by: "hash", count: 16 });
    const samePrefix = await slices();
    expect(samePrefix.code).toBe(3);
    expect(samePrefix.stderr).toContain("two generators would make the same artifacts");
    expect(existsSync(join(fleet, DIR, "berth-team-hash-slices-16.yaml"))).toBe(false);
  });

  it("installs the hash slices beside the first-letter ones, which orphan what they applied", async () => {
    const letters = read(`${DIR}/berth-team-slices.yaml`);
    setConfig(["fluxSource", "artifactPrefix"], "team-hashed-");
    const install = await slices();
    expect(install.stderr).toBe("");
    expect(install.code).toBe(0);
    expect(install.stdout).toContain("installed 16 hash slices");
    expect(resources()).toEqual(expect.arrayContaining(["berth-team-slices.yaml", "berth-team-hash-slices-16.yaml"]));
    expect(existsSync(join(fleet, "teams", "00--slice"))).toBe(true);
    expect(existsSync(join(fleet, DIR, "teams", "f0--slice"))).toBe(true);
    // Every first-letter Kustomization suspended and orphaning; every other document as it was.
    const before = parseAllDocuments(letters).map((d) => d.toJS() as KubeObject & { spec: Record<string, unknown> });
    const after = objects(`${DIR}/berth-team-slices.yaml`);
    expect(after).toHaveLength(before.length);
    after.forEach((o, i) => {
      if (o.kind === "Kustomization")
        expect(o.spec).toEqual({ ...before[i]!.spec, suspend: true, deletionPolicy: "Orphan" });
      else expect(o).toEqual(before[i]);
    });
    const hash = objects(`${DIR}/berth-team-hash-slices-16.yaml`);
    expect(
      hash.find((o) => o.kind === "ArtifactGenerator" && o.metadata.name === "berth-team-artifacts-00-0f"),
    ).toBeDefined();
    // Both cuts build, apart: no object of one has the name of one of the other.
    const built = await kustomizeBuild(join(fleet, DIR));
    const names = built.map((o) => `${o.kind}/${o.metadata.name}`);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(
      expect.arrayContaining(["ArtifactGenerator/berth-team-slices", "ArtifactGenerator/berth-team-hash-slices-16"]),
    );
  });

  it("fetches team folders in their shard's folder with this cluster's parts only", async () => {
    const platform = platformSchema.parse(
      (parseDocument(read("berth/platform/berth.yaml")).toJS() as { platform: unknown }).platform,
    );
    const ignore = objects(`${DIR}/berth-teams.yaml`).find((o) => o.kind === "GitRepository")!.spec.ignore;
    expect(ignore).toBe(teamsRepositoryIgnore(platform, CLUSTER));
    const shard = teamShard("alpha");
    const kept = [
      `teams/${shard}/alpha/base/team.yaml`,
      `teams/${shard}/alpha/clusters/${CLUSTER}/kustomization.yaml`,
      `teams/${shard}--slice`,
      // A team still where first-letter slices read it is fetched whole until it moves.
      "teams/alpha/base/team.yaml",
      `${DIR}/teams/${shard}/alpha.yaml`,
    ];
    const dropped = [`teams/${shard}/alpha/clusters/aks-prod-weu/kustomization.yaml`, "berth/platform/berth.yaml"];
    const ignored = await ignoredByGit(ignore as string, [...kept, ...dropped]);
    expect(kept.filter((p) => ignored.has(p))).toEqual([]);
    expect(dropped.filter((p) => !ignored.has(p))).toEqual([]);
  });

  it("retires the first-letter slices only once every team folder is in its shard's", async () => {
    const early = await slices();
    expect(early.code).toBe(3);
    expect(early.stderr).toContain("1 teams are not on the new slices yet (alpha)");
    expect(existsSync(join(fleet, DIR, "berth-team-slices.yaml"))).toBe(true);

    // What the rollout does: the folder moved into its shard's.
    mkdirSync(join(fleet, "teams", teamShard("alpha")), { recursive: true });
    cpSync(join(fleet, "teams", "alpha"), join(fleet, "teams", teamShard("alpha"), "alpha"), { recursive: true });
    rmSync(join(fleet, "teams", "alpha"), { recursive: true });
    const retire = await slices();
    expect(retire.stderr).toBe("");
    expect(retire.code).toBe(0);
    expect(existsSync(join(fleet, DIR, "berth-team-slices.yaml"))).toBe(false);
    expect(resources()).not.toContain("berth-team-slices.yaml");
    expect(resources()).toContain("berth-team-hash-slices-16.yaml");
    expect(existsSync(join(fleet, "teams", "a--slice"))).toBe(false);
    expect(existsSync(join(fleet, DIR, "teams", "slices", "a--slice"))).toBe(false);
    expect(existsSync(join(fleet, "teams", "a0--slice"))).toBe(true);
    await kustomizeBuild(join(fleet, DIR));

    const done = await slices();
    expect(done.code).toBe(0);
    expect(done.stdout).toContain("nothing to do");
  });

  it("doubles the count the same way: beside, then retired once every team reads the new artifacts", async () => {
    setConfig(["layout", "slices"], { by: "hash", count: 32 });
    const samePrefix = await slices();
    expect(samePrefix.code).toBe(3);
    expect(samePrefix.stderr).toContain("berth-team-hash-slices-16.yaml names its artifacts with");
    setConfig(["fluxSource", "artifactPrefix"], "team-hashed32-");
    const install = await slices();
    expect(install.code).toBe(0);
    expect(resources()).toEqual(
      expect.arrayContaining(["berth-team-hash-slices-16.yaml", "berth-team-hash-slices-32.yaml"]),
    );
    const retiring = objects(`${DIR}/berth-team-hash-slices-16.yaml`).filter((o) => o.kind === "Kustomization");
    expect(retiring).toHaveLength(16);
    expect(retiring.every((o) => o.spec.suspend === true && o.spec.deletionPolicy === "Orphan")).toBe(true);
    expect(existsSync(join(fleet, "teams", "a8--slice"))).toBe(true);

    // A team Kustomization still on the 16 slices' artifacts: not yet.
    const shard = teamShard("alpha");
    mkdirSync(join(fleet, DIR, "teams", shard), { recursive: true });
    const flux = (prefix: string) =>
      `apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: { name: team-alpha }\nspec: { sourceRef: { kind: ExternalArtifact, name: ${prefix}alpha } }\n`;
    writeFileSync(join(fleet, DIR, "teams", shard, "alpha.yaml"), flux("team-hashed-"));
    const early = await slices();
    expect(early.code).toBe(3);
    expect(early.stderr).toContain("1 teams are not on the new slices yet (alpha)");

    writeFileSync(join(fleet, DIR, "teams", shard, "alpha.yaml"), flux("team-hashed32-"));
    const retire = await slices();
    expect(retire.stderr).toBe("");
    expect(retire.code).toBe(0);
    expect(resources()).not.toContain("berth-team-hash-slices-16.yaml");
    expect(existsSync(join(fleet, DIR, "berth-team-hash-slices-16.yaml"))).toBe(false);
    // The 16 slices' markers are the 32's too: kept.
    expect(existsSync(join(fleet, "teams", "a0--slice"))).toBe(true);
    expect(existsSync(join(fleet, DIR, "teams", "a0--slice"))).toBe(true);
    await kustomizeBuild(join(fleet, DIR));
  });

  it("fetches per slice and back again, one step each way (ADR 0036), the cluster's files building both ways", async () => {
    const file = `${DIR}/berth-team-hash-slices-32.yaml`;
    const teamsRepository = () => objects(`${DIR}/berth-teams.yaml`).find((o) => o.kind === "GitRepository")!;
    const kinds = () => objects(file).map((o) => o.kind);

    setConfig(["layout", "slices"], { by: "hash", count: 32, fetch: "per-slice" });
    const perSlice = await slices();
    expect(perSlice.stderr).toBe("");
    expect(perSlice.code).toBe(0);
    expect(perSlice.stdout).toContain("hash slices now fetch each its own shards");
    const sources = objects(file).filter((o) => o.kind === "GitRepository");
    expect(sources).toHaveLength(32);
    expect(sources[0]!.spec.sparseCheckout).toEqual([
      ...["00", "01", "02", "03", "04", "05", "06", "07"].map((s) => `teams/${s}`),
      ...["00", "01", "02", "03", "04", "05", "06", "07"].map((s) => `${DIR}/teams/${s}`),
    ]);
    expect(objects(file).some((o) => o.metadata?.name === "berth-team-hash-slices-32")).toBe(false);
    expect(teamsRepository().spec.suspend).toBe(true);
    expect(existsSync(join(fleet, "teams", "ff", "--shard"))).toBe(true);
    expect(existsSync(join(fleet, DIR, "teams", "ff", "--shard"))).toBe(true);
    await kustomizeBuild(join(fleet, DIR));
    expect((await slices()).stdout).toContain("nothing to do");

    setConfig(["layout", "slices"], { by: "hash", count: 32, fetch: "whole" });
    const whole = await slices();
    expect(whole.stderr).toBe("");
    expect(whole.code).toBe(0);
    expect(whole.stdout).toContain("hash slices now fetch the whole repository");
    expect(kinds()).not.toContain("GitRepository");
    expect(objects(file).some((o) => o.metadata?.name === "berth-team-hash-slices-32")).toBe(true);
    expect(teamsRepository().spec.suspend).toBeUndefined();
    await kustomizeBuild(join(fleet, DIR));
    expect((await slices()).stdout).toContain("nothing to do");
  });
});
