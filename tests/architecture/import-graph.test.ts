/**
 * The import graph keeps its shape (issue 40): packages never import apps, the domain (`@berth/core`) imports no
 * other workspace package but the leaf libraries (`@berth/kustomize`, `@berth/logging`: no I/O, and they import no
 * workspace package themselves), the API's services never import its HTTP layer, and no source file reaches itself
 * through its imports, type-only ones included (a cycle of types is still two modules that cannot be read apart).
 * Read from the sources with TypeScript's own scanner, so a specifier in a comment or a string is not an import.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/berth.js";

const PACKAGE = /^@berth\/([^/]+)$/;
/** Libraries with no I/O and no workspace imports of their own: the domain may build on them. */
const LEAF_PACKAGES = new Set(["kustomize", "logging"]);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

const roots = ["apps", "packages"].flatMap((top) =>
  readdirSync(join(REPO_ROOT, top))
    .map((name) => join(REPO_ROOT, top, name, "src"))
    .filter((src) => existsSync(src)),
);
const files = roots.flatMap(sourceFiles);

/** The workspace file a specifier names, or undefined for a dependency or a Node built-in. */
function resolveSpecifier(from: string, specifier: string): string | undefined {
  const workspace = PACKAGE.exec(specifier);
  if (workspace) {
    const index = join(REPO_ROOT, "packages", workspace[1]!, "src", "index.ts");
    return existsSync(index) ? index : join(REPO_ROOT, "apps", workspace[1]!, "src", "index.ts");
  }
  if (!specifier.startsWith(".")) return undefined;
  const base = resolve(dirname(from), specifier);
  const candidates = [base.replace(/\.js$/, ".ts"), base.replace(/\.js$/, ".tsx"), join(base, "index.ts")];
  const found = candidates.find((c) => existsSync(c));
  if (!found) throw new Error(`${relative(REPO_ROOT, from)} imports ${specifier}, which is no file`);
  return found;
}

const imports = new Map(
  files.map((file) => {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    const targets = importedFiles
      .map((i) => resolveSpecifier(file, i.fileName))
      .filter((t): t is string => t !== undefined);
    return [file, [...new Set(targets)]] as const;
  }),
);
const rel = (file: string) => relative(REPO_ROOT, file);

/** Strongly connected components of more than one file, or a file importing itself (Tarjan). */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || graph.get(v)?.includes(v)) found.push(component.map(rel).sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe("the import graph", () => {
  it("reads every workspace source file", () => {
    expect(files.length).toBeGreaterThan(100);
    expect(files.some((f) => rel(f) === "apps/cli/src/runtime.ts")).toBe(true);
  });

  it("has no cycle", () => {
    expect(cycles(imports)).toEqual([]);
  });

  it("finds a cycle when there is one (the check itself)", () => {
    expect(
      cycles(
        new Map([
          ["/a", ["/b"]],
          ["/b", ["/a"]],
          ["/c", ["/a"]],
        ]),
      ),
    ).toHaveLength(1);
  });

  it("keeps packages from importing apps, the domain from importing any workspace package but the leaf libraries, the leaves from importing any, and the API's services from importing its HTTP layer", () => {
    const crossings = [...imports].flatMap(([from, targets]) =>
      targets
        .filter((to) => {
          const [fromTop, fromName] = rel(from).split("/");
          const [toTop, toName] = rel(to).split("/");
          if (fromTop === "packages" && toTop === "apps") return true;
          // The API's services throw coded errors and read no request: the HTTP edge maps and parses.
          if (rel(from).startsWith("apps/api/src/services/") && rel(to).startsWith("apps/api/src/http/")) return true;
          if (fromTop !== "packages" || toName === fromName) return false;
          if (LEAF_PACKAGES.has(fromName ?? "")) return true;
          return fromName === "core" && !LEAF_PACKAGES.has(toName ?? "");
        })
        .map((to) => `${rel(from)} -> ${rel(to)}`),
    );
    expect(crossings).toEqual([]);
  });
});
