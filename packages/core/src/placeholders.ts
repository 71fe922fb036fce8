import { RenderError } from "./errors.js";

/**
 * Resolves `{{ path.to.value }}` placeholders on a parsed YAML tree — never on text, so no value can
 * change the document's structure.
 *
 * - A scalar that is exactly one placeholder takes the value as it is (string, number, list or map).
 * - Placeholders inside a longer string are replaced by their text; the value must be a string or number.
 * - Map keys may hold placeholders (text only); a key `<<` whose value resolves to a map merges it into
 *   its parent, and the parent's own keys win.
 * - An unknown placeholder, a malformed one, or a key collision is a RenderError.
 * - Flux's `${VAR}` references are not placeholders and stay as they are.
 */

const WHOLE = /^\{\{\s*([a-zA-Z][a-zA-Z0-9_]*(?:\.[a-zA-Z0-9_]+)*)\s*\}\}$/;
const INLINE = /\{\{\s*([a-zA-Z][a-zA-Z0-9_]*(?:\.[a-zA-Z0-9_]+)*)\s*\}\}/g;

export type Context = Readonly<Record<string, unknown>>;

function lookup(context: Context, path: string, source: string): unknown {
  let value: unknown = context;
  for (const part of path.split(".")) {
    if (value === null || typeof value !== "object" || !Object.hasOwn(value, part)) {
      throw new RenderError(`unknown placeholder {{ ${path} }}`, source);
    }
    value = (value as Record<string, unknown>)[part];
  }
  if (value === undefined) throw new RenderError(`unknown placeholder {{ ${path} }}`, source);
  return value;
}

function interpolate(text: string, context: Context, source: string): string {
  // Most template strings hold no placeholder at all (rendering a fleet resolves millions of them).
  if (!text.includes("{{") && !text.includes("}}")) return text;
  // Check the template's text, not the result: a value may itself hold `{{` and is inserted as it is.
  const rest = text.replace(INLINE, "");
  if (rest.includes("{{") || rest.includes("}}")) throw new RenderError(`malformed placeholder in "${text}"`, source);
  return text.replace(INLINE, (_match, path: string) => {
    const value = lookup(context, path, source);
    if (typeof value !== "string" && typeof value !== "number") {
      throw new RenderError(
        `{{ ${path} }} is a ${Array.isArray(value) ? "list" : typeof value} and cannot stand inside text`,
        source,
      );
    }
    return String(value);
  });
}

function isMap(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

export function resolvePlaceholders(node: unknown, context: Context, source: string): unknown {
  if (typeof node === "string") {
    const path = WHOLE.exec(node)?.[1];
    if (path === undefined) return interpolate(node, context, source);
    const value = lookup(context, path, source);
    // A list or map is copied, so no rendered object shares structure with the context.
    return typeof value === "object" && value !== null ? structuredClone(value) : value;
  }
  if (Array.isArray(node)) return node.map((item) => resolvePlaceholders(item, context, source));
  if (isMap(node)) {
    const own: Record<string, unknown> = {};
    let merged: Record<string, unknown> = {};
    for (const [rawKey, rawValue] of Object.entries(node)) {
      const value = resolvePlaceholders(rawValue, context, source);
      if (rawKey === "<<") {
        if (!isMap(value)) throw new RenderError("a `<<` merge key must resolve to a map", source);
        merged = { ...merged, ...value };
        continue;
      }
      const key = interpolate(rawKey, context, source);
      if (Object.hasOwn(own, key))
        throw new RenderError(`key "${key}" appears twice after resolving placeholders`, source);
      own[key] = value;
    }
    return { ...merged, ...own };
  }
  return node;
}

/** Flux's post-build variables referenced by a rendered tree (`${NAME}`, `${NAME:=default}`; `$${` escapes). */
export function fluxVariables(node: unknown, found = new Set<string>()): Set<string> {
  if (typeof node === "string") {
    if (!node.includes("${")) return found;
    for (const [, escaped, body] of node.matchAll(/(\$?)\$\{([^}]*)\}/g)) {
      if (escaped === "$" || body === undefined) continue; // (the body group always takes part)
      const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(body)?.[0];
      found.add(name ?? body);
    }
  } else if (Array.isArray(node)) {
    node.forEach((item) => fluxVariables(item, found));
  } else if (isMap(node)) {
    for (const [key, value] of Object.entries(node)) {
      fluxVariables(key, found);
      fluxVariables(value, found);
    }
  }
  return found;
}
