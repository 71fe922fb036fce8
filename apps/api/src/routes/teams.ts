import type { ChangeOrigin } from "@berth/core";
import type { FastifyRequest } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { TeamService } from "../team-service.js";
import { HttpProblem } from "../plugins/problem.js";
import {
  createTeamBody,
  deleteResponse,
  previewResponse,
  problemResponse,
  statusResponse,
  teamListResponse,
  teamNameParams,
  teamResponse,
  updateTeamBody,
  writeResponse,
} from "./schemas.js";

const security = [{ bearerAuth: [] }];
const errors = { 401: problemResponse, 403: problemResponse, 422: problemResponse, 500: problemResponse, 503: problemResponse };

/** Who asked for a write, for its commit's trailers (every write route uses this). */
export function originOf(request: FastifyRequest): ChangeOrigin {
  return { actor: request.principal?.actor ?? "unknown", requestId: String(request.id) };
}

export const teamRoutes: FastifyPluginAsyncZod<{ teams: TeamService }> = async (app, { teams }) => {
  const read = { requiredRole: "read" as const };
  const write = { requiredRole: "write" as const };

  app.get("/teams", { config: read, schema: { tags: ["teams"], summary: "List teams", security, response: { 200: teamListResponse, ...errors } } }, async () => {
    const { revision, teams: items } = await teams.list();
    return { items, revision: revision ?? null };
  });

  app.post(
    "/teams",
    { config: write, schema: { tags: ["teams"], summary: "Onboard a team", security, body: createTeamBody, response: { 201: writeResponse, 409: problemResponse, ...errors } } },
    async (request, reply) => {
      const result = await teams.create(request.body, originOf(request));
      return reply.code(201).header("location", `/v1/teams/${result.team.name}`).send(result);
    },
  );

  app.post(
    "/teams/preview",
    { config: write, schema: { tags: ["teams"], summary: "Preview onboarding a new team (no commit)", security, body: createTeamBody, response: { 200: previewResponse, ...errors } } },
    async (request) => {
      const preview = await teams.preview(request.body);
      return { ...preview, revision: preview.revision ?? null };
    },
  );

  app.get(
    "/teams/:name",
    { config: read, schema: { tags: ["teams"], summary: "Get a team", security, params: teamNameParams, response: { 200: teamResponse, 404: problemResponse, ...errors } } },
    async (request) => {
      const { revision, team } = await teams.get(request.params.name);
      if (!team) throw new HttpProblem(404, "team-not-found", "Team not found", `team "${request.params.name}" does not exist`);
      return { team, revision: revision ?? null };
    },
  );

  app.get(
    "/teams/:name/status",
    {
      config: read,
      schema: { tags: ["teams"], summary: "Team status per cluster, as the controller reports it", security, params: teamNameParams, response: { 200: statusResponse, 404: problemResponse, ...errors } },
    },
    async (request) => {
      const status = await teams.status(request.params.name);
      return { ...status, revision: status.revision ?? null };
    },
  );

  app.put(
    "/teams/:name",
    {
      config: write,
      schema: { tags: ["teams"], summary: "Update a team (re-render, commit what changed)", security, params: teamNameParams, body: updateTeamBody, response: { 200: writeResponse, 404: problemResponse, ...errors } },
    },
    async (request) => teams.update(request.params.name, request.body, originOf(request)),
  );

  app.post(
    "/teams/:name/preview",
    {
      config: write,
      schema: { tags: ["teams"], summary: "Preview an update (no commit)", security, params: teamNameParams, body: updateTeamBody, response: { 200: previewResponse, 404: problemResponse, ...errors } },
    },
    async (request) => {
      const preview = await teams.preview(request.body, request.params.name);
      return { ...preview, revision: preview.revision ?? null };
    },
  );

  app.delete(
    "/teams/:name",
    { config: write, schema: { tags: ["teams"], summary: "Offboard a team in one commit", security, params: teamNameParams, response: { 200: deleteResponse, 404: problemResponse, ...errors } } },
    async (request) => {
      const result = await teams.delete(request.params.name, originOf(request));
      return { team: result.team.name, revision: result.revision, files: result.files };
    },
  );
};
