import { coreServices, createBackendModule } from "@backstage/backend-plugin-api";
import { scaffolderActionsExtensionPoint } from "@backstage/plugin-scaffolder-node";
import { berthClientFrom, readBerthConfig } from "../config.js";
import { berthActions } from "./actions.js";

/** `backend.add(import("@berth/backstage/scaffolder"))`: the berth:team:* actions, configured from app-config `berth`. */
export const scaffolderModuleBerth = createBackendModule({
  pluginId: "scaffolder",
  moduleId: "berth",
  register(reg) {
    reg.registerInit({
      deps: { scaffolder: scaffolderActionsExtensionPoint, config: coreServices.rootConfig },
      async init({ scaffolder, config }) {
        const settings = readBerthConfig(config);
        scaffolder.addActions(
          ...berthActions(berthClientFrom(settings), { pollMs: settings.scaffolder.waitPollSeconds * 1000 }),
        );
      },
    });
  },
});

export default scaffolderModuleBerth;
