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

// v2 was retired (docs/templates.md#retiring-a-version): v3 holds all of v2's changes from v1, so v1 → v3 is
// compared directly and asserts the union of both steps: the labels and cost tags v2 added, and the credential chain.
it("v3 differs from v1 only in labels on every object, cost tags, and federated credentials written one after another", async () => {
  type Rendered = {
    kind?: string;
    metadata: { name: string; labels?: Record<string, string> };
    spec: Record<string, unknown>;
  };
  const FIRST = "/federated-credential.yaml";
  const FOLLOWING = "/federated-credential-following.yaml";
  const objectsIn = (text = "") => parseAllDocuments(text).map((d) => d.toJS() as Rendered);
  const ADDED_LABELS = { "app.kubernetes.io/managed-by": "berth", "berth.dev/template-version": "v3" };
  const labelled = (metadata: Rendered["metadata"]) => ({
    ...metadata,
    labels: { ...metadata.labels, ...ADDED_LABELS },
  });
  let longestChain = 0;
  let costTagged = 0;
  for (const ex of EXAMPLES) {
    const environmentOf = new Map(
      ex.platform.environments.flatMap((env) => env.clusters.map((c) => [c.name, env.name] as const)),
    );
    const v1 = await renderExample(ex, "v1");
    const v3 = await renderExample(ex, "v3");
    // The same files, and one more per cluster folder: the credentials that follow the first.
    expect([...v3.keys()].filter((p) => !p.endsWith(FOLLOWING)).sort(), ex.name).toEqual([...v1.keys()].sort());
    const templatedPath = (path: string) => !path.endsWith("/team.yaml") && !path.endsWith("/kustomization.yaml");
    for (const [path, text] of v3) {
      // Every object Berth renders from a template carries the version label (team.yaml and the
      // kustomize files are Berth's own, not templates).
      if (!templatedPath(path)) continue;
      const docs = text.split(/^---$/m).filter((d) => /^kind: /m.test(d));
      expect(docs.length, `${ex.name} ${path}`).toBeGreaterThan(0);
      for (const doc of docs) {
        expect(doc, `${ex.name} ${path}`).toContain("berth.dev/template-version: v3");
        expect(doc, `${ex.name} ${path}`).toContain("app.kubernetes.io/managed-by: berth");
      }
    }
    for (const [path, v1Text] of v1) {
      const v3Text = v3.get(path) ?? "";
      if (!templatedPath(path)) {
        // Berth's own files: the team file records the version, a cluster folder lists the new file; nothing else.
        expect(
          v3Text.replace("templateVersion: v3", "templateVersion: v1").replace(`  - ${FOLLOWING.slice(1)}\n`, ""),
          `${ex.name} ${path}`,
        ).toBe(v1Text);
        continue;
      }
      if (path.endsWith(FIRST)) {
        const sideBySide = objectsIn(v1Text);
        const chain = [...objectsIn(v3Text), ...objectsIn(v3.get(path.replace(FIRST, FOLLOWING)))];
        // The same credentials in the same order, with the same metadata but for the two labels.
        expect(
          chain.map((o) => o.metadata),
          `${ex.name} ${path}`,
        ).toEqual(sideBySide.map((o) => labelled(o.metadata)));
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
        continue;
      }
      // Every other object is v1's with the two labels and, on the resource group and the identity, the cost tags
      // (team, cluster and environment; the resource group already had the first two).
      const before = objectsIn(v1Text);
      const after = objectsIn(v3Text);
      expect(after.length, `${ex.name} ${path}`).toBe(before.length);
      after.forEach((object, i) => {
        const old = before[i]!;
        let expected: Rendered = { ...old, metadata: labelled(old.metadata) };
        if (old.kind === "ResourceGroup" || old.kind === "UserAssignedIdentity") {
          const cluster = /\/clusters\/([^/]+)\//.exec(path)?.[1] ?? "";
          expect(environmentOf.has(cluster), `${ex.name} ${path}`).toBe(true);
          const tags = {
            ...(old.spec.tags as Record<string, string> | undefined),
            "berth-team": ex.team.name,
            "berth-cluster": cluster,
            "berth-environment": environmentOf.get(cluster),
          };
          expected = { ...expected, spec: { ...old.spec, tags } };
          costTagged++;
        }
        expect(object, `${ex.name} ${path} #${i}`).toEqual(expected);
      });
      // And as text: removing what v3 adds gives v1 back, line for line (no name or azureName changed).
      const stripped = v3Text
        .split("\n")
        .filter((l) => !/berth\.dev\/template-version: v3|berth-environment: |# Cost allocation/.test(l))
        .join("\n")
        .replace("templates/v3/", "templates/v1/");
      const v1Lines = new Set(v1Text.split("\n").filter((l) => !/berth-environment: /.test(l)));
      for (const line of stripped.split("\n")) {
        if (/app\.kubernetes\.io\/managed-by: berth|^ {2}tags:|^ {4}berth-(team|cluster): /.test(line)) continue;
        expect(v1Lines.has(line), `${ex.name} ${path}: v3 line not in v1: ${line}`).toBe(true);
      }
    }
  }
  expect(costTagged, "every example renders a resource group and an identity per cluster").toBeGreaterThan(0);
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

it("v6 differs from v5 only in the cluster issuer ConfigMap, which each identity's first credential reads", async () => {
  type Rendered = {
    apiVersion?: string;
    kind?: string;
    metadata: { name: string; namespace?: string; labels?: Record<string, string> };
    spec?: Record<string, unknown>;
    data?: Record<string, string>;
  };
  const objectsIn = (text = "") => parseAllDocuments(text).map((d) => d.toJS() as Rendered);
  const asV5 = (text: string) => text.replaceAll("v6", "v5");
  let clusterFolders = 0;
  for (const ex of EXAMPLES) {
    const v5 = await renderExample(ex, "v5");
    const v6 = await renderExample(ex, "v6");
    expect([...v6.keys()].sort(), ex.name).toEqual([...v5.keys()].sort());
    for (const [path, v5Text] of v5) {
      const v6Text = asV5(v6.get(path) ?? "");
      if (!/\/clusters\/[^/]+\/resources\.yaml$/.test(path)) {
        expect(v6Text, `${ex.name} ${path}`).toBe(v5Text);
        continue;
      }
      clusterFolders++;
      const objects = objectsIn(v6Text);
      const issuerMaps = objects.filter((o) => o.kind === "ConfigMap");
      expect(issuerMaps, `${ex.name} ${path}`).toHaveLength(1);
      const [issuerMap] = issuerMaps;
      const team = issuerMap!.metadata.labels?.["berth.dev/team"];
      expect(issuerMap, `${ex.name} ${path}`).toEqual({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
          name: `${team}--cluster-issuer`,
          namespace: expect.any(String),
          labels: {
            "berth.dev/team": team,
            "app.kubernetes.io/managed-by": "berth",
            "berth.dev/template-version": "v5",
          },
        },
        data: { issuer: "${CLUSTER_OIDC_ISSUER_URL}" },
      });
      // The credential that read it is v5's first one, which trusted the same issuer directly.
      let readers = 0;
      const asBefore = objects
        .filter((o) => o !== issuerMap)
        .map((o) => {
          const from = o.spec?.issuerFromConfig as { name?: string; key?: string } | undefined;
          if (from?.name !== issuerMap!.metadata.name) return o;
          readers++;
          expect(from.key).toBe("issuer");
          expect(o.metadata.namespace).toBe(issuerMap!.metadata.namespace);
          const { issuerFromConfig: _read, ...spec } = o.spec ?? {};
          return { ...o, spec: { ...spec, issuer: "${CLUSTER_OIDC_ISSUER_URL}" } };
        });
      expect(readers, `${ex.name} ${path}`).toBe(1);
      expect(asBefore, `${ex.name} ${path}`).toEqual(objectsIn(v5Text));
    }
  }
  expect(clusterFolders).toBeGreaterThan(0);
});
