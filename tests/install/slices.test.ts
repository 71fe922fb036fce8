/**
 * The team slices of flux/ (ADR 0022) are what core's cluster-install.ts writes from flux/'s platform config
 * (`npm run generate` and `berth cluster add`; tests/architecture/generated.test.ts checks the files):
 * berth-team-slices.yaml and the two marker files of each slice, for aks-dev-weu. And the slices cover
 * every team name the API accepts: each one lands in exactly one slice. (Real Flux runs them in tests/flux.)
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  platformSchema,
  SLICE_LETTERS,
  sliceFiles,
  sliceOptions,
  TEAMS_RECEIVER_FILTER,
  TEAMS_RECEIVER_RESOURCES,
  teamNameSchema,
} from "@berth/core";
import fc from "fast-check";
import { parse, parseAllDocuments } from "yaml";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/berth.js";

const CLUSTER = "aks-dev-weu";
const shipped = () =>
  platformSchema.parse(
    (parse(readFileSync(join(REPO_ROOT, "flux", "berth", "platform", "berth.yaml"), "utf8")) as { platform: unknown })
      .platform,
  );

describe("flux/'s team slices (ADR 0022)", () => {
  it("are one file of objects and two markers per slice", () => {
    const files = sliceFiles(sliceOptions(shipped(), CLUSTER));
    expect(files.size).toBe(1 + 2 * SLICE_LETTERS.length);
    expect(files.has(`clusters/${CLUSTER}/berth-team-slices.yaml`)).toBe(true);
  });

  it("are applied by the cluster's root, and cut artifacts under the prefix team Kustomizations read", () => {
    const index = parse(readFileSync(join(REPO_ROOT, "flux", "clusters", CLUSTER, "kustomization.yaml"), "utf8")) as {
      resources: string[];
    };
    expect(index.resources).toContain("berth-team-slices.yaml");
    const platform = shipped();
    expect(platform.fluxSource.kind).toBe("ExternalArtifact");
    const slices = sliceFiles(sliceOptions(platform, CLUSTER)).get(`clusters/${CLUSTER}/berth-team-slices.yaml`)!;
    expect(slices).toContain(`name: ${platform.fluxSource.artifactPrefix}{team}`);
    // A platform whose team Kustomizations read the fleet's GitRepository would never read the slices' artifacts.
    expect(() =>
      sliceOptions({ ...platform, fluxSource: { ...platform.fluxSource, kind: "GitRepository" } }, CLUSTER),
    ).toThrow(/ExternalArtifact/);
  });

  it("are woken by a Receiver that also wakes per-slice sources, only for the shards a push names (ADR 0036)", () => {
    const text = readFileSync(join(REPO_ROOT, "flux", "clusters", CLUSTER, "berth-teams.yaml"), "utf8");
    const receiver = parseAllDocuments(text)
      .map((d) => d.toJS() as { kind?: string; metadata?: { name?: string }; spec?: Record<string, unknown> } | null)
      .find((o) => o?.kind === "Receiver" && o.metadata?.name === "berth-teams");
    // What `berth cluster add` and `berth cluster slices` write there.
    expect(receiver?.spec?.resources).toEqual(TEAMS_RECEIVER_RESOURCES);
    expect(receiver?.spec?.resourceFilter).toBe(TEAMS_RECEIVER_FILTER);
    // Pull-request mode's Receiver for the forge's push webhook wakes the same sources (its body names no shards).
    const forge = parse(
      readFileSync(join(REPO_ROOT, "infra", "flux", "pull-requests", "forge-receiver.yaml"), "utf8"),
    ) as { spec: { resources: unknown } };
    expect(forge.spec.resources).toEqual(TEAMS_RECEIVER_RESOURCES);
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
