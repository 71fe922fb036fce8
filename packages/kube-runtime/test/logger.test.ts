/** The runtime's Logger is what the app passes: a pino logger must satisfy it (checked by tsc). */
import pino from "pino";
import { describe, expect, it } from "vitest";
import type { Logger } from "@berth/logging";
import { backoffDelay } from "../src/backoff.js";

describe("runtime helpers", () => {
  it("accepts a pino logger as Logger", () => {
    const logger: Logger = pino({ level: "silent" });
    expect(() => logger.child({ a: 1 }).warn({ err: new Error("x") }, "msg")).not.toThrow();
  });

  it("backoffDelay doubles from base, jitters ±20 %, caps", () => {
    const p = { baseMs: 100, maxMs: 1_000 };
    expect(backoffDelay(p, 0)).toBe(0);
    expect(backoffDelay(p, 1, () => 0.5)).toBe(100);
    expect(backoffDelay(p, 3, () => 0.5)).toBe(400);
    expect(backoffDelay(p, 3, () => 0)).toBe(320);
    expect(backoffDelay(p, 3, () => 0.999999)).toBe(480);
    expect(backoffDelay(p, 10, () => 0.5)).toBe(1_000);
    expect(backoffDelay(p, 5_000, () => 0.5)).toBe(1_000);
  });
});
