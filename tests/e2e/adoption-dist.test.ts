/**
 * Adoption's kustomize build as the image runs it: the built @berth/kustomize on plain Node (no test runner's
 * module interop), which must load fast-json-patch (CommonJS) and apply a JSON 6902 patch.
 */
// needs: dist
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../support/build.js";
import { REPO_ROOT } from "../support/berth.js";

const run = promisify(execFile);

describe("the built kustomize package on Node", () => {
  beforeAll(async () => {
    await ensureBuilt();
  });

  it("builds a kustomization with a JSON 6902 patch", async () => {
    const script = `
      const kustomize = await import(${JSON.stringify(join(REPO_ROOT, "packages/kustomize/dist/index.js"))});
      const files = {
        "k/kustomization.yaml": "resources: [a.yaml]\\npatches:\\n  - target: {kind: ConfigMap}\\n    patch: |-\\n      - op: add\\n        path: /data/added\\n        value: by-patch\\n",
        "k/a.yaml": "apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: c, namespace: x}\\ndata: {a: b}\\n",
      };
      const tree = { read: async (p) => files[p], list: async () => [] };
      const built = await kustomize.kustomizeBuild(tree, "k", new kustomize.BuildBudget());
      process.stdout.write(JSON.stringify(built.objects[0].obj.data));
    `;
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], { cwd: REPO_ROOT });
    expect(JSON.parse(stdout)).toEqual({ a: "b", added: "by-patch" });
  });
});
