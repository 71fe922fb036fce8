import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type { DriftPageQuery, DriftUpdate } from "./drift-index.js";
import type { DriftReply, DriftRequest, DriftWorkerData } from "./worker.js";

/**
 * The worker's heap limit: its index is a few hundred bytes a team, its pages a few MB, its tree index
 * about 150 bytes a file (20 MB at 5,000 teams). Past this the worker dies and the next read starts another,
 * rather than the API's memory growing with what people write into the repo.
 */
const WORKER_HEAP_MB = 512;

/** How the worker thread is started: the built file, or the source under tsx (worker-from-source.mjs). */
function workerStart(workerData: DriftWorkerData): {
  entry: URL;
  options: ConstructorParameters<typeof Worker>[1];
} {
  const here = import.meta.url;
  const resourceLimits = { maxOldGenerationSizeMb: WORKER_HEAP_MB };
  if (!here.endsWith(".ts")) return { entry: new URL("./worker.js", here), options: { workerData, resourceLimits } };
  const fromSource = {
    ...workerData,
    tsconfig: fileURLToPath(new URL("../../../tsconfig.json", here)),
    entry: new URL("./worker.ts", here).href,
  };
  return { entry: new URL("./worker-from-source.mjs", here), options: { workerData: fromSource, resourceLimits } };
}

export interface DriftThreadStats {
  /** The worker's thread id (undefined before the first read, or after it ended). */
  threadId: number | undefined;
  /** Updates the worker made (one per revision read, however many readers asked for it). */
  updates: number;
  /** The last update the worker made: the revision, the teams it rendered, how long it took. */
  lastUpdate: DriftUpdate | undefined;
}

/**
 * The drift index in a worker thread (ADR 0026): started on the first read, asked for pages by revision,
 * ended by close(). A worker that dies (heap limit, a bug) fails the reads waiting on it; the next read starts
 * a new one, which renders the fleet once again.
 */
export class DriftThread {
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (body: Uint8Array) => void; reject: (err: Error) => void }>();
  private last: DriftUpdate | undefined;
  private updates = 0;
  private closed = false;

  constructor(private readonly data: DriftWorkerData) {}

  stats(): DriftThreadStats {
    return { threadId: this.worker?.threadId, updates: this.updates, lastUpdate: this.last };
  }

  /**
   * A page of the drift at `revision` (a commit the API's FluxRepo has fetched or written), as the JSON body
   * GET /v1/fleet/drift answers (drift-body.ts).
   */
  body(revision: string, query: DriftPageQuery): Promise<Uint8Array> {
    if (this.closed) return Promise.reject(new Error("drift thread closed"));
    const worker = this.started();
    const id = this.nextId++;
    return new Promise<Uint8Array>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({ id, revision, query } satisfies DriftRequest);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    this.failAll(new Error("drift thread closed"));
    await worker?.terminate();
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const { entry, options } = workerStart(this.data);
    const worker = new Worker(entry, options);
    // The HTTP server keeps the process up; an idle drift worker must not (nor hold up a test's exit).
    worker.unref();
    worker.on("message", (reply: DriftReply) => {
      const waiter = this.waiting.get(reply.id);
      if (!waiter) return;
      this.waiting.delete(reply.id);
      if ("error" in reply) waiter.reject(new Error(`drift: ${reply.error}`));
      else {
        if (reply.update) {
          this.last = reply.update;
          this.updates += 1;
        }
        waiter.resolve(reply.body);
      }
    });
    const ended = (err: Error) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.failAll(err);
    };
    worker.on("error", (err) => ended(err));
    worker.on("exit", (code) => ended(new Error(`drift worker exited with code ${code}`)));
    this.worker = worker;
    return worker;
  }

  private failAll(err: Error): void {
    for (const { reject } of this.waiting.values()) reject(err);
    this.waiting.clear();
  }
}
