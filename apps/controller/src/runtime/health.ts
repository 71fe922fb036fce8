/** Alias module: the health/metrics server lives in server.ts (the name the runtime's brief fixed). */
export { startHealthServer, type HealthServer, type HealthServerOptions } from "./server.js";
