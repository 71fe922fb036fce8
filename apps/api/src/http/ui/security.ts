import type { FastifyInstance, FastifyRequest } from "fastify";

/**
 * The status page's own security headers (a strict CSP on every /ui response) and the checks that keep
 * other sites out: where a sign-in may send the browser next, and which forms may change who is signed in.
 */

/**
 * No inline script or style, nothing from another origin, no framing, forms only to this origin, and
 * Trusted Types: script may insert HTML only through the "berth" policy (client/live.ts).
 */
export const UI_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types berth",
].join("; ");

const UI_HEADERS: Record<string, string> = {
  "content-security-policy": UI_CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

/** The headers on every response of the plugin's context; nothing is cached unless a route says so. */
export function addSecurityHeaders(app: FastifyInstance): void {
  // Set last (onSend), so these win over any header a global plugin set earlier for every route.
  app.addHook("onSend", async (_request, reply, payload) => {
    reply.headers(UI_HEADERS);
    if (!reply.hasHeader("cache-control")) reply.header("cache-control", "no-store");
    return payload;
  });
}

/** Where to go after signing in: only a path of this page, never another site (`//evil`, `/\evil`). */
export function safeNext(next: unknown): string {
  if (typeof next !== "string" || !/^\/ui(\/[A-Za-z0-9._~%-]*)*(\?[A-Za-z0-9._~%&=+-]*)?$/.test(next)) return "/ui";
  const url = new URL(next, "http://ui.invalid");
  // Dot segments resolve first: `/ui/../v1` is not a page of /ui.
  if (url.host !== "ui.invalid" || !(url.pathname === "/ui" || url.pathname.startsWith("/ui/"))) return "/ui";
  url.searchParams.delete("fragment");
  return url.pathname + url.search;
}

/**
 * Forms that change who is signed in (sign-in, sign-out) only from this page's own origin. Browsers say where
 * a request comes from in Sec-Fetch-Site, which page script cannot set; the page's `Referrer-Policy:
 * no-referrer` makes them send `Origin: null` even for its own forms, so Origin decides only without it
 * (older browsers). A request with neither is no browser's, so no cross-site forgery (curl, tests).
 */
export function sameOrigin(request: FastifyRequest, ownOrigin: string): boolean {
  const site = request.headers["sec-fetch-site"];
  if (site !== undefined) return site === "same-origin" || site === "none";
  const sent = request.headers.origin;
  if (sent === undefined || sent === "null") return true;
  try {
    return new URL(sent).origin === new URL(ownOrigin).origin;
  } catch {
    return false;
  }
}
