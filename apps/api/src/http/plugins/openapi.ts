import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { createJsonSchemaTransform } from "fastify-type-provider-zod";

/** OpenAPI 3 from the zod route schemas, served at /openapi.json, with a docs UI at /docs. Both public. */
export const openapiPlugin = fp(async (app: FastifyInstance) => {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Berth onboarding API",
        version: "1.0.0",
        description:
          "Onboards product teams onto the AKS platform by committing their manifests to the Flux repo. Errors are RFC 9457 problem+json.",
      },
      components: { securitySchemes: { bearerAuth: { type: "http", scheme: "bearer", bearerFormat: "JWT" } } },
      tags: [
        { name: "teams", description: "Team onboarding" },
        { name: "fleet", description: "Template versions, repo drift" },
        { name: "rollouts", description: "Moving teams to a template version, unstaged or in gated waves" },
      ],
    },
    // Routes with plain JSON schemas (health, docs) are skipped: the zod transform throws on them.
    transform: createJsonSchemaTransform({
      skipList: [
        "/healthz",
        "/readyz",
        "/openapi.json",
        "/docs",
        "/docs/*",
        "/docs/static/*",
        "/docs/json",
        "/docs/yaml",
      ],
    }),
    transformObject: (documents) =>
      "openapiObject" in documents
        ? withResponseHeaders(documents.openapiObject as OpenApiDocument)
        : documents.swaggerObject,
  });
  await app.register(swaggerUi, { routePrefix: "/docs", uiConfig: { deepLinking: true } });
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
});

interface OpenApiOperation {
  parameters?: Array<{ in?: string; name?: string }>;
  responses?: Record<string, { headers?: Record<string, unknown> }>;
}
interface OpenApiDocument {
  paths?: Record<string, Record<string, OpenApiOperation>>;
  components?: Record<string, unknown>;
}

/** The response headers the API sends, declared once (docs/api.md describes them). */
const HEADERS = {
  RateLimit: {
    description:
      'This caller\'s budget left in the window: `"<budget>";r=<remaining>;t=<seconds to reset>` (draft-ietf-httpapi-ratelimit-headers)',
    schema: { type: "string" },
  },
  "RateLimit-Policy": {
    description: 'The budget this request counts against: `"<budget>";q=<requests>;w=<window seconds>`',
    schema: { type: "string" },
  },
  "Retry-After": {
    description: "Seconds to wait before sending the request again",
    schema: { type: "integer", minimum: 0 },
  },
  ETag: {
    description: "The answer's entity tag: send it in If-None-Match to get 304 while it still holds",
    schema: { type: "string" },
  },
  "Idempotent-Replayed": {
    description: "`true` when the answer is the original outcome of an earlier request with the same Idempotency-Key",
    schema: { type: "string", enum: ["true"] },
  },
  Location: { description: "The created resource", schema: { type: "string" } },
} as const;

/**
 * Declares, on every operation of the generated document, the response headers the plugins and routes add:
 * the rate-limit pair on every /v1 answer; Retry-After on 429 and 503 (and on 409 for writes, whose
 * idempotency-key-in-use conflict carries one); ETag on 200 and 304 where a 304 can be answered;
 * Idempotent-Replayed on a write's 2xx; Location on a 201.
 */
function withResponseHeaders(doc: OpenApiDocument): OpenApiDocument {
  const ref = (name: keyof typeof HEADERS) => ({ $ref: `#/components/headers/${name}` });
  for (const [path, operations] of Object.entries(doc.paths ?? {})) {
    if (!path.startsWith("/v1/")) continue;
    for (const operation of Object.values(operations)) {
      const responses = operation.responses ?? {};
      const headerParams = new Set(
        (operation.parameters ?? []).filter((p) => p.in === "header").map((p) => p.name?.toLowerCase()),
      );
      const conditional = "304" in responses;
      const idempotent = headerParams.has("idempotency-key");
      for (const [status, response] of Object.entries(responses)) {
        const headers: Record<string, unknown> = {
          RateLimit: ref("RateLimit"),
          "RateLimit-Policy": ref("RateLimit-Policy"),
        };
        if (status === "429" || status === "503" || (status === "409" && idempotent))
          headers["Retry-After"] = ref("Retry-After");
        if (conditional && (status === "200" || status === "304")) headers.ETag = ref("ETag");
        if (idempotent && status.startsWith("2")) headers["Idempotent-Replayed"] = ref("Idempotent-Replayed");
        if (status === "201") headers.Location = ref("Location");
        response.headers = { ...response.headers, ...headers };
      }
    }
  }
  doc.components = { ...doc.components, headers: HEADERS };
  return doc;
}
