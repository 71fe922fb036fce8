/** Rollouts, the pure part (docs/rollouts.md): model (request and state file), waves, transitions, gate, reader. */
export * from "./model.js";
export * from "./waves.js";
export * from "./transitions.js";
export * from "./gate.js";
export * from "./reader.js";
