import { teamSpecSchema } from "@berth/core";
import { z } from "zod";
import { TEAM_GROUP, TEAM_PLURAL, TEAM_VERSION } from "./names.js";

/**
 * The Team CRD (`teams.berth.dev`), generated from the zod team spec so the cluster validates exactly
 * what the API accepts. infra/controller/crds/berth.dev_teams.yaml is this object, written by `npm run generate`
 * (scripts/generate.ts); tests/architecture/generated.test.ts fails when the two differ.
 *
 * What JSON Schema can say that a CRD cannot is dropped: `additionalProperties: false` (a structural
 * schema prunes unknown fields instead), `propertyNames` (label keys are checked by the API), the
 * uniqueness refinements, and defaults (Berth's team files spell every field out). Patterns are rewritten for Go's RE2 (`\uFFFE` → `\x{FFFE}`).
 */
export function teamSpecOpenApiSchema(): Record<string, unknown> {
  const json = z.toJSONSchema(teamSpecSchema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  delete json.$schema;
  return structural(json) as Record<string, unknown>;
}

/**
 * A JSON Schema node turned into a structural CRD schema node. Keys of `properties` are field names, not
 * keywords, so only the schema's own keywords are dropped or rewritten (a field named `default`, such as
 * containerLimits.default, must stay).
 */
function structural(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(structural);
  if (!node || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  // An object kept as it is (a team's extra manifest): no schema of its fields.
  const preserved = (node as Record<string, unknown>)["x-kubernetes-preserve-unknown-fields"] === true;
  for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
    if (key === "propertyNames") continue;
    if (preserved && key === "additionalProperties") continue;
    if (key === "additionalProperties" && value === false) continue;
    // No defaults: Berth writes every field (teamObject), so the CRD need not fill any in.
    if (key === "default") continue;
    if (key === "pattern" && typeof value === "string") out[key] = value.replace(/\\u([0-9A-Fa-f]{4})/g, "\\x{$1}");
    else if (key === "properties" && value && typeof value === "object") {
      out[key] = Object.fromEntries(
        Object.entries(value as Record<string, unknown>).map(([field, schema]) => [field, structural(schema)]),
      );
    } else out[key] = structural(value);
  }
  return out;
}

const conditionSchema = {
  type: "object",
  required: ["type", "status", "reason", "message", "lastTransitionTime"],
  properties: {
    type: { type: "string", maxLength: 316 },
    status: { type: "string", enum: ["True", "False", "Unknown"] },
    reason: { type: "string", maxLength: 1024 },
    message: { type: "string", maxLength: 32768 },
    severity: {
      type: "string",
      enum: ["Error", "Warning", "Info"],
      description: "ASO's severity, for the per-kind conditions",
    },
    lastTransitionTime: { type: "string", format: "date-time" },
    observedGeneration: { type: "integer", format: "int64", minimum: 0 },
  },
};

export function teamCrd(): Record<string, unknown> {
  const ready = (type: string) => `.status.conditions[?(@.type=="${type}")].status`;
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: {
      name: `${TEAM_PLURAL}.${TEAM_GROUP}`,
      labels: { "app.kubernetes.io/managed-by": "berth", "app.kubernetes.io/part-of": "berth" },
    },
    spec: {
      group: TEAM_GROUP,
      scope: "Cluster",
      names: { plural: TEAM_PLURAL, singular: "team", kind: "Team", listKind: "TeamList" },
      versions: [
        {
          name: TEAM_VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: "Ready", type: "string", jsonPath: ready("Ready") },
            { name: "Credential", type: "string", jsonPath: ready("CredentialWritten") },
            { name: "Revision", type: "string", jsonPath: ".status.revision" },
            { name: "Templates", type: "string", jsonPath: ".spec.templateVersion" },
            { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
          ],
          schema: {
            openAPIV3Schema: {
              type: "object",
              description:
                "A Berth team (metadata.name = team name = namespace). Written by Flux from teams/<team>/base/team.yaml; status by berth-controller.",
              required: ["spec"],
              properties: {
                apiVersion: { type: "string" },
                kind: { type: "string" },
                metadata: { type: "object" },
                spec: teamSpecOpenApiSchema(),
                status: {
                  type: "object",
                  properties: {
                    observedGeneration: { type: "integer", format: "int64" },
                    revision: {
                      type: "string",
                      description: "Flux revision of the team's Kustomization (last applied, else last attempted)",
                    },
                    identity: { type: "object", properties: { clientId: { type: "string" } } },
                    conditions: {
                      type: "array",
                      "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["type"],
                      items: conditionSchema,
                    },
                  },
                },
              },
            },
          },
        },
      ],
    },
  };
}
