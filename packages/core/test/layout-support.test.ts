/**
 * The layouts Berth still writes but no longer installs (docs/repo-layout.md, "Retiring a layout"): the docs' table
 * and the code's agree, no end date has passed (this fails on the day after one, on purpose: retire it or move the
 * date with a reason), each old value is still its setting's default (so the default goes with it, never changes),
 * and a platform on one is told so at start.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { layoutNotices, platformSchema, RETIRING_LAYOUTS } from "../src/index.js";
import { docSection, docTable } from "./doc-tables.js";
import { makePlatform, platformInput, REPO_ROOT } from "./fixtures.js";

const rows = docTable(docSection("docs/repo-layout.md", "Retiring a layout"), "setting").map((row) =>
  row.map((cell) => cell.replace(/^`|`$/g, "")),
);

describe("retiring layouts", () => {
  it("are the same in the docs and the code", () => {
    expect(rows.map(([setting, value, installed, until]) => ({ setting, value, installed, until }))).toEqual(
      RETIRING_LAYOUTS.map(({ setting, value, installed, until }) => ({ setting, value, installed, until })),
    );
  });

  it("are none past their end date", () => {
    const today = new Date().toISOString().slice(0, 10);
    for (const l of RETIRING_LAYOUTS) expect(today <= l.until, `${l.setting}: ${l.value} until ${l.until}`).toBe(true);
  });

  it("are each their setting's default, and what flux/ installs is none of them", () => {
    const defaults = platformSchema.parse({ ...platformInput(), fluxSource: { kind: "ExternalArtifact" } });
    expect(RETIRING_LAYOUTS.filter((l) => l.setting !== "platform.fluxSource.kind").map((l) => l.of(defaults))).toEqual(
      RETIRING_LAYOUTS.filter((l) => l.setting !== "platform.fluxSource.kind").map((l) => l.value),
    );
    expect(makePlatform().fluxSource.kind).toBe("GitRepository");

    const shipped = platformSchema.parse(
      (parse(readFileSync(`${REPO_ROOT}flux/berth/platform/berth.yaml`, "utf8")) as { platform: unknown }).platform,
    );
    expect(layoutNotices(shipped)).toEqual([]);
    for (const l of RETIRING_LAYOUTS) expect(l.of(shipped), l.setting).toBe(l.installed);
  });

  it("are each named in a notice at start, with the end date and the way to move", () => {
    const notices = layoutNotices(makePlatform());
    // GitRepository: the artifact prefix names no layout then.
    expect(notices).toHaveLength(2);
    expect(notices[0]).toMatch(
      /^platform\.fluxSource\.kind is GitRepository .* until 2027-06-03, .*move as docs\/install\.md/,
    );
    expect(notices[1]).toMatch(/^platform\.layout\.appliedBy is cluster-index /);
    const artifacts = layoutNotices(makePlatform({ fluxSource: { kind: "ExternalArtifact" } }));
    expect(artifacts.map((n) => n.split(" ")[0])).toEqual([
      "platform.fluxSource.artifactPrefix",
      "platform.layout.appliedBy",
    ]);
  });
});
