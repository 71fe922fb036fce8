import { readFileSync } from "node:fs";
import { expect } from "vitest";
import { declaredNeeds, NEEDS, type Need } from "../../scripts/test-needs.mjs";

/**
 * Called where a test starts using something beyond Node and git (the cluster, the built apps, the image, sshd,
 * Chromium, tmux): the test file must say so (`// needs: …`, scripts/test-needs.mjs), or it fails here naming
 * the line to add. So the fast lane (files that need nothing) never runs one that does, and `npm test -- <file>`
 * prepares what the file uses. Outside vitest (benchmarks run by tsx) there is no test file and nothing to check.
 */
export function requireNeed(need: Need): void {
  let file: string | undefined;
  try {
    file = expect.getState().testPath;
  } catch {
    return;
  }
  if (!file) return;
  const declared = declaredNeeds(readFileSync(file, "utf8"), file);
  if (!declared.includes(need))
    throw new Error(
      `${file} uses ${NEEDS[need]} but does not declare it: add \`// needs: ${[...declared, need].join(" ")}\` near its top`,
    );
}
