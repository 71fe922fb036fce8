import { createRequire } from "node:module";
import fastifyRateLimit, { type FastifyRateLimitStore } from "@fastify/rate-limit";
import type { RateLimitConfig } from "@berth/config";
import type { FastifyInstance, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { HttpProblem } from "./problem.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** Health probes: kubelets call them every few seconds from the node's address; never limited. */
    exemptFromRateLimit?: boolean;
  }
}

/** The three budgets: per principal for reads and for writes, per client address for everyone else. */
export type RateLimitClass = "reads" | "writes" | "unauthenticated";

type StoreAnswer = { current: number; ttl: number };
type LocalStoreCtor = new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  cache?: number,
) => FastifyRateLimitStore;
// The library's in-memory fixed-window store (not among its typed exports; the version is pinned).
const LocalStore = createRequire(import.meta.url)("@fastify/rate-limit/store/LocalStore.js") as LocalStoreCtor;
const CACHE_ENTRIES = 20_000;

/**
 * LocalStore, answering with a copy of the counter. The library reads the answer after an await; handing
 * out the live record let concurrent requests of one key all read the last count, refusing a whole burst
 * that was within the limit (tests/e2e/rate-limit.test.ts sends such a burst).
 */
class SnapshotStore implements FastifyRateLimitStore {
  private readonly inner = new LocalStore(false, false, CACHE_ENTRIES);
  incr(
    key: string,
    callback: (error: Error | null, result?: StoreAnswer) => void,
    timeWindow: number,
    max: number,
  ): void {
    this.inner.incr(
      key,
      (error, result) => callback(error, result && { current: result.current, ttl: result.ttl }),
      timeWindow,
      max,
    );
  }
  child(): FastifyRateLimitStore {
    return new SnapshotStore();
  }
}

function classOf(request: FastifyRequest): RateLimitClass {
  if (!request.principal) return "unauthenticated";
  return request.routeOptions.config.requiredRole === "write" ? "writes" : "reads";
}

/**
 * Rate limits (docs/decisions/0006-rate-limiting.md). @fastify/rate-limit keeps the counters (fixed windows in
 * an LRU per budget; a shared Redis store is a configuration change away); this hook picks the budget and
 * the key after authentication, so a failed token counts against the caller's address and a valid one
 * against its principal. Answers carry the IETF draft's `RateLimit-Policy` and `RateLimit` fields; a refused
 * request gets 429 problem+json with `Retry-After`.
 */
export const rateLimitPlugin = fp(async (app: FastifyInstance, opts: { limits: RateLimitConfig }) => {
  const { limits } = opts;
  if (!limits.enabled) return;
  await app.register(fastifyRateLimit, { global: false, store: SnapshotStore });
  const timeWindow = limits.windowSeconds * 1000;
  const byPrincipal = (request: FastifyRequest) => `principal:${request.principal?.actor ?? ""}`;
  const budgets = {
    reads: app.createRateLimit({ max: limits.reads, timeWindow, keyGenerator: byPrincipal }),
    writes: app.createRateLimit({ max: limits.writes, timeWindow, keyGenerator: byPrincipal }),
    // The library's default key: the client address (IPv6 folded to its /64), behind `trustProxy` if set.
    unauthenticated: app.createRateLimit({ max: limits.unauthenticated, timeWindow }),
  } satisfies Record<RateLimitClass, unknown>;

  app.addHook("onRequest", async (request, reply) => {
    if (request.routeOptions.config.exemptFromRateLimit) return;
    const budget = classOf(request);
    const state = await budgets[budget](request);
    if (state.isAllowed) return; // allow-listed (none are configured)
    reply.header("ratelimit-policy", `"${budget}";q=${state.max};w=${limits.windowSeconds}`);
    reply.header("ratelimit", `"${budget}";r=${state.remaining};t=${state.ttlInSeconds}`);
    if (state.isExceeded) {
      request.log.warn({ budget, key: budget === "unauthenticated" ? "address" : "principal" }, "rate limit exceeded");
      throw new HttpProblem(
        429,
        "too-many-requests",
        "Too Many Requests",
        `more than ${state.max} ${budget === "unauthenticated" ? "requests without a valid token" : budget} in ${limits.windowSeconds} s; retry after ${state.ttlInSeconds} s`,
        { "retry-after": String(state.ttlInSeconds) },
      );
    }
  });
});
