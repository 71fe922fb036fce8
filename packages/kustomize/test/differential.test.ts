/**
 * Adoption's kustomize build (packages/kustomize/src/build.ts) against kustomize itself: every kustomization
 * of the adoption fixtures and of tests/fixtures/kustomize, built both ways, must give the same objects
 * (`kubectl kustomize`, kustomize v5.5, with Flux's load restrictions: none inside the repo). Order is not
 * compared (Flux applies in its own order). The refusals are tested against kustomize too: what adoption
 * refuses as kustomize's own error, kustomize refuses.
 */
import { execFile } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { parseAllDocuments } from "yaml";
import { describe, expect, it } from "vitest";
import { BuildBudget, kustomizeBuild, KustomizeBuildError } from "../src/build.js";
import { withoutPlainVars } from "../src/flux-substitute.js";
import { REPO_ROOT, treeFromFolder } from "./support.js";

const run = promisify(execFile);
const ROOTS = [
  "tests/fixtures/adoption/repo",
  "tests/fixtures/adoption/platform",
  "tests/fixtures/adoption/flux-namespace",
  "tests/fixtures/kustomize/features",
].map((r) => join(REPO_ROOT, r));

async function kubectlKustomize(dir: string): Promise<Array<Record<string, unknown>>> {
  const { stdout } = await run("kubectl", ["kustomize", "--load-restrictor", "LoadRestrictionsNone", dir], {
    maxBuffer: 16 * 1024 * 1024,
  });
  return parseAllDocuments(stdout, { version: "1.1" })
    .map((d) => d.toJS() as Record<string, unknown>)
    .filter((o) => o !== null);
}

const key = (o: Record<string, unknown>) => {
  const meta = o.metadata as { name?: string; namespace?: string } | undefined;
  return `${o.apiVersion}|${o.kind}|${meta?.namespace ?? ""}|${meta?.name}`;
};
const sorted = (objects: Array<Record<string, unknown>>) =>
  [...objects].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));

function kustomizationDirs(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name === "kustomization.yaml") out.push(dir);
    }
  };
  walk(root);
  return out.sort();
}

describe("adoption builds what kustomize builds", () => {
  for (const root of ROOTS) {
    const tree = treeFromFolder(root);
    for (const dir of kustomizationDirs(root)) {
      const rel = relative(root, dir);
      it(`${relative(REPO_ROOT, root)}: ${rel}`, async () => {
        const ours = await kustomizeBuild(tree, rel, new BuildBudget());
        expect(sorted(ours.objects.map((o) => withoutPlainVars(o.obj) as Record<string, unknown>))).toEqual(
          sorted(await kubectlKustomize(dir)),
        );
      });
    }
  }

  it("what adoption refuses as kustomize's own error, kustomize refuses too", async () => {
    const tree = treeFromFolder(
      join(REPO_ROOT, "tests/fixtures/kustomize/features"),
      new Map([["twice/kustomization.yaml", "resources:\n  - ../base/policy.yaml\n  - ../base/policy.yaml\n"]]),
    );
    const err = await kustomizeBuild(tree, "twice", new BuildBudget()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KustomizeBuildError);
    expect((err as Error).message).toBe(
      "twice/kustomization.yaml: lists resource ../base/policy.yaml twice (kustomize refuses a resource it already has)",
    );
    const { mkdtemp, writeFile, cp, rm } = await import("node:fs/promises");
    const tmp = await mkdtemp(join((await import("node:os")).tmpdir(), "berth-kustomize-"));
    try {
      await cp(join(REPO_ROOT, "tests/fixtures/kustomize/features/base"), join(tmp, "base"), { recursive: true });
      await writeFile(join(tmp, "kustomization.yaml"), "resources:\n  - base/policy.yaml\n  - base/policy.yaml\n");
      await expect(kubectlKustomize(tmp)).rejects.toThrow(/already registered id|may not add resource/);
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  });
});
