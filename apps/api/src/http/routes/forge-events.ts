import { createHmac, timingSafeEqual } from "node:crypto";
import type { FastifyPluginAsync } from "fastify";
import { z } from "zod";
import { parseStrictJson } from "../plugins/json-body.js";
import { HttpProblem } from "../plugins/problem.js";
import { problemSchema } from "@berth/api-contract";

declare module "fastify" {
  interface FastifyContextConfig {
    /** The route authenticates its caller by a signature over the body, not by a token (the forge's webhook). */
    signedWebhook?: boolean;
  }
}

/** A pull request the forge says changed (opened, reviewed, pushed to, merged, closed): which branch into which. */
export interface PullRequestEvent {
  number: number;
  head: string;
  base: string;
}

/**
 * The signature header: GitHub's, which Gitea and Forgejo send too (hex HMAC-SHA256 of the raw body, `sha256=`
 * before it), so one receiver serves every forge Berth speaks to.
 */
export const SIGNATURE_HEADER = "x-hub-signature-256";

/**
 * What Berth reads of an event: any event about a pull request carries it (Gitea's `pull_request` and its review
 * events, GitHub's `pull_request` and `pull_request_review`). Other events (a push, a ping) do not match and are
 * answered without effect.
 */
const pullRequestPayload = z.object({
  pull_request: z.object({
    number: z.number().int().positive(),
    head: z.object({ ref: z.string().min(1).max(255) }),
    base: z.object({ ref: z.string().min(1).max(255) }),
  }),
});

/** True when `header` is `sha256=` and the hex HMAC-SHA256 of `body` under `secret`; in constant time. */
export function signedBy(secret: string, body: Buffer, header: string | undefined): boolean {
  const given = /^sha256=([0-9a-f]{64})$/i.exec(header ?? "")?.[1];
  if (!given) return false;
  const expected = createHmac("sha256", secret).update(body).digest();
  return timingSafeEqual(expected, Buffer.from(given, "hex"));
}

const unsigned = () =>
  new HttpProblem(
    401,
    "unauthorized",
    "Unauthorized",
    `the event's signature (${SIGNATURE_HEADER}) is missing or does not match the configured webhook secret`,
  );

/**
 * POST /v1/forge/events: the forge's webhook (pull-request mode, ADR 0030). Authenticated by its signature, not a
 * token: the forge signs the raw body with the shared secret, so the body is kept as bytes until it is checked.
 * Polling stays the fallback for an event lost on the way.
 */
export const forgeEventRoutes: FastifyPluginAsync<{
  secret: string;
  onPullRequest: (event: PullRequestEvent) => Promise<void>;
}> = async (app, { secret, onPullRequest }) => {
  // This plugin's own parser (encapsulated): the bytes as sent, for the signature; parsed strictly after it.
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (_request, body, done) => done(null, body));
  app.post(
    "/forge/events",
    {
      config: { signedWebhook: true },
      bodyLimit: 5 * 1024 * 1024,
      schema: {
        tags: ["reviews"],
        summary: "The forge's webhook: a pull request changed (signed with the webhook secret)",
        response: { 204: z.null(), 400: problemSchema, 401: problemSchema, 415: problemSchema, 429: problemSchema },
      },
    },
    async (request, reply) => {
      const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      if (!signedBy(secret, body, request.headers[SIGNATURE_HEADER] as string | undefined)) throw unsigned();
      const event = pullRequestPayload.safeParse(parseStrictJson(body));
      if (event.success) {
        const { number, head, base } = event.data.pull_request;
        await onPullRequest({ number, head: head.ref, base: base.ref });
      }
      return reply.code(204).send();
    },
  );
};
