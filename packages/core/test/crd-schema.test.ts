/**
 * The rendered ASO and Flux objects against the CRDs the clusters run (shared/crds beside the repository,
 * as tests/support/kube-cluster.ts loads them): every field exists in the served version's schema, has
 * its type, and, after Flux's substitution of platform-vars, matches the schema's patterns and enums.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseAllDocuments } from "yaml";
import { describe, expect, it } from "vitest";
import { EXAMPLES, REPO_ROOT, renderExample } from "./fixtures.js";
import { parseManifests } from "./yaml-helpers.js";

const CRD_DIR = resolve(REPO_ROOT, "../shared/crds");

interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  required?: string[];
  enum?: unknown[];
  pattern?: string;
  maxLength?: number;
  minLength?: number;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  "x-kubernetes-int-or-string"?: boolean;
}

let cached: Map<string, Schema> | undefined;
function loadCrdSchemas(): Map<string, Schema> {
  if (cached) return cached;
  const schemas = new Map<string, Schema>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, name.name);
      if (name.isDirectory()) walk(full);
      else if (name.name.endsWith(".yaml")) {
        for (const doc of parseAllDocuments(readFileSync(full, "utf8"))) {
          const crd = doc.toJS() as {
            kind?: string;
            spec: {
              group: string;
              names: { kind: string };
              versions: Array<{ name: string; served: boolean; schema: { openAPIV3Schema: Schema } }>;
            };
          } | null;
          if (crd?.kind !== "CustomResourceDefinition") continue;
          for (const v of crd.spec.versions) {
            if (v.served) schemas.set(`${crd.spec.group}/${v.name}/${crd.spec.names.kind}`, v.schema.openAPIV3Schema);
          }
        }
      }
    }
  };
  walk(CRD_DIR);
  cached = schemas;
  return schemas;
}

/** Go RE2 patterns as JS regexes: a leading `(?i)` becomes the i flag. */
function goRegex(pattern: string): RegExp {
  return pattern.startsWith("(?i)") ? new RegExp(pattern.slice(4), "iu") : new RegExp(pattern, "u");
}

function schemaProblems(value: unknown, schema: Schema, path: string): string[] {
  const out: string[] = [];
  if (schema["x-kubernetes-int-or-string"]) {
    if (typeof value !== "string" && !Number.isInteger(value)) out.push(`${path}: expected int or string`);
    return out;
  }
  switch (schema.type) {
    case "object": {
      if (value === null || typeof value !== "object" || Array.isArray(value))
        return [`${path}: expected object, got ${JSON.stringify(value)}`];
      const obj = value as Record<string, unknown>;
      for (const req of schema.required ?? []) if (!(req in obj)) out.push(`${path}.${req}: required`);
      for (const [k, v] of Object.entries(obj)) {
        if (path === "" && k === "metadata") continue; // ObjectMeta: the apiserver's, not the CRD's (see naming.test.ts)
        const prop = schema.properties?.[k];
        if (prop) out.push(...schemaProblems(v, prop, `${path}.${k}`));
        else if (typeof schema.additionalProperties === "object")
          out.push(...schemaProblems(v, schema.additionalProperties, `${path}.${k}`));
        else if (!schema["x-kubernetes-preserve-unknown-fields"] && schema.additionalProperties !== true) {
          // The apiserver prunes it (structural schema): the field would silently not exist.
          out.push(`${path}.${k}: unknown field`);
        }
      }
      return out;
    }
    case "array":
      if (!Array.isArray(value)) return [`${path}: expected array`];
      return value.flatMap((item, i) => (schema.items ? schemaProblems(item, schema.items, `${path}[${i}]`) : []));
    case "string":
      if (typeof value !== "string") return [`${path}: expected string, got ${JSON.stringify(value)}`];
      if (schema.pattern && !goRegex(schema.pattern).test(value))
        out.push(`${path}: ${JSON.stringify(value)} does not match ${schema.pattern}`);
      if (schema.maxLength !== undefined && value.length > schema.maxLength)
        out.push(`${path}: longer than ${schema.maxLength}`);
      if (schema.minLength !== undefined && value.length < schema.minLength)
        out.push(`${path}: shorter than ${schema.minLength}`);
      break;
    case "integer":
      if (!Number.isInteger(value)) return [`${path}: expected integer`];
      break;
    case "boolean":
      if (typeof value !== "boolean") return [`${path}: expected boolean`];
      break;
  }
  if (schema.enum && !schema.enum.includes(value))
    out.push(`${path}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  return out;
}

/** Example platform-vars values, substituted as Flux's postBuild would. */
const PLATFORM_VARS: Record<string, string> = {
  TENANT_ID: "72f988bf-86f1-41af-91ab-2d7cd011db47",
  SUBSCRIPTION_ID: "00000000-1111-4222-8333-444444444444",
  CLUSTER_NAME: "aks-dev-weu",
  ENVIRONMENT: "dev",
  CLUSTER_OIDC_ISSUER_URL:
    "https://westeurope.oic.prod-aks.azure.com/72f988bf-86f1-41af-91ab-2d7cd011db47/1c0f2d5e-0000-4000-8000-000000000000/",
  CLUSTER_OIDC:
    "https://westeurope.oic.prod-aks.azure.com/72f988bf-86f1-41af-91ab-2d7cd011db47/1c0f2d5e-0000-4000-8000-000000000000/",
  AZURE_LOCATION: "westeurope",
  SERVICEBUS_NAMESPACE: "sb-platform-dev",
  POSTGRES_SERVER: "pg-platform-dev",
};
function substitute(text: string): string {
  return text.replace(/(\$?)\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (m, esc: string, name: string) => {
    if (esc) return m.slice(1);
    const value = PLATFORM_VARS[name];
    if (value === undefined) throw new Error(`no example value for \${${name}}`);
    return value;
  });
}

describe("rendered custom resources match their CRD schemas", () => {
  it("the CRDs are there (shared/ must be cloned beside the repository)", () => {
    expect(existsSync(CRD_DIR), CRD_DIR).toBe(true);
  });

  it("the validator catches a wrong field, type, enum and pattern", () => {
    const schemas = loadCrdSchemas();
    const ra = schemas.get("authorization.azure.com/v1api20220401/RoleAssignment")!;
    const base = {
      apiVersion: "x",
      kind: "RoleAssignment",
      metadata: {},
      spec: {
        owner: { name: "rg" },
        roleDefinitionReference: { armId: "/subscriptions/x/providers/a/b/c" },
        principalType: "ServicePrincipal",
      },
    };
    expect(schemaProblems(base, ra, "")).toEqual([]);
    expect(schemaProblems({ ...base, spec: { ...base.spec, principalIdFromConfigMap: {} } }, ra, "")).toEqual([
      ".spec.principalIdFromConfigMap: unknown field",
    ]);
    expect(schemaProblems({ ...base, spec: { ...base.spec, principalType: "Robot" } }, ra, "")[0]).toMatch(
      /not one of/,
    );
    expect(schemaProblems({ ...base, spec: { ...base.spec, owner: { armId: "subscriptions/x" } } }, ra, "")[0]).toMatch(
      /does not match/,
    );
    expect(schemaProblems({ ...base, spec: { ...base.spec, owner: "rg" } }, ra, "")[0]).toMatch(/expected object/);
    expect(schemaProblems({ ...base, spec: { owner: { name: "rg" } } }, ra, "")).toEqual([
      ".spec.roleDefinitionReference: required",
    ]);
  });

  it.each(EXAMPLES.map((e) => [e.name, e] as const))("example %s", async (_name, ex) => {
    const schemas = loadCrdSchemas();
    const problems: string[] = [];
    let checked = 0;
    for (const [path, text] of await renderExample(ex)) {
      for (const obj of parseManifests(substitute(text), "1.1")) {
        const group = obj.apiVersion.split("/")[0]!;
        if (
          !group.includes(".") ||
          group.startsWith("rbac.") ||
          group === "berth.dev" ||
          group === "kustomize.config.k8s.io"
        )
          continue;
        const schema = schemas.get(`${obj.apiVersion}/${obj.kind}`);
        if (!schema) {
          problems.push(`${path}: no served CRD version for ${obj.apiVersion} ${obj.kind}`);
          continue;
        }
        checked++;
        problems.push(...schemaProblems(obj, schema, "").map((p) => `${path} ${obj.kind}${p}`));
      }
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThanOrEqual(4);
  });
});
