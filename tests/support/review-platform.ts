/**
 * Pull-request mode on a whole platform (docs/pull-requests.md): the fleet repository on a real Gitea, real Flux
 * whose GitRepositories poll every 10 minutes, Berth's API in pull-request mode, and the repository's push webhook
 * on Receiver berth-teams-forge, so a reviewer's merge reaches the cluster at once.
 */
import { startFluxPlatform, type FluxPlatform, type FluxPlatformOptions } from "./flux-platform.js";
import { startGitea, type GiteaRepo, type RunningGitea } from "./gitea.js";

export interface ReviewPlatform {
  gitea: RunningGitea;
  repo: GiteaRepo;
  platform: FluxPlatform;
  stop(): Promise<void>;
}

export async function startReviewPlatform(
  opts: Pick<FluxPlatformOptions, "apiEnv"> & { webhookSecret?: string } = {},
): Promise<ReviewPlatform> {
  const gitea = await startGitea();
  let platform: FluxPlatform | undefined;
  const stop = async () => {
    await platform?.stop();
    await gitea.stop();
  };
  try {
    const repo = await gitea.createRepo("fleet");
    platform = await startFluxPlatform({
      pollInterval: "10m",
      forgeReceiver: true,
      repository: { url: repo.cloneUrl, username: gitea.username, password: gitea.token },
      apiEnv: { BERTH_FORGE_TOKEN: gitea.token, ...opts.apiEnv },
      berthConfig: (raw) => {
        raw.fluxRepo = {
          ...(raw.fluxRepo as object),
          review: { mode: "pull-request", forge: "gitea", url: gitea.url, owner: repo.owner, repository: repo.name },
        };
        // The rollout engine follows a wave's pull request and its gate at this pace.
        raw.api.rollouts = { pollIntervalMs: 500, gateTimeoutSeconds: 300 };
      },
    });
    const receiver = platform.forgeReceiver!;
    const hook = await gitea.api(`/repos/${repo.owner}/${repo.name}/hooks`, {
      method: "POST",
      body: JSON.stringify({
        type: "gitea",
        active: true,
        events: ["push"],
        config: { url: receiver.url, content_type: "json", secret: opts.webhookSecret ?? receiver.token },
      }),
    });
    if (hook.status !== 201) throw new Error(`Gitea refused the webhook: ${hook.status} ${await hook.text()}`);
    // Seeded: from now on main takes reviewed pull requests only, as most fleet repositories' does.
    await gitea.protectBranch(repo, "main");
    return { gitea, repo, platform, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
