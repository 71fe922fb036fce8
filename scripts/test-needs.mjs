// What each test file needs besides Node and git, as it declares it: one line `// needs: cluster dist` near its top.
// Read by scripts/run.mjs (the fast lane runs the files that need nothing; `npm test -- <file>` prepares only what the
// file needs) and by tests/support/needs.ts (a file that uses something it did not declare fails, naming it).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

/** Everything a test may need beyond Node and git, and what prepares it (`npm test` prepares all of it). */
export const NEEDS = {
  cluster:
    "the test cluster's components built from their Go modules, ASO's CRDs among them (infra/test-cluster/ensure-binaries.sh)",
  aso: "Azure Service Operator's controller built from its Go module (infra/test-cluster/ensure-binaries.sh aso)",
  gitea: "Gitea, a real forge, built from its Go module (infra/test-cluster/ensure-binaries.sh gitea)",
  dist: "the apps built (their dist/), run as processes",
  image: "the OCI image built (npm run image)",
  sshd: "OpenSSH's server (infra/test-tools)",
  chromium: "a headless Chromium (infra/test-tools)",
  tmux: "tmux, for a real terminal (infra/test-tools)",
};

const DECLARATION = /^\/\/ needs: ([a-z ]+)$/m;

/** The needs `text` (a test file) declares; throws on a need that is not in NEEDS. */
export function declaredNeeds(text, file = "the file") {
  const m = DECLARATION.exec(text.slice(0, 4000));
  if (!m) return [];
  const needs = m[1].trim().split(/\s+/);
  const unknown = needs.filter((n) => !(n in NEEDS));
  if (unknown.length)
    throw new Error(`${file} declares unknown needs: ${unknown.join(", ")} (known: ${Object.keys(NEEDS).join(", ")})`);
  return needs;
}

/** Every test file of the workspace (repo-relative), with what it declares. */
export function testFiles(root) {
  const walk = (dir) =>
    readdirSync(dir).flatMap((name) => {
      if (name === "node_modules" || name === "dist" || name === "fixtures") return [];
      const path = join(dir, name);
      return statSync(path).isDirectory() ? walk(path) : name.endsWith(".test.ts") ? [path] : [];
    });
  const dirs = [
    ...["packages", "apps"].flatMap((top) => readdirSync(join(root, top)).map((name) => join(root, top, name, "test"))),
    join(root, "tests"),
  ].filter((d) => statSync(d, { throwIfNoEntry: false })?.isDirectory());
  return dirs
    .flatMap(walk)
    .map((path) => ({
      file: relative(root, path),
      needs: declaredNeeds(readFileSync(path, "utf8"), relative(root, path)),
    }))
    .sort((a, b) => a.file.localeCompare(b.file));
}
