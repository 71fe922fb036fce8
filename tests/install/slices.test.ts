/**
 * The team slices of flux/ (ADR 0022) are what infra/flux/team-slices.ts writes (`npm run generate`;
 * tests/architecture/generated.test.ts checks the files): berth-team-slices.yaml and the two marker files of each
 * slice, for aks-dev-weu with the default folders and artifact names. And the slices cover
 * every team name the API accepts: each one lands in exactly one slice. (Real Flux runs them in tests/flux.)
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { teamNameSchema } from "@berth/core";
import fc from "fast-check";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { SLICE_DEFAULTS, SLICE_LETTERS, sliceFiles } from "../../infra/flux/team-slices.js";
import { REPO_ROOT } from "../support/berth.js";

const CLUSTER = "aks-dev-weu";

describe("flux/'s team slices (ADR 0022)", () => {
  it("are one file of objects and two markers per slice", () => {
    const files = sliceFiles({ cluster: CLUSTER, ...SLICE_DEFAULTS });
    expect(files.size).toBe(1 + 2 * SLICE_LETTERS.length);
    expect(files.has(`clusters/${CLUSTER}/berth-team-slices.yaml`)).toBe(true);
  });

  it("are applied by the cluster's root, and name the artifact prefix berth.yaml renders with", () => {
    const index = parse(readFileSync(join(REPO_ROOT, "flux", "clusters", CLUSTER, "kustomization.yaml"), "utf8")) as {
      resources: string[];
    };
    expect(index.resources).toContain("berth-team-slices.yaml");
    const config = parse(readFileSync(join(REPO_ROOT, "flux", "berth", "platform", "berth.yaml"), "utf8")) as {
      platform: { fluxSource: { kind: string; artifactPrefix: string } };
    };
    expect(config.platform.fluxSource).toMatchObject({
      kind: "ExternalArtifact",
      artifactPrefix: SLICE_DEFAULTS.artifactPrefix,
    });
  });

  it("hold every team name the API accepts in exactly one slice", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z0-9][-a-z0-9]{1,39}$/), (name) => {
        if (!teamNameSchema.safeParse(name).success) return;
        expect(SLICE_LETTERS.filter((l) => name.startsWith(l))).toHaveLength(1);
      }),
    );
    expect(teamNameSchema.safeParse("9lives").success).toBe(false);
  });
});
