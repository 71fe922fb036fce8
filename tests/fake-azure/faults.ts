/**
 * Fault injection and request accounting for the fake.
 *
 * Rules are checked in the order they were added, before authentication (like a throttling
 * gateway in front of ARM / Entra). The first rule whose `match` fits and that still has
 * `times` left fires. A `delay` action then lets the request through (unless it also carries
 * a status); `status` answers with an error; `reset` destroys the socket without answering.
 */

export type Service = "arm" | "entra" | "control";

export interface FaultMatch {
  /** Operation id, e.g. "ManagedClusters_Get", "Entra_Token"; RegExp or list also accepted. */
  operation?: string | RegExp | readonly string[];
  /** HTTP method, case-insensitive. */
  method?: string;
  /** Case-insensitive substring of the path, or a RegExp tested on the path (no query). */
  path?: string | RegExp;
  service?: Service;
}

export type FaultAction =
  | {
      type: "status";
      status: number;
      /** Retry-After header in seconds (number) or raw string; omit for a bare status. */
      retryAfter?: number | string;
      /** `retry-after-ms` header (ARM and the SDK both know it). */
      retryAfterMs?: number;
      /** Error code / message for the default body (ARM or Entra shape, by service). */
      code?: string;
      message?: string;
      /** Replace the default body entirely. */
      body?: unknown;
      headers?: Record<string, string>;
      /** Wait this long before answering. */
      delayMs?: number;
    }
  | { type: "delay"; ms: number }
  | { type: "reset"; delayMs?: number };

export interface FaultRule {
  match: FaultMatch;
  action: FaultAction;
  /** How many matching requests this rule fires for (default: unlimited). */
  times?: number;
  /** Let this many matching requests through before firing (default 0). */
  after?: number;
}

export interface FaultHandle {
  readonly id: number;
  /** How many times the rule fired. */
  readonly fired: number;
  remove(): void;
}

export interface RequestInfo {
  service: Service;
  operation: string;
  method: string;
  path: string;
}

interface ActiveRule extends FaultRule {
  id: number;
  seen: number;
  fired: number;
}

export class FaultController {
  private rules: ActiveRule[] = [];
  private nextId = 1;

  add(rule: FaultRule): FaultHandle {
    const active: ActiveRule = { ...rule, id: this.nextId++, seen: 0, fired: 0 };
    this.rules.push(active);
    const rules = () => this.rules;
    const setRules = (r: ActiveRule[]) => {
      this.rules = r;
    };
    return {
      id: active.id,
      get fired() {
        return active.fired;
      },
      remove() {
        setRules(rules().filter((r) => r !== active));
      },
    };
  }

  clear(): void {
    this.rules = [];
  }

  /** 429 with `Retry-After: retryAfterSeconds`, or a bare 429 when retryAfterSeconds is null. */
  throttle(match: FaultMatch, opts: { retryAfterSeconds?: number | null; times?: number } = {}): FaultHandle {
    const retryAfter = opts.retryAfterSeconds === undefined ? 1 : opts.retryAfterSeconds;
    return this.add({
      match,
      times: opts.times,
      action: { type: "status", status: 429, ...(retryAfter === null ? {} : { retryAfter }) },
    });
  }

  /** A burst of 5xx answers: `times` failures, then the service recovers. */
  serverError(match: FaultMatch, opts: { status?: number; times?: number } = {}): FaultHandle {
    return this.add({ match, times: opts.times, action: { type: "status", status: opts.status ?? 500 } });
  }

  delay(match: FaultMatch, ms: number, opts: { times?: number } = {}): FaultHandle {
    return this.add({ match, times: opts.times, action: { type: "delay", ms } });
  }

  reset(match: FaultMatch, opts: { times?: number } = {}): FaultHandle {
    return this.add({ match, times: opts.times, action: { type: "reset" } });
  }

  /** Token endpoint failures (Entra): status defaults to 500. */
  tokenEndpoint(
    opts: { status?: number; retryAfter?: number; times?: number; code?: string; message?: string } = {},
  ): FaultHandle {
    return this.add({
      match: { operation: "Entra_Token" },
      times: opts.times,
      action: {
        type: "status",
        status: opts.status ?? 500,
        ...(opts.retryAfter === undefined ? {} : { retryAfter: opts.retryAfter }),
        ...(opts.code ? { code: opts.code } : {}),
        ...(opts.message ? { message: opts.message } : {}),
      },
    });
  }

  /** Find the rule that fires for this request, updating its counters. */
  take(info: RequestInfo): FaultAction | undefined {
    for (const rule of this.rules) {
      if (!matches(rule.match, info)) continue;
      rule.seen++;
      if (rule.seen <= (rule.after ?? 0)) continue;
      if (rule.times !== undefined && rule.fired >= rule.times) continue;
      rule.fired++;
      return rule.action;
    }
    return undefined;
  }
}

function matches(m: FaultMatch, info: RequestInfo): boolean {
  if (m.service && m.service !== info.service) return false;
  if (m.method && m.method.toUpperCase() !== info.method.toUpperCase()) return false;
  if (m.operation !== undefined) {
    const op = m.operation;
    if (
      typeof op === "string"
        ? op !== info.operation
        : op instanceof RegExp
          ? !op.test(info.operation)
          : !op.includes(info.operation)
    )
      return false;
  }
  if (m.path !== undefined) {
    if (typeof m.path === "string") {
      if (!info.path.toLowerCase().includes(m.path.toLowerCase())) return false;
    } else if (!m.path.test(info.path)) return false;
  }
  return true;
}

/** JSON form of a rule for the `/__fake/faults` control route (RegExps as `{ "regex": "..." }`). */
export function ruleFromJson(input: unknown): FaultRule {
  const obj = input as Record<string, unknown>;
  const matchIn = (obj.match ?? {}) as Record<string, unknown>;
  const re = (v: unknown): string | RegExp | undefined => {
    if (v === undefined) return undefined;
    if (typeof v === "string") return v;
    const r = v as { regex?: string; flags?: string };
    if (typeof r.regex === "string") return new RegExp(r.regex, r.flags ?? "i");
    throw new Error("invalid matcher");
  };
  const match: FaultMatch = {};
  const op = matchIn.operation;
  if (Array.isArray(op)) match.operation = op.map(String);
  else if (op !== undefined) match.operation = re(op)!;
  if (typeof matchIn.method === "string") match.method = matchIn.method;
  if (matchIn.path !== undefined) match.path = re(matchIn.path)!;
  if (typeof matchIn.service === "string") match.service = matchIn.service as Service;
  const action = obj.action as FaultAction;
  if (!action || !["status", "delay", "reset"].includes(action.type)) throw new Error("invalid action");
  const rule: FaultRule = { match, action };
  if (typeof obj.times === "number") rule.times = obj.times;
  if (typeof obj.after === "number") rule.after = obj.after;
  return rule;
}

export interface RequestRecord {
  seq: number;
  at: number;
  service: Service;
  operation: string;
  method: string;
  host: string;
  path: string;
  query: string;
  /** HTTP status answered; "reset" when the fake destroyed the socket; "aborted" when the client hung up first. */
  status: number | "reset" | "aborted";
  /** Which kind of injected fault answered, if any. */
  fault?: FaultAction["type"];
  /** The fake has no answer for this request (unknown route or operation it does not implement). */
  unknown?: true;
  /**
   * ARM only: who made the call, from the bearer token the fake accepted: its `appid` (the client id of the app or
   * managed identity the token was issued to). Absent when the token was refused (401) or on Entra's endpoints.
   */
  appid?: string;
  durationMs: number;
}

export class Stats {
  readonly requests: RequestRecord[] = [];
  private seq = 0;

  record(r: Omit<RequestRecord, "seq">): void {
    this.requests.push({ ...r, seq: ++this.seq });
  }

  /** Number of requests for an operation (and optionally one status, e.g. 429 or "reset"). */
  count(operation?: string | RegExp, status?: number | "reset" | "aborted"): number {
    return this.requests.filter(
      (r) =>
        (operation === undefined ||
          (typeof operation === "string" ? r.operation === operation : operation.test(r.operation))) &&
        (status === undefined || r.status === status),
    ).length;
  }

  /** `{ [operation]: { [status]: count } }` */
  byOperation(): Record<string, Record<string, number>> {
    const out: Record<string, Record<string, number>> = {};
    for (const r of this.requests) {
      const byStatus = (out[r.operation] ??= {});
      byStatus[String(r.status)] = (byStatus[String(r.status)] ?? 0) + 1;
    }
    return out;
  }

  /** ARM calls made as `clientId` (the token's appid), since `since` (ms) when given. */
  actingAs(clientId: string, since = 0): RequestRecord[] {
    const id = clientId.toLowerCase();
    return this.requests.filter((r) => r.at >= since && r.appid === id);
  }

  /** Requests the fake had no answer for: a test that makes one must fail (see `assertAllAnswered`). */
  unknown(): RequestRecord[] {
    return this.requests.filter((r) => r.unknown);
  }

  /** Throws naming every request the fake had no answer for. */
  assertAllAnswered(): void {
    const unknown = this.unknown();
    if (unknown.length)
      throw new Error(
        `the fake Azure had no answer for ${unknown.length} request(s):\n${unknown.map((r) => `  ${r.method} ${r.host}${r.path}${r.query} (${r.operation})`).join("\n")}`,
      );
  }

  /** Sequence of statuses for an operation, e.g. [429, 200]. */
  statuses(operation: string): Array<number | "reset" | "aborted"> {
    return this.requests.filter((r) => r.operation === operation).map((r) => r.status);
  }

  reset(): void {
    this.requests.length = 0;
  }
}
