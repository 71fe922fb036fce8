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
        description: "Onboards product teams onto the AKS platform by committing their manifests to the Flux repo. Errors are RFC 9457 problem+json.",
      },
      components: { securitySchemes: { bearerAuth: { type: "http", scheme: "bearer", bearerFormat: "JWT" } } },
      tags: [
        { name: "teams", description: "Team onboarding" },
        { name: "fleet", description: "Template versions, repo drift" },
        { name: "rollouts", description: "Moving teams to a template version, unstaged or in gated waves" },
      ],
    },
    // Routes with plain JSON schemas (health, docs) are skipped: the zod transform throws on them.
    transform: createJsonSchemaTransform({ skipList: ["/healthz", "/readyz", "/openapi.json", "/docs", "/docs/*", "/docs/static/*", "/docs/json", "/docs/yaml"] }),
  });
  await app.register(swaggerUi, { routePrefix: "/docs", uiConfig: { deepLinking: true } });
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
});
