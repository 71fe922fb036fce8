import { PHASES } from "@berth/api-contract";
import { RolloutNotFoundError, rolloutIdSchema, teamNameSchema } from "@berth/core";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { RolloutService } from "../../services/rollouts/service.js";
import type { StatusBoard } from "../../services/status-board.js";
import type { Responder } from "./respond.js";
import { fleetFilterForm, fleetMain, fleetView } from "./views/fleet.js";
import { rolloutMain, rolloutsMain } from "./views/rollouts.js";
import { teamInReviewMain, teamMain } from "./views/team.js";

/** The pages a signed-in reader sees: the fleet, a team, the rollouts and one rollout. */

const fleetQuery = z.object({
  q: z.string().max(100).catch(""),
  phase: z.enum(PHASES).optional().catch(undefined),
  page: z.coerce.number().int().min(1).max(1_000_000).catch(1),
  fragment: z.literal("main").optional().catch(undefined),
});

export function registerPages(
  app: FastifyInstance,
  { board, rollouts, respond }: { board: StatusBoard; rollouts: RolloutService; respond: Responder },
): void {
  app.get("/", { config: { uiAccess: "read" } }, async (request, reply) => {
    const query = fleetQuery.parse(request.query ?? {});
    const filter = { q: query.q, phase: query.phase };
    const view = fleetView(await board.fleet(), board.clusters(), filter, query.page);
    return respond.page(request, reply, "Fleet", fleetMain(view, filter), fleetFilterForm(filter));
  });

  app.get("/teams/:name", { config: { uiAccess: "read" } }, async (request, reply) => {
    const name = teamNameSchema.safeParse((request.params as { name?: unknown }).name);
    const detail = name.success ? await board.team(name.data) : undefined;
    const review = !detail && name.success ? await board.review(name.data) : undefined;
    if (review && name.success) return respond.page(request, reply, name.data, teamInReviewMain(name.data, review));
    if (!detail)
      return respond.error(
        request,
        reply,
        404,
        "Team not found",
        `There is no team "${String((request.params as { name?: unknown }).name)}" in the Flux repo.`,
      );
    return respond.page(request, reply, detail.team.name, teamMain(detail));
  });

  app.get("/rollouts", { config: { uiAccess: "read" } }, async (request, reply) => {
    const { revision, items } = await rollouts.list();
    return respond.page(request, reply, "Rollouts", rolloutsMain(items, revision));
  });

  app.get("/rollouts/:id", { config: { uiAccess: "read" } }, async (request, reply) => {
    const raw = (request.params as { id?: unknown }).id;
    const id = rolloutIdSchema.safeParse(raw);
    const notFound = () =>
      respond.error(
        request,
        reply,
        404,
        "Rollout not found",
        `There is no rollout "${String(raw)}" in the Flux repo.`,
        { href: "/ui/rollouts", text: "All rollouts" },
      );
    if (!id.success) return notFound();
    try {
      const { revision, rollout, progress } = await rollouts.get(id.data);
      return respond.page(request, reply, rollout.metadata.name, rolloutMain(rollout, progress, revision));
    } catch (err) {
      if (err instanceof RolloutNotFoundError) return notFound();
      throw err;
    }
  });
}
