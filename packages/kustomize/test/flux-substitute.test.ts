/**
 * Flux's postBuild substitution (fluxcd/pkg/envsubst, strict) as adoption evaluates a hand-written tree.
 */
import { describe, expect, it } from "vitest";
import { PlainVar, substituteValue, type SubstitutionProblem } from "../src/flux-substitute.js";

describe("Flux's postBuild substitution, as adoption evaluates it", () => {
  const vars: Record<string, string> = { TEAM: "ledger", EMPTY: "", CPU: "2000" };
  const resolve = (name: string) =>
    vars[name] !== undefined ? { value: vars[name]! } : name === "TENANT_ID" ? ({ keep: true } as const) : undefined;
  const run = (value: unknown, escape = false) => {
    const problems: SubstitutionProblem[] = [];
    return { value: substituteValue(value, resolve, problems, escape), problems };
  };

  it("substitutes, defaults, escapes and keeps, strictly", () => {
    expect(run("ns-${TEAM}").value).toBe("ns-ledger");
    expect(run("${MISSING:=fallback}/${EMPTY:-empty}/${EMPTY-kept}").value).toBe("fallback/empty/");
    expect(run("$${TEAM} and $TEAM").value).toBe("${TEAM} and $TEAM");
    expect(run("$${TEAM}", true).value).toBe("$${TEAM}");
    expect(run("tenant ${TENANT_ID}").value).toBe("tenant ${TENANT_ID}");
    expect(run("${MISSING}").problems).toEqual([{ variable: "MISSING", kind: "unset" }]);
    expect(run("${TEAM^^}").problems).toEqual([{ variable: "${TEAM^^}", kind: "unsupported" }]);
  });

  it("a plain scalar reads as YAML once substituted (as kustomize's output does under Flux); a value with YAML structure is refused", () => {
    expect(run({ cpu: new PlainVar("${CPU}") }).value).toEqual({ cpu: 2000 });
    expect(run({ cpu: "${CPU}" }).value).toEqual({ cpu: "2000" });
    vars.TEAM = "a: b";
    try {
      expect(run({ name: new PlainVar("${TEAM}") }).problems).toEqual([{ variable: "${TEAM}", kind: "structure" }]);
    } finally {
      vars.TEAM = "ledger";
    }
  });
});
