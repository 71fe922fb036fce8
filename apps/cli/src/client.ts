import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import {
  problemName,
  problemSchema,
  teamListResponse,
  type BrokenTeam,
  type ProblemDocument,
} from "@berth/api-contract";
import type { Team } from "@berth/core";
import type { z } from "zod";
import { CliError, EXIT, type ExitCode } from "./exit-codes.js";
import { visibleText, withVisibleText } from "./output/text.js";

export const CLI_VERSION = "0.1.0";

/** The API answered with a problem (RFC 9457); `problem` is what it said. */
export class ApiError extends CliError {
  constructor(
    readonly status: number,
    readonly problem: ProblemDocument,
    /** The answer's Retry-After in seconds (429, 503), when it sent one. */
    readonly retryAfterSeconds?: number,
  ) {
    // With field errors the detail only repeats them; they follow, one per line.
    const detail =
      problem.detail && problem.detail !== problem.title && !problem.errors?.length ? `: ${problem.detail}` : "";
    super(`${problem.title}${detail}`, exitCodeFor(status), detailLines(problem));
  }

  get kind(): string {
    return problemName(this.problem);
  }
}

/** Errors that end a watch (`status`, `rollout get`) at once; anything else (network, 5xx) is retried until its timeout. */
export function endsWatch(err: unknown): boolean {
  return err instanceof ApiError ? err.status < 500 : !(err instanceof CliError && err.exitCode === EXIT.unavailable);
}

function exitCodeFor(status: number): ExitCode {
  if (status === 401 || status === 403) return EXIT.unauthorized;
  if (status === 429) return EXIT.unavailable;
  if (status === 404) return EXIT.notFound;
  if (status === 409) return EXIT.conflict;
  if (status >= 500) return EXIT.unavailable;
  return EXIT.invalid;
}

/** One line per field problem (`owners.0: must be ...`), then the request id to quote in a bug report. */
function detailLines(problem: ProblemDocument): string[] {
  const lines = (problem.errors ?? []).map((e) => `${e.field}: ${e.rule}`);
  if (problem.requestId) lines.push(`request id: ${problem.requestId}`);
  return lines;
}

/** No answer came (refused, reset, timed out): a write may or may not have been done. */
export class UnreachableError extends CliError {}

const MAX_RATE_LIMIT_RETRIES = 3;
/** A write whose answer was lost is sent again (same Idempotency-Key) this many times, 1 s then 2 s apart. */
const MAX_LOST_ANSWER_RETRIES = 2;

/** Retry-After as seconds (RFC 9110: delay-seconds or an HTTP date). */
function retryAfterSeconds(header: string | null): number | undefined {
  if (!header) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim());
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

export interface RequestOptions<T> {
  body?: unknown;
  schema: z.ZodType<T>;
  headers?: Record<string, string>;
  /** Statuses answered without error and without a body (e.g. 304). */
  empty?: number[];
  /** The whole request, answer included, must be done within this (default: the client's). */
  timeoutMs?: number;
}

export interface ClientLimits {
  /** Default bound on one request's total time, from sending to the last byte of the answer. */
  requestTimeoutMs: number;
  /** A bound that wins over every command's own (--request-timeout), when the user gave one. */
  maxRequestTimeoutMs?: number | undefined;
  /** An answer larger than this is refused while it streams in, not buffered. */
  maxAnswerBytes: number;
}

export const DEFAULT_LIMITS: ClientLimits = { requestTimeoutMs: 120_000, maxAnswerBytes: 128 * 1024 * 1024 };
/** Same-origin redirects followed per request; one to another origin is never followed. */
const MAX_REDIRECTS = 5;

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${(ms / 1000).toFixed(1)}s`;
}

/** An answer's body, refused as soon as it grows past `max` bytes (a 1 GB answer is never held). */
async function readBounded(response: Response, max: number, describe: () => string): Promise<string> {
  const declared = Number(response.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > max) {
    await response.body?.cancel().catch(() => {});
    throw new CliError(`${describe()} is ${declared} bytes, more than the ${max} this CLI reads`, EXIT.unavailable);
  }
  if (!response.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw new CliError(`${describe()} is more than the ${max} bytes this CLI reads`, EXIT.unavailable);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** The Berth API over HTTP: JSON in, JSON out (validated with the API's own schemas), problems as ApiError. */
export class BerthClient {
  constructor(
    readonly server: string,
    private readonly token: string,
    private readonly fetchImpl: typeof fetch = fetch,
    /** Ctrl-C: requests in flight stop at once. */
    private readonly interrupt?: AbortSignal,
    private readonly limits: ClientLimits = DEFAULT_LIMITS,
  ) {}

  /**
   * One request. A read refused for the rate limit (429) waits the Retry-After the API names (at most a
   * minute) and asks again, up to three times. A write carries one Idempotency-Key for all its attempts
   * and is sent again only when no answer came (the API may have committed it: the same key gets the
   * original outcome, never a second commit); a write the API refused is never repeated.
   */
  async request<T>(
    method: string,
    path: string,
    options: RequestOptions<T>,
  ): Promise<{ status: number; body: T | undefined; headers: Headers }> {
    const isWrite = method !== "GET" && method !== "HEAD";
    const once = isWrite ? { ...options, headers: { "idempotency-key": randomUUID(), ...options.headers } } : options;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.requestOnce(method, path, once);
      } catch (err) {
        const lostAnswer = isWrite && err instanceof UnreachableError && attempt <= MAX_LOST_ANSWER_RETRIES;
        const rateLimited =
          err instanceof ApiError && err.status === 429 && !isWrite && attempt <= MAX_RATE_LIMIT_RETRIES;
        const wait = lostAnswer ? attempt : rateLimited ? (err as ApiError).retryAfterSeconds : undefined;
        if (wait === undefined || wait > 60) throw err;
        await sleep(Math.max(wait, 1) * 1000, undefined, this.interrupt ? { signal: this.interrupt } : {}).catch(() => {
          throw new CliError("interrupted", EXIT.interrupted);
        });
      }
    }
  }

  /**
   * One attempt, bounded in total time by a plain timer: on Node 20 an AbortSignal.timeout composed with
   * AbortSignal.any can be garbage-collected and never fire, and undici's own timeouts restart with every
   * byte, so a server that answers one byte every few seconds would hold the request forever.
   */
  private async requestOnce<T>(
    method: string,
    path: string,
    options: RequestOptions<T>,
  ): Promise<{ status: number; body: T | undefined; headers: Headers }> {
    const first = new URL(path, this.server.endsWith("/") ? this.server : `${this.server}/`);
    const timeoutMs = Math.min(
      options.timeoutMs ?? this.limits.requestTimeoutMs,
      this.limits.maxRequestTimeoutMs ?? Number.POSITIVE_INFINITY,
    );
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    const onInterrupt = () => controller.abort();
    this.interrupt?.addEventListener("abort", onInterrupt, { once: true });
    const failed = (err: unknown, during: string): CliError => {
      if (this.interrupt?.aborted) return new CliError("interrupted", EXIT.interrupted);
      if (timedOut)
        return new UnreachableError(
          `the Berth API at ${this.server} gave no complete answer within ${seconds(timeoutMs)}`,
          EXIT.unavailable,
        );
      if (err instanceof CliError) return err;
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      return new UnreachableError(
        `${during}: ${cause?.code ?? cause?.message ?? (err as Error).message}`,
        EXIT.unavailable,
      );
    };
    try {
      let url = first;
      let response: Response;
      for (let hops = 0; ; hops++) {
        try {
          response = await this.fetchImpl(url, {
            method,
            headers: {
              authorization: `Bearer ${this.token}`,
              accept: "application/json, application/problem+json",
              "user-agent": `berth-cli/${CLI_VERSION}`,
              ...(options.body === undefined ? {} : { "content-type": "application/json" }),
              ...options.headers,
            },
            ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
            redirect: "manual",
            signal: controller.signal,
          });
        } catch (err) {
          throw failed(err, `cannot reach the Berth API at ${this.server}`);
        }
        const location = response.status >= 300 && response.status < 400 ? response.headers.get("location") : null;
        if (location === null) break;
        await response.body?.cancel().catch(() => {});
        const next = new URL(location, url);
        // The token goes only where the user pointed the CLI: another origin (another host, port or scheme,
        // http to https included) is named, not followed.
        if (next.origin !== first.origin) {
          throw new CliError(
            `the Berth API at ${this.server} redirected ${method} ${url.pathname} to another origin, ${next.origin}: not followed, so the token was not sent there`,
            EXIT.unavailable,
            [
              `if ${next.origin} is your Berth API, use --server ${next.origin} (or berth login --server ${next.origin})`,
            ],
          );
        }
        if (hops >= MAX_REDIRECTS)
          throw new CliError(
            `the Berth API at ${this.server} redirected more than ${MAX_REDIRECTS} times`,
            EXIT.unavailable,
          );
        url = next;
      }
      if (options.empty?.includes(response.status)) {
        await response.body?.cancel().catch(() => {});
        return { status: response.status, body: undefined, headers: response.headers };
      }
      let text: string;
      try {
        text = await readBounded(response, this.limits.maxAnswerBytes, () => `the answer to ${method} ${url.pathname}`);
      } catch (err) {
        throw failed(err, `the Berth API at ${this.server} stopped answering mid-answer`);
      }
      return this.decode(method, url, response, text, options.schema);
    } finally {
      clearTimeout(timer);
      this.interrupt?.removeEventListener("abort", onInterrupt);
    }
  }

  private decode<T>(
    method: string,
    url: URL,
    response: Response,
    text: string,
    schema: z.ZodType<T>,
  ): { status: number; body: T | undefined; headers: Headers } {
    // Whatever the server says is shown as text, never acted on by the terminal (escape sequences in a
    // condition message, a problem's detail or an HTML error page).
    let json: unknown;
    try {
      json = text ? withVisibleText(JSON.parse(text)) : undefined;
    } catch {
      json = undefined;
    }
    if (!response.ok) {
      const problem = problemSchema.safeParse(json);
      const retryAfter = retryAfterSeconds(response.headers.get("retry-after"));
      if (problem.success) throw new ApiError(response.status, problem.data, retryAfter);
      const title = visibleText(`HTTP ${response.status} ${response.statusText}`.trim());
      throw new ApiError(
        response.status,
        { type: "about:blank", title, status: response.status, detail: visibleText(text.slice(0, 200)) || undefined },
        retryAfter,
      );
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      throw new CliError(
        `the API's answer to ${method} ${url.pathname} is not what this CLI understands (is the API a different version?)`,
        EXIT.unavailable,
        [...parsed.error.issues.slice(0, 5).map((i) => `${i.path.join(".") || "(body)"}: ${i.message}`)],
      );
    }
    return { status: response.status, body: parsed.data, headers: response.headers };
  }
}

/** Teams asked for per request when listing (kubectl's --chunk-size default); 0 asks for all at once. */
export const DEFAULT_CHUNK_SIZE = 500;

/**
 * Every team, in name order: pages of `chunkSize` (GET /v1/teams?limit=&continue=), following `continue`
 * until the API sends none, so a large fleet never arrives as one huge answer.
 */
export async function listAllTeams(
  client: BerthClient,
  chunkSize = DEFAULT_CHUNK_SIZE,
): Promise<{ teams: Team[]; broken: BrokenTeam[] }> {
  const teams: Team[] = [];
  let broken: BrokenTeam[];
  let next: string | undefined;
  do {
    const query = new URLSearchParams();
    if (chunkSize > 0) query.set("limit", String(chunkSize));
    if (next !== undefined) query.set("continue", next);
    const search = query.size > 0 ? `?${query.toString()}` : "";
    const { body } = await client.request("GET", `/v1/teams${search}`, { schema: teamListResponse });
    // `body` is undefined only for a status the caller lists in `empty`, and this request lists none.
    if (body === undefined) throw new CliError("the API answered the list of teams with no body", EXIT.unavailable);
    teams.push(...body.items);
    broken = body.broken; // every page reports all of them
    // A continue token that does not move (a broken server) would loop forever: stop instead.
    if (body.continue !== undefined && body.continue === next)
      throw new CliError("the API sent the same continue token twice while listing teams", EXIT.unavailable);
    next = body.continue;
  } while (next !== undefined);
  return { teams, broken };
}
