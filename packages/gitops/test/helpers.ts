import { rm } from "node:fs/promises";
import { join } from "node:path";
import type { ChangeOrigin, RepoChange, RepoTree } from "@berth/core";
import { FluxRepo, type FluxRepoConfig } from "../src/index.js";
import { makeTempDir } from "../../../tests/support/git-remotes.js";

export const origin: ChangeOrigin = { actor: "alice@example.com", requestId: "req-1" };

/** A FluxRepo on `url` with its own fresh workDir; `cleanup` closes it and removes the folder. */
export async function openRepo(
  url: string,
  extra: Partial<FluxRepoConfig> = {},
): Promise<{ repo: FluxRepo; workDir: string; cleanup(): Promise<void> }> {
  const tmp = await makeTempDir("berth-work-");
  const workDir = join(tmp, "clone");
  const repo = FluxRepo.fromConfig({
    url,
    branch: "main",
    workDir,
    author: { name: "Berth", email: "berth@example.test" },
    auth: { kind: "none" },
    timeoutMs: 15_000,
    ...extra,
  });
  return {
    repo,
    workDir,
    async cleanup() {
      await repo.close();
      await rm(tmp, { recursive: true, force: true });
    },
  };
}

/** A change writing (string) or deleting (null) files. */
export function change(subject: string, files: Record<string, string | null>, body?: string[]): RepoChange {
  return { subject, files: new Map(Object.entries(files)), ...(body ? { body } : {}) };
}

export const write =
  (subject: string, files: Record<string, string | null>) =>
  async (_tree: RepoTree): Promise<RepoChange> =>
    change(subject, files);
