import type { UiConfig } from "@berth/config";
import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { etagOf, matchesEtag } from "../etag.js";
import type { AssetUrls } from "./assets.js";
import type { Html } from "./html.js";
import { page } from "./views/layout.js";
import { errorMain, signInMain, type SignInMode } from "./views/sign-in.js";

/** How the status page answers: a full page, only its <main> for the live refresh, an error page, the sign-in page. */

const fragmentQuery = z.object({ fragment: z.literal("main").optional().catch(undefined) });

/** The live refresh asks for `?fragment=main`: only the page's <main>, with an ETag. */
export const isFragment = (request: FastifyRequest): boolean =>
  fragmentQuery.parse(request.query ?? {}).fragment === "main";

export class Responder {
  constructor(
    private readonly ui: UiConfig,
    private readonly assets: AssetUrls,
    private readonly signInMode: SignInMode,
  ) {}

  html(reply: FastifyReply, markup: Html, status = 200) {
    return reply.code(status).type("text/html; charset=utf-8").send(markup.value);
  }

  /** A full page, or only its <main> with an ETag (304 when the caller has it) for the live refresh. */
  page(request: FastifyRequest, reply: FastifyReply, title: string, main: Html, before?: Html) {
    const etag = etagOf(main.value);
    if (isFragment(request)) {
      reply.header("etag", etag);
      if (matchesEtag(request.headers["if-none-match"], etag)) return reply.code(304).send();
      return this.html(reply, main);
    }
    return this.html(
      reply,
      page({
        title,
        session: request.uiSession,
        refreshSeconds: this.ui.refreshSeconds,
        etag,
        before,
        main,
        assets: this.assets,
      }),
    );
  }

  error(
    request: FastifyRequest,
    reply: FastifyReply,
    status: number,
    title: string,
    detail: string,
    action?: { href: string; text: string },
  ) {
    return this.html(
      reply,
      page({ title, session: request.uiSession, main: errorMain(status, title, detail, action), assets: this.assets }),
      status,
    );
  }

  signIn(reply: FastifyReply, next: string, error?: string, status = 200) {
    return this.html(
      reply,
      page({ title: "Sign in", main: signInMain(this.signInMode, next, error), assets: this.assets }),
      status,
    );
  }
}
