/**
 * The serializer's fast path writes exactly what the `yaml` package's document model writes (the
 * reference, `yamlDocument`), for any tree of maps, sequences and scalars, including every string a
 * YAML 1.1 or Go reader would take for something else. Where the fast path declines (undefined), the
 * reference is used, so `toYamlFile` is always the reference's output.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fastYamlDocument, toYamlFile, yamlDocument } from "@berth/core";

const TRICKY = [
  "yes",
  "no",
  "on",
  "off",
  "y",
  "n",
  "Y",
  "N",
  "~",
  "null",
  "Null",
  "true",
  "False",
  "Yes",
  "YES",
  "No",
  "NO",
  "On",
  "ON",
  "Off",
  "OFF",
  "TRUE",
  "NULL",
  "True",
  "FALSE",
  "nan",
  "NaN",
  "inf",
  "Infinity",
  "e3",
  "E5",
  "x1",
  "a.b",
  "a/b",
  "a-",
  "a_",
  "A.1",
  "v1",
  "_a",
  "a..b",
  "yes.no",
  "ya",
  "onn",
  "1e3",
  "0x1F",
  "0o17",
  "0777",
  "1_000",
  "2026-11-24",
  "- a",
  "a: b",
  "a:b",
  "#c",
  "a #c",
  "${X}",
  "$${X}",
  "${X:=y}",
  "'q'",
  '"q"',
  "- ",
  "? x",
  "---",
  "...",
  "<<",
  "a\tb",
  " lead",
  "trail ",
  "",
  "%x",
  "@x",
  "`x",
  "!x",
  "&x",
  "*x",
  "|",
  ">",
  "[a]",
  "{a: b}",
  "é",
  "ü:",
  "\u2028",
  "\u00a0",
  "\\",
  "a,b",
  ".5",
  "-1",
  "+1",
  ".inf",
  "NaN",
];
// Words of the charset the serializer writes plain without asking the yaml package, so the shortcut is tested too.
const word = fc.stringMatching(/^[A-Za-z][A-Za-z0-9_./-]{0,5}$/);
const str = fc.oneof(
  fc.constantFrom(...TRICKY),
  word,
  fc.string({ maxLength: 12 }),
  fc.string({ unit: "grapheme", maxLength: 6 }),
);
const key = str.filter((k) => k !== "__proto__");
const scalarArb = fc.oneof(
  str,
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
);
const { tree } = fc.letrec((tie) => ({
  tree: fc.oneof({ depthSize: "small", withCrossShrink: true }, scalarArb, tie("map"), tie("seq")),
  map: fc.dictionary(key, tie("tree"), { maxKeys: 5 }),
  seq: fc.array(tie("tree"), { maxLength: 4 }),
}));
const doc = fc.dictionary(key, tree, { minKeys: 1, maxKeys: 6 });

describe("toYamlFile", () => {
  it("writes what the yaml package writes, for any tree (property, 2000 runs)", () => {
    let fast = 0;
    fc.assert(
      fc.property(doc, (obj) => {
        const out = fastYamlDocument(obj);
        if (out !== undefined) {
          fast += 1;
          expect(out).toBe(yamlDocument(obj));
        }
        expect(toYamlFile([obj], ["h"])).toBe(`# h\n${yamlDocument(obj)}`);
      }),
      { numRuns: 2000 },
    );
    // The property is about the fast path: many generated documents must take it (the others hold a
    // sequence directly in a sequence, an empty map in a sequence, or a line break, which it declines).
    expect(fast).toBeGreaterThan(500);
  });

  it("takes the fast path for manifests, and declines what it does not handle", () => {
    const manifest = {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "a", labels: { "x/y": "yes", n: "0777" } },
      spec: { list: [{ a: 1, b: [] }, "${X}"], empty: {} },
    };
    expect(fastYamlDocument(manifest)).toBe(yamlDocument(manifest));
    expect(fastYamlDocument({ a: "two\nlines" })).toBeUndefined();
    expect(fastYamlDocument({ a: [[1]] })).toBeUndefined();
    expect(fastYamlDocument({ a: undefined })).toBeUndefined();
    expect(fastYamlDocument({})).toBeUndefined();
    expect(toYamlFile([{ a: "two\nlines" }, { b: [[1]] }], [])).toBe(
      `${yamlDocument({ a: "two\nlines" })}---\n${yamlDocument({ b: [[1]] })}`,
    );
  });
});
