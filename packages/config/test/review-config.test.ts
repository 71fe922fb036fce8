/** fluxRepo.review (pull-request mode, ADR 0030): what loadConfig accepts and what it refuses, and why. */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { ConfigError, loadConfig } from "../src/index.js";

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

const REVIEW = {
  mode: "pull-request",
  forge: "gitea",
  url: "https://git.example.test",
  owner: "platform",
  repository: "fleet",
};
const SLICES = {
  fluxSource: { kind: "ExternalArtifact", artifactPrefix: "team-files-" },
  layout: { appliedBy: "slices" },
};

/** A minimal config file with these parts, loaded with `env`: the config, or the problems it was refused for. */
async function load(parts: { review?: object; platform?: object }, env: Record<string, string> = {}) {
  const dir = await mkdtemp(join(tmpdir(), "berth-review-config-"));
  dirs.push(dir);
  const file = join(dir, "berth.yaml");
  await writeFile(
    file,
    stringify({
      templatesDir: dir,
      fluxRepo: {
        url: "https://git.example.test/platform/fleet.git",
        workDir: join(dir, "work"),
        ...(parts.review ? { review: parts.review } : {}),
      },
      api: { auth: { mode: "dev", token: "a-dev-token-of-some-length" } },
      platform: {
        environments: [{ name: "dev", clusters: [{ name: "aks-dev-weu" }] }],
        ...parts.platform,
      },
    }),
  );
  try {
    return { config: loadConfig({ BERTH_CONFIG_FILE: file, ...env }, dir) };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return { problems: err.problems.join("\n") };
  }
}

describe("fluxRepo.review", () => {
  it("is direct unless set", async () => {
    expect((await load({})).config?.fluxRepo.review).toEqual({ mode: "direct" });
  });

  it("takes pull-request mode with the forge token from the environment, on the slices layout", async () => {
    const { config, problems } = await load(
      { review: REVIEW, platform: SLICES },
      { BERTH_FORGE_TOKEN: "forge-token-1" },
    );
    expect(problems).toBeUndefined();
    // Branches of merged or closed pull requests: looked for every 5 minutes, deleted after a day.
    expect(config?.fluxRepo.review).toEqual({
      ...REVIEW,
      token: "forge-token-1",
      sweepSeconds: 300,
      keepBranchMinutes: 1440,
    });
  });

  it("takes GitHub (its REST API's base URL) as the forge, and names the forges it knows for any other", async () => {
    const github = { ...REVIEW, forge: "github", url: "https://api.github.com" };
    const taken = await load({ review: github, platform: SLICES }, { BERTH_FORGE_TOKEN: "forge-token-1" });
    expect(taken.problems).toBeUndefined();
    expect(taken.config?.fluxRepo.review).toMatchObject({ forge: "github", url: "https://api.github.com" });
    const other = await load({ review: { ...REVIEW, forge: "gitlab" }, platform: SLICES }, { BERTH_FORGE_TOKEN: "t" });
    expect(other.problems).toMatch(/fluxRepo\.review\.forge.*"gitea".*"github"/s);
  });

  it("refuses pull-request mode on a layout that writes shared indexes, naming the setting", async () => {
    const { problems } = await load(
      { review: REVIEW, platform: { fluxSource: SLICES.fluxSource } },
      { BERTH_FORGE_TOKEN: "forge-token-1" },
    );
    expect(problems).toContain("pull-request mode needs platform.layout.appliedBy slices");
  });

  it("refuses pull-request mode without a token, and a forge token in direct mode, never repeating it", async () => {
    expect((await load({ review: REVIEW, platform: SLICES })).problems).toMatch(/fluxRepo\.review\.token/);
    const { problems } = await load({}, { BERTH_FORGE_TOKEN: "forge-token-secret-2" });
    expect(problems).toContain("fluxRepo.review.mode is not pull-request");
    expect(problems).not.toContain("forge-token-secret-2");
  });
  it("takes the forge's webhook secret from a file, and refuses one too short or in direct mode, never repeating it", async () => {
    const dir = await mkdtemp(join(tmpdir(), "berth-webhook-secret-"));
    dirs.push(dir);
    const file = join(dir, "secret");
    await writeFile(file, "a-webhook-secret-of-32-characters\n");
    const { config, problems } = await load(
      { review: REVIEW, platform: SLICES },
      { BERTH_FORGE_TOKEN: "forge-token-1", BERTH_FORGE_WEBHOOK_SECRET_FILE: file },
    );
    expect(problems).toBeUndefined();
    expect(config?.fluxRepo.review).toMatchObject({ webhookSecret: "a-webhook-secret-of-32-characters" });
    const short = await load(
      { review: REVIEW, platform: SLICES },
      { BERTH_FORGE_TOKEN: "forge-token-1", BERTH_FORGE_WEBHOOK_SECRET: "short-secret-7" },
    );
    expect(short.problems).toMatch(/fluxRepo\.review\.webhookSecret: must be at least 16 characters/);
    expect(short.problems).not.toContain("short-secret-7");
    const direct = await load({}, { BERTH_FORGE_WEBHOOK_SECRET: "a-webhook-secret-in-direct-mode" });
    expect(direct.problems).toContain(
      "BERTH_FORGE_WEBHOOK_SECRET(_FILE): set, but fluxRepo.review.mode is not pull-request",
    );
    expect(direct.problems).not.toContain("a-webhook-secret-in-direct-mode");
  });
});
