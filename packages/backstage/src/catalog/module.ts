import { coreServices, createBackendModule } from "@backstage/backend-plugin-api";
import { catalogProcessingExtensionPoint } from "@backstage/plugin-catalog-node";
import { berthClientFrom, readBerthConfig } from "../config.js";
import { BerthEntityProvider } from "./provider.js";

/**
 * `backend.add(import("@berth/backstage/catalog"))`: every Berth team in the catalog. The scheduler runs the
 * full refresh and the cheap poll once across replicas (its tasks are global by default).
 */
export const catalogModuleBerth = createBackendModule({
  pluginId: "catalog",
  moduleId: "berth",
  register(reg) {
    reg.registerInit({
      deps: {
        catalog: catalogProcessingExtensionPoint,
        config: coreServices.rootConfig,
        logger: coreServices.logger,
        scheduler: coreServices.scheduler,
      },
      async init({ catalog, config, logger, scheduler }) {
        const settings = readBerthConfig(config);
        const provider = new BerthEntityProvider(berthClientFrom(settings), logger, settings.baseUrl);
        catalog.addEntityProvider(provider);
        await scheduler.scheduleTask({
          id: "berth-catalog-full-refresh",
          frequency: { minutes: settings.catalog.fullRefreshMinutes },
          timeout: { minutes: 10 },
          fn: (signal) => provider.fullRefresh(signal as AbortSignal),
        });
        await scheduler.scheduleTask({
          id: "berth-catalog-poll",
          frequency: { seconds: settings.catalog.pollSeconds },
          timeout: { minutes: 5 },
          initialDelay: { seconds: settings.catalog.pollSeconds },
          fn: (signal) => provider.refreshIfChanged(signal as AbortSignal),
        });
      },
    });
  },
});

export default catalogModuleBerth;
