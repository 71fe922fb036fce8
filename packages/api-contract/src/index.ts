export * from "./problem.js";
export * from "./teams.js";
export * from "./status.js";
export * from "./rollouts.js";
export * from "./drift.js";
export * from "./paging.js";
export * from "./templates.js";
export * from "./adoption.js";
