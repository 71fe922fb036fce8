import helmet from "@fastify/helmet";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";

/**
 * Security headers on every response (helmet). One Content-Security-Policy for the whole API: JSON needs
 * none of it, and the docs UI (/docs, swagger-ui) runs under it, since its scripts and styles are files of
 * this origin. What the UI does need is named below; tests/e2e/security-headers.test.ts renders it in Chromium.
 */
const CSP_DIRECTIVES = {
  "default-src": ["'none'"],
  "base-uri": ["'none'"],
  // swagger-ui fetches the OpenAPI document and sends "Try it out" requests to this origin only.
  "connect-src": ["'self'"],
  "font-src": ["'self'", "data:"],
  "form-action": ["'none'"],
  "frame-ancestors": ["'none'"],
  // swagger-ui draws icons as data: SVGs.
  "img-src": ["'self'", "data:"],
  "manifest-src": ["'self'"],
  "object-src": ["'none'"],
  "script-src": ["'self'"],
  "script-src-attr": ["'none'"],
  // swagger-ui (React) sets style attributes; no inline <style> is served, no script may run inline.
  "style-src": ["'self'", "'unsafe-inline'"],
} as const;

/**
 * The same policy as a header value, plus the headers that need no per-request logic: for the responses
 * written before a request reaches the app (malformed requests, routing errors).
 */
export const RAW_RESPONSE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "Content-Security-Policy": Object.entries(CSP_DIRECTIVES)
    .map(([k, v]) => `${k} ${v.join(" ")}`)
    .join(";"),
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Resource-Policy": "same-origin",
  "Referrer-Policy": "no-referrer",
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Cache-Control": "no-store",
};

export const securityHeadersPlugin = fp(async (app: FastifyInstance) => {
  await app.register(helmet, {
    global: true,
    contentSecurityPolicy: {
      useDefaults: false,
      // No upgrade-insecure-requests: it breaks the docs UI over plain http (a laptop, a port-forward).
      directives: Object.fromEntries(Object.entries(CSP_DIRECTIVES).map(([k, v]) => [k, [...v]])),
    },
    crossOriginEmbedderPolicy: { policy: "require-corp" },
    crossOriginOpenerPolicy: { policy: "same-origin" },
    crossOriginResourcePolicy: { policy: "same-origin" },
    frameguard: { action: "deny" },
    referrerPolicy: { policy: "no-referrer" },
  });
  // API answers are per caller and change with every commit: no shared or browser cache keeps them.
  // (ETag/If-None-Match still saves the body for clients that remember the tag themselves.)
  app.addHook("onSend", async (_request, reply) => {
    if (!reply.hasHeader("cache-control")) reply.header("cache-control", "no-store");
  });
});
