import { parse as parseJsonAst, type ValueNode } from "@humanwhocodes/momoa";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { HttpProblem } from "./problem.js";

/**
 * Request bodies are JSON read strictly, so what a reviewer sees in the request log is exactly what is
 * committed: UTF-8 only (no silent U+FFFD replacement), no duplicate keys (no "last one wins"), no
 * `__proto__`, bounded nesting. momoa builds the syntax tree the checks walk; the value itself comes from
 * JSON.parse over the same text.
 */

const MAX_DEPTH = 32;
const utf8 = new TextDecoder("utf-8", { fatal: true });

function badBody(detail: string): HttpProblem {
  return new HttpProblem(400, "bad-request", "Bad Request", detail);
}

function pathText(path: readonly (string | number)[]): string {
  return path.length === 0
    ? "the top level"
    : path
        .map((p) => (typeof p === "number" ? `[${p}]` : `.${p}`))
        .join("")
        .replace(/^\./, "");
}

function check(node: ValueNode, path: (string | number)[]): void {
  if (path.length > MAX_DEPTH) throw badBody(`the body nests deeper than ${MAX_DEPTH} levels`);
  if (node.type === "Array") {
    node.elements.forEach((element, i) => check(element.value, [...path, i]));
  } else if (node.type === "Object") {
    const seen = new Set<string>();
    for (const member of node.members) {
      const key = member.name.type === "String" ? member.name.value : member.name.name;
      const shown = JSON.stringify(key.slice(0, 64));
      if (seen.has(key)) throw badBody(`duplicate key ${shown} at ${pathText(path)}`);
      seen.add(key);
      if (key === "__proto__") throw badBody(`the key "__proto__" is not allowed (at ${pathText(path)})`);
      if (
        key === "constructor" &&
        member.value.type === "Object" &&
        member.value.members.some((m) => m.name.type === "String" && m.name.value === "prototype")
      ) {
        throw badBody(`"constructor.prototype" is not allowed (at ${pathText(path)})`);
      }
      check(member.value, [...path, key]);
    }
  }
}

/** The body as a JSON value (undefined when empty), or an HttpProblem (400) saying what is wrong with it. */
export function parseStrictJson(body: Buffer): unknown {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw badBody("the body is not valid UTF-8");
  }
  // No body at all, whatever the Content-Type (many clients send application/json on every DELETE): the
  // route's schema decides whether one was needed (422 when it was).
  if (text.trim() === "") return undefined;
  let root: ValueNode;
  try {
    root = parseJsonAst(text, { mode: "json" }).body;
  } catch (err) {
    if (err instanceof RangeError) throw badBody(`the body nests deeper than ${MAX_DEPTH} levels`);
    // momoa's message names the token and its line:column, never more of the input.
    throw badBody(`the body is not valid JSON: ${String((err as Error).message).slice(0, 120)}`);
  }
  check(root, []);
  return JSON.parse(text) as unknown;
}

/** JSON's media type is UTF-8 by definition (RFC 8259): any other charset is refused, not guessed at. */
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]+)"?/i;

export const jsonBodyPlugin = fp(async (app: FastifyInstance) => {
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, body, done) => {
    const charset = CHARSET.exec(request.headers["content-type"] ?? "")?.[1];
    if (charset && !/^utf-?8$/i.test(charset)) {
      done(
        new HttpProblem(
          415,
          "bad-request",
          "Unsupported Media Type",
          "a JSON body must be UTF-8 (charset=utf-8 or none)",
        ),
        undefined,
      );
      return;
    }
    try {
      done(null, parseStrictJson(body as Buffer));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
});
