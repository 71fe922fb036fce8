import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/index.js";

const LOCAL_CONFIG = fileURLToPath(new URL("../../../infra/local/berth.yaml", import.meta.url));
const OIDC = {
  BERTH_CONFIG_FILE: LOCAL_CONFIG,
  BERTH_AUTH_MODE: "oidc",
  BERTH_OIDC_ISSUER: "https://login.example.test/tenant/v2.0",
  BERTH_OIDC_AUDIENCE: "api://berth",
  BERTH_UI_CLIENT_ID: "status-page",
  BERTH_UI_CLIENT_SECRET: "a-client-secret",
};

describe("the status page's configuration", () => {
  it("requires api.ui.publicUrl in oidc mode with a sign-in client: the redirect URI never comes from a Host header", () => {
    const load = (env: Record<string, string>) => () => loadConfig(env, "/");
    expect(load(OIDC)).toThrow(ConfigError);
    expect(load(OIDC)).toThrow(
      /api\.ui\.publicUrl: is required in oidc mode with the status page's sign-in \(api\.ui\.oidc\)/,
    );
    expect(loadConfig({ ...OIDC, BERTH_UI_PUBLIC_URL: "https://berth.example.test" }, "/").api.ui.publicUrl).toBe(
      "https://berth.example.test",
    );
    // Without a sign-in client, or with the page off, nothing builds a redirect URI.
    const { BERTH_UI_CLIENT_ID: _id, BERTH_UI_CLIENT_SECRET: _secret, ...withoutClient } = OIDC;
    expect(loadConfig(withoutClient, "/").api.ui.publicUrl).toBeUndefined();
  });
});
