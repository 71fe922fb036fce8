import { readFileSync } from "node:fs";
import { expect } from "vitest";
import { REPO_ROOT } from "./fixtures.js";

/** A section of a doc (from its `## heading` to the next), failing the test when the doc has none. */
export function docSection(file: string, heading: string): string {
  const doc = readFileSync(`${REPO_ROOT}${file}`, "utf8");
  const start = doc.indexOf(`\n## ${heading}\n`);
  expect(start, `${file} has a section '${heading}'`).toBeGreaterThan(0);
  const end = doc.indexOf("\n## ", start + 1);
  return doc.slice(start, end < 0 ? undefined : end);
}

/** The rows of a section's table whose header row starts with `firstHeader`, as lists of cells. */
export function docTable(section: string, firstHeader: string): string[][] {
  const lines = section.split("\n");
  const header = lines.findIndex((l) => l.startsWith(`| ${firstHeader} |`));
  expect(header, `a table headed "${firstHeader}"`).toBeGreaterThan(0);
  const rows: string[][] = [];
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith("|")) break;
    rows.push(
      line
        .slice(1, -1)
        .split(" | ")
        .map((c) => c.trim()),
    );
  }
  return rows;
}
