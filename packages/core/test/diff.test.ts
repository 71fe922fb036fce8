/**
 * unifiedDiff cuts the common head and tail before diffing. Its diff is always correct (applied to the
 * old text it gives the new one), and it is createTwoFilesPatch's byte for byte whenever the alignment is
 * unique (no repeated lines around a change; with repeated lines both are valid, they may align differently).
 */
import { applyPatch, createTwoFilesPatch } from "diff";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { unifiedDiff } from "@berth/core";

// Few distinct lines, so repeated lines (where a diff has several alignments) are common.
const line = fc.constantFrom("a", "b", "c", "labels:", "  x: 1", "  y: 2", "", "---");
const file = fc.array(line, { maxLength: 40 }).map((ls) => (ls.length ? `${ls.join("\n")}\n` : ""));
const edit = fc
  .tuple(file, fc.array(fc.tuple(fc.nat(40), fc.nat(3), fc.array(line, { maxLength: 3 })), { maxLength: 3 }))
  .map(([text, edits]) => {
    const lines = text === "" ? [] : text.slice(0, -1).split("\n");
    for (const [at, del, ins] of edits) lines.splice(Math.min(at, lines.length), del, ...ins);
    return [text, lines.length ? `${lines.join("\n")}\n` : ""] as const;
  });

describe("unifiedDiff", () => {
  it("is a correct diff for edits of files with many repeated lines (property)", () => {
    fc.assert(
      fc.property(edit, fc.boolean(), ([before, after], trailing) => {
        const b = trailing || after === "" ? after : after.slice(0, -1);
        expect(applyPatch(before, unifiedDiff("f.yaml", before, b))).toBe(b);
      }),
      { numRuns: 3000 },
    );
  });

  it("equals createTwoFilesPatch when every line is distinct (property)", () => {
    const distinct = fc.uniqueArray(
      fc.string({ minLength: 1, maxLength: 6 }).filter((l) => !l.includes("\n") && !l.includes("\r")),
      { minLength: 1, maxLength: 60 },
    );
    fc.assert(
      fc.property(
        distinct,
        fc.array(fc.tuple(fc.nat(60), fc.nat(2), fc.boolean()), { maxLength: 3 }),
        (lines, edits) => {
          const before = `${lines.join("\n")}\n`;
          const next = [...lines];
          edits.forEach(([at, del, insert], i) =>
            next.splice(Math.min(at, next.length), del, ...(insert ? [`inserted ${i}`] : [])),
          );
          const after = next.length ? `${next.join("\n")}\n` : "";
          expect(unifiedDiff("f.yaml", before, after)).toBe(createTwoFilesPatch("a/f.yaml", "b/f.yaml", before, after));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("names /dev/null for added and deleted files", () => {
    expect(unifiedDiff("x", undefined, "a\n")).toBe(createTwoFilesPatch("/dev/null", "b/x", "", "a\n"));
    expect(unifiedDiff("x", "a\n", null)).toBe(createTwoFilesPatch("a/x", "/dev/null", "a\n", ""));
    const long = Array.from({ length: 200 }, (_, i) => `line ${i}`).join("\n") + "\n";
    const changed = long.replace("line 100\n", "line 100\nnew\n");
    expect(unifiedDiff("x", long, changed)).toBe(createTwoFilesPatch("a/x", "b/x", long, changed));
    expect(unifiedDiff("x", long, changed)).toContain("@@ -98,8 +98,9 @@");
  });
});
