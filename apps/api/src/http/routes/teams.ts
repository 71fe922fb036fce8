import { createHash } from "node:crypto";
import { LRUCache } from "lru-cache";
import type { FastifyReply, FastifyRequest } from "fastify";
import { matchesEtag } from "../etag.js";
import { contentCodingFor, encodeBody, encodedSize, type EncodedBody } from "../encoded-body.js";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { writeRequest } from "../write-request.js";
import { HttpProblem } from "../plugins/problem.js";
import type { TeamService } from "../../services/team-service.js";
import type { ReviewRef } from "../../services/idempotency.js";
import {
  conditionalHeaders,
  createTeamBody,
  deleteResponse,
  encodeContinue,
  previewResponse,
  problemResponse,
  proposalResponse,
  deleteProposalResponse,
  reviewResponse,
  reviewListResponse,
  problemResponses,
  statusResponse,
  teamListQuery,
  teamListResponse,
  teamNameParams,
  teamResponse,
  updateTeamBody,
  writeHeaders,
  writeResponse,
} from "./schemas.js";

const security = [{ bearerAuth: [] }];
const errors = problemResponses(400, 422);
/** Every write can conflict (team-exists, path-ownership, idempotency-key-in-use); a body can be too large or not UTF-8 JSON. */
const conflict = { 409: problemResponse };
const bodyErrors = { 413: problemResponse, 415: problemResponse };
const notModified = { 304: z.null().describe("Not Modified: the ETag given in If-None-Match still holds (no body)") };

/** Records the outcome for the audit line and marks a replayed answer (Stripe's header name; the draft has none). */
function settle(
  request: FastifyRequest,
  reply: FastifyReply,
  team: string,
  result: { revision: string; committed: boolean; replayed: boolean; review?: ReviewRef; withdrawn?: boolean },
) {
  request.auditResult = {
    team,
    revision: result.revision,
    outcome: result.replayed
      ? "replayed"
      : result.withdrawn
        ? "withdrawn"
        : result.committed
          ? result.review
            ? "proposed"
            : "committed"
          : "unchanged",
    ...(result.review ? { pullRequest: result.review.number } : {}),
  };
  if (result.replayed) reply.header("idempotent-replayed", "true");
}

/** Pull-request mode: accepted, applied once a reviewer merges (ADR 0030): 202, `Location` the pull request. */
function proposed<Body extends object>(reply: FastifyReply, review: ReviewRef, body: Body) {
  return reply
    .code(202)
    .header("location", review.url)
    .send({ ...body, pullRequest: review });
}

/**
 * A strong ETag for a read at `revision`: the body is a function of the revision and the request, so equal
 * tags mean equal bodies. Answers 304 (and true) when If-None-Match already holds it.
 */
function notModifiedSince(
  request: FastifyRequest,
  reply: FastifyReply,
  revision: string | undefined,
  variant: string,
): boolean {
  const etag = `"${createHash("sha256")
    .update(`${revision ?? "empty"}\n${variant}`)
    .digest("base64url")
    .slice(0, 32)}"`;
  reply.header("etag", etag);
  if (!matchesEtag(request.headers["if-none-match"], etag)) return false;
  void reply.code(304).send();
  return true;
}

export const teamRoutes: FastifyPluginAsyncZod<{ teams: TeamService }> = async (app, { teams }) => {
  const listBodies = new LRUCache<string, EncodedBody>({
    max: 32,
    maxSize: 64 * 1024 * 1024,
    maxEntrySize: 16 * 1024 * 1024,
  });
  const read = { requiredRole: "read" as const };
  const write = { requiredRole: "write" as const };

  app.get(
    "/teams",
    {
      config: read,
      schema: {
        tags: ["teams"],
        summary: "List teams (name order, paged with limit/continue; ETag)",
        security,
        querystring: teamListQuery,
        headers: conditionalHeaders,
        response: { 200: teamListResponse, ...notModified, ...errors },
      },
    },
    async (request, reply) => {
      const { limit, continue: after } = request.query;
      const page = await teams.list({ limit, after });
      const variant = `list\n${limit ?? ""}\n${after ?? ""}`;
      // Each content coding is its own representation, with its own strong ETag (RFC 9110 8.8.3).
      const coding = contentCodingFor(request.headers["accept-encoding"]);
      reply.header("vary", "accept-encoding");
      if (notModifiedSince(request, reply, page.revision, `${variant}\n${coding}`)) return reply;
      // A page is a function of (revision, query): serialized, encoded and compressed once, then sent as is to
      // every reader of that revision (1,000 teams are ~70 ms of JSON work, and a string would be encoded on
      // every send).
      const key = `${page.revision ?? ""}\n${variant}`;
      let body = listBodies.get(key);
      if (body === undefined) {
        const value = {
          items: page.teams,
          broken: page.broken,
          revision: page.revision ?? null,
          ...(page.lastOfPage ? { continue: encodeContinue(page.lastOfPage) } : {}),
        };
        body = encodeBody(JSON.stringify(teamListResponse.parse(value)));
        listBodies.set(key, body, { size: encodedSize(body) });
      }
      if (coding === "gzip") reply.header("content-encoding", "gzip");
      // A Buffer payload skips fastify's serializer; the value was checked against the schema above (hence the
      // cast: the type provider types send() with the schema's type).
      return reply
        .type("application/json; charset=utf-8")
        .send(body[coding] as unknown as z.infer<typeof teamListResponse>);
    },
  );

  app.post(
    "/teams",
    {
      config: { ...write, action: "create" },
      schema: {
        tags: ["teams"],
        summary: "Onboard a team",
        security,
        headers: writeHeaders,
        body: createTeamBody,
        response: { 201: writeResponse, 202: proposalResponse, ...conflict, ...bodyErrors, ...errors },
      },
    },
    async (request, reply) => {
      const result = await teams.create(request.body, writeRequest(request, request.body));
      settle(request, reply, result.team.name, result);
      const body = { team: result.team, revision: result.revision, committed: result.committed, files: result.files };
      if (result.review) return proposed(reply, result.review, body);
      return reply.code(201).header("location", `/v1/teams/${result.team.name}`).send(body);
    },
  );

  app.post(
    "/teams/preview",
    {
      config: write,
      schema: {
        tags: ["teams"],
        summary: "Preview onboarding a new team (no commit)",
        security,
        body: createTeamBody,
        response: { 200: previewResponse, ...conflict, ...bodyErrors, ...errors },
      },
    },
    async (request) => {
      const preview = await teams.preview(request.body);
      return { ...preview, revision: preview.revision ?? null };
    },
  );

  app.get(
    "/teams/:name",
    {
      config: read,
      schema: {
        tags: ["teams"],
        summary: "Get a team (ETag)",
        security,
        params: teamNameParams,
        headers: conditionalHeaders,
        response: { 200: teamResponse, ...notModified, 404: problemResponse, ...errors },
      },
    },
    async (request, reply) => {
      const { revision, team } = await teams.get(request.params.name);
      if (!team)
        throw new HttpProblem(404, "team-not-found", "Team not found", `team "${request.params.name}" does not exist`);
      if (notModifiedSince(request, reply, revision, `team\n${team.name}`)) return reply;
      return { team, revision: revision ?? null };
    },
  );

  app.get(
    "/teams/:name/status",
    {
      config: read,
      schema: {
        tags: ["teams"],
        summary: "Team status per cluster, as the controller reports it",
        security,
        params: teamNameParams,
        response: { 200: statusResponse, 404: problemResponse, ...errors },
      },
    },
    async (request) => {
      const status = await teams.status(request.params.name);
      return { ...status, revision: status.revision ?? null };
    },
  );

  app.get(
    "/teams/:name/review",
    {
      config: read,
      schema: {
        tags: ["teams"],
        summary: "The team's change waiting in review (pull-request mode): its open pull request",
        security,
        params: teamNameParams,
        response: { 200: reviewResponse, 404: problemResponse, ...errors },
      },
    },
    async (request) => {
      const pullRequest = await teams.review(request.params.name);
      if (!pullRequest)
        throw new HttpProblem(
          404,
          "no-pending-review",
          "No change in review",
          `team "${request.params.name}" has no open pull request (or Berth is not in pull-request mode)`,
        );
      return { team: request.params.name, pullRequest };
    },
  );

  app.get(
    "/reviews",
    {
      config: read,
      schema: {
        tags: ["teams"],
        summary: "Every team whose change waits in an open pull request (pull-request mode), by name",
        security,
        response: { 200: reviewListResponse, ...errors },
      },
    },
    async () => {
      const items = await teams.inReview();
      return items ? { review: "pull-request" as const, items } : { review: "direct" as const, items: [] };
    },
  );

  app.put(
    "/teams/:name",
    {
      config: { ...write, action: "update" },
      schema: {
        tags: ["teams"],
        summary: "Update a team (re-render, commit what changed)",
        security,
        params: teamNameParams,
        headers: writeHeaders,
        body: updateTeamBody,
        response: {
          200: writeResponse,
          202: proposalResponse,
          404: problemResponse,
          ...conflict,
          ...bodyErrors,
          ...errors,
        },
      },
    },
    async (request, reply) => {
      const result = await teams.update(request.params.name, request.body, writeRequest(request, request.body));
      settle(request, reply, result.team.name, result);
      const body = { team: result.team, revision: result.revision, committed: result.committed, files: result.files };
      if (result.review) return proposed(reply, result.review, body);
      return body;
    },
  );

  app.post(
    "/teams/:name/preview",
    {
      config: write,
      schema: {
        tags: ["teams"],
        summary: "Preview an update (no commit)",
        security,
        params: teamNameParams,
        body: updateTeamBody,
        response: { 200: previewResponse, 404: problemResponse, ...conflict, ...bodyErrors, ...errors },
      },
    },
    async (request) => {
      const preview = await teams.preview(request.body, request.params.name);
      return { ...preview, revision: preview.revision ?? null };
    },
  );

  app.delete(
    "/teams/:name",
    {
      config: { ...write, action: "delete" },
      schema: {
        tags: ["teams"],
        summary:
          "Offboard a team in one commit (pull-request mode: proposed; a team only in review: its pull request closed)",
        security,
        params: teamNameParams,
        headers: writeHeaders,
        response: { 200: deleteResponse, 202: deleteProposalResponse, 404: problemResponse, ...conflict, ...errors },
      },
    },
    async (request, reply) => {
      const result = await teams.delete(request.params.name, writeRequest(request, null));
      settle(request, reply, result.team, result);
      const body = { team: result.team, revision: result.revision, files: result.files };
      // A team only in review: its pull request was closed, nothing committed.
      if (result.withdrawn && result.review) return { ...body, pullRequest: result.review };
      if (result.review) return proposed(reply, result.review, body);
      return body;
    },
  );
};
