export {
  BerthClient,
  BerthProblemError,
  BerthUnreachableError,
  describeProblem,
  type BerthClientOptions,
} from "./client.js";
export { berthConfigSchema, berthClientFrom, readBerthConfig, type BerthConfig } from "./config.js";
export {
  berthActions,
  createTeamAction,
  updateTeamAction,
  offboardTeamAction,
  waitForTeamAction,
} from "./scaffolder/actions.js";
export { scaffolderModuleBerth } from "./scaffolder/module.js";
export { BerthEntityProvider } from "./catalog/provider.js";
export { fleetEntities, teamEntities } from "./catalog/entities.js";
export { catalogModuleBerth } from "./catalog/module.js";
