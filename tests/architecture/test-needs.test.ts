/**
 * Tests say what they need (issue 40): each file's `// needs: …` line parses, and a test that uses something it
 * did not declare fails at the point of use, naming the line to add — so the fast lane (files that need nothing)
 * never runs one that needs the cluster, a build, the image or a Debian tool.
 */
import { describe, expect, it } from "vitest";
import { declaredNeeds, NEEDS, testFiles } from "../../scripts/test-needs.mjs";
import { REPO_ROOT } from "../support/berth.js";
import { requireNeed } from "../support/needs.js";

describe("what test files need", () => {
  it("every test file's declaration names known needs; most need nothing", () => {
    const files = testFiles(REPO_ROOT);
    expect(files.length).toBeGreaterThan(100);
    const inProcess = files.filter((t) => t.needs.length === 0);
    expect(inProcess.length).toBeGreaterThan(files.length / 2);
    // This file, and the fast lane's own checks, need nothing.
    expect(inProcess.map((t) => t.file)).toContain("tests/architecture/test-needs.test.ts");
    expect(files.find((t) => t.file === "tests/flux/chain.test.ts")?.needs).toEqual(["cluster", "aso", "dist"]);
  });

  it("reads one declaration line, and refuses a need it does not know", () => {
    expect(declaredNeeds("/** x */\n// needs: cluster image\nimport {}")).toEqual(["cluster", "image"]);
    expect(declaredNeeds("import {}")).toEqual([]);
    expect(() => declaredNeeds("// needs: cluster docker", "x.test.ts")).toThrow(
      /x.test.ts declares unknown needs: docker/,
    );
    expect(Object.keys(NEEDS)).toEqual(["cluster", "aso", "gitea", "dist", "image", "sshd", "chromium", "tmux"]);
  });

  it("a use this file did not declare fails, naming the line to add", () => {
    expect(() => requireNeed("cluster")).toThrow(
      /test-needs\.test\.ts uses the test cluster's components .* but does not declare it: add `\/\/ needs: cluster` near its top/,
    );
  });
});
