import { setTimeout as sleep } from "node:timers/promises";
import { statusResponse, type StatusResponse } from "@berth/api-contract";
import { createLogUpdate } from "log-update";
import { stringify } from "yaml";
import { endsWatch, type BerthClient } from "../client.js";
import { CliError, EXIT } from "../exit-codes.js";
import { plural, shortSha } from "../output/text.js";
import type { Runtime } from "../runtime.js";
import { formatElapsed, renderFrame, WatchState } from "../watch.js";

export interface StatusOptions {
  watch: boolean;
  /** Give up after this long (ms); exit code 8. */
  timeoutMs: number;
  /** Time between polls (ms). */
  intervalMs: number;
  output?: "json" | "yaml" | undefined;
}

/** One poll of a watch: at most 30 s, and never past what is left of the watch's --timeout. */
export function pollTimeoutMs(leftMs: number): number {
  return Math.max(1, Math.min(30_000, leftMs));
}

async function fetchStatus(client: BerthClient, team: string, timeoutMs = 30_000): Promise<StatusResponse> {
  const { body } = await client.request("GET", `/v1/teams/${encodeURIComponent(team)}/status`, {
    schema: statusResponse,
    timeoutMs,
  });
  // `body` is undefined only for a status the caller lists in `empty`, and this request lists none.
  if (body === undefined)
    throw new CliError(`the API answered the status of team ${team} with no body`, EXIT.unavailable);
  return body;
}

export async function status(rt: Runtime, team: string, options: StatusOptions): Promise<number> {
  const client = await rt.client();
  if (!options.watch) {
    const response = await fetchStatus(client, team);
    if (options.output === "json") rt.out(JSON.stringify(response, null, 2));
    else if (options.output === "yaml") rt.io.stdout.write(stringify(response));
    else {
      const state = new WatchState();
      state.update(response, 0);
      rt.out(
        renderFrame(state, { elapsedMs: 0, tick: 0, width: rt.io.stdout.columns ?? 100, paint: rt.paint, live: false }),
      );
    }
    return EXIT.ok;
  }
  return watch(rt, client, team, options);
}

async function watch(rt: Runtime, client: BerthClient, team: string, options: StatusOptions): Promise<number> {
  const started = performance.now();
  const elapsed = () => performance.now() - started;
  const state = new WatchState();
  const tty = Boolean(rt.io.stdout.isTTY);
  const log = tty ? createLogUpdate(rt.io.stdout as NodeJS.WriteStream, { showCursor: false }) : undefined;
  let tick = 0;
  const draw = () =>
    log?.(
      renderFrame(state, {
        elapsedMs: elapsed(),
        tick: tick++,
        width: (rt.io.stdout.columns ?? 100) - 1,
        paint: rt.paint,
        live: true,
      }),
    );
  const spinner = log ? setInterval(draw, 100) : undefined;
  const signal = rt.io.signal;

  const finish = (code: number, summary: string[]): number => {
    if (spinner) clearInterval(spinner);
    if (log) {
      log(
        renderFrame(state, {
          elapsedMs: elapsed(),
          tick,
          width: (rt.io.stdout.columns ?? 100) - 1,
          paint: rt.paint,
          live: false,
        }),
      );
      log.done();
    }
    for (const line of summary) (code === EXIT.ok ? rt.out.bind(rt) : rt.err.bind(rt))(line);
    return code;
  };

  const timedOut = () =>
    finish(EXIT.timeout, [
      `error: timed out after ${formatElapsed(options.timeoutMs)} waiting for team ${team} to be Ready`,
      ...(state.pollError ? [`  the last poll failed: ${state.pollError}`] : []),
      ...(state.review ? [`  review: ${state.reviewLine()}`] : []),
      ...state.notReady().map((c) => `  ${c.cluster}: ${c.reason}`),
    ]);

  try {
    for (let first = true; ; first = false) {
      try {
        const response = await fetchStatus(client, team, pollTimeoutMs(options.timeoutMs - elapsed()));
        const changes = state.update(response, elapsed());
        if (!tty) {
          if (first)
            rt.out(
              response.clusters.length === 0 && response.review
                ? `[${formatElapsed(elapsed())}] team ${response.team}: in review, not in the Flux repo yet`
                : `[${formatElapsed(elapsed())}] team ${response.team}: in the Flux repo at ${shortSha(response.revision)}; watching ${plural(response.clusters.length, "cluster")}`,
            );
          for (const line of changes) rt.out(line);
        }
      } catch (err) {
        if (endsWatch(err)) {
          if (spinner) clearInterval(spinner);
          log?.done();
          throw err;
        }
        // A poll that the watch's own --timeout cut short says nothing about the API: the watch ends here,
        // and an earlier answer stands. Only a watch that never had one reports why.
        if (elapsed() >= options.timeoutMs) {
          if (!state.team) state.pollError = (err as Error).message;
          return timedOut();
        }
        state.pollError = (err as Error).message;
        if (!tty) rt.err(`[${formatElapsed(elapsed())}] cannot read status (${state.pollError}); retrying`);
      }
      draw();

      const outcome = state.outcome();
      const unobserved = state.unobserved();
      const note = unobserved.length
        ? [`note: the API cannot see ${unobserved.join(", ")} (api.clusters), so the team is not checked there`]
        : [];
      if (outcome === "ready") {
        const n = state.observable().length;
        return finish(EXIT.ok, [
          `team ${team} is Ready on ${plural(n, "cluster")} (${formatElapsed(elapsed())})`,
          ...note,
        ]);
      }
      if (outcome === "closed") return finish(EXIT.no, [`error: team ${team}: ${state.reviewLine()}`]);
      if (outcome === "failed") {
        return finish(
          EXIT.no,
          state.failures().map((f) => `error: team ${team} failed on ${f.cluster}: ${f.reason}`),
        );
      }
      if (outcome === "unobservable") {
        return finish(EXIT.unavailable, [
          `error: the API cannot see any cluster of team ${team} (${unobserved.join(", ")}): configure api.clusters, or watch with kubectl`,
        ]);
      }
      if (elapsed() >= options.timeoutMs) return timedOut();
      await sleep(Math.min(options.intervalMs, Math.max(0, options.timeoutMs - elapsed())), undefined, { signal });
      // A poll with no time left could only fail: the last answer stands.
      if (elapsed() >= options.timeoutMs) return timedOut();
    }
  } catch (err) {
    if ((err as Error).name === "AbortError" || signal.aborted)
      return finish(EXIT.interrupted, ["stopped watching (the rollout goes on)"]);
    throw err;
  }
}
