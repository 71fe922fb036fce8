import { adoptionPreviewResponse, adoptionProposalResponse, adoptionResponse } from "@berth/api-contract";
import { adoptionRequestSchema } from "@berth/core";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { AdoptionService } from "../../services/adoption-service.js";
import { onBehalfOfHeaders, problemResponses, teamNameParams } from "./schemas.js";
import { originOf } from "../write-request.js";

const security = [{ bearerAuth: [] }];
const errors = problemResponses(409, 422);

export const adoptionRoutes: FastifyPluginAsyncZod<{ adoption: AdoptionService }> = async (app, { adoption }) => {
  const write = { requiredRole: "write" as const };
  app.post(
    "/teams/:name/adopt/preview",
    {
      config: write,
      schema: {
        tags: ["teams"],
        summary: "Preview adopting a hand-written team: the inferred team, a report and the diff (no commit)",
        security,
        params: teamNameParams,
        body: adoptionRequestSchema,
        response: { 200: adoptionPreviewResponse, ...errors },
      },
    },
    async (request) => {
      const preview = await adoption.preview(request.params.name, request.body);
      return { ...preview, revision: preview.revision ?? null };
    },
  );
  app.post(
    "/teams/:name/adopt",
    {
      config: { ...write, action: "adopt" },
      schema: {
        tags: ["teams"],
        summary:
          "Adopt a hand-written team: team file and Berth's layout in one commit (in pull-request mode, one pull request)",
        security,
        params: teamNameParams,
        headers: onBehalfOfHeaders,
        body: adoptionRequestSchema,
        response: { 201: adoptionResponse, 202: adoptionProposalResponse, ...problemResponses(400, 409, 422) },
      },
    },
    async (request, reply) => {
      const { review, ...result } = await adoption.adopt(request.params.name, request.body, originOf(request));
      request.auditResult = {
        team: result.team.name,
        revision: result.revision,
        outcome: review ? "proposed" : "committed",
        ...(review ? { pullRequest: review.number } : {}),
      };
      // In pull-request mode nothing is adopted until a reviewer merges: the answer points at the pull request.
      if (review)
        return reply
          .code(202)
          .header("location", review.url)
          .send({ ...result, pullRequest: review });
      return reply.code(201).header("location", `/v1/teams/${result.team.name}`).send(result);
    },
  );
};
