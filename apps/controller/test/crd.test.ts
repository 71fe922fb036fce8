import { teamSpecSchema } from "@berth/core";
import { describe, expect, it } from "vitest";
import { teamCrd } from "../src/crd.js";

/** The parts of an OpenAPI v3 schema node these tests read. */
type SchemaNode = {
  type?: string;
  required?: string[];
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  additionalProperties?: boolean | SchemaNode;
};
type Crd = {
  metadata: { name: string };
  spec: {
    scope: string;
    versions: Array<{
      name: string;
      subresources?: unknown;
      additionalPrinterColumns: Array<{ name: string }>;
      schema: { openAPIV3Schema: SchemaNode };
    }>;
  };
};
const crd = () => teamCrd() as Crd;

// infra/controller/crds/berth.dev_teams.yaml is this object, written by `npm run generate`
// (tests/architecture/generated.test.ts checks the file).
describe("Team CRD", () => {
  it("is cluster-scoped berth.dev/v1alpha1 Team with a status subresource and the printer columns", () => {
    const { metadata, spec } = crd();
    expect(metadata.name).toBe("teams.berth.dev");
    expect(spec.scope).toBe("Cluster");
    const v = spec.versions[0]!;
    expect(v.name).toBe("v1alpha1");
    expect(v.subresources).toEqual({ status: {} });
    expect(v.additionalPrinterColumns.map((c: { name: string }) => c.name)).toEqual([
      "Ready",
      "Credential",
      "Revision",
      "Templates",
      "Age",
    ]);
  });

  it("is structural: no additionalProperties:false, propertyNames or JS-only regex escapes", () => {
    const text = JSON.stringify(teamCrd());
    expect(text).not.toContain('"additionalProperties":false');
    expect(text).not.toContain("propertyNames");
    expect(text).not.toMatch(/\\\\u[0-9A-F]{4}/i);
    expect(text).not.toContain("$schema");
  });

  it("declares every field it requires, fields named like schema keywords included", () => {
    const check = (node: SchemaNode | undefined, path: string) => {
      if (!node || typeof node !== "object") return;
      for (const field of node.required ?? []) expect(node.properties?.[field], `${path}.${field}`).toBeDefined();
      for (const [name, child] of Object.entries(node.properties ?? {})) check(child, `${path}.${name}`);
      if (node.items) check(node.items, `${path}[]`);
      if (node.additionalProperties && typeof node.additionalProperties === "object")
        check(node.additionalProperties, `${path}{}`);
    };
    const root = crd().spec.versions[0]?.schema.openAPIV3Schema;
    check(root, "");
    expect(root?.properties?.spec?.properties?.containerLimits?.properties?.default?.properties?.cpu?.type).toBe(
      "string",
    );
  });

  it("covers every field of the team spec", () => {
    const spec = crd().spec.versions[0]?.schema.openAPIV3Schema.properties?.spec;
    expect(Object.keys(spec?.properties ?? {}).sort()).toEqual(Object.keys(teamSpecSchema.shape).sort());
    expect(spec?.required?.sort()).toEqual(["environments", "owners"]);
  });
});
