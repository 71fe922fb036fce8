/** The placeholder engine, template-set parsing, and the render-time checks on templates. */
import { describe, expect, it } from "vitest";
import {
  fluxVariables,
  parseTemplateSet,
  RenderError,
  renderTeam,
  resolvePlaceholders,
  validateTeam,
  type Platform,
  type TemplateSet,
} from "@berth/core";
import { makePlatform, PLATFORM, teamInput, templateFiles } from "./fixtures.js";
import { parseManifests, parseObjects } from "./yaml-helpers.js";

const SRC = "templates/test/x.yaml";
const ctx = {
  team: {
    name: "payments",
    owners: ["a", "b"],
    labels: { tier: "gold", "cost-center": "cc" },
    description: "{{ team.name }} $ }}",
  },
  quota: { pods: 50 },
  flag: true,
  empty: [],
  nothing: null,
};

function renderError(fn: () => unknown): RenderError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(RenderError);
    return err as RenderError;
  }
  throw new Error("did not throw");
}

describe("resolvePlaceholders", () => {
  it("gives a whole-scalar placeholder the value as it is: string, number, list or map", () => {
    expect(
      resolvePlaceholders(
        {
          a: "{{ team.name }}",
          b: "{{quota.pods}}",
          c: "{{ team.owners }}",
          d: "{{ team.labels }}",
          e: "{{ flag }}",
          f: "{{ nothing }}",
        },
        ctx,
        SRC,
      ),
    ).toEqual({
      a: "payments",
      b: 50,
      c: ["a", "b"],
      d: { tier: "gold", "cost-center": "cc" },
      e: true,
      f: null,
    });
  });

  it("copies values, so the output never aliases the context", () => {
    const out = resolvePlaceholders({ c: "{{ team.owners }}" }, ctx, SRC) as { c: string[] };
    out.c.push("x");
    expect(ctx.team.owners).toEqual(["a", "b"]);
  });

  it("replaces placeholders inside text with strings and numbers", () => {
    expect(resolvePlaceholders("ns/{{ team.name }}/{{ quota.pods }}/{{team.name}}", ctx, SRC)).toBe(
      "ns/payments/50/payments",
    );
    expect(resolvePlaceholders(["x-{{ team.name }}", 1, false, null], ctx, SRC)).toEqual([
      "x-payments",
      1,
      false,
      null,
    ]);
  });

  it("inserts values verbatim and never resolves placeholders or `${` inside them", () => {
    expect(resolvePlaceholders("d: {{ team.description }}", ctx, SRC)).toBe("d: {{ team.name }} $ }}");
    expect(resolvePlaceholders("{{ team.description }}", ctx, SRC)).toBe("{{ team.name }} $ }}");
  });

  it("leaves Flux's ${VAR} alone", () => {
    expect(
      resolvePlaceholders({ a: "${TENANT_ID}", b: "/subscriptions/${SUBSCRIPTION_ID}/x/{{ team.name }}" }, ctx, SRC),
    ).toEqual({
      a: "${TENANT_ID}",
      b: "/subscriptions/${SUBSCRIPTION_ID}/x/payments",
    });
  });

  it.each([
    "{{ team.nope }}",
    "{{ nope }}",
    "{{ team.name.length }}",
    "x {{ quota.pods.x }}",
    "{{ constructor }}",
    "{{ team.__proto__ }}",
    "{{ toString }}",
  ])("refuses the unknown placeholder %j, naming the template", (text) => {
    const err = renderError(() => resolvePlaceholders({ a: text }, ctx, SRC));
    expect(err.source).toBe(SRC);
    expect(err.message).toContain(SRC);
    expect(err.message).toMatch(/unknown placeholder|malformed/);
  });

  it.each([
    "{{ team.name",
    "team.name }}",
    "{{}}",
    "{{ }}",
    "{{ team..name }}",
    "{{ 1team }}",
    "{{ team.name }} }}",
    "{{ team-name }}",
    "{ { team.name } }x{{",
    "{{ team.name | upper }}",
  ])("refuses the malformed placeholder %j", (text) => {
    const err = renderError(() => resolvePlaceholders({ a: text }, ctx, SRC));
    expect(err.source).toBe(SRC);
  });

  it("refuses a list, map or boolean inside text", () => {
    expect(renderError(() => resolvePlaceholders("x {{ team.owners }}", ctx, SRC)).message).toMatch(
      /is a list and cannot stand inside text/,
    );
    expect(renderError(() => resolvePlaceholders("x {{ team.labels }}", ctx, SRC)).message).toMatch(
      /is a object and cannot stand inside text/,
    );
    expect(renderError(() => resolvePlaceholders("x {{ flag }}", ctx, SRC)).message).toMatch(
      /cannot stand inside text/,
    );
    expect(renderError(() => resolvePlaceholders({ "{{ team.owners }}": 1 }, ctx, SRC)).message).toMatch(/is a list/);
  });

  it("resolves placeholders in map keys, as text", () => {
    expect(resolvePlaceholders({ "berth.dev/{{ team.name }}": "x", "{{ quota.pods }}": 1 }, ctx, SRC)).toEqual({
      "berth.dev/payments": "x",
      "50": 1,
    });
  });

  it("refuses two keys that resolve to the same key", () => {
    expect(renderError(() => resolvePlaceholders({ "{{ team.name }}": 1, payments: 2 }, ctx, SRC)).message).toMatch(
      /key "payments" appears twice/,
    );
  });

  it("merges a `<<` map into its parent, the parent's own keys winning, in either order", () => {
    expect(resolvePlaceholders({ "<<": "{{ team.labels }}", tier: "platform", own: "1" }, ctx, SRC)).toEqual({
      "cost-center": "cc",
      tier: "platform",
      own: "1",
    });
    expect(resolvePlaceholders({ tier: "platform", "<<": "{{ team.labels }}" }, ctx, SRC)).toEqual({
      "cost-center": "cc",
      tier: "platform",
    });
    expect(resolvePlaceholders({ "<<": { a: "{{ team.name }}" }, b: 1 }, ctx, SRC)).toEqual({ a: "payments", b: 1 });
  });

  it("puts merged keys first, then the parent's own keys in template order", () => {
    const out = resolvePlaceholders({ z: 1, "<<": "{{ team.labels }}", a: 2 }, ctx, SRC) as Record<string, unknown>;
    expect(Object.keys(out)).toEqual(["tier", "cost-center", "z", "a"]);
  });

  it("refuses a `<<` that is not a map", () => {
    for (const v of ["{{ team.owners }}", "{{ team.name }}", "{{ nothing }}", "literal"]) {
      expect(renderError(() => resolvePlaceholders({ "<<": v }, ctx, SRC)).message, v).toMatch(
        /`<<` merge key must resolve to a map/,
      );
    }
  });
});

describe("fluxVariables", () => {
  it("finds ${VAR} and ${VAR:=default}, skips $${VAR}, and reports anything else as written", () => {
    const found = fluxVariables({
      a: "${A}",
      b: ["x ${B:=x} y", { "${KEY}": "$${ESCAPED}" }],
      c: "${ bad }",
      d: "$NOBRACES",
    });
    expect([...found].sort()).toEqual([" bad ", "A", "B", "KEY"]);
  });
});

// ---------------------------------------------------------------------------------------------------

/** The v1 template files with some replaced or added. */
function templateSetWith(changes: Record<string, string | undefined>): TemplateSet {
  const files = templateFiles("v1");
  for (const [name, text] of Object.entries(changes)) {
    if (text === undefined) files.delete(name);
    else files.set(name, text);
  }
  return parseTemplateSet("v1", files);
}

const INDEX = templateFiles("v1").get("templateset.yaml")!;
const withIndex = (edit: (text: string) => string) => templateSetWith({ "templateset.yaml": edit(INDEX) });
const render = (templates: TemplateSet, platform: Platform = PLATFORM, input = teamInput()) =>
  renderTeam(validateTeam(input, platform), platform, templates);

describe("rendering", () => {
  it("names the template when a placeholder is unknown", () => {
    const templates = templateSetWith({
      "limit-range.yaml": 'apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: "{{ names.nope }}"\n',
    });
    const err = renderError(() => render(templates));
    expect(err.source).toBe("templates/v1/limit-range.yaml");
    expect(err.message).toContain("unknown placeholder {{ names.nope }}");
  });

  it("renders no file for a forEach over an empty list, and leaves it out of the kustomization", () => {
    const files = render(templateSetWith({}));
    expect(
      [...files.keys()].filter((p) => p.includes("aso-workload-service-account") || p.includes("role-assignment")),
    ).toEqual([]);
    const base = parseObjects(files.get("teams/orders/base/kustomization.yaml")!, "1.1")[0] as { resources: string[] };
    expect(base.resources).not.toContain("aso-workload-service-account.yaml");
    const cluster = parseObjects(files.get("teams/orders/clusters/aks-dev-weu/kustomization.yaml")!, "1.1")[0] as {
      resources: string[];
    };
    expect(cluster.resources).toEqual([
      "../../base",
      "resource-group.yaml",
      "identity.yaml",
      "federated-credential.yaml",
    ]);
  });

  it("renders one document per element of a forEach list, bound to `as`", () => {
    const files = render(
      templateSetWith({}),
      PLATFORM,
      teamInput({ roleAssignments: [{ role: "rg-contributor" }, { role: "postgres-reader" }] }),
    );
    const docs = parseManifests(files.get("teams/orders/clusters/aks-dev-weu/role-assignment.yaml")!, "1.1");
    expect(docs.map((d) => d.metadata.labels?.["berth.dev/role"])).toEqual(["rg-contributor", "postgres-reader"]);
  });

  it("refuses a forEach over something that is not a list", () => {
    const templates = withIndex((t) => t.replace("forEach: roleAssignments", "forEach: team.name"));
    expect(renderError(() => render(templates)).message).toMatch(/forEach: \{\{ team.name \}\} is not a list/);
    const unknown = withIndex((t) => t.replace("forEach: roleAssignments", "forEach: nope"));
    expect(renderError(() => render(unknown)).message).toMatch(/unknown placeholder \{\{ nope \}\}/);
  });

  it("refuses a template that references a ${VAR} the platform does not declare, naming the template and the variable", () => {
    const templates = templateSetWith({
      "limit-range.yaml":
        'apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: x\n  annotations:\n    a: "${UNDECLARED_VAR}"\n',
    });
    const err = renderError(() => render(templates));
    expect(err.source).toBe("templates/v1/limit-range.yaml");
    expect(err.message).toContain("${UNDECLARED_VAR}");
    expect(err.message).toContain("SERVICEBUS_NAMESPACE"); // lists the known keys
    // The same template renders once the platform declares the key.
    const platform = makePlatform({ platformVars: { ...PLATFORM.platformVars, UNDECLARED_VAR: "now declared" } });
    expect(render(templates, platform).get("teams/orders/base/limit-range.yaml")).toContain('"${UNDECLARED_VAR}"');
  });

  it("checks ${VAR:=default} by its name, in keys too, and accepts $${VAR}", () => {
    const t = (body: string) =>
      templateSetWith({ "limit-range.yaml": `apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: x\n${body}` });
    expect(renderError(() => render(t('  annotations:\n    a: "${NOPE:=x}"\n'))).message).toContain("${NOPE}");
    expect(renderError(() => render(t('  annotations:\n    "${NOPE}": x\n'))).message).toContain("${NOPE}");
    expect(
      render(t('  annotations:\n    a: "$${NOPE} ${TENANT_ID:=x}"\n')).get("teams/orders/base/limit-range.yaml"),
    ).toContain("$${NOPE}");
  });

  it("refuses a role whose catalog scope references an undeclared ${VAR}, once a team uses it", () => {
    // platformSchema refuses such a catalog at start (validation.test.ts); rendering checks again, in depth.
    const platform: Platform = {
      ...PLATFORM,
      roleCatalog: [
        {
          id: "kv",
          description: "",
          roleDefinitionId: "4633458b-17de-408a-b874-0445c86b69e6",
          scope: { kind: "armId", armId: "/subscriptions/${SUBSCRIPTION_ID}/resourceGroups/${KEYVAULT_RG}" },
        },
      ],
    };
    expect(() => render(templateSetWith({}), platform)).not.toThrow();
    const err = renderError(() =>
      render(templateSetWith({}), platform, teamInput({ roleAssignments: [{ role: "kv" }] })),
    );
    expect(err.source).toBe("templates/v1/role-assignment.yaml");
    expect(err.message).toContain("${KEYVAULT_RG}");
  });

  it("does not re-read a value inserted inline as template syntax", () => {
    const templates = templateSetWith({
      "limit-range.yaml":
        'apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: x\n  annotations:\n    a: "Team {{ team.name }}: {{ team.description }}"\n',
    });
    const files = render(templates, PLATFORM, teamInput({ description: "{{ names.namespace }} }}" }));
    expect(parseManifests(files.get("teams/orders/base/limit-range.yaml")!, "1.1")[0]?.metadata.annotations?.a).toBe(
      "Team orders: {{ names.namespace }} }}",
    );
  });
});

describe("template files", () => {
  const err = (changes: Record<string, string | undefined>) => renderError(() => templateSetWith(changes));

  it("hold exactly one YAML document", () => {
    const two = err({ "namespace.yaml": "apiVersion: v1\nkind: Namespace\n---\napiVersion: v1\nkind: Secret\n" });
    expect(two.source).toBe("templates/v1/namespace.yaml");
    expect(two.message).toMatch(/exactly one YAML document, found 2/);
    expect(err({ "namespace.yaml": "" }).message).toMatch(/found 0/);
    expect(err({ "namespace.yaml": "# only a comment\n" }).message).toMatch(/found 0/);
  });

  it("must be valid YAML without duplicate keys or aliases", () => {
    expect(err({ "namespace.yaml": "a: [1\n" }).source).toBe("templates/v1/namespace.yaml");
    expect(err({ "namespace.yaml": "a: 1\na: 2\n" }).source).toBe("templates/v1/namespace.yaml");
    expect(err({ "namespace.yaml": "a: &x {b: 1}\nc: *x\n" }).source).toBe("templates/v1/namespace.yaml");
  });

  it("keep `<<` as a plain key (the renderer's merge), not YAML's merge", () => {
    const templates = templateSetWith({});
    const ns = templates.templates.get("namespace.yaml") as { metadata: { labels: Record<string, unknown> } };
    expect(ns.metadata.labels["<<"]).toBe("{{ team.labels }}");
  });

  it("must exist when the index names them", () => {
    const missing = err({ "limit-range.yaml": undefined });
    expect(missing.source).toBe("templates/v1/templateset.yaml");
    expect(missing.message).toContain("limit-range.yaml, which does not exist");
  });
});

describe("templateset.yaml", () => {
  const err = (edit: (t: string) => string) => renderError(() => withIndex(edit));

  it("is required", () => {
    const e = renderError(() => templateSetWith({ "templateset.yaml": undefined }));
    expect(e.message).toContain("missing templateset.yaml");
  });

  it("parses as shipped", () => {
    const t = templateSetWith({});
    expect(t.team.map((e) => e.template)).toContain("namespace.yaml");
    expect(t.flux).toHaveLength(1);
    expect(t.version).toBe("v1");
  });

  it.each([
    [
      "a wrong apiVersion",
      (t: string) => t.replace("apiVersion: berth.dev/v1alpha1", "apiVersion: berth.dev/v2"),
      /apiVersion/,
    ],
    ["a wrong kind", (t: string) => t.replace("kind: TemplateSet", "kind: Templates"), /kind/],
    ["an unknown top-level field", (t: string) => `${t}extra: 1\n`, /unrecognized|extra/i],
    [
      "an unknown entry field",
      (t: string) => t.replace("    - template: namespace.yaml", "    - template: namespace.yaml\n      when: always"),
      /spec\.team\.0/,
    ],
    ["forEach without as", (t: string) => t.replace("      as: assignment\n", ""), /forEach and as go together/],
    [
      "as without forEach",
      (t: string) => t.replace("    - template: namespace.yaml", "    - template: namespace.yaml\n      as: x"),
      /forEach and as go together/,
    ],
    ["no team templates", (t: string) => t.replace(/ {2}team:\n( {4}.*\n| {6}.*\n)*/, "  team: []\n"), /spec\.team/],
    [
      "two flux templates",
      (t: string) =>
        t.replace(
          "    - template: flux-kustomization.yaml",
          "    - template: flux-kustomization.yaml\n    - template: namespace.yaml",
        ),
      /spec\.flux/,
    ],
    [
      "a template path outside the folder",
      (t: string) => t.replace("template: namespace.yaml", "template: ../namespace.yaml"),
      /spec\.team\.0\.template/,
    ],
    [
      "a non-YAML template name",
      (t: string) => t.replace("template: namespace.yaml", "template: namespace.json"),
      /spec\.team\.0\.template/,
    ],
    [
      "an output named kustomization.yaml",
      (t: string) =>
        t.replace(
          "    - template: limit-range.yaml",
          "    - template: limit-range.yaml\n      output: kustomization.yaml",
        ),
      /output kustomization\.yaml is Berth's own file/,
    ],
    [
      "a team output named team.yaml (the team spec's file)",
      (t: string) =>
        t.replace("    - template: limit-range.yaml", "    - template: limit-range.yaml\n      output: team.yaml"),
      /output team\.yaml is the team spec's file/,
    ],
    ["two documents", (t: string) => `${t}---\na: 1\n`, /exactly one YAML document/],
  ])("refuses %s", (_name, edit, message) => {
    const e = err(edit);
    expect(e.source).toBe("templates/v1/templateset.yaml");
    expect(e.message).toMatch(message);
  });

  it("writes entries that share an output as one file, their documents in entry order", () => {
    const t = withIndex((text) =>
      text
        .replace("    - template: namespace.yaml", "    - template: namespace.yaml\n      output: resources.yaml")
        .replace("    - template: limit-range.yaml", "    - template: limit-range.yaml\n      output: resources.yaml"),
    );
    const files = render(t);
    const kinds = parseManifests(files.get("teams/orders/base/resources.yaml")!, "1.1").map((o) => o.kind);
    expect(kinds).toEqual(["Namespace", "LimitRange"]);
    expect(files.get("teams/orders/base/resources.yaml")).toContain(
      "Source: teams/orders/base/team.yaml + templates/v1/namespace.yaml, templates/v1/limit-range.yaml",
    );
    expect(files.has("teams/orders/base/namespace.yaml")).toBe(false);
    expect(files.has("teams/orders/base/limit-range.yaml")).toBe(false);
    const resources = parseManifests(files.get("teams/orders/base/kustomization.yaml")!, "1.1")[0]?.resources;
    expect((resources as string[]).slice(0, 3)).toEqual(["team.yaml", "resources.yaml", "resource-quota.yaml"]);
    expect(resources).not.toContain("limit-range.yaml");
  });

  it("lets an entry choose its output name", () => {
    const t = withIndex((text) =>
      text.replace("    - template: limit-range.yaml", "    - template: limit-range.yaml\n      output: limits.yaml"),
    );
    const files = render(t);
    expect(files.has("teams/orders/base/limits.yaml")).toBe(true);
    expect(files.has("teams/orders/base/limit-range.yaml")).toBe(false);
    expect(parseManifests(files.get("teams/orders/base/kustomization.yaml")!, "1.1")[0]?.resources).toContain(
      "limits.yaml",
    );
  });
});
