// Starts the drift worker from its TypeScript source (tests, `tsx main.ts`): a worker thread does not inherit
// the loader its parent runs under, so it registers tsx itself, with the API's tsconfig (whose paths point
// @berth/* at the packages' sources, as the tests' aliases do). The built API starts worker.js directly.
import { workerData } from "node:worker_threads";
import { register } from "tsx/esm/api";

register({ tsconfig: workerData.tsconfig });
await import(workerData.entry);
