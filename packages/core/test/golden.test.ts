/**
 * Golden files: tests/golden/<example>/<repo path> holds every file planCreate writes for each example
 * team on an empty repo. `UPDATE_GOLDEN=1 pnpm exec vitest run packages/core` rewrites them; the diff of
 * tests/golden/ is what a reviewer reviews when templates or rendering change (see tests/golden/README.md).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { EXAMPLES, GOLDEN_DIR, renderExample } from "./fixtures.js";

const UPDATE = process.env.UPDATE_GOLDEN === "1";

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const full = join(d, name);
      if (statSync(full).isDirectory()) walk(full);
      else out.push(relative(dir, full).split("\\").join("/"));
    }
  };
  walk(dir);
  return out.sort();
}

describe.each(EXAMPLES.map((ex) => [ex.name, ex] as const))("golden files of example %s", (name, ex) => {
  const dir = join(GOLDEN_DIR, name);

  it(`match byte for byte (${ex.covers})`, async () => {
    const rendered = await renderExample(ex);
    if (UPDATE) {
      rmSync(dir, { recursive: true, force: true });
      for (const [path, content] of rendered) {
        mkdirSync(dirname(join(dir, path)), { recursive: true });
        writeFileSync(join(dir, path), content);
      }
    }
    const onDisk = filesUnder(dir);
    expect(onDisk.length, `no golden files in ${dir}: run UPDATE_GOLDEN=1 pnpm exec vitest run packages/core`).toBeGreaterThan(0);
    // Same set of paths: a file that is no longer rendered (or newly rendered) is a golden diff too.
    expect([...rendered.keys()].sort()).toEqual(onDisk);
    for (const path of onDisk) {
      // Exact text (so exact bytes): a stray BOM, CRLF or trailing-space change fails here.
      expect(rendered.get(path), `${name}/${path} differs from its golden file`).toBe(readFileSync(join(dir, path), "utf8"));
    }
  });
});

it("every example has a golden folder and no golden folder is left without an example", () => {
  const examples = new Set(EXAMPLES.map((e) => e.name));
  if (UPDATE && existsSync(GOLDEN_DIR)) {
    for (const n of readdirSync(GOLDEN_DIR)) {
      if (statSync(join(GOLDEN_DIR, n)).isDirectory() && !examples.has(n)) rmSync(join(GOLDEN_DIR, n), { recursive: true });
    }
  }
  const folders = existsSync(GOLDEN_DIR) ? readdirSync(GOLDEN_DIR).filter((n) => statSync(join(GOLDEN_DIR, n)).isDirectory()) : [];
  expect(folders.sort()).toEqual(EXAMPLES.map((e) => e.name).sort());
});
