import { describe, expect, it } from "vitest";
import { fluxReceiverSchema } from "../src/index.js";

describe("a cluster's Receiver (api.fluxReceivers)", () => {
  it("refuses a URL with user:password@, saying why without repeating it", () => {
    const parsed = fluxReceiverSchema.safeParse({
      url: "https://berth:s3cret-password@receiver.example.test/hook/0123456789abcdef",
      tokenFile: "/var/run/berth/receiver-key",
    });
    expect(parsed.success).toBe(false);
    const messages = parsed.error?.issues.map((i) => `${i.path.join(".")}: ${i.message}`) ?? [];
    expect(messages).toEqual([
      "url: must not carry user:password@ (the Receiver checks the HMAC signature; a password in the URL would reach logs)",
    ]);
    expect(JSON.stringify(parsed.error?.issues)).not.toContain("s3cret-password");
    // A user name alone is userinfo too.
    expect(
      fluxReceiverSchema.safeParse({ url: "https://berth@receiver.example.test/hook/x", tokenFile: "/k" }).success,
    ).toBe(false);
    expect(fluxReceiverSchema.safeParse({ url: "https://receiver.example.test/hook/x", tokenFile: "/k" }).success).toBe(
      true,
    );
  });
});
