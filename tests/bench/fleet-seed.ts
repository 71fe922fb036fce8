/**
 * What the fleet-scale benchmarks share: N v1 teams seeded into a remote in one commit, team names, and how
 * figures and the machine's load are printed.
 */
import { loadConfig, loadTemplateCatalog } from "@berth/config";
import { Onboarding, repoLayout, validateTeam } from "@berth/core";
import { FluxRepo } from "@berth/gitops";
import { execFile } from "node:child_process";
import { loadavg } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { DEV_TOKEN, REPO_ROOT } from "../support/berth.js";
import { MemoryRepoTree } from "../../packages/core/test/fixtures.js";
import { makeTempDir } from "../support/git-remotes.js";

export const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";

export const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(" ");
export const ms = (n: number) => (n >= 1000 ? `${(n / 1000).toFixed(2)} s` : `${n.toFixed(1)} ms`);
export const teamName = (i: number) => `team-${String(i).padStart(5, "0")}`;

/**
 * N v1 teams in one commit, written straight through the writer (not through N requests). With `filesFrom`,
 * every team file says v1 but the team's other files hold that version's render: N drifted teams.
 */
export async function seed(url: string, n: number, opts: { filesFrom?: string } = {}): Promise<number> {
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
    const rendered = onboarding.render(team);
    const spec = repoLayout(config.platform).teamSpec(name);
    if (opts.filesFrom)
      for (const [p, c] of onboarding.render({ ...team, templateVersion: opts.filesFrom }))
        if (p !== spec && rendered.has(p)) rendered.set(p, c);
    for (const [p, c] of rendered) files.set(p, c);
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

/**
 * seed() in a child process: the bench's own process then holds only what it measures (the API, its threads,
 * the clients), not the garbage of rendering N teams a moment before (a major GC of it stalls the event loop).
 */
export async function seedInChild(url: string, n: number, opts: { filesFrom?: string } = {}): Promise<number> {
  const args = [...process.execArgv, fileURLToPath(import.meta.url), "--seed", url, String(n), opts.filesFrom ?? ""];
  const { stdout } = await promisify(execFile)(process.execPath, args, { maxBuffer: 1 << 20 });
  return Number(stdout.trim().split("\n").at(-1));
}

if (process.argv[2] === "--seed" && process.argv[1] === fileURLToPath(import.meta.url)) {
  const [url, n, filesFrom] = process.argv.slice(3);
  process.stdout.write(`${await seed(url!, Number(n), filesFrom ? { filesFrom } : {})}\n`);
}
