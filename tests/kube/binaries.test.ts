/**
 * The staged build of the test components (infra/test-cluster/ensure-binaries.sh): a component's CRDs are in its
 * folder (CRDS-READY) before its programs are built, and the tests read each part as soon as it is there. `npm test`
 * relies on it to start the cluster's tests while ASO's controller still compiles (scripts/run.mjs). Built into a
 * cache of its own, with Go's build cache warm from the cluster's build (etcd links in seconds).
 */
// needs: cluster
import { execFile } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  componentCrdDir,
  componentDir,
  ENSURE_SCRIPT,
  missingComponents,
  programPath,
  REPO_ROOT,
  TestClusterBinariesMissingError,
} from "../support/test-cluster-binaries.js";

const run = promisify(execFile);

describe("ensure-binaries.sh publishes a component's CRDs before its programs", () => {
  let cache: string;
  const previous = process.env.BERTH_CACHE_DIR;
  const ensure = (...args: string[]) =>
    run("bash", [join(REPO_ROOT, ENSURE_SCRIPT), ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, BERTH_CACHE_DIR: cache },
    }).then(
      (r) => ({ code: 0, ...r }),
      (err: { code: number; stdout: string; stderr: string }) => err,
    );

  beforeAll(async () => {
    cache = await mkdtemp(join(tmpdir(), "berth-binaries-"));
    process.env.BERTH_CACHE_DIR = cache;
  });
  afterAll(async () => {
    if (previous === undefined) delete process.env.BERTH_CACHE_DIR;
    else process.env.BERTH_CACHE_DIR = previous;
    await rm(cache, { recursive: true, force: true });
  });

  it("`<component>:crds` gives the CRDs, which the tests read, and not the programs, which they refuse", async () => {
    const crdsOnly = await ensure("helm-controller:crds", "etcd:crds");
    expect(crdsOnly.code, crdsOnly.stderr).toBe(0);
    expect(crdsOnly.stdout).toContain(`helm-controller:crds=${componentDir("helm-controller")}`);
    expect(readdirSync(componentCrdDir("helm-controller")).some((f) => f.endsWith(".yaml"))).toBe(true);
    expect(existsSync(join(componentDir("etcd"), "etcd"))).toBe(false);
    expect(() => programPath("etcd", "etcd")).toThrow(TestClusterBinariesMissingError);
    expect(missingComponents(["helm-controller", "etcd"])).toHaveLength(2);
    expect((await ensure("--check", "etcd:crds")).code).toBe(0);
    expect((await ensure("--check", "etcd")).code).toBe(1);
  });

  it("the whole build follows in the same folder, and the programs are then found", async () => {
    const whole = await ensure("etcd", "helm-controller");
    expect(whole.code, whole.stderr).toBe(0);
    expect(programPath("etcd", "etcd")).toBe(join(componentDir("etcd"), "etcd"));
    expect(existsSync(join(componentDir("etcd"), "BUILD-INFO"))).toBe(true);
    expect(missingComponents(["helm-controller", "etcd"])).toEqual([]);
    expect((await ensure("--check", "etcd", "helm-controller")).code).toBe(0);
  });

  it("a component's CRDs that were never generated are refused, naming the command", () => {
    expect(() => componentCrdDir("source-controller")).toThrow(
      /CRDs not generated at .*\(ensure-binaries\.sh source-controller:crds\)/,
    );
  });
});
