/**
 * `berth cluster add` (docs/install.md, step 3), run as the built CLI on a fleet repository made from flux/ as
 * install.md says: a second workload cluster gets the same objects as aks-dev-weu, with exactly the cluster's own
 * fields set (its overlay, the fetch filter of GitRepository berth-teams, its slices), nothing left naming
 * aks-dev-weu, and the filter keeps what git itself keeps. It writes nothing when the cluster has files already or
 * is not in the platform config.
 */
// needs: dist
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { platformSchema, sliceObjects, sliceOptions, teamsRepositoryIgnore, type Platform } from "@berth/core";
import { parseDocument } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/berth.js";
import { ensureBuilt } from "../support/build.js";
import { CliHarness, type CliResult } from "../support/cli.js";
import { ignoredByGit } from "../support/git-remotes.js";
import { kustomizeBuild, type KubeObject } from "../support/kustomize.js";

const LIKE = "aks-dev-weu";
const NEW = "aks-prod-weu";
const CLIENT_ID = "21111111-2222-4333-8444-555555555555";

/** Every file under `dir`, by path from `root`, with its text. */
function filesUnder(root: string, dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true }))
      if (e.isDirectory()) walk(join(d, e.name));
      else out.set(relative(root, join(d, e.name)), readFileSync(join(d, e.name), "utf8"));
  };
  if (existsSync(join(root, dir))) walk(join(root, dir));
  return out;
}

const id = (o: KubeObject) => `${o.kind} ${o.metadata.namespace ?? ""}/${o.metadata.name}`;

describe("berth cluster add", () => {
  let fleet: string;
  let cli: CliHarness;
  let platform: Platform;
  let first: CliResult;
  const add = (...args: string[]) => cli.run(["cluster", "add", ...args, "--fleet", fleet, "--client-id", CLIENT_ID]);

  beforeAll(async () => {
    await ensureBuilt();
    cli = await CliHarness.create();
    fleet = mkdtempSync(join(tmpdir(), "berth-fleet-"));
    cpSync(join(REPO_ROOT, "flux"), fleet, { recursive: true, dereference: true });
    // The platform engineer lists the new cluster in the platform config first (docs/install.md, step 3).
    const configFile = join(fleet, "berth", "platform", "berth.yaml");
    const config = parseDocument(readFileSync(configFile, "utf8"));
    config.addIn(["platform", "environments"], { name: "prod", clusters: [{ name: NEW }] });
    writeFileSync(configFile, config.toString());
    platform = platformSchema.parse(config.toJS().platform);
    first = await add(NEW);
  }, 120_000);
  afterAll(() => rmSync(fleet, { recursive: true, force: true }));

  it("writes the cluster's folder and its controller overlay, naming only the new cluster", () => {
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    const written = new Map([...filesUnder(fleet, `clusters/${NEW}`), ...filesUnder(fleet, `berth/overlays/${NEW}`)]);
    expect([...written.keys()].filter((p) => !p.includes("/teams/slices/")).sort()).toEqual([
      `berth/overlays/${NEW}/kustomization.yaml`,
      `clusters/${NEW}/berth-team-slices.yaml`,
      `clusters/${NEW}/berth-teams.yaml`,
      `clusters/${NEW}/berth-tenancy.yaml`,
      `clusters/${NEW}/berth.yaml`,
      `clusters/${NEW}/kustomization.yaml`,
    ]);
    expect([...written.keys()].filter((p) => p.includes("/teams/slices/"))).toHaveLength(26);
    for (const [path, text] of written) expect(text, path).not.toContain(LIKE);
  });

  it("gives the new cluster aks-dev-weu's objects, with the cluster's own fields set", async () => {
    for (const cluster of [LIKE, NEW]) {
      mkdirSync(join(fleet, "clusters", cluster, "flux-system"), { recursive: true });
      writeFileSync(join(fleet, "clusters", cluster, "flux-system", "kustomization.yaml"), "resources: []\n");
    }
    const [like, added] = await Promise.all([LIKE, NEW].map((c) => kustomizeBuild(join(fleet, "clusters", c))));
    expect(added!.map(id).sort()).toEqual(like!.map(id).sort());
    const slices = new Map(sliceObjects(sliceOptions(platform, NEW)).map((o) => [id(o as KubeObject), o]));
    const own = (o: KubeObject): unknown => {
      if (slices.has(id(o))) return slices.get(id(o));
      const copy = structuredClone(o) as KubeObject & { spec: Record<string, unknown> };
      if (o.kind === "Kustomization" && o.metadata.name === "berth-controller") {
        expect(copy.spec.path).toBe(`./berth/overlays/${NEW}`);
        copy.spec.path = `./berth/overlays/${LIKE}`;
      }
      if (o.kind === "GitRepository" && o.metadata.name === "berth-teams") {
        expect(copy.spec.ignore).toBe(teamsRepositoryIgnore(platform, NEW));
        copy.spec.ignore = teamsRepositoryIgnore(platform, LIKE);
      }
      return copy;
    };
    const likeById = new Map(like!.map((o) => [id(o), o]));
    for (const o of added!) {
      if (slices.has(id(o))) expect(o, id(o)).toEqual(slices.get(id(o)));
      else expect(own(o), id(o)).toEqual(likeById.get(id(o)));
    }
    // And aks-dev-weu's own filter is what the code derives for it: flux/ and the command agree.
    expect(like!.find((o) => o.kind === "GitRepository")?.spec).toMatchObject({
      ignore: teamsRepositoryIgnore(platform, LIKE),
    });

    const overlay = await kustomizeBuild(join(fleet, "berth", "overlays", NEW));
    const deployment = overlay.find((o) => o.kind === "Deployment") as KubeObject & {
      spec: { template: { spec: { containers: Array<{ env?: Array<{ name: string; value?: string }> }> } } };
    };
    const env = deployment.spec.template.spec.containers.flatMap((c) => c.env ?? []);
    expect(env.find((e) => e.name === "BERTH_CLUSTER_NAME")?.value).toBe(NEW);
    const account = overlay.find((o) => o.kind === "ServiceAccount" && o.metadata.name === "berth-controller");
    expect(account?.metadata.annotations?.["azure.workload.identity/client-id"]).toBe(CLIENT_ID);
  });

  it.each([
    { teamsDir: "teams", clustersDir: "clusters" },
    { teamsDir: "fleet/teams", clustersDir: "fleet/clusters" },
  ])(
    "has GitRepository berth-teams fetch what git keeps by the same rules: the teams' folders with this cluster's parts ($teamsDir)",
    async ({ teamsDir, clustersDir }) => {
      const layout = { ...platform, layout: { ...platform.layout, teamsDir, clustersDir } };
      const kept = [
        `${teamsDir}/alpha/base/team.yaml`,
        `${teamsDir}/alpha/clusters/${NEW}/kustomization.yaml`,
        `${clustersDir}/${NEW}/teams/8e/alpha.yaml`,
        `${teamsDir}/a--slice`,
      ];
      const dropped = [
        `${teamsDir}/alpha/clusters/${LIKE}/kustomization.yaml`,
        `${clustersDir}/${LIKE}/teams/8e/alpha.yaml`,
        `${clustersDir}/${NEW}/berth.yaml`,
        "berth/platform/berth.yaml",
        "rollouts/ro-1.yaml",
        "fleet/README.md",
      ];
      const ignored = await ignoredByGit(teamsRepositoryIgnore(layout, NEW), [...kept, ...dropped]);
      expect(kept.filter((p) => ignored.has(p))).toEqual([]);
      expect(dropped.filter((p) => !ignored.has(p))).toEqual([]);
    },
  );

  it("writes nothing for a cluster that has files already, or that the platform config does not list", async () => {
    const before = new Map([...filesUnder(fleet, `clusters/${NEW}`), ...filesUnder(fleet, `berth/overlays/${NEW}`)]);
    const again = await add(NEW);
    expect(again.code).toBe(6);
    expect(again.stderr).toContain("nothing written");
    expect(new Map([...filesUnder(fleet, `clusters/${NEW}`), ...filesUnder(fleet, `berth/overlays/${NEW}`)])).toEqual(
      before,
    );

    const unknown = await add("aks-nowhere");
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toContain("is not in the platform config");
    expect(existsSync(join(fleet, "clusters", "aks-nowhere"))).toBe(false);
  });
});
