import { parse } from "yaml";

/**
 * Flux's postBuild substitution (kustomize-controller, fluxcd/pkg/envsubst in strict mode), for adoption:
 * `${VAR}` is replaced, `${VAR:=default}` / `${VAR:-default}` / `${VAR=default}` / `${VAR-default}` take the
 * default when the variable is unset (the `:` forms also when it is empty), `$${VAR}` is the literal
 * `${VAR}`, a bare `$VAR` is left alone, and an unset variable without a default fails the build. The
 * bash string functions envsubst also knows (`${VAR^^}`, `${VAR:1:2}`, ...) are reported as unsupported,
 * never guessed. Objects labelled or annotated `kustomize.toolkit.fluxcd.io/substitute: disabled` are not
 * substituted at all.
 *
 * Flux substitutes the YAML text of each object and parses it again, so a plain (unquoted) `${VAR}` takes
 * the type its value reads as in YAML (`pods: ${PODS}` is a number) while a quoted one stays a string:
 * plain scalars holding `${` are parsed into PlainVar (see markPlainVariables) to keep that difference.
 */

export const SUBSTITUTE_DISABLED_KEY = "kustomize.toolkit.fluxcd.io/substitute";
/** Flux's rule for variable names (kustomize_varsub.go). */
export const FLUX_VAR_NAME = /^[_a-zA-Z][_a-zA-Z0-9]*$/;

/** A plain YAML scalar that holds `${`: after substitution its value is read as YAML again, as Flux does. */
export class PlainVar {
  constructor(readonly text: string) {}
  toJSON(): string {
    return this.text;
  }
  toString(): string {
    return this.text;
  }
}

/** How a variable resolves: its value, kept as `${NAME}` (another stage substitutes it), or unknown. */
export type VarResolution = { value: string } | { keep: true } | undefined;

export interface SubstitutionProblem {
  /** The variable (or the whole expression, for an unsupported one). */
  variable: string;
  kind: "unset" | "unsupported" | "structure";
}

const EXPRESSION = /\$(\$?)\{([^}]*)\}/g;
const WITH_DEFAULT = /^([_a-zA-Z][_a-zA-Z0-9]*)(:=|:-|=|-)(.*)$/s;

/**
 * One string substituted. `escape` writes a literal `${` (from `$${`) back as `$${`, for text that Flux
 * substitutes again later (kept variables must survive; literal ones must stay literal).
 */
export function substituteString(
  text: string,
  resolve: (name: string) => VarResolution,
  problems: SubstitutionProblem[],
  escape = false,
): string {
  if (!text.includes("${")) return text;
  return text.replace(EXPRESSION, (whole, escaped: string, body: string) => {
    if (escaped) return escape ? whole : whole.slice(1);
    if (FLUX_VAR_NAME.test(body)) {
      const r = resolve(body);
      if (r === undefined) {
        problems.push({ variable: body, kind: "unset" });
        return whole;
      }
      return "keep" in r ? whole : r.value;
    }
    const [, name, op, fallback] = WITH_DEFAULT.exec(body) ?? [];
    if (name !== undefined && op !== undefined && fallback !== undefined && !fallback.includes("$")) {
      const r = resolve(name);
      if (r !== undefined && "keep" in r) return `\${${name}}`;
      const unsetOrEmpty = r === undefined || (op.startsWith(":") && r.value === "");
      return unsetOrEmpty ? fallback : r.value;
    }
    problems.push({ variable: whole, kind: "unsupported" });
    return whole;
  });
}

/** Whether Flux skips the object (label or annotation `kustomize.toolkit.fluxcd.io/substitute: disabled`). */
export function substitutionDisabled(obj: {
  metadata?: { labels?: Record<string, unknown>; annotations?: Record<string, unknown> };
}): boolean {
  return (
    obj.metadata?.labels?.[SUBSTITUTE_DISABLED_KEY] === "disabled" ||
    obj.metadata?.annotations?.[SUBSTITUTE_DISABLED_KEY] === "disabled"
  );
}

/**
 * Every string of `value` substituted (keys are left alone: Flux would substitute them too, adoption
 * reports them instead). A PlainVar becomes what its substituted text reads as in YAML 1.1; a value that
 * would turn the scalar into a mapping or a list is a "structure" problem.
 */
export function substituteValue(
  value: unknown,
  resolve: (name: string) => VarResolution,
  problems: SubstitutionProblem[],
  escape = false,
): unknown {
  if (typeof value === "string") return substituteString(value, resolve, problems, escape);
  if (value instanceof PlainVar) {
    const text = substituteString(value.text, resolve, problems, escape);
    if (text.includes("${")) return text;
    let read: unknown;
    try {
      read = parse(text, { version: "1.1" });
    } catch {
      read = undefined;
    }
    if (read !== null && typeof read === "object") {
      problems.push({ variable: value.text, kind: "structure" });
      return text;
    }
    return read === undefined ? text : read;
  }
  if (Array.isArray(value)) return value.map((v) => substituteValue(v, resolve, problems, escape));
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (k.includes("${")) problems.push({ variable: k, kind: "unsupported" });
      out[k] = substituteValue(v, resolve, problems, escape);
    }
    return out;
  }
  return value;
}

/** `value` with every PlainVar back to its text: what kustomize alone (without Flux) outputs. */
export function withoutPlainVars(value: unknown): unknown {
  if (value instanceof PlainVar) return value.text;
  if (Array.isArray(value)) return value.map(withoutPlainVars);
  if (value !== null && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutPlainVars(v)]));
  return value;
}
