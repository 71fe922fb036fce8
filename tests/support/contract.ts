/**
 * The API's answers, read through @berth/api-contract's schemas: a test reads a body with the schema its route
 * declares, so an answer of a shape the contract does not declare fails the test, naming the route, the status and
 * zod's issues. tests/architecture/e2e-answers.test.ts keeps tests/e2e reading bodies through here.
 */
import { problemSchema, type ProblemDocument } from "@berth/api-contract";
import type { LightMyRequestResponse } from "fastify";

/** A zod schema, as far as reading an answer needs (tests/ does not depend on zod itself). */
export interface AnswerSchema<T> {
  safeParse(
    data: unknown,
  ):
    | { success: true; data: T }
    | { success: false; error: { issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }> } };
}

/** What a fetch() to a running API answers (the part read here). */
interface FetchedAnswer {
  url: string;
  status: number;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
}

/** Paths of `raw` that the parse dropped: keys the schema does not declare (zod strips them without a word). */
function undeclared(raw: unknown, parsed: unknown, path: string[] = []): string[] {
  if (Array.isArray(raw) && Array.isArray(parsed))
    return raw.flatMap((item, i) => undeclared(item, parsed[i], [...path, String(i)]));
  if (!raw || typeof raw !== "object" || !parsed || typeof parsed !== "object") return [];
  return Object.entries(raw).flatMap(([key, value]) =>
    key in parsed
      ? undeclared(value, (parsed as Record<string, unknown>)[key], [...path, key])
      : [[...path, key].join(".")],
  );
}

/**
 * `body` (an answer of `route` with `status`, already parsed from JSON), checked against `schema`: it must parse, and
 * hold no key the schema does not declare. The body itself is returned (typed by the schema), not zod's output, so
 * assertions see what the API sent: no stripped keys, no defaults. readAnswer and readProblem read responses with it;
 * a test that reads the bytes itself (tests/support/raw-http.ts) calls it directly.
 */
export function checkBody<T>(route: string, status: number, body: unknown, schema: AnswerSchema<T>): T {
  const parsed = schema.safeParse(body);
  const issues = parsed.success
    ? undeclared(body, parsed.data).map((path) => `  ${path}: not declared by the schema`)
    : parsed.error.issues.map((i) => `  ${i.path.map(String).join(".") || "(body)"}: ${i.message}`);
  if (issues.length === 0) return body as T;
  throw new Error(
    `${route} answered ${status} with a body its contract schema does not declare:\n${issues.join("\n")}\n` +
      `body: ${JSON.stringify(body).slice(0, 2000)}`,
  );
}

const injected = (res: LightMyRequestResponse) => `${res.raw.req.method} ${res.raw.req.url}`;

/**
 * The JSON body of an answer, parsed with the contract schema its route declares (e.g. teamListResponse): a
 * server.inject() answer directly, a fetch() answer as a promise.
 */
export function readAnswer<T>(res: LightMyRequestResponse, schema: AnswerSchema<T>): T;
export function readAnswer<T>(res: FetchedAnswer, schema: AnswerSchema<T>): Promise<T>;
export function readAnswer<T>(res: LightMyRequestResponse | FetchedAnswer, schema: AnswerSchema<T>): T | Promise<T> {
  if ("raw" in res) return checkBody(injected(res), res.statusCode, res.json(), schema);
  return res.text().then((text) => checkBody(res.url, res.status, JSON.parse(text), schema));
}

/** An RFC 9457 problem answer: application/problem+json, its body parsed with the contract's problemSchema. */
export function readProblem(res: LightMyRequestResponse): ProblemDocument;
export function readProblem(res: FetchedAnswer): Promise<ProblemDocument>;
export function readProblem(res: LightMyRequestResponse | FetchedAnswer): ProblemDocument | Promise<ProblemDocument> {
  const type = "raw" in res ? String(res.headers["content-type"]) : res.headers.get("content-type");
  if (!type?.startsWith("application/problem+json")) {
    const route = "raw" in res ? injected(res) : res.url;
    throw new Error(`${route} answered ${"raw" in res ? res.statusCode : res.status} as ${type}, not a problem`);
  }
  return "raw" in res ? readAnswer(res, problemSchema) : readAnswer(res, problemSchema);
}
