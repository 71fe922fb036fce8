/**
 * The retirement rule of docs/templates.md ("Retiring a version") holds on this checkout: every version folder has a
 * row with an end date, a retired version has no folder, none is kept past its end date, and each legacy branch
 * names code that exists and versions that exist (for a placeholder: exactly the versions whose templates use it).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { LEGACY_TEMPLATE_VERSION } from "@berth/core";
import { docSection, docTable } from "./doc-tables.js";
import { REPO_ROOT, TEMPLATE_VERSIONS, TEMPLATES_DIR } from "./fixtures.js";

const section = docSection("docs/templates.md", "Retiring a version");
const table = (firstHeader: string) => docTable(section, firstHeader);

const code = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? "");
const versionsIn = (cell: string) => code(cell).filter((c) => /^v[1-9][0-9]*$/.test(c));

describe("template versions and their end dates", () => {
  const rows = table("version").map(([version = "", shipped = "", until = ""]) => ({
    version: code(version)[0] ?? version,
    shipped,
    until,
  }));

  it("name every version folder, and no retired version has one", () => {
    const retired = rows.filter((r) => r.until.startsWith("retired")).map((r) => r.version);
    expect(
      rows.map((r) => r.version).filter((v) => !retired.includes(v)),
      "the table's versions that are not retired are templates/'s folders",
    ).toEqual([...TEMPLATE_VERSIONS]);
    for (const v of retired) expect(existsSync(`${TEMPLATES_DIR}/${v}`), `templates/${v} is retired`).toBe(false);
  });

  it("keep none past its end date, and the shipped default has none", () => {
    const config = parse(readFileSync(`${REPO_ROOT}flux/berth/platform/berth.yaml`, "utf8")) as {
      platform: { templateVersion: string };
    };
    const today = new Date().toISOString().slice(0, 10);
    for (const { version, shipped, until } of rows) {
      if (version === config.platform.templateVersion) {
        expect(shipped, `${version} is the shipped default`).toMatch(/^since /);
        continue;
      }
      if (until.startsWith("retired")) continue;
      expect(until, `${version}: an end date`).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(
        until >= today,
        `${version} is past its end date ${until}: retire it (docs/templates.md, "Retiring a version")`,
      ).toBe(true);
    }
  });
});

describe("legacy branches", () => {
  const rows = table("legacy branch").map(([branch = "", where = "", keptBy = ""]) => ({
    branch,
    where,
    keptBy: versionsIn(keptBy),
  }));

  it("are kept by versions that exist, in code that exists", () => {
    expect(rows.length).toBeGreaterThan(0);
    for (const { branch, where, keptBy } of rows) {
      expect(keptBy.length, branch).toBeGreaterThan(0);
      for (const v of keptBy)
        expect(TEMPLATE_VERSIONS, `${branch}: kept by ${v}; once ${v} is retired, remove the branch`).toContain(v);
      const [identifier = "", file = ""] = code(where);
      expect(existsSync(`${REPO_ROOT}${file}`), `${branch}: ${file}`).toBe(true);
      expect(readFileSync(`${REPO_ROOT}${file}`, "utf8"), `${branch}: ${identifier} in ${file}`).toContain(identifier);
    }
  });

  it("a team file without a version reads as the version that keeps that branch", () => {
    const row = rows.find((r) => r.where.includes("LEGACY_TEMPLATE_VERSION"));
    expect(row?.keptBy).toEqual([LEGACY_TEMPLATE_VERSION]);
  });

  it("a legacy placeholder is used by exactly the versions that keep it", () => {
    const placeholders = rows.filter((r) => r.branch.startsWith("placeholder "));
    expect(placeholders.length).toBeGreaterThan(0);
    for (const { branch, keptBy } of placeholders) {
      const name = code(branch)[0] ?? "";
      const uses = new RegExp(`(forEach: *${name}\\b|\\{\\{ *${name}[ .}])`);
      const users = TEMPLATE_VERSIONS.filter((v) =>
        readdirSync(`${TEMPLATES_DIR}/${v}`).some((f) => uses.test(readFileSync(`${TEMPLATES_DIR}/${v}/${f}`, "utf8"))),
      );
      expect(users, `the versions whose templates use ${name}`).toEqual(keptBy);
    }
  });
});
