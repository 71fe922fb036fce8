import { loadTemplateCatalog, type BerthConfig } from "@berth/config";
import { Onboarding } from "@berth/core";
import { FluxRepo } from "@berth/gitops";
import type pino from "pino";
import type { AppDeps } from "./app.js";
import { FleetService } from "./fleet-service.js";
import { authenticatorFor } from "./plugins/auth.js";
import { TeamService } from "./team-service.js";
import { KubeTeamStatusReader } from "./team-status.js";

/** The API's services built from its configuration: what main.ts runs and what the tests start. */
export interface ApiServices {
  deps: AppDeps;
  repo: FluxRepo;
  onboarding: Onboarding;
  /** Starts background work (the rollout engine); call after the server listens. */
  start(): Promise<void>;
  /** Stops background work and closes the repo; call after the server closed. */
  close(): Promise<void>;
}

export async function createServices(config: BerthConfig, logger: pino.Logger): Promise<ApiServices> {
  const catalog = await loadTemplateCatalog(config.templatesDir, config.platform.templateVersion);
  const onboarding = new Onboarding(config.platform, catalog);
  const repo = FluxRepo.fromConfig({ ...config.fluxRepo, logger: logger.child({ component: "flux-repo" }) });
  await repo.init();
  const statusReader = KubeTeamStatusReader.fromConfig(config.api.clusters);
  const deps: AppDeps = {
    teams: new TeamService(onboarding, repo, statusReader),
    fleet: new FleetService(onboarding, repo),
    store: repo,
    authenticator: authenticatorFor(config.api.auth),
  };
  return {
    deps,
    repo,
    onboarding,
    async start() {},
    async close() {
      await repo.close();
    },
  };
}
