/**
 * Template versions side by side: every team records the version it is rendered with, new teams get the
 * platform default, an update keeps the version, only a rollout (Fleet.plan with a version) moves it.
 */
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import {
  compareVersions,
  Onboarding,
  parseTeamFile,
  RenderError,
  serializeTeamFile,
  TeamValidationError,
  TemplateCatalog,
  validateTeam,
  type TeamInput,
} from "@berth/core";
import {
  loadCatalog,
  loadTemplates,
  MemoryRepoTree,
  OWNERS,
  PLATFORM,
  rerender,
  TEMPLATE_VERSIONS,
  teamInput,
  templateFiles,
  treeWithTeams,
} from "./fixtures.js";

const SPEC = "teams/orders/base/team.yaml";
const onV3 = new Onboarding(PLATFORM, loadCatalog("v3"));
const onV1 = new Onboarding(PLATFORM, loadCatalog("v1"));
const { name: _name, ...ORDERS_SPEC } = teamInput();

async function issuesOf(p: Promise<unknown> | (() => unknown)) {
  try {
    await (typeof p === "function" ? p() : p);
  } catch (err) {
    if (err instanceof TeamValidationError) return err.issues;
    throw err;
  }
  throw new Error("expected a TeamValidationError");
}

describe("TemplateCatalog", () => {
  it("holds every version, orders them numerically, and refuses a default without a folder", () => {
    const catalog = loadCatalog("v1");
    expect(catalog.versions()).toEqual(["v1", "v3", "v4", "v5", "v6"]);
    expect(catalog.get("v3").version).toBe("v3");
    expect(() => catalog.get("v9")).toThrow(RenderError);
    // v2 was retired (docs/templates.md#retiring-a-version): no folder, no version.
    expect(() => catalog.get("v2")).toThrow(RenderError);
    expect(() => new TemplateCatalog([loadTemplates("v1")], "v3")).toThrow(/default template version v3 is not among/);
    expect(() => new TemplateCatalog([loadTemplates("v1"), loadTemplates("v1")], "v1")).toThrow(/twice/);
    expect(["v10", "v3", "v1"].sort(compareVersions)).toEqual(["v1", "v3", "v10"]);
  });
});

describe("new teams", () => {
  it("get the platform default and record it in their team file", async () => {
    const { team, change } = await onV3.planCreate(new MemoryRepoTree(), teamInput());
    expect(team.templateVersion).toBe("v3");
    expect(parseTeamFile(change.files.get(SPEC)!, SPEC).templateVersion).toBe("v3");
    expect(change.files.get("teams/orders/base/namespace.yaml")).toContain("berth.dev/template-version: v3");
    expect(change.body).toContain("templates: v3");
  });

  it("may name another existing version", async () => {
    const { team, change } = await onV3.planCreate(new MemoryRepoTree(), teamInput({ templateVersion: "v1" }));
    expect(team.templateVersion).toBe("v1");
    expect(change.files.get("teams/orders/base/namespace.yaml")).not.toContain("template-version");
  });

  it("naming a version that does not exist is a 422 listing the versions, together with the other problems", async () => {
    const issues = await issuesOf(() => onV3.prepareCreate(teamInput({ templateVersion: "v9", owners: [] })));
    expect(issues).toContainEqual({
      field: "templateVersion",
      rule: "must be one of the template versions: v1, v3, v4, v5, v6",
    });
    expect(issues.map((i) => i.field)).toContain("owners");
    expect(await issuesOf(() => onV3.prepareCreate(teamInput({ templateVersion: "latest" })))).toContainEqual({
      field: "templateVersion",
      rule: "must name a template version such as v1 or v3",
    });
  });
});

describe("updates keep the team's version", () => {
  it("an update of a v1 team renders v1 even when the default is v3", async () => {
    const tree = await treeWithTeams(onV1, [teamInput()]);
    const { team, change } = await onV3.planUpdate(tree, "orders", { ...ORDERS_SPEC, description: "Orders, renamed" });
    expect(team.templateVersion).toBe("v1");
    // Only the description changed: the namespace annotation and the team file, nothing of v3.
    expect([...change.files.keys()].sort()).toEqual(["teams/orders/base/namespace.yaml", SPEC]);
    expect(change.files.get(SPEC)).toContain("templateVersion: v1");
  });

  it("a body may repeat the version, not change it: only a rollout moves a team", async () => {
    const tree = await treeWithTeams(onV1, [teamInput()]);
    await expect(onV3.planUpdate(tree, "orders", { ...ORDERS_SPEC, templateVersion: "v1" })).resolves.toBeTruthy();
    const issues = await issuesOf(onV3.planUpdate(tree, "orders", { ...ORDERS_SPEC, templateVersion: "v3" }));
    expect(issues).toEqual([
      {
        field: "templateVersion",
        rule: expect.stringMatching(/is v1; an update cannot change it to v3: a rollout moves teams/),
      },
    ]);
  });

  it("an update prepared before a rollout moved the team renders on the team's new version", async () => {
    const v1Tree = await treeWithTeams(onV1, [teamInput()]);
    const prepared = onV3.prepareUpdate("orders", { ...ORDERS_SPEC, description: "x" }, "v1");
    const moved = v1Tree.apply((await rerender(onV3, v1Tree, "orders", "v3")).files);
    const { team, change } = await onV3.planUpdate(moved, "orders", prepared);
    expect(team.templateVersion).toBe("v3");
    expect(change.files.get(SPEC)).toContain("templateVersion: v3");
    // ... unless the request named the old version: its view is stale, so it is refused.
    const pinned = onV3.prepareUpdate("orders", { ...ORDERS_SPEC, templateVersion: "v1" }, "v1");
    await expect(onV3.planUpdate(moved, "orders", pinned)).rejects.toBeInstanceOf(TeamValidationError);
  });
});

describe("team files written before versions were recorded", () => {
  it("read as v1 teams, and re-rendering them on v1 only records the version", async () => {
    const tree = await treeWithTeams(onV1, [teamInput()]);
    const { templateVersion: _v, ...legacyTeam } = validateTeam(teamInput() as TeamInput, PLATFORM);
    const legacy = tree.apply(new Map([[SPEC, serializeTeamFile(legacyTeam)]]));
    expect((await onV3.readTeam(legacy, "orders"))?.templateVersion).toBe("v1");
    const { from, files } = await rerender(onV3, legacy, "orders");
    expect(from).toBe("v1");
    expect([...files.keys()]).toEqual([SPEC]);
  });

  it("move to v3 through a rollout's plan: every generated file changes, names do not, the credential chain adds a file per cluster", async () => {
    const tree = await treeWithTeams(onV1, [
      teamInput({
        environments: ["dev", "prod"],
        roleAssignments: [{ role: "rg-contributor" }],
        owners: [OWNERS.payments],
      }),
    ]);
    const { from, to, files } = await rerender(onV3, tree, "orders", "v3");
    expect([from, to]).toEqual(["v1", "v3"]);
    const teamFiles = (await tree.list("teams/orders")).filter((p) => !p.endsWith("kustomization.yaml"));
    for (const path of teamFiles) expect(files.has(path), path).toBe(true);
    const after = tree.apply(files);
    // No file is renamed or dropped; v3's credential chain adds one file per cluster folder: the credentials that
    // follow the first (templates/v3/federated-credential-following.yaml, ADR 0021).
    const before = await tree.list("teams/orders");
    const following = before
      .filter((p) => p.endsWith("/federated-credential.yaml"))
      .map((p) => p.replace(/federated-credential\.yaml$/, "federated-credential-following.yaml"));
    expect(following).toHaveLength(3);
    expect([...(await after.list("teams/orders"))].sort()).toEqual([...before, ...following].sort());
    // Re-rendering again on v3 changes nothing.
    expect((await rerender(onV3, after, "orders")).files.size).toBe(0);
  });
});

describe("the team Kustomization's health checks", () => {
  // tests/flux/health-checks.test.ts runs the newest version's against real Flux; every other version must say the same.
  const healthChecksOf = (version: string) =>
    (parse(templateFiles(version).get("flux-kustomization.yaml")!) as { spec: { healthCheckExprs: unknown } }).spec
      .healthCheckExprs;

  it("are the same in every version, and wait while an ASO object's Ready describes an older generation", () => {
    const newest = healthChecksOf(TEMPLATE_VERSIONS.at(-1)!) as Array<{ kind: string; inProgress?: string }>;
    for (const kind of ["ResourceGroup", "UserAssignedIdentity", "FederatedIdentityCredential", "RoleAssignment"])
      expect(newest.find((check) => check.kind === kind)?.inProgress, kind).toContain("observedGeneration");
    for (const version of TEMPLATE_VERSIONS) expect(healthChecksOf(version), version).toEqual(newest);
  });
});
