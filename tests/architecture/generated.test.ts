/**
 * Every generated file in the repository is what its generator writes today (scripts/generate.ts lists them all:
 * the Team CRD, the golden files, flux/'s team slices). One check for all of them; `npm run generate` mends it.
 */
import { describe, expect, it } from "vitest";
import { GENERATED, differences } from "../../scripts/generate.js";

describe("generated files", () => {
  it.each(GENERATED.map((g) => [g.what, g] as const))("%s: on disk as generated", async (_what, generated) => {
    const files = await generated.files();
    expect(files.size).toBeGreaterThan(0);
    const found = differences(generated, files);
    expect(
      found.map((d) => `${d.kind} ${d.path}`),
      "generated files differ from what the code writes: run npm run generate, then review git diff",
    ).toEqual([]);
  });
});
