/**
 * One table of the ASO kinds a team's templates render (packages/core/src/aso-kinds.ts), and everything that must
 * know them held to it: each template set, the team applier's ClusterRole (Flux applies a team's folder as it), the
 * team owners' ASO grants (berth-tenancy.yaml) and the status chain's order. The controller reads the table itself
 * (watches, status, offboarding; apps/controller/test/infra.test.ts checks its ClusterRole against it), as does the
 * harness's ASO stand-in.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { STATUS_CHAIN } from "@berth/api-contract";
import { ASO_KINDS, asoApiVersion } from "@berth/core";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { REPO_ROOT } from "../support/berth.js";

type Doc = { apiVersion?: string; kind?: string; metadata?: { name?: string }; rules?: Rule[] };
type Rule = { apiGroups?: string[]; resources?: string[]; verbs?: string[] };

const docsOf = (path: string): Doc[] =>
  parseAllDocuments(readFileSync(join(REPO_ROOT, path), "utf8")).map((d) => d.toJS() as Doc);
const isAso = (apiVersion: string | undefined) => /^[a-z.]+\.azure\.com\//.test(apiVersion ?? "");
const allows = (rules: Rule[], group: string, plural: string, verb: string) =>
  rules.some(
    (r) =>
      r.apiGroups?.includes(group) &&
      (r.resources?.includes(plural) || r.resources?.includes("*")) &&
      (r.verbs?.includes(verb) || r.verbs?.includes("*")),
  );
const clusterRole = (path: string, name: string): Rule[] => {
  const role = docsOf(path).find((d) => d.kind === "ClusterRole" && d.metadata?.name === name);
  if (!role) throw new Error(`no ClusterRole ${name} in ${path}`);
  return role.rules ?? [];
};

describe("the ASO kinds Berth renders: one table (packages/core/src/aso-kinds.ts)", () => {
  const versions = readdirSync(join(REPO_ROOT, "templates")).filter((v) => /^v\d+$/.test(v));
  const rendered = (version: string) =>
    readdirSync(join(REPO_ROOT, "templates", version))
      .filter((f) => f.endsWith(".yaml"))
      .flatMap((f) => docsOf(join("templates", version, f)))
      .filter((d) => isAso(d.apiVersion))
      .map((d) => `${d.apiVersion} ${d.kind}`);
  const table = ASO_KINDS.map((k) => `${asoApiVersion(k)} ${k.kind}`);

  it.each(versions)("names every ASO kind templates/%s renders, at the apiVersion it renders", (version) => {
    expect(table).toEqual(expect.arrayContaining([...new Set(rendered(version))]));
  });

  it("has no kind the newest template set does not render", () => {
    const newest = versions.sort((a, b) => Number(a.slice(1)) - Number(b.slice(1))).at(-1)!;
    expect(new Set(rendered(newest))).toEqual(new Set(table));
  });

  it("is what the team applier may write (flux/clusters/aks-dev-weu/berth-teams.yaml)", () => {
    const rules = clusterRole("flux/clusters/aks-dev-weu/berth-teams.yaml", "berth-team-applier");
    for (const k of ASO_KINDS)
      for (const verb of ["create", "patch", "delete"])
        expect(allows(rules, k.group, k.plural, verb), `${verb} ${k.plural}.${k.group}`).toBe(true);
  });

  it("is what team owners may declare in their namespace (flux/clusters/aks-dev-weu/berth-tenancy.yaml)", () => {
    const rules = clusterRole("flux/clusters/aks-dev-weu/berth-tenancy.yaml", "berth-team-azure-resources");
    for (const k of ASO_KINDS)
      for (const verb of ["create", "patch", "delete"])
        expect(allows(rules, k.group, k.plural, verb), `${verb} ${k.plural}.${k.group}`).toBe(true);
  });

  it("chains in the status API's order: one step per kind's condition, in the table's order", () => {
    const chained = STATUS_CHAIN.flatMap((step) => step.conditions as readonly string[]).filter((c) =>
      ASO_KINDS.some((k) => k.condition === c),
    );
    expect(chained).toEqual(ASO_KINDS.map((k) => k.condition));
  });
});
