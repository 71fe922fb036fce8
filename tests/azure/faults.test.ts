/**
 * AzureDiscovery under Azure failures (fake Azure's fault injection, real SDK): throttling with and
 * without Retry-After, 5xx bursts, the circuit breaker with stale-while-error, resets, slow answers, and
 * a failing token endpoint. Retry and breaker numbers are the fast test settings in support.ts (FAST);
 * the budgets asserted are the documented formulas (docs/azure.md), not the production durations.
 */
import { ValueUnavailableError } from "@berth/core";
import type { Registry } from "@berth/azure";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import {
  CLUSTER_NAME,
  CLUSTER_RG,
  cluster,
  discoveryFor,
  FAST,
  rejection,
  sleep,
  startWorld,
  type World,
} from "./support.js";

const MAX_ATTEMPTS = 4; // DEFAULT_RETRY.maxAttempts: 1 + 3 retries per read
const MC = "ManagedClusters_Get";

let world: World;
beforeAll(async () => {
  world = await startWorld({ teams: ["alpha"] });
});
afterAll(async () => {
  await world?.close();
});
beforeEach(() => {
  world.fake.faults.clear();
  world.fake.stats.reset();
});
afterEach(() => {
  world.fake.faults.clear();
  world.fake.setOidcIssuer({ resourceGroup: CLUSTER_RG, name: CLUSTER_NAME, issuerURL: world.issuer });
});

/** berth_azure_discovery_retry_budget_exhausted_total as { "operation/reason": count }. */
async function budgetExhausted(registry: Registry): Promise<Record<string, number>> {
  const m = await registry.getSingleMetric("berth_azure_discovery_retry_budget_exhausted_total")!.get();
  return Object.fromEntries(m.values.map((v) => [`${v.labels.operation}/${v.labels.reason}`, v.value]));
}

/** Discovery with its token already cached, so only ARM traffic is measured. */
async function warmDiscovery(overrides: Parameters<typeof discoveryFor>[1] = {}) {
  const d = discoveryFor(world, overrides);
  await d.credential.getToken("https://management.azure.com/.default");
  world.fake.stats.reset();
  return d;
}

describe("throttling (429)", () => {
  it("429 storm WITH Retry-After: waits as told, 10 concurrent callers all get the right value, 1 read + storm retries", async () => {
    const { discovery } = await warmDiscovery();
    world.fake.faults.add({
      match: { operation: MC },
      times: 3,
      action: { type: "status", status: 429, retryAfterMs: 150 },
    });
    const started = Date.now();
    const facts = await Promise.all(Array.from({ length: 10 }, () => discovery.clusterFacts(cluster())));
    for (const f of facts) expect(f.oidcIssuerUrl).toBe(world.issuer);
    expect(Date.now() - started).toBeGreaterThanOrEqual(3 * 150 - 20);
    expect(world.fake.stats.statuses(MC)).toEqual([429, 429, 429, 200]); // ≤ MAX_ATTEMPTS for the one coalesced read
  });

  it("429 with Retry-After in seconds (ARM's usual header) is honoured", async () => {
    const { discovery } = await warmDiscovery();
    world.fake.faults.throttle({ operation: MC }, { retryAfterSeconds: 1, times: 1 });
    const started = Date.now();
    expect((await discovery.clusterFacts(cluster())).oidcIssuerUrl).toBe(world.issuer);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(world.fake.stats.statuses(MC)).toEqual([429, 200]);
  });

  it("bare 429 storm (no Retry-After, which the SDK would not retry): Berth backs off itself and holds the whole subscription back", async () => {
    const { discovery, counted } = await warmDiscovery();
    world.fake.faults.throttle({ operation: MC }, { retryAfterSeconds: null, times: 3 });
    const started = Date.now();
    const facts = await Promise.all(Array.from({ length: 10 }, () => discovery.clusterFacts(cluster())));
    for (const f of facts) expect(f).toMatchObject({ oidcIssuerUrl: world.issuer, tenantId: world.fake.tenantId });
    // 50 + 100 + 200 ms of own backoff (throttleBaseDelayMs doubling)
    expect(Date.now() - started).toBeGreaterThanOrEqual(340);
    expect(world.fake.stats.statuses(MC)).toEqual([429, 429, 429, 200]);
    expect(await counted(MC, "429")).toBe(3);
  });

  it("after a 429 no read of that subscription goes out until the backoff has passed (throttle gate)", async () => {
    const { discovery } = await warmDiscovery();
    world.fake.faults.throttle({ operation: MC }, { retryAfterSeconds: null, times: 2 });
    const facts = discovery.clusterFacts(cluster());
    while (world.fake.stats.count(MC, 429) === 0) await sleep(2);
    await sleep(2); // the 429 has reached the client: reads started now must wait for the gate
    const others = Promise.all([discovery.platformCredential(cluster()), discovery.teamIdentity("alpha", cluster())]);
    expect((await facts).oidcIssuerUrl).toBe(world.issuer);
    expect((await others)[1]).toEqual(world.teams.get("alpha"));
    const first429 = world.fake.stats.requests.find((r) => r.status === 429)!;
    const answeredAt = first429.at + first429.durationMs;
    const identityReads = world.fake.stats.requests.filter((r) => r.operation === "UserAssignedIdentities_Get");
    expect(identityReads).toHaveLength(2);
    for (const r of identityReads) expect(r.at - answeredAt).toBeGreaterThanOrEqual(45); // throttleBaseDelayMs 50
  });

  it("a storm longer than the budget: ValueUnavailableError (never empty), ≤ maxAttempts per read, breaker stops the calls, value after the storm", async () => {
    const { discovery, clock } = await warmDiscovery();
    world.fake.faults.add({ match: { operation: MC }, action: { type: "status", status: 429, retryAfterMs: 30 } });
    // Round 1: 10 concurrent callers share one read: 4 attempts, then every caller gets ValueUnavailableError.
    const round1 = await Promise.allSettled(Array.from({ length: 10 }, () => discovery.clusterFacts(cluster())));
    for (const r of round1) {
      expect(r.status).toBe("rejected");
      expect((r as PromiseRejectedResult).reason).toBeInstanceOf(ValueUnavailableError);
    }
    expect(world.fake.stats.count(MC)).toBe(MAX_ATTEMPTS);
    // More rounds: the breaker opens after `consecutiveFailures` failed reads; after that no ARM call at all.
    for (let i = 0; i < 6; i++) {
      await expect(discovery.clusterFacts(cluster())).rejects.toBeInstanceOf(ValueUnavailableError);
    }
    const budget = FAST.breaker.consecutiveFailures * MAX_ATTEMPTS;
    expect(world.fake.stats.count(MC)).toBe(budget);
    expect(discovery.circuits()[MC]).toBe("open");
    const err = await rejection(discovery.clusterFacts(cluster()));
    expect(err.message).toMatch(/circuit open for ManagedClusters_Get/);
    expect(world.fake.stats.count(MC)).toBe(budget);
    // The storm ends; after halfOpenAfter one probe goes out and closes the circuit.
    world.fake.faults.clear();
    await sleep(FAST.breaker.halfOpenAfterMs + 50);
    clock.advance(1);
    expect((await discovery.clusterFacts(cluster())).oidcIssuerUrl).toBe(world.issuer);
    expect(world.fake.stats.count(MC)).toBe(budget + 1);
    expect(discovery.circuits()[MC]).toBe("closed");
  });

  it("a Retry-After longer than the wait budget is not slept on: stale value now, other reads of the subscription held back without calling ARM", async () => {
    const { discovery, clock } = await warmDiscovery();
    const before = await discovery.clusterFacts(cluster());
    clock.advance(11 * 60_000);
    world.fake.faults.throttle({ operation: MC }, { retryAfterSeconds: 60, times: 1 });
    const started = Date.now();
    expect(await discovery.clusterFacts(cluster())).toEqual(before); // served stale, at once
    expect(Date.now() - started).toBeLessThan(5_000); // far from the 60 s asked for
    expect(world.fake.stats.statuses(MC)).toEqual([200, 429]);
    // Another read in the same subscription (not cached yet) fails fast without an ARM request.
    const statsBefore = world.fake.stats.requests.length;
    await expect(discovery.teamIdentity("alpha", cluster())).rejects.toThrow(/throttled/);
    expect(world.fake.stats.requests.length).toBe(statsBefore);
  });
});

describe("server errors, resets, timeouts", () => {
  it("5xx burst: retried with backoff, then the value", async () => {
    const { discovery, counted } = await warmDiscovery();
    world.fake.faults.serverError({ operation: MC }, { status: 503, times: 2 });
    world.fake.faults.serverError({ operation: "Subscriptions_Get" }, { status: 500, times: 1 });
    expect((await discovery.clusterFacts(cluster())).oidcIssuerUrl).toBe(world.issuer);
    expect(world.fake.stats.statuses(MC)).toEqual([503, 503, 200]);
    expect(world.fake.stats.statuses("Subscriptions_Get")).toEqual([500, 200]);
    expect(await counted(MC, "503")).toBe(2);
    expect(await counted(MC, "200")).toBe(1);
  });

  it("the retry budget caps retries across reads: with it spent, a 5xx is not retried", async () => {
    const { discovery, registry } = await warmDiscovery({
      retry: { ...FAST.retry, budgetMinRetries: 1, budgetRatio: 0 },
    });
    world.fake.faults.serverError({ operation: MC }, { status: 503, times: 1 });
    expect((await discovery.clusterFacts(cluster())).oidcIssuerUrl).toBe(world.issuer); // the one retry in the budget
    world.fake.faults.serverError({ operation: "UserAssignedIdentities_Get" }, { status: 503, times: 1 });
    await expect(discovery.platformCredential(cluster())).rejects.toBeInstanceOf(ValueUnavailableError); // budget spent
    expect(world.fake.stats.statuses(MC)).toEqual([503, 200]);
    expect(world.fake.stats.statuses("UserAssignedIdentities_Get")).toEqual([503]);
    // The refusal is counted, so an operator can tell a spent budget from a failing dependency.
    expect(await budgetExhausted(registry)).toEqual({ "UserAssignedIdentities_Get/transient": 1 });
  });

  it("a read that runs out of attempts is not counted as refused by the retry budget, even with the budget spent", async () => {
    const { discovery, registry } = await warmDiscovery({
      retry: { ...FAST.retry, budgetMinRetries: MAX_ATTEMPTS - 1, budgetRatio: 0 },
    });
    world.fake.faults.serverError({ operation: MC }, { status: 503 });
    await expect(discovery.clusterFacts(cluster())).rejects.toBeInstanceOf(ValueUnavailableError);
    expect(world.fake.stats.count(MC)).toBe(MAX_ATTEMPTS); // every retry the budget held: spent now
    expect(await budgetExhausted(registry)).toEqual({});
    // The next failure is the budget's to refuse: counted.
    world.fake.faults.clear();
    world.fake.faults.serverError({ operation: "UserAssignedIdentities_Get" }, { status: 503 });
    await expect(discovery.platformCredential(cluster())).rejects.toBeInstanceOf(ValueUnavailableError);
    expect(world.fake.stats.statuses("UserAssignedIdentities_Get")).toEqual([503]);
    expect(await budgetExhausted(registry)).toEqual({ "UserAssignedIdentities_Get/transient": 1 });
  });

  it("a 4xx other than 404/408/429 is not retried", async () => {
    const { discovery } = await warmDiscovery();
    world.fake.faults.add({
      match: { operation: MC },
      times: 1,
      action: { type: "status", status: 403, code: "AuthorizationFailed", message: "no access" },
    });
    const err = await rejection(discovery.clusterFacts(cluster()));
    expect(err).toBeInstanceOf(ValueUnavailableError);
    expect(err.message).toMatch(/403 AuthorizationFailed/);
    expect(world.fake.stats.statuses(MC)).toEqual([403]);
  });

  it("persistent 5xx: the breaker opens (ARM call count stops growing) and the last good value is served; after recovery it half-opens and serves the fresh value", async () => {
    const breaker = { ...FAST.breaker, halfOpenAfterMs: 1_000 };
    const { discovery, clock, registry } = await warmDiscovery({ breaker });
    const good = await discovery.clusterFacts(cluster());
    world.fake.faults.serverError({ operation: MC }, { status: 500 });
    const counts: number[] = [];
    for (let i = 0; i < 8; i++) {
      clock.advance(11 * 60_000); // past the TTL and past retryStaleAfter: every read tries Azure (if the circuit lets it)
      expect(await discovery.clusterFacts(cluster())).toEqual(good); // stale-while-error, never empty
      counts.push(world.fake.stats.count(MC));
    }
    const budget = 1 + FAST.breaker.consecutiveFailures * MAX_ATTEMPTS;
    expect(counts.at(-1)).toBe(budget);
    expect(counts.slice(FAST.breaker.consecutiveFailures)).toEqual(
      Array(8 - FAST.breaker.consecutiveFailures).fill(budget),
    );
    expect(discovery.circuits()[MC]).toBe("open");
    expect(await registry.metrics()).toMatch(/berth_azure_discovery_cache_total\{kind="cluster",result="stale"\} 8/);
    expect(await registry.metrics()).toMatch(
      /berth_azure_discovery_circuit_state\{operation="ManagedClusters_Get"\} 1/,
    );

    // Azure recovers with a new issuer; the breaker half-opens after halfOpenAfterMs and the probe brings the fresh value.
    const rotated = `https://westeurope.oic.prod-aks.azure.com/${world.fake.tenantId}/7d1c2b3a-4444-4e5e-8f8f-aaaaaaaaaaaa/`;
    world.fake.setOidcIssuer({ resourceGroup: CLUSTER_RG, name: CLUSTER_NAME, issuerURL: rotated });
    world.fake.faults.clear();
    clock.advance(11 * 60_000);
    expect((await discovery.clusterFacts(cluster())).oidcIssuerUrl).toBe(world.issuer); // still open: stale, no call
    expect(world.fake.stats.count(MC)).toBe(budget);
    await sleep(breaker.halfOpenAfterMs + 50);
    clock.advance(11 * 60_000);
    expect((await discovery.clusterFacts(cluster())).oidcIssuerUrl).toBe(rotated);
    expect(world.fake.stats.count(MC)).toBe(budget + 1);
    expect(discovery.circuits()[MC]).toBe("closed");
  });

  it("persistent 5xx with nothing cached: ValueUnavailableError", async () => {
    const { discovery } = await warmDiscovery();
    world.fake.faults.serverError({ operation: "UserAssignedIdentities_Get" }, { status: 502 });
    const err = await rejection(discovery.platformCredential(cluster()));
    expect(err).toBeInstanceOf(ValueUnavailableError);
    expect(err.message).toMatch(/502/);
    expect(world.fake.stats.count("UserAssignedIdentities_Get")).toBe(MAX_ATTEMPTS);
  });

  it("connection resets are retried", async () => {
    const { discovery, counted } = await warmDiscovery();
    world.fake.faults.reset({ operation: MC }, { times: 2 });
    expect((await discovery.clusterFacts(cluster())).oidcIssuerUrl).toBe(world.issuer);
    expect(world.fake.stats.statuses(MC)).toEqual(["reset", "reset", 200]);
    expect(await counted(MC, "network_error")).toBe(2);
  });

  it("slow answers: each attempt times out after callTimeoutMs (abortSignal) and is retried", async () => {
    const { discovery, counted } = await warmDiscovery({ callTimeoutMs: 300 });
    world.fake.faults.delay({ operation: MC }, 10_000, { times: 1 });
    const started = Date.now();
    expect((await discovery.clusterFacts(cluster())).oidcIssuerUrl).toBe(world.issuer);
    expect(Date.now() - started).toBeLessThan(5_000); // not the 10 s answer
    await sleep(20);
    expect(world.fake.stats.statuses(MC)).toEqual(["aborted", 200]);
    expect(await counted(MC, "aborted")).toBe(1);

    // Always slow: bounded by maxAttempts × callTimeoutMs (+ backoff), then ValueUnavailableError.
    world.fake.faults.delay({ operation: "UserAssignedIdentities_Get" }, 10_000);
    const t0 = Date.now();
    await expect(discovery.platformCredential(cluster())).rejects.toBeInstanceOf(ValueUnavailableError);
    expect(Date.now() - t0).toBeLessThan(MAX_ATTEMPTS * 300 + 4_000); // ≈ 4 × 300 ms, not 10 s
    expect(world.fake.stats.count("UserAssignedIdentities_Get")).toBeLessThanOrEqual(MAX_ATTEMPTS);
  });
});

describe("token endpoint (Entra ID)", () => {
  it("unreachable token endpoint (connection resets): ValueUnavailableError, not a crash; recovers when it is back", async () => {
    const { discovery, counted } = discoveryFor(world, { credentialRetry: { maxRetries: 1, retryDelayInMs: 10 } });
    world.fake.faults.add({ match: { operation: "Entra_Token" }, action: { type: "reset" } });
    const err = await rejection(discovery.clusterFacts(cluster()));
    expect(err).toBeInstanceOf(ValueUnavailableError);
    expect(err.message).toMatch(/AuthenticationRequiredError|network/i);
    expect(world.fake.stats.count(MC)).toBe(0); // never reached ARM without a token
    expect(await counted("Entra_Token", "network_error")).toBeGreaterThanOrEqual(1);
    world.fake.faults.clear();
    expect(await discovery.clusterFacts(cluster())).toMatchObject({
      oidcIssuerUrl: world.issuer,
      tenantId: world.fake.tenantId,
    });
  });

  it("token endpoint 503: ValueUnavailableError, not a crash; Entra is not hammered (MSAL refuses locally); recovers after MSAL's window", async () => {
    const { discovery } = discoveryFor(world, { credentialRetry: { maxRetries: 1, retryDelayInMs: 10 } });
    world.fake.faults.tokenEndpoint({ status: 503 });
    await expect(discovery.clusterFacts(cluster())).rejects.toBeInstanceOf(ValueUnavailableError);
    await sleep(200); // token requests of the other client still retrying settle
    const tokenCalls = world.fake.stats.count("Entra_Token");
    expect(tokenCalls).toBeGreaterThanOrEqual(1);
    for (let i = 0; i < 5; i++) {
      await expect(discovery.platformCredential(cluster())).rejects.toBeInstanceOf(ValueUnavailableError);
      await expect(discovery.clusterFacts(cluster())).rejects.toBeInstanceOf(ValueUnavailableError);
    }
    expect(world.fake.stats.count("Entra_Token")).toBe(tokenCalls); // refused from MSAL's throttling cache
    world.fake.faults.clear();
    // MSAL's window is 60 s (it misses the lower-case Retry-After): move the wall clock instead of waiting.
    vi.useFakeTimers({ toFake: ["Date"], shouldAdvanceTime: true });
    try {
      vi.setSystemTime(Date.now() + 61_000);
      expect(await discovery.clusterFacts(cluster())).toMatchObject({ oidcIssuerUrl: world.issuer });
      expect(await discovery.platformCredential(cluster())).toMatchObject({
        clientId: world.platformIdentity.clientId,
      });
    } finally {
      vi.useRealTimers();
    }
  });
});
