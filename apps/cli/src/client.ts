import { problemName, problemSchema, type ProblemDocument } from "@berth/api-contract";
import type { z } from "zod";
import { CliError, EXIT, type ExitCode } from "./exit-codes.js";

export const CLI_VERSION = "0.1.0";

/** The API answered with a problem (RFC 9457); `problem` is what it said. */
export class ApiError extends CliError {
  constructor(
    readonly status: number,
    readonly problem: ProblemDocument,
  ) {
    // With field errors the detail only repeats them; they follow, one per line.
    const detail = problem.detail && problem.detail !== problem.title && !problem.errors?.length ? `: ${problem.detail}` : "";
    super(`${problem.title}${detail}`, exitCodeFor(status), detailLines(problem));
  }

  get kind(): string {
    return problemName(this.problem);
  }
}

function exitCodeFor(status: number): ExitCode {
  if (status === 401 || status === 403) return EXIT.unauthorized;
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

export interface RequestOptions<T> {
  body?: unknown;
  schema: z.ZodType<T>;
  headers?: Record<string, string>;
  /** Statuses answered without error and without a body (e.g. 304). */
  empty?: number[];
  timeoutMs?: number;
}

/** The Berth API over HTTP: JSON in, JSON out (validated with the API's own schemas), problems as ApiError. */
export class BerthClient {
  constructor(
    readonly server: string,
    private readonly token: string,
    private readonly fetchImpl: typeof fetch = fetch,
    /** Ctrl-C: requests in flight stop at once. */
    private readonly interrupt?: AbortSignal,
  ) {}

  async request<T>(method: string, path: string, options: RequestOptions<T>): Promise<{ status: number; body: T | undefined; headers: Headers }> {
    const url = new URL(path, this.server.endsWith("/") ? this.server : `${this.server}/`);
    let response: Response;
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
        signal: this.interrupt ? AbortSignal.any([AbortSignal.timeout(options.timeoutMs ?? 120_000), this.interrupt]) : AbortSignal.timeout(options.timeoutMs ?? 120_000),
      });
    } catch (err) {
      if (this.interrupt?.aborted) throw new CliError("interrupted", EXIT.interrupted);
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const why = (err as Error).name === "TimeoutError" ? "no answer in time" : (cause?.code ?? cause?.message ?? (err as Error).message);
      throw new CliError(`cannot reach the Berth API at ${this.server}: ${why}`, EXIT.unavailable);
    }
    if (options.empty?.includes(response.status)) return { status: response.status, body: undefined, headers: response.headers };
    const text = await response.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    if (!response.ok) {
      const problem = problemSchema.safeParse(json);
      if (problem.success) throw new ApiError(response.status, problem.data);
      throw new ApiError(response.status, { type: "about:blank", title: `HTTP ${response.status} ${response.statusText}`.trim(), status: response.status, detail: text.slice(0, 200) || undefined });
    }
    const parsed = options.schema.safeParse(json);
    if (!parsed.success) {
      throw new CliError(`the API's answer to ${method} ${url.pathname} is not what this CLI understands (is the API a different version?)`, EXIT.unavailable, [
        ...parsed.error.issues.slice(0, 5).map((i) => `${i.path.join(".") || "(body)"}: ${i.message}`),
      ]);
    }
    return { status: response.status, body: parsed.data, headers: response.headers };
  }
}
