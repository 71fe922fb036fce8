/**
 * The drift worker thread: holds the DriftIndex and answers pages of it, so rendering the fleet never runs on
 * the API's event loop (ADR 0026). Started by DriftThread; reads the clone the API's FluxRepo writes, read-only.
 */
import { parentPort, workerData } from "node:worker_threads";
import { loadTemplateCatalog } from "@berth/config";
import { Fleet, Onboarding, type Platform } from "@berth/core";
import { RepoReader } from "@berth/gitops";
import { driftBody } from "./drift-body.js";
import { DriftIndex, type DriftPageQuery, type DriftUpdate } from "./drift-index.js";

export interface DriftWorkerData {
  platform: Platform;
  templatesDir: string;
  /** The FluxRepo's workDir (a bare clone). */
  gitDir: string;
}
export interface DriftRequest {
  id: number;
  revision: string;
  query: DriftPageQuery;
}
interface DriftAnswer {
  /** The page's HTTP body (drift-body.ts): JSON, checked against the contract. */
  body: Uint8Array;
  /** What bringing the index to the revision did (undefined: it was there already). */
  update: DriftUpdate | undefined;
}
export type DriftReply = ({ id: number } & DriftAnswer) | { id: number; error: string };

/** Pages kept, serialized, for callers asking the same one (pollers, a page with diffs read by several clients). */
const PAGES_KEPT = 4;

async function main(port: NonNullable<typeof parentPort>, data: DriftWorkerData): Promise<void> {
  const onboarding = new Onboarding(
    data.platform,
    await loadTemplateCatalog(data.templatesDir, data.platform.templateVersion),
  );
  // No render cache: the index keeps each team's result, and a page with diffs renders only its own teams.
  const index = new DriftIndex(new Fleet(onboarding, { renderCacheMax: 0 }));
  const reader = RepoReader.open(data.gitDir);
  const pages = new Map<string, Uint8Array>();
  let previous: string | undefined;

  const answer = async ({ revision, query }: DriftRequest): Promise<DriftAnswer> => {
    const tree = reader.treeAt(revision, previous);
    let update: DriftUpdate | undefined;
    if (index.at !== revision) {
      const changed =
        previous === undefined ? undefined : await reader.changedPaths(previous, revision).catch(() => undefined);
      update = await index.update(tree, changed);
      previous = revision;
      pages.clear();
    }
    const key = JSON.stringify([query.after ?? null, query.limit, query.diffs]);
    let body = pages.get(key);
    if (!body) {
      body = driftBody(await index.page(tree, query));
      if (pages.size >= PAGES_KEPT) pages.delete(pages.keys().next().value ?? "");
      pages.set(key, body);
    }
    return { body, update };
  };

  // One request at a time: a burst of readers after a commit shares one update, then reads kept pages.
  let queue = Promise.resolve();
  port.on("message", (request: DriftRequest) => {
    queue = queue.then(async () => {
      try {
        port.postMessage({ id: request.id, ...(await answer(request)) } satisfies DriftReply);
      } catch (err) {
        port.postMessage({ id: request.id, error: (err as Error).message } satisfies DriftReply);
      }
    });
  });
}

// A failure to start is an unhandled rejection: the worker's error event, which DriftThread reports to its callers.
if (parentPort) void main(parentPort, workerData as DriftWorkerData);
