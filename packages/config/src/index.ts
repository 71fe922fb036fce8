export * from "./schema.js";
export * from "./load.js";
export * from "./templates.js";
export * from "./controller.js";
