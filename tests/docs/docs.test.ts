/**
 * The docs stay true to the tree (issue 22, item 4; issue 40, point 6): every repository path a Markdown file git
 * tracks cites (README.md, docs/, and the READMEs beside the code in packages/, flux/, infra/ and tests/), a
 * backticked path such as `apps/api/src/app.ts` (with `{a,b}` read as each path) or a relative Markdown link,
 * exists; and every Markdown table is well formed (the header, the separator and each row have the same number of
 * cells, or GitHub renders it wrong or not at all). Reads files only: part of the fast lane (`npm run test:unit`).
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** Every Markdown file git tracks: README.md, docs/, and the READMEs of packages, flux/, infra/ and tests/. */
function docs(): string[] {
  return execFileSync("git", ["ls-files", "-z", "--", "*.md"], { cwd: ROOT, encoding: "utf8" })
    .split("\0")
    .filter(Boolean)
    .sort();
}

/** A doc's lines outside fenced code blocks (a fence holds examples and drawings, not citations), with their numbers. */
function proseLines(text: string): Array<{ n: number; line: string }> {
  const out: Array<{ n: number; line: string }> = [];
  let fence: string | undefined;
  text.split("\n").forEach((line, i) => {
    const opens = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence === undefined && opens) fence = opens[1]![0]!.repeat(opens[1]!.length);
    else if (fence !== undefined && opens && opens[1]!.startsWith(fence)) fence = undefined;
    else if (fence === undefined) out.push({ n: i + 1, line });
  });
  return out;
}

/** The top-level entries of the repository a backticked path may start with (git-tracked folders and files). */
const TOP_LEVEL = new Set(readdirSync(ROOT).filter((name) => !["node_modules", ".git", ".berth"].includes(name)));
/** Docs shorten `packages/core/src/x.ts` to `core/src/x.ts`: a package's or app's name, then src/ or test/. */
const SHORT = new Map(
  ["packages", "apps"].flatMap((dir) => readdirSync(join(ROOT, dir)).map((name) => [name, `${dir}/${name}`] as const)),
);

/**
 * The repository paths a line cites in backticks: text of path characters only, with a slash, whose first
 * segment is a top-level entry of the repository (or, shortened, a package or app followed by src/ or test/).
 * A `:line` suffix is dropped; `{a,b}` stands for each of its paths; a glob, a placeholder (`<name>`, `$VAR`) or a
 * URL is not a path of this tree.
 */
function citedPaths(line: string): string[] {
  const out: string[] = [];
  for (const [, span] of line.matchAll(/`([^`\n]+)`/g)) {
    for (const expanded of expandBraces(span!)) {
      const path = expanded.replace(/:\d+(-\d+)?$/, "").replace(/\/$/, "");
      if (!/^[\w.@-]+(\/[\w.@-]+)+$/.test(path)) continue;
      const [first, second] = path.split("/");
      if (TOP_LEVEL.has(first!)) out.push(path);
      else if (SHORT.has(first!) && (second === "src" || second === "test"))
        out.push(`${SHORT.get(first!)!.split("/")[0]}/${path}`);
    }
  }
  return out;
}

/** `a/{b,c}/d` as `a/b/d` and `a/c/d`, as a shell expands it (groups side by side multiply; no nesting). */
function expandBraces(text: string): string[] {
  const group = /\{([^{}]*,[^{}]*)\}/.exec(text);
  if (!group) return [text];
  const [before, after] = [text.slice(0, group.index), text.slice(group.index + group[0].length)];
  return group[1]!.split(",").flatMap((choice) => expandBraces(`${before}${choice}${after}`));
}

/** The targets of a line's Markdown links that point into this repository (no scheme, no bare #anchor). */
function linkedPaths(line: string): string[] {
  const out: string[] = [];
  for (const [, target] of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target!) || target!.startsWith("#")) continue;
    out.push(decodeURIComponent(target!.split("#")[0]!));
  }
  return out;
}

/** The cells of a table row as GitHub splits it: on every `|` not escaped as `\|` (inside code spans too). */
function cells(row: string): number {
  const inner = row
    .trim()
    .replace(/^\|/, "")
    .replace(/(?<!\\)\|$/, "");
  return inner.split(/(?<!\\)\|/).length;
}

const SEPARATOR = /^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?$/;

/** Each table (a run of lines starting with `|` whose second line is a separator) whose rows do not all have the header's cell count. */
function malformedTables(lines: Array<{ n: number; line: string }>): string[] {
  const problems: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (
      !lines[i]!.line.trim().startsWith("|") ||
      (i > 0 && lines[i - 1]!.line.trim().startsWith("|") && lines[i - 1]!.n === lines[i]!.n - 1)
    )
      continue;
    const block = [lines[i]!];
    while (
      i + block.length < lines.length &&
      lines[i + block.length]!.line.trim().startsWith("|") &&
      lines[i + block.length]!.n === block.at(-1)!.n + 1
    )
      block.push(lines[i + block.length]!);
    const [header, separator, ...rows] = block;
    if (!separator || !SEPARATOR.test(separator.line.trim())) {
      problems.push(`line ${header!.n}: a table without a separator row (| --- | under the header)`);
      continue;
    }
    const want = cells(header!.line);
    for (const row of [separator, ...rows]) {
      const have = cells(row.line);
      if (have !== want) problems.push(`line ${row.n}: ${have} cells, the header has ${want}`);
    }
  }
  return problems;
}

/**
 * A build output a doc cites (apps/controller/dist/main.js) stands for the source it is built from, so the check
 * holds on a checkout nothing was built in (the fast lane, `npm run test:unit`).
 */
function sourceOf(path: string): string {
  const built = /^((?:apps|packages)\/[^/]+)\/dist\/(.+)\.js$/.exec(path);
  return built ? `${built[1]}/src/${built[2]}.ts` : path;
}

describe("the docs", () => {
  const files = docs();

  it("are found (README.md, docs/ and the READMEs beside the code)", () => {
    expect(files).toContain("README.md");
    expect(files).toContain("docs/architecture.md");
    expect(files).toContain("flux/README.md");
    expect(files).toContain("packages/kube-runtime/README.md");
  });

  it("read `{a,b}` in a cited path as each of its paths", () => {
    expect(citedPaths("see `packages/core/src/{rollout,adoption}/` and `apps/{api,cli}/src/{main,wiring}.ts`")).toEqual(
      [
        "packages/core/src/rollout",
        "packages/core/src/adoption",
        "apps/api/src/main.ts",
        "apps/api/src/wiring.ts",
        "apps/cli/src/main.ts",
        "apps/cli/src/wiring.ts",
      ],
    );
  });

  it.each(files)("%s cites only paths that exist", (file) => {
    const missing: string[] = [];
    for (const { n, line } of proseLines(readFileSync(join(ROOT, file), "utf8"))) {
      for (const path of citedPaths(line))
        if (!existsSync(join(ROOT, sourceOf(path)))) missing.push(`line ${n}: \`${path}\``);
      for (const target of linkedPaths(line)) {
        const at = resolve(ROOT, dirname(file), target);
        if (!existsSync(at)) missing.push(`line ${n}: link to ${target} (${relative(ROOT, at)})`);
      }
    }
    expect(missing).toEqual([]);
  });

  it.each(files)("%s has well-formed tables", (file) => {
    expect(malformedTables(proseLines(readFileSync(join(ROOT, file), "utf8")))).toEqual([]);
  });
});

describe("the checks themselves", () => {
  it("count a table's cells as GitHub does, and name a row with too many or too few", () => {
    const table = (rows: string[]) => malformedTables(rows.map((line, i) => ({ n: i + 1, line })));
    expect(table(["| a | b |", "| --- | --- |", "| 1 | 2 |"])).toEqual([]);
    expect(table(["| a | `x \\| y` |", "|---|---|", "| 1 | 2 |"])).toEqual([]);
    // The offboarding table of controller.md before issue 22: 4 header cells, 5 in the separator.
    expect(table(["| a | b | c | d |", "| - | - | - | - | - |", "| 1 | 2 | 3 | 4 |"])).toEqual([
      "line 2: 5 cells, the header has 4",
    ]);
    expect(table(["| a | b |", "| --- | --- |", "| 1 | 2 | 3 |", "| 1 |"])).toEqual([
      "line 3: 3 cells, the header has 2",
      "line 4: 1 cells, the header has 2",
    ]);
    expect(table(["| a | b |", "| 1 | 2 |"])).toEqual([
      "line 1: a table without a separator row (| --- | under the header)",
    ]);
  });

  it("take backticked repository paths and relative links, not code, URLs or placeholders", () => {
    expect(
      citedPaths("see `apps/api/src/app.ts:12` and `docs/api.md`, not `npm test`, `a/b` or `apps/<name>/x`"),
    ).toEqual(["apps/api/src/app.ts", "docs/api.md"]);
    // ADR 0010 cited `core/src/drift.ts` before issue 22: shortened, and no such file.
    expect(citedPaths("`core/src/drift.ts` and `api/test/x.ts`; not `config/crd/bases` (Flux's own tree)")).toEqual([
      "packages/core/src/drift.ts",
      "apps/api/test/x.ts",
    ]);
    expect(linkedPaths("[ADR](decisions/0001-stack.md#why), [site](https://example.com), [here](#top)")).toEqual([
      "decisions/0001-stack.md",
    ]);
    expect(proseLines("a\n```\n`apps/x.ts`\n```\nb").map((l) => l.line)).toEqual(["a", "b"]);
  });
});
