import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { describeClusterStatus, phaseOf, type PreviewResponse, type StatusResponse } from "@berth/api-contract";
import type { TeamInput, TeamSpec } from "@berth/core";
import type { LoggerService } from "@backstage/backend-plugin-api";
import { createTemplateAction } from "@backstage/plugin-scaffolder-node";
import type { z as zod } from "zod/v3";
import { BerthProblemError, type BerthClient } from "../client.js";

/**
 * The scaffolder's side of Berth (docs/backstage.md): each action is one Berth call. Berth validates the team
 * (the action's input is the body Berth's API takes, @berth/core's team schema, not a copy of it), so a bad
 * input is refused with Berth's own RFC 9457 problem in the task log. A retried task (the scaffolder's retry)
 * reuses each step's checkpoint, and a write that did reach Berth but whose answer was lost is sent again with
 * the same Idempotency-Key: one commit either way.
 */

/** What a Berth write step says: the team, its page, the commit and the files it changed. */
interface WriteSummary {
  team: string;
  revision: string;
  committed: boolean;
  files: string[];
  [key: string]: string | boolean | string[];
}

/** What berth:team:create and berth:team:update answer. */
const writeOutputSchema = {
  team: (z: typeof zod) => z.string().describe("The team's name"),
  url: (z: typeof zod) => z.string().describe("The team's page on Berth's status page"),
  revision: (z: typeof zod) => z.string().describe("The Flux repo commit holding the change (the head, in a dry run)"),
  committed: (z: typeof zod) =>
    z.boolean().describe("Whether Berth committed (false in a dry run or when nothing changed)"),
  files: (z: typeof zod) => z.array(z.string()).describe("`<status> <path>` of each file written"),
  diff: (z: typeof zod) => z.string().optional().describe("In a dry run: the unified diff Berth would commit"),
};
type WriteOutput = WriteSummary & { url: string; diff?: string };

function emit(ctx: { output(name: keyof WriteOutput, value: WriteOutput[keyof WriteOutput]): void }, out: WriteOutput) {
  for (const [name, value] of Object.entries(out)) if (value !== undefined) ctx.output(name, value);
}

function previewed(berth: BerthClient, team: string, preview: PreviewResponse): WriteOutput {
  return {
    team,
    url: berth.teamPageUrl(team),
    revision: preview.revision ?? "",
    committed: false,
    files: preview.files.map((f) => `${f.status} ${f.path}`),
    diff: preview.diff,
  };
}

/** The same key for every attempt of one step of one task: Berth answers a repeat from the original commit. */
function idempotencyKey(ctx: { task: { id: string }; step?: { id?: string } }, action: string): string {
  const digest = createHash("sha256")
    .update(`${ctx.task.id}\n${ctx.step?.id ?? ""}\n${action}`)
    .digest("hex");
  return `backstage-${digest.slice(0, 48)}`;
}

/** Berth's refusal, logged as Berth said it, then rethrown: the task fails with Berth's words. */
async function explained<T>(logger: LoggerService, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof BerthProblemError) {
      logger.error(`Berth refused (${err.status} ${err.kind}): ${err.message}`);
      throw new Error(`Berth refused the request: ${err.message}`, { cause: err });
    }
    throw err;
  }
}

export function createTeamAction(berth: BerthClient) {
  return createTemplateAction({
    id: "berth:team:create",
    description:
      "Onboards a team through Berth (POST /v1/teams). In a dry run, Berth's preview: the files it would write and their diff.",
    supportsDryRun: true,
    schema: {
      input: {
        team: (z) =>
          z
            .record(z.string(), z.unknown())
            .describe("The team as Berth's POST /v1/teams takes it: name, owners, environments, and any other field"),
      },
      output: writeOutputSchema,
    },
    async handler(ctx) {
      // Berth validates it; a problem it finds is what the user sees, not a copy's.
      const team = ctx.input.team as TeamInput;
      if (ctx.isDryRun) {
        const preview = await explained(ctx.logger, () => berth.previewCreate(team, ctx.signal));
        ctx.logger.info(`Berth would write ${preview.files.length} files for ${preview.team.name}:\n${preview.diff}`);
        return emit(ctx, previewed(berth, preview.team.name, preview));
      }
      const written = await ctx.checkpoint<WriteSummary>({
        key: `berth:team:create:${ctx.step?.id ?? ""}`,
        fn: () =>
          explained(ctx.logger, async () => {
            const res = await berth.createTeam(team, {
              idempotencyKey: idempotencyKey(ctx, "create"),
              onBehalfOf: ctx.user?.ref,
              signal: ctx.signal,
            });
            return summary(res.team.name, res);
          }),
      });
      ctx.logger.info(
        written.committed
          ? `Berth committed ${written.team} at ${written.revision}: ${written.files.join(", ")}`
          : `Berth already holds ${written.team} as asked (nothing committed)`,
      );
      emit(ctx, { ...written, url: berth.teamPageUrl(written.team) });
    },
  });
}

export function updateTeamAction(berth: BerthClient) {
  return createTemplateAction({
    id: "berth:team:update",
    description:
      "Replaces a team's spec through Berth (PUT /v1/teams/{name}); Berth commits only what changed. In a dry run, Berth's preview and diff.",
    supportsDryRun: true,
    schema: {
      input: {
        name: (z) => z.string().describe("The team's name"),
        spec: (z) =>
          z
            .record(z.string(), z.unknown())
            .describe("The team's whole spec as Berth's PUT /v1/teams/{name} takes it (owners, environments, ...)"),
      },
      output: writeOutputSchema,
    },
    async handler(ctx) {
      const { name } = ctx.input;
      const spec = ctx.input.spec as Partial<TeamSpec>;
      if (ctx.isDryRun) {
        const preview = await explained(ctx.logger, () => berth.previewUpdate(name, spec, ctx.signal));
        ctx.logger.info(`Berth would change ${preview.files.length} files of ${name}:\n${preview.diff}`);
        return emit(ctx, previewed(berth, name, preview));
      }
      const written = await ctx.checkpoint<WriteSummary>({
        key: `berth:team:update:${ctx.step?.id ?? ""}`,
        fn: () =>
          explained(ctx.logger, async () =>
            summary(
              name,
              await berth.updateTeam(name, spec, {
                idempotencyKey: idempotencyKey(ctx, "update"),
                onBehalfOf: ctx.user?.ref,
                signal: ctx.signal,
              }),
            ),
          ),
      });
      ctx.logger.info(
        written.committed
          ? `Berth committed ${name} at ${written.revision}: ${written.files.join(", ")}`
          : `${name} already had this spec (nothing committed)`,
      );
      emit(ctx, { ...written, url: berth.teamPageUrl(name) });
    },
  });
}

export function offboardTeamAction(berth: BerthClient) {
  return createTemplateAction({
    id: "berth:team:offboard",
    description:
      "Offboards a team through Berth (DELETE /v1/teams/{name}): one commit removes its files; Flux prunes what it applied. A dry run checks the team exists.",
    supportsDryRun: true,
    schema: {
      input: { name: (z) => z.string().describe("The team's name") },
      output: {
        team: (z) => z.string(),
        revision: (z) => z.string(),
        files: (z) => z.array(z.string()),
      },
    },
    async handler(ctx) {
      const { name } = ctx.input;
      if (ctx.isDryRun) {
        const team = await explained(ctx.logger, () => berth.team(name, ctx.signal));
        ctx.logger.info(`Berth would offboard ${team.name} (environments ${team.environments.join(", ")})`);
        ctx.output("team", name);
        ctx.output("revision", "");
        ctx.output("files", []);
        return;
      }
      const removed = await ctx.checkpoint<{ revision: string; files: string[] }>({
        key: `berth:team:offboard:${ctx.step?.id ?? ""}`,
        fn: () =>
          explained(ctx.logger, async () => {
            const res = await berth.offboardTeam(name, {
              idempotencyKey: idempotencyKey(ctx, "offboard"),
              onBehalfOf: ctx.user?.ref,
              signal: ctx.signal,
            });
            return { revision: res.revision, files: res.files.map((f) => `${f.status} ${f.path}`) };
          }),
      });
      ctx.logger.info(`Berth offboarded ${name} at ${removed.revision} (${removed.files.length} files removed)`);
      ctx.output("team", name);
      ctx.output("revision", removed.revision);
      ctx.output("files", removed.files);
    },
  });
}

export interface WaitSettings {
  /** Between two reads of the team's status (default 5 s). */
  pollMs?: number;
}

export function waitForTeamAction(berth: BerthClient, settings: WaitSettings = {}) {
  const pollMs = settings.pollMs ?? 5_000;
  return createTemplateAction({
    id: "berth:team:wait",
    description:
      "Waits until the team is Ready on every cluster it lands on (GET /v1/teams/{name}/status), logging each step of its status chain; fails at once when a cluster reports a failure Berth cannot recover from, or at the timeout.",
    supportsDryRun: true,
    schema: {
      input: {
        name: (z) => z.string().describe("The team's name"),
        timeoutSeconds: (z) =>
          z.number().int().positive().max(86_400).optional().describe("Give up after this long (default 900)"),
      },
      output: {
        ready: (z) => z.boolean(),
        url: (z) => z.string(),
        clusters: (z) =>
          z
            .array(z.object({ cluster: z.string(), environment: z.string(), clientId: z.string().optional() }))
            .describe("Each cluster the team is Ready on, with its identity's client id"),
      },
    },
    async handler(ctx) {
      const { name } = ctx.input;
      ctx.output("url", berth.teamPageUrl(name));
      if (ctx.isDryRun) {
        ctx.logger.info(`A run would wait for ${name} to be Ready on every cluster`);
        ctx.output("ready", false);
        ctx.output("clusters", []);
        return;
      }
      const timeoutMs = (ctx.input.timeoutSeconds ?? 900) * 1000;
      const deadline = Date.now() + timeoutMs;
      let said = "";
      let status: StatusResponse | undefined;
      for (;;) {
        status = await explained(ctx.logger, () => berth.teamStatus(name, ctx.signal));
        const now = progress(status);
        if (now !== said) ctx.logger.info(now);
        said = now;
        if (status.ready) break;
        const hopeless = status.clusters.find((c) => c.state === "not-configured" || phaseOf(c) === "failed");
        if (hopeless)
          throw new Error(`${name} cannot become Ready on ${hopeless.cluster}: ${describeClusterStatus(hopeless)}`);
        if (Date.now() + pollMs > deadline)
          throw new Error(`${name} is not Ready after ${timeoutMs / 1000} s: ${progress(status)}`);
        await sleep(pollMs, undefined, ctx.signal ? { signal: ctx.signal } : {});
      }
      ctx.logger.info(`${name} is Ready on ${status.clusters.map((c) => c.cluster).join(", ")}`);
      ctx.output("ready", true);
      ctx.output(
        "clusters",
        status.clusters.map((c) => ({
          cluster: c.cluster,
          environment: c.environment,
          ...(c.clientId ? { clientId: c.clientId } : {}),
        })),
      );
    },
  });
}

/** One line per cluster: `aks-dev-weu: waiting for identity (IdentityReady: ...)`. */
function progress(status: StatusResponse): string {
  if (status.clusters.length === 0) return `${status.team}: lands on no cluster`;
  return status.clusters.map((c) => `${c.cluster}: ${describeClusterStatus(c)}`).join("; ");
}

function summary(
  team: string,
  res: { revision: string; committed: boolean; files: Array<{ status: string; path: string }> },
): WriteSummary {
  return {
    team,
    revision: res.revision,
    committed: res.committed,
    files: res.files.map((f) => `${f.status} ${f.path}`),
  };
}

export function berthActions(berth: BerthClient, settings: WaitSettings = {}) {
  return [
    createTeamAction(berth),
    updateTeamAction(berth),
    offboardTeamAction(berth),
    waitForTeamAction(berth, settings),
  ];
}
