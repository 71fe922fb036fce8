/**
 * What the fleet-scale benchmarks share: N v1 teams seeded into a remote in one commit, team names, and how
 * figures and the machine's load are printed.
 */
import { loadConfig, loadTemplateCatalog } from "@berth/config";
import { Onboarding, validateTeam } from "@berth/core";
import { FluxRepo } from "@berth/gitops";
import { loadavg } from "node:os";
import { join } from "node:path";
import { DEV_TOKEN, REPO_ROOT } from "../support/berth.js";
import { MemoryRepoTree } from "../../packages/core/test/fixtures.js";
import { makeTempDir } from "../support/git-remotes.js";

export const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";

export const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(" ");
export const ms = (n: number) => (n >= 1000 ? `${(n / 1000).toFixed(2)} s` : `${n.toFixed(1)} ms`);
export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
export const teamName = (i: number) => `team-${String(i).padStart(5, "0")}`;

/** N v1 teams in one commit, written straight through the writer (not through N requests). */
export async function seed(url: string, n: number): Promise<number> {
  const config = loadConfig(
    {
      BERTH_CONFIG_FILE: join(REPO_ROOT, "infra", "local", "berth.yaml"),
      BERTH_GIT_URL: url,
      BERTH_GIT_WORKDIR: "/tmp/unused",
      BERTH_AUTH_MODE: "dev",
      BERTH_DEV_TOKEN: DEV_TOKEN,
    },
    REPO_ROOT,
  );
  const onboarding = new Onboarding(config.platform, await loadTemplateCatalog(config.templatesDir, "v1"));
  const files = new Map<string, string>();
  for (let i = 0; i < n; i++) {
    const name = teamName(i);
    const team = {
      ...validateTeam(
        {
          name,
          description: `Team ${i}`,
          owners: [OWNER],
          environments: ["dev", "prod"],
          roleAssignments: [{ role: "rg-contributor" }],
          labels: { "cost-center": `cc-${i % 97}` },
        },
        config.platform,
      ),
      templateVersion: "v1",
    };
    for (const [p, c] of onboarding.render(team)) files.set(p, c);
  }
  // Every cluster's indexes as Berth's own rebuild writes them (the same code a rollout's plan runs).
  for (const [p, content] of await onboarding.indexChanges(new MemoryRepoTree(files), [], { every: true }))
    if (content !== null) files.set(p, content);
  const work = await makeTempDir("berth-bench-seed-");
  const repo = FluxRepo.fromConfig({
    url,
    branch: "main",
    workDir: join(work, "clone"),
    author: { name: "seed", email: "seed@bench" },
    auth: { kind: "none" },
    timeoutMs: 600_000,
  });
  await repo.transact(async () => ({ files, subject: `seed ${n} teams` }), { actor: "bench", requestId: "seed" });
  await repo.close();
  return files.size;
}
