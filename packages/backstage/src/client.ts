import {
  deleteResponse,
  fleetResponse,
  previewResponse,
  problemName,
  problemSchema,
  statusResponse,
  teamListResponse,
  teamResponse,
  writeResponse,
  type DeleteResponse,
  type FleetResponse,
  type PreviewResponse,
  type ProblemDocument,
  type StatusResponse,
  type TeamListResponse,
  type WriteResponse,
} from "@berth/api-contract";
import type { Team, TeamInput, TeamSpec } from "@berth/core";
import type { z } from "zod";

/** Berth answered with a problem (RFC 9457): its own words, for the task log and the task's error. */
export class BerthProblemError extends Error {
  constructor(
    readonly status: number,
    readonly problem: ProblemDocument,
  ) {
    super(describeProblem(problem));
    this.name = "BerthProblemError";
  }

  get kind(): string {
    return problemName(this.problem);
  }
}

/** Berth gave no answer (down, refused, timed out, not Berth): a write may or may not have been done. */
export class BerthUnreachableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "BerthUnreachableError";
  }
}

/** `Team name is invalid: owners.0: must be ...`: the title, the detail and each field, as Berth said them. */
export function describeProblem(problem: ProblemDocument): string {
  const parts = [problem.title];
  if (problem.detail && problem.detail !== problem.title) parts.push(problem.detail);
  for (const e of problem.errors ?? []) parts.push(`${e.field}: ${e.rule}`);
  if (problem.requestId) parts.push(`request id ${problem.requestId}`);
  return parts.join("; ");
}

/** Who asks, for Berth's audit trail: the key makes a retried write one commit, `onBehalfOf` names the initiator. */
export interface WriteOptions {
  idempotencyKey: string;
  /** The Backstage user who started the task (`user:default/jane`), recorded by Berth beside the caller. */
  onBehalfOf?: string | undefined;
  signal?: AbortSignal | undefined;
}

export interface BerthClientOptions {
  /** Berth's base URL, e.g. https://berth.example.com. */
  baseUrl: string;
  /** A bearer token for Berth's /v1 API (Berth.Write for the scaffolder, Berth.Read for the catalog). */
  token: () => Promise<string>;
  /** Bound on one request, answer included. */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

const DEFAULT_TIMEOUT_MS = 30_000;

/** One answer of Berth's, read whole within the request's time bound. */
interface Answer {
  status: number;
  text: string;
  etag: string | null;
}

/**
 * The Berth API as Backstage uses it: every answer parsed with the API's own schemas (@berth/api-contract),
 * every refusal a BerthProblemError carrying Berth's RFC 9457 document, no answer a BerthUnreachableError.
 */
export class BerthClient {
  private readonly baseUrl: string;
  private readonly fetchImpl: typeof fetch;
  private readonly timeoutMs: number;

  constructor(private readonly options: BerthClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.fetchImpl = options.fetch ?? fetch;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** The team's page on Berth's status page. */
  teamPageUrl(team: string): string {
    return `${this.baseUrl}/ui/teams/${encodeURIComponent(team)}`;
  }

  previewCreate(team: TeamInput, signal?: AbortSignal): Promise<PreviewResponse> {
    return this.json("POST", "/v1/teams/preview", previewResponse, { body: team, signal });
  }

  createTeam(team: TeamInput, options: WriteOptions): Promise<WriteResponse> {
    return this.json("POST", "/v1/teams", writeResponse, { body: team, ...writeHeaders(options) });
  }

  previewUpdate(name: string, spec: Partial<TeamSpec>, signal?: AbortSignal): Promise<PreviewResponse> {
    return this.json("POST", `/v1/teams/${encodeURIComponent(name)}/preview`, previewResponse, { body: spec, signal });
  }

  updateTeam(name: string, spec: Partial<TeamSpec>, options: WriteOptions): Promise<WriteResponse> {
    return this.json("PUT", `/v1/teams/${encodeURIComponent(name)}`, writeResponse, {
      body: spec,
      ...writeHeaders(options),
    });
  }

  offboardTeam(name: string, options: WriteOptions): Promise<DeleteResponse> {
    return this.json("DELETE", `/v1/teams/${encodeURIComponent(name)}`, deleteResponse, writeHeaders(options));
  }

  async team(name: string, signal?: AbortSignal): Promise<Team> {
    return (await this.json("GET", `/v1/teams/${encodeURIComponent(name)}`, teamResponse, { signal })).team;
  }

  teamStatus(name: string, signal?: AbortSignal): Promise<StatusResponse> {
    return this.json("GET", `/v1/teams/${encodeURIComponent(name)}/status`, statusResponse, { signal });
  }

  /** Every team, page by page (1,000 a page, the API's largest). */
  async allTeams(signal?: AbortSignal): Promise<{ items: Team[]; broken: TeamListResponse["broken"] }> {
    const items: Team[] = [];
    let broken: TeamListResponse["broken"];
    let next: string | undefined;
    do {
      const query = new URLSearchParams({ limit: "1000", ...(next ? { continue: next } : {}) });
      const page = await this.json("GET", `/v1/teams?${query}`, teamListResponse, { signal });
      items.push(...page.items);
      broken = page.broken;
      next = page.continue;
    } while (next);
    return { items, broken };
  }

  /**
   * Every team's status on every cluster, or `undefined` when it is unchanged since `etag` (a 304: the cheap
   * poll the catalog provider makes between full refreshes).
   */
  async fleetStatus(etag?: string, signal?: AbortSignal): Promise<{ fleet: FleetResponse; etag?: string } | undefined> {
    const answer = await this.send("GET", "/v1/status", { signal, headers: etag ? { "if-none-match": etag } : {} });
    if (answer.status === 304) return undefined;
    const fleet = this.parse(answer, fleetResponse);
    return answer.etag ? { fleet, etag: answer.etag } : { fleet };
  }

  private async json<T>(
    method: string,
    path: string,
    schema: z.ZodType<T>,
    init: { body?: unknown; headers?: Record<string, string>; signal?: AbortSignal | undefined },
  ): Promise<T> {
    return this.parse(await this.send(method, path, init), schema);
  }

  private async send(
    method: string,
    path: string,
    init: { body?: unknown; headers?: Record<string, string>; signal?: AbortSignal | undefined },
  ): Promise<Answer> {
    const url = `${this.baseUrl}${path}`;
    // A plain timer, not AbortSignal.timeout + any: on Node 20 the composed signal can be collected and never fire.
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    const onAbort = () => controller.abort();
    init.signal?.addEventListener("abort", onAbort, { once: true });
    const headers: Record<string, string> = {
      accept: "application/json, application/problem+json",
      authorization: `Bearer ${await this.options.token()}`,
      ...init.headers,
    };
    if (init.body !== undefined) headers["content-type"] = "application/json";
    try {
      const res = await this.fetchImpl(url, {
        method,
        headers,
        redirect: "error",
        signal: controller.signal,
        ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
      });
      // The body is read under the same bound.
      return { status: res.status, text: await res.text(), etag: res.headers.get("etag") };
    } catch (err) {
      if (init.signal?.aborted) throw init.signal.reason ?? err;
      if (controller.signal.aborted)
        throw new BerthUnreachableError(
          `Berth at ${this.baseUrl} gave no answer to ${method} ${path} within ${this.timeoutMs} ms`,
        );
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new BerthUnreachableError(
        `Berth at ${this.baseUrl} did not answer ${method} ${path}: ${cause?.code ?? cause?.message ?? (err as Error).message}`,
        { cause: err },
      );
    } finally {
      clearTimeout(timer);
      init.signal?.removeEventListener("abort", onAbort);
    }
  }

  private parse<T>(answer: Answer, schema: z.ZodType<T>): T {
    let body: unknown;
    try {
      body = answer.text ? JSON.parse(answer.text) : undefined;
    } catch {
      body = undefined;
    }
    if (answer.status < 200 || answer.status > 299) {
      const problem = problemSchema.safeParse(body);
      if (problem.success) throw new BerthProblemError(answer.status, problem.data);
      throw new BerthUnreachableError(`Berth at ${this.baseUrl} answered ${answer.status} without a problem document`);
    }
    const parsed = schema.safeParse(body);
    if (!parsed.success)
      throw new BerthUnreachableError(
        `Berth at ${this.baseUrl} answered ${answer.status} with a body this plugin does not understand (another Berth version?)`,
      );
    return parsed.data;
  }
}

function writeHeaders(options: WriteOptions): { headers: Record<string, string>; signal?: AbortSignal | undefined } {
  const headers: Record<string, string> = { "idempotency-key": options.idempotencyKey };
  if (options.onBehalfOf) headers["berth-on-behalf-of"] = options.onBehalfOf;
  return { headers, signal: options.signal };
}
