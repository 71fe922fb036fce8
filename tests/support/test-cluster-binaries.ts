/**
 * Where the real components of the test cluster are: built from their Go modules by
 * `infra/test-cluster/ensure-binaries.sh` into `${BERTH_CACHE_DIR:-~/.cache/berth}/test-cluster/<component>/`,
 * one folder per version and wrapper content (the key below is the script's). A component whose wrapper
 * changed since its build counts as missing, so a test says which script to run instead of running an old
 * binary.
 */
import { createHash } from "node:crypto";
import { accessSync, constants, existsSync, readdirSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const ENSURE_SCRIPT = "infra/test-cluster/ensure-binaries.sh";
const WRAPPERS = join(REPO_ROOT, "infra", "test-cluster", "go");

/** Each component (a wrapper module under infra/test-cluster/go) and the programs it builds. */
export const COMPONENT_PROGRAMS = {
  kubernetes: ["kube-apiserver", "kube-controller-manager"],
  etcd: ["etcd"],
  "source-controller": ["source-controller"],
  "kustomize-controller": ["kustomize-controller"],
  "notification-controller": ["notification-controller"],
  "source-watcher": ["source-watcher"],
  /** Its CRDs only: the tests check admission of HelmReleases, not helm-controller. */
  "helm-controller": [],
  aso: ["aso-controller"],
  /** Not a cluster component: a forge for the tests of pushing to one (tests/support/gitea.ts), built on demand. */
  gitea: ["gitea"],
} as const;
export type Component = keyof typeof COMPONENT_PROGRAMS;
export type Program = (typeof COMPONENT_PROGRAMS)[Component][number];

export class TestClusterBinariesMissingError extends Error {
  constructor(readonly missing: string[]) {
    super(
      `test cluster components missing: ${missing.join("; ")}. Run \`bash ${ENSURE_SCRIPT}\` from the repository root ` +
        "(builds them from their Go modules into ${BERTH_CACHE_DIR:-$HOME/.cache/berth}/test-cluster; `npm test` does it first).",
    );
    this.name = "TestClusterBinariesMissingError";
  }
}

export function cacheRoot(): string {
  return join(process.env.BERTH_CACHE_DIR || join(process.env.HOME || homedir(), ".cache", "berth"), "test-cluster");
}

/**
 * sha256 over "<name>\0<content>\0" of the wrapper's files in name order, comment lines (`//`, `#`) left out:
 * ensure-binaries.sh's `wrapper_hash` (grep -v keeps the remaining lines, each with its newline).
 */
export function wrapperHash(component: Component): string {
  const dir = join(WRAPPERS, component);
  const hash = createHash("sha256");
  for (const name of readdirSync(dir).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
    const lines = readFileSync(join(dir, name), "utf8").split("\n");
    const kept = (lines.at(-1) === "" ? lines.slice(0, -1) : lines).filter((line) => !/^\s*(\/\/|#)/.test(line));
    hash.update(`${name}\0${kept.map((line) => `${line}\n`).join("")}\0`);
  }
  return hash.digest("hex").slice(0, 12);
}

/** The version the wrapper's go.mod requires of its main module (build.env's MAIN_MODULE). */
export function componentVersion(component: Component): string {
  const env = readFileSync(join(WRAPPERS, component, "build.env"), "utf8");
  const mainModule = /^MAIN_MODULE=(\S+)/m.exec(env)?.[1];
  if (!mainModule) throw new Error(`infra/test-cluster/go/${component}/build.env names no MAIN_MODULE`);
  const goMod = readFileSync(join(WRAPPERS, component, "go.mod"), "utf8");
  const escaped = mainModule.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  const version = new RegExp(`^\\s*(?:require\\s+)?${escaped}\\s+(v\\S+)`, "m").exec(goMod)?.[1];
  if (!version) throw new Error(`infra/test-cluster/go/${component}/go.mod does not require ${mainModule}`);
  return version;
}

/** The folder of the component's current build, whether or not it exists. */
export function componentDir(component: Component): string {
  return join(cacheRoot(), component, `${componentVersion(component)}-${wrapperHash(component)}`);
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Why the components cannot be used: one entry per missing or outdated component. */
export function missingComponents(components: readonly Component[]): string[] {
  const missing: string[] = [];
  for (const component of components) {
    const dir = componentDir(component);
    const absent = COMPONENT_PROGRAMS[component].filter((p) => !executable(join(dir, p)));
    if (!existsSync(join(dir, "BUILD-INFO")) || absent.length)
      missing.push(`${component} (${componentVersion(component)}) not built at ${dir}`);
  }
  return missing;
}

/** The component's folder; throws TestClusterBinariesMissingError when it is not built. */
export function requireComponent(component: Component): string {
  const missing = missingComponents([component]);
  if (missing.length) throw new TestClusterBinariesMissingError(missing);
  return componentDir(component);
}

/** A program's path; an environment override (e.g. KUBE_APISERVER_BIN) wins when set. */
export function programPath(component: Component, program: Program, envOverride?: string): string {
  const override = envOverride ? process.env[envOverride] : undefined;
  if (override) {
    if (!executable(override))
      throw new TestClusterBinariesMissingError([`${envOverride}=${override} is not executable`]);
    return override;
  }
  return join(requireComponent(component), program);
}

/**
 * The CRD files a component's build holds (its module's own, or generated from it). They are in place before its
 * programs are built (CRDS-READY), so a cluster gets ASO's CRDs while ASO's controller still compiles.
 */
export function componentCrdDir(component: Component): string {
  const dir = componentDir(component);
  if (!existsSync(join(dir, "BUILD-INFO")) && !existsSync(join(dir, "CRDS-READY")))
    throw new TestClusterBinariesMissingError([
      `${component} (${componentVersion(component)}): CRDs not generated at ${dir} (ensure-binaries.sh ${component}:crds)`,
    ]);
  return join(dir, "crds");
}
