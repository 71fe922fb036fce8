/**
 * Everything in the repository that a program writes, in one list: `npm run generate` rewrites it all, and
 * tests/architecture/generated.test.ts (in every `npm test`) fails while anything on disk differs from it. Each
 * entry owns a set of files, or a whole folder (a file in it that is no longer generated is removed).
 *
 *   npm run generate            write every generated file
 *   npm run generate -- --check list what differs, exit 1 if anything does (writes nothing)
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { parse, stringify } from "yaml";
import { platformSchema, sliceFiles, sliceOptions } from "@berth/core";
import { teamCrd } from "../apps/controller/src/crd.js";
import { EXAMPLES, renderExample, TEMPLATE_VERSIONS } from "../packages/core/test/fixtures.js";
import { filesOf } from "../tests/support/folder.js";

export const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));

export interface Generated {
  /** What it is and what writes it, for a reader of the check's failure. */
  what: string;
  /** Its files by path from the repository root. */
  files(): Promise<Map<string, string>>;
  /** A folder it owns whole: any other file in it is stale. */
  owns?: string;
  /** Hand-written files inside `owns` that stay. */
  keep?: readonly string[];
}

export const TEAM_CRD_FILE = "infra/controller/crds/berth.dev_teams.yaml";

export const GENERATED: readonly Generated[] = [
  {
    what: "the Team CRD, from core's zod team spec (apps/controller/src/crd.ts)",
    files: async () =>
      new Map([
        [
          TEAM_CRD_FILE,
          "# Generated from packages/core's teamSpecSchema by apps/controller/src/crd.ts — do not edit.\n" +
            "# Regenerate: npm run generate\n" +
            stringify(teamCrd(), { version: "1.1", lineWidth: 0 }),
        ],
      ]),
  },
  {
    what: "the golden files: each example team of packages/core/test/fixtures.ts rendered with each template version",
    owns: "tests/golden",
    keep: ["tests/golden/README.md"],
    files: async () => {
      const files = new Map<string, string>();
      for (const version of TEMPLATE_VERSIONS)
        for (const example of EXAMPLES)
          for (const [path, content] of await renderExample(example, version))
            files.set(`tests/golden/${version}/${example.name}/${path}`, content);
      return files;
    },
  },
  {
    what: "flux/'s team slices for aks-dev-weu, from flux/'s platform config (core's cluster-install.ts, ADR 0022)",
    files: async () => {
      const files = new Map<string, string>();
      const config = parse(readFileSync(join(REPO_ROOT, "flux/berth/platform/berth.yaml"), "utf8")) as {
        platform: unknown;
      };
      for (const [path, content] of sliceFiles(sliceOptions(platformSchema.parse(config.platform), "aks-dev-weu")))
        files.set(`flux/${path}`, content);
      return files;
    },
  },
];

export interface Difference {
  path: string;
  /** changed: the bytes differ; missing: not on disk; stale: on disk in an owned folder, no longer generated. */
  kind: "changed" | "missing" | "stale";
  what: string;
}

/**
 * Every file of `files` (what `generated` writes, from its `files()`) that differs from the repository at `root`, in
 * path order. The caller renders once and passes the result, here and to write().
 */
export function differences(generated: Generated, files: ReadonlyMap<string, string>, root = REPO_ROOT): Difference[] {
  const found: Difference[] = [];
  for (const [path, content] of files) {
    const onDisk = join(root, path);
    if (!existsSync(onDisk)) found.push({ path, kind: "missing", what: generated.what });
    else if (readFileSync(onDisk, "utf8") !== content) found.push({ path, kind: "changed", what: generated.what });
  }
  if (generated.owns)
    for (const relativePath of filesOf(join(root, generated.owns)).keys()) {
      const path = `${generated.owns}/${relativePath.split(sep).join("/")}`;
      if (!files.has(path) && !generated.keep?.includes(path))
        found.push({ path, kind: "stale", what: generated.what });
    }
  return found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** Removes a file, then each folder above it that is left empty, up to (not including) `top`. */
function removeWithEmptyParents(file: string, top: string) {
  rmSync(file);
  for (let dir = dirname(file); dir.startsWith(top) && dir !== top && readdirSync(dir).length === 0; dir = dirname(dir))
    rmSync(dir, { recursive: true });
}

/** Brings the repository at `root` in line with `files` (what `generated` writes); answers what it changed. */
export function write(generated: Generated, files: ReadonlyMap<string, string>, root = REPO_ROOT): Difference[] {
  const found = differences(generated, files, root);
  for (const d of found) {
    const full = join(root, d.path);
    if (d.kind === "stale") removeWithEmptyParents(full, join(root, generated.owns ?? ""));
    else {
      mkdirSync(dirname(full), { recursive: true });
      writeFileSync(full, files.get(d.path) ?? "");
    }
  }
  return found;
}

async function main(check: boolean) {
  let count = 0;
  for (const generated of GENERATED) {
    const files = await generated.files();
    const found = check ? differences(generated, files) : write(generated, files);
    for (const d of found) console.log(`${d.kind.padEnd(7)} ${d.path}`);
    count += found.length;
  }
  if (check && count > 0) {
    console.error(`${count} generated file(s) differ from what the code generates: run npm run generate`);
    process.exit(1);
  }
  console.log(check ? "every generated file is up to date" : `${count} file(s) written or removed`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main(process.argv.includes("--check"));
