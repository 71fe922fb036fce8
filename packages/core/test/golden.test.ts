/**
 * Golden files: tests/golden/<template version>/<example>/<repo path> holds every file planCreate writes
 * for each example team on an empty repo, rendered with that version (each version is a complete set). scripts/generate.ts writes them (`npm run generate`)
 * and tests/architecture/generated.test.ts fails while they differ, byte for byte; the diff of tests/golden/ is what a
 * reviewer reviews when templates or rendering change (see tests/golden/README.md). Here: what every rendering holds.
 */
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { EXAMPLES, renderExample, TEMPLATE_VERSIONS } from "./fixtures.js";

const CASES = TEMPLATE_VERSIONS.flatMap((version) => EXAMPLES.map((ex) => [version, ex.name, ex] as const));

describe.each(CASES)("templates %s, example %s", (version, _name, ex) => {
  it(`records the version in the team file (${ex.covers})`, async () => {
    const rendered = await renderExample(ex, version);
    expect([...rendered.values()].find((c) => c.includes("kind: Team\n"))).toContain(`templateVersion: ${version}`);
  });
});

it("v2 differs from v1 only where the platform changed it: labels on every object and cost tags", async () => {
  for (const ex of EXAMPLES) {
    const v1 = await renderExample(ex, "v1");
    const v2 = await renderExample(ex, "v2");
    expect([...v2.keys()].sort()).toEqual([...v1.keys()].sort());
    for (const [path, text] of v2) {
      // Every object Berth renders from a template carries the version label (team.yaml and the
      // kustomize files are Berth's own, not templates).
      const docs = text.split(/^---$/m).filter((d) => /^kind: /m.test(d));
      const templated = !path.endsWith("/team.yaml") && !path.endsWith("/kustomization.yaml");
      for (const doc of docs) {
        if (templated) {
          expect(doc, `${ex.name} ${path}`).toContain("berth.dev/template-version: v2");
          expect(doc, `${ex.name} ${path}`).toContain("app.kubernetes.io/managed-by: berth");
        }
      }
      // Removing what v2 adds gives v1 back, line for line (nothing else changed, no name or azureName).
      const stripped = text
        .split("\n")
        .filter((l) => !/berth\.dev\/template-version: v2|berth-environment: |# Cost allocation/.test(l))
        .join("\n")
        .replace("templateVersion: v2", "templateVersion: v1")
        .replace("templates/v2/", "templates/v1/");
      const v1Text = v1
        .get(path)!
        .split("\n")
        .filter((l) => !/berth-environment: /.test(l))
        .join("\n");
      const v1Lines = new Set(v1Text.split("\n"));
      for (const line of stripped.split("\n")) {
        if (/app\.kubernetes\.io\/managed-by: berth|^ {2}tags:|^ {4}berth-(team|cluster): /.test(line)) continue;
        expect(v1Lines.has(line), `${ex.name} ${path}: v2 line not in v1: ${line}`).toBe(true);
      }
    }
  }
});

it("v3 differs from v2 only in how a team's federated credentials get their issuer: one after another", async () => {
  type Rendered = { metadata: { name: string }; spec: Record<string, unknown> };
  const FIRST = "/federated-credential.yaml";
  const FOLLOWING = "/federated-credential-following.yaml";
  const objectsIn = (text = "") => parseAllDocuments(text).map((d) => d.toJS() as Rendered);
  const asV2 = (text: string) => text.replaceAll("v3", "v2");
  let longestChain = 0;
  for (const ex of EXAMPLES) {
    const v2 = await renderExample(ex, "v2");
    const v3 = await renderExample(ex, "v3");
    expect([...v3.keys()].filter((p) => !p.endsWith(FOLLOWING)).sort(), ex.name).toEqual([...v2.keys()].sort());
    for (const [path, v2Text] of v2) {
      const v3Text = v3.get(path) ?? "";
      if (!path.endsWith(FIRST)) {
        // Every other file is v2's but for the version it names, and a cluster folder lists the new file.
        expect(asV2(v3Text).replace(`  - ${FOLLOWING.slice(1)}\n`, ""), `${ex.name} ${path}`).toBe(v2Text);
        continue;
      }
      const sideBySide = objectsIn(v2Text);
      const chain = [...objectsIn(v3Text), ...objectsIn(v3.get(path.replace(FIRST, FOLLOWING)))];
      // The same credentials in the same order, with the same metadata but for the version label.
      expect(chain.map((o) => asV2(JSON.stringify(o.metadata)))).toEqual(
        sideBySide.map((o) => JSON.stringify(o.metadata)),
      );
      chain.forEach((credential, i) => {
        const { issuer, ...unchanged } = sideBySide[i]?.spec ?? {};
        const previous = chain[i - 1];
        expect(credential.spec, `${ex.name} ${path} #${i}`).toEqual({
          ...unchanged,
          // The first trusts the cluster's issuer; each next one reads it from what its predecessor exports.
          ...(previous
            ? { issuerFromConfig: { name: `${previous.metadata.name}-issuer`, key: "issuer" } }
            : { issuer }),
          operatorSpec: {
            configMapExpressions: [
              { name: `${credential.metadata.name}-issuer`, key: "issuer", value: "self.status.issuer" },
            ],
          },
        });
      });
      longestChain = Math.max(longestChain, chain.length);
    }
  }
  expect(longestChain, "an example with subject mode both: three credentials in a chain").toBe(3);
});

it("v4 differs from v3 only in the team Kustomization's serviceAccountName: Flux applies as the team applier", async () => {
  const asV3 = (text: string) => text.replaceAll("v4", "v3");
  for (const ex of EXAMPLES) {
    const v3 = await renderExample(ex, "v3");
    const v4 = await renderExample(ex, "v4");
    expect([...v4.keys()].sort(), ex.name).toEqual([...v3.keys()].sort());
    let fluxFiles = 0;
    for (const [path, v3Text] of v3) {
      const [kustomization] = parseAllDocuments(v4.get(path) ?? "").map(
        (d) => d.toJS() as { apiVersion?: string; spec?: Record<string, unknown> },
      );
      if (!kustomization?.apiVersion?.startsWith("kustomize.toolkit.fluxcd.io/")) {
        expect(asV3(v4.get(path) ?? ""), `${ex.name} ${path}`).toBe(v3Text);
        continue;
      }
      fluxFiles++;
      expect(kustomization.spec?.serviceAccountName, `${ex.name} ${path}`).toBe("berth-team-applier");
      const rest = { ...kustomization.spec };
      delete rest.serviceAccountName;
      const [v3Kustomization] = parseAllDocuments(v3Text).map((d) => d.toJS() as { spec?: Record<string, unknown> });
      expect(rest, `${ex.name} ${path}`).toEqual(v3Kustomization?.spec);
    }
    expect(fluxFiles, ex.name).toBeGreaterThan(0);
  }
});
