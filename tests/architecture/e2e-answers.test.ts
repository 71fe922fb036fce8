/**
 * tests/e2e read the API's answers through @berth/api-contract's schemas (tests/support/contract.ts: readAnswer,
 * readProblem), so an answer of a shape the contract does not declare fails a test. A bare `.json()` reads any
 * shape: none is allowed in tests/e2e but the few listed here, each with why. Calls are found with TypeScript's
 * parser, so `.json()` in a comment or a string does not count.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/berth.js";

/** Bare `.json()` reads a file may keep: how many, and why they are no contract answers. */
const ALLOWED: Record<string, { reads: number; why: string }> = {
  "tests/e2e/api.test.ts": {
    reads: 2,
    why: "GET /openapi.json: the OpenAPI document, not an answer the contract declares",
  },
  "tests/e2e/openapi.test.ts": { reads: 1, why: "GET /openapi.json: the document whose declarations it checks" },
};

/** The line of each `<expr>.json()` call (no arguments) in `source`. */
export function jsonReads(source: string, file = "x.ts"): number[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true);
  const lines: number[] = [];
  const visit = (node: ts.Node) => {
    if (
      ts.isCallExpression(node) &&
      node.arguments.length === 0 &&
      ts.isPropertyAccessExpression(node.expression) &&
      node.expression.name.text === "json"
    )
      lines.push(sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1);
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return lines;
}

describe("tests/e2e read answers through the contract", () => {
  it("finds calls, not mentions", () => {
    expect(jsonReads('const a = res.json();\n// res.json()\nconst b = "x.json()";\nawait (await f()).json();')).toEqual(
      [1, 4],
    );
    expect(jsonReads("readAnswer(res, teamResponse); res.json(schema); JSON.parse(res.body);")).toEqual([]);
  });

  it("no test file in tests/e2e reads a body with a bare .json() but the listed exceptions", () => {
    const dir = join(REPO_ROOT, "tests", "e2e");
    const found: Record<string, number[]> = {};
    for (const name of readdirSync(dir).filter((n) => n.endsWith(".ts"))) {
      const lines = jsonReads(readFileSync(join(dir, name), "utf8"), name);
      if (lines.length) found[`tests/e2e/${name}`] = lines;
    }
    const unexpected = Object.entries(found)
      .filter(([file, lines]) => lines.length !== (ALLOWED[file]?.reads ?? 0))
      .map(([file, lines]) => `${file}:${lines.join(",")}`);
    expect(
      unexpected,
      "read these answers with readAnswer(res, <the route's schema>) or readProblem(res) (tests/support/contract.ts)",
    ).toEqual([]);
    // An exception that no longer applies goes from the list.
    expect(Object.keys(ALLOWED).filter((file) => !found[file])).toEqual([]);
  });
});
