/**
 * What adoption may touch and what it may read (issue 24, items 1, 2 and 7): bounded work with a 422 that
 * names the limit, nothing of another Berth team edited, nothing outside the team's namespace mapped, and
 * errors that say what is wrong with a file.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import {
  Adoption,
  AdoptionLimitError,
  AdoptionUnmappableError,
  adoptionRequestSchema,
  Onboarding,
  repoLayout,
  platformSchema,
} from "@berth/core";
import { DEFAULT_BUILD_LIMITS } from "@berth/kustomize";
import { loadCatalog, MemoryRepoTree, REPO_ROOT, treeFromFolder } from "./fixtures.js";

const PLATFORM = platformSchema.parse(
  (parse(readFileSync(join(REPO_ROOT, "infra/local/berth.yaml"), "utf8")) as { platform: unknown }).platform,
);
const onboarding = new Onboarding(PLATFORM, loadCatalog("v3"));
const adoption = new Adoption(onboarding);
const request = adoptionRequestSchema.parse({ keepAzureNames: true });
const handWritten = () => treeFromFolder(join(REPO_ROOT, "tests/fixtures/adoption/repo"));

/** A Flux Kustomization for `name` on aks-dev-weu, applying `path`. */
const fluxKustomization = (name: string, path: string, namespace = "flux-system") =>
  `apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\nspec:\n  interval: 10m\n  path: ./${path}\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n`;
const namespace = (name: string) => `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${name}\n`;
const owners = `apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: admins\n  namespace: gamma\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: admin\nsubjects:\n  - kind: Group\n    apiGroup: rbac.authorization.k8s.io\n    name: 0b9a3c1e-1111-4222-8333-444455556666\n`;

async function unmappable(p: Promise<unknown>): Promise<AdoptionUnmappableError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AdoptionUnmappableError);
  return err as AdoptionUnmappableError;
}

describe("adoption's work is bounded, and a limit is a 422 that names it", () => {
  const fanOut = (entries: string[], files: Record<string, string> = {}) =>
    handWritten().apply(
      new Map<string, string>([
        ["clusters/aks-dev-weu/fanout.yaml", fluxKustomization("gamma", "fanout")],
        ["fanout/kustomization.yaml", `resources:\n${entries.map((e) => `  - ${e}\n`).join("")}`],
        ...Object.entries(files),
      ]),
    );
  const configMaps = (n: number) =>
    Array.from(
      { length: n },
      (_, i) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-${i}\n  namespace: gamma\ndata:\n  k: v\n`,
    ).join("---\n");

  it("a file listed many times is refused at its second entry, as kustomize refuses it", async () => {
    const err = await unmappable(
      adoption.plan(fanOut(Array(500).fill("big.yaml"), { "fanout/big.yaml": configMaps(500) }), "gamma", request),
    );
    expect(err.issues).toEqual([
      {
        field: "clusters/aks-dev-weu/fanout.yaml",
        rule: "cannot build fanout: fanout/kustomization.yaml: lists resource big.yaml twice (kustomize refuses a resource it already has)",
      },
    ]);
  });

  it("entries, documents, bytes and depth past the limits stop the build with the limit's name", async () => {
    const entries = Array.from({ length: DEFAULT_BUILD_LIMITS.maxEntries + 1 }, (_, i) => `f${i}.yaml`);
    const tooMany = await adoption.plan(fanOut(entries), "gamma", request).catch((e: unknown) => e);
    expect(tooMany).toBeInstanceOf(AdoptionLimitError);
    expect(tooMany).toMatchObject({
      limit: "maxEntries",
      message: `fanout/kustomization.yaml lists ${entries.length} resources; adoption builds at most ${DEFAULT_BUILD_LIMITS.maxEntries} per kustomization`,
    });
    const docs = await adoption
      .plan(
        fanOut(["big.yaml"], { "fanout/big.yaml": configMaps(DEFAULT_BUILD_LIMITS.maxDocuments + 1) }),
        "gamma",
        request,
      )
      .catch((e: unknown) => e);
    expect(docs).toMatchObject({ limit: "maxDocuments" });
    const small = new Adoption(onboarding, { limits: { ...DEFAULT_BUILD_LIMITS, maxFileBytes: 1000 } });
    expect(
      await small
        .plan(fanOut(["big.yaml"], { "fanout/big.yaml": configMaps(20) }), "gamma", request)
        .catch((e: unknown) => e),
    ).toMatchObject({ limit: "maxFileBytes" });
    const loop = handWritten().apply(
      new Map([
        ["clusters/aks-dev-weu/loop.yaml", fluxKustomization("gamma", "loop")],
        ["loop/kustomization.yaml", "resources:\n  - ../loop\n"],
      ]),
    );
    expect(await adoption.plan(loop, "gamma", request).catch((e: unknown) => e)).toMatchObject({ limit: "maxDepth" });
  });

  it("lets the caller's event loop run between documents of a large file, and stops at the time limit", async () => {
    // A clock that advances 1 ms per look: the budget pauses every 10 ms of work, so at least once per ten
    // documents whatever the file's size; with the same clock, a 100 ms limit stops the build.
    let now = 0;
    let pauses = 0;
    const clock = { now: () => ++now, pause: async () => void pauses++ };
    const tree = fanOut(["big.yaml"], { "fanout/big.yaml": configMaps(2_000) });
    await new Adoption(onboarding, { clock }).plan(tree, "gamma", request).catch(() => undefined);
    expect(pauses).toBeGreaterThanOrEqual(2_000 / 10);
    now = 0;
    const slow = new Adoption(onboarding, { clock, limits: { ...DEFAULT_BUILD_LIMITS, maxMillis: 100 } });
    expect(await slow.plan(tree, "gamma", request).catch((e: unknown) => e)).toMatchObject({
      limit: "maxMillis",
      message: "building the hand-written tree took longer than 100 ms, adoption's limit",
    });
  });

  it("builds only the Kustomizations that name the team: a huge tree elsewhere is never read", async () => {
    const reads: string[] = [];
    const tree = fanOut(Array(500).fill("big.yaml"), {
      "fanout/big.yaml": configMaps(500),
      "data/huge.yaml": "x".repeat(30 * 1024 * 1024),
    });
    const counting = Object.assign(Object.create(tree) as MemoryRepoTree, {
      read: async (p: string) => (reads.push(p), tree.read(p)),
    });
    await adoption.plan(counting, "payments", request);
    expect(reads.filter((p) => p.startsWith("fanout/") || p.startsWith("data/"))).toEqual([]);
  });
});

describe("adoption never edits what is Berth's, nor maps what is outside the team's namespace", () => {
  async function withBerthTeam(tree: MemoryRepoTree) {
    const { change } = await onboarding.planCreate(tree, {
      name: "alpha",
      owners: ["0b9a3c1e-1111-4222-8333-444455556666"],
      environments: ["dev"],
    });
    return tree.apply(change);
  }

  it("a hand-edited Berth Flux file of another team pointing at the tree is never read, never suspended", async () => {
    const start = await withBerthTeam(handWritten());
    const alphaFlux = repoLayout(PLATFORM).fluxKustomization("aks-dev-weu", "alpha");
    const edited = start.apply(
      new Map([
        [alphaFlux, fluxKustomization("team-alpha", "gamma", "flux-config")],
        ["gamma/kustomization.yaml", "resources:\n  - ns.yaml\n  - rbac.yaml\n"],
        ["gamma/ns.yaml", namespace("gamma")],
        ["gamma/rbac.yaml", owners],
      ]),
    );
    const err = await unmappable(adoption.plan(edited, "gamma", request));
    expect(err.issues[0]!.rule).toBe(
      "no Flux Kustomization under clusters/ builds a Namespace named gamma: nothing to adopt",
    );
  });

  it("a hand-written Kustomization with the name of another Berth team's Flux object is refused", async () => {
    const tree = (await withBerthTeam(handWritten())).apply(
      new Map([
        [
          "clusters/aks-dev-weu/hand/gamma.yaml",
          fluxKustomization("team-alpha", "gamma", "flux-config").replace(
            "name: team-alpha",
            "name: team-alpha\n  labels:\n    tenant: gamma",
          ),
        ],
        ["gamma/kustomization.yaml", "resources:\n  - ns.yaml\n  - rbac.yaml\n"],
        ["gamma/ns.yaml", namespace("gamma")],
        ["gamma/rbac.yaml", owners],
      ]),
    );
    // Named after alpha's Flux object, it is still found for gamma by its path.
    const err = await unmappable(adoption.plan(tree, "gamma", request));
    expect(err.issues).toContainEqual({
      field: "clusters/aks-dev-weu/hand/gamma.yaml",
      rule: "Flux Kustomization flux-config/team-alpha is the Flux object of Berth's team alpha: adoption never suspends another team's Kustomization; rename the hand-written one",
    });
  });

  it("objects in another namespace (another team's, kube-system) are refused by name, not mapped onto the team", async () => {
    const foreign = `${owners.replace("namespace: gamma", "namespace: alpha")}---\napiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: q\n  namespace: kube-system\nspec:\n  hard:\n    cpu: "1"\n    memory: 1Gi\n    pods: "10"\n`;
    const tree = handWritten().apply(
      new Map([
        ["clusters/aks-dev-weu/gamma.yaml", fluxKustomization("gamma", "gamma")],
        ["gamma/kustomization.yaml", "resources:\n  - ns.yaml\n  - rbac.yaml\n  - foreign.yaml\n"],
        ["gamma/ns.yaml", namespace("gamma")],
        ["gamma/rbac.yaml", owners],
        ["gamma/foreign.yaml", foreign],
      ]),
    );
    const err = await unmappable(adoption.plan(tree, "gamma", request));
    expect(err.issues).toEqual([
      {
        field: "gamma/foreign.yaml#RoleBinding/alpha/admins",
        rule: "is in namespace alpha: adoption takes the objects of namespace gamma, nothing of another namespace",
      },
      {
        field: "gamma/foreign.yaml#ResourceQuota/kube-system/q",
        rule: "is in namespace kube-system: adoption takes the objects of namespace gamma, nothing of another namespace",
      },
    ]);
  });
});

describe("adoption's errors say what is wrong with a file", () => {
  const gamma = (files: Record<string, string>, resources: string[]) =>
    handWritten().apply(
      new Map([
        ["clusters/aks-dev-weu/gamma.yaml", fluxKustomization("gamma", "gamma")],
        ["gamma/kustomization.yaml", `resources:\n${resources.map((r) => `  - ${r}\n`).join("")}`],
        ["gamma/ns.yaml", namespace("gamma")],
        ...Object.entries(files),
      ]),
    );

  it("a symbolic link (git stores its target as the file's text) is named as such", async () => {
    const err = await unmappable(
      adoption.plan(gamma({ "gamma/link.yaml": "../../../../etc/passwd" }, ["ns.yaml", "link.yaml"]), "gamma", request),
    );
    expect(err.issues).toEqual([
      {
        field: "clusters/aks-dev-weu/gamma.yaml",
        rule: 'cannot build gamma: gamma/link.yaml: holds the text "../../../../etc/passwd", not a Kubernetes object (a symbolic link? Berth reads no links)',
      },
    ]);
  });

  it("a resource path that leaves the repository is refused, not clamped to the root", async () => {
    const err = await unmappable(
      adoption.plan(
        gamma({ "etc/passwd": namespace("gamma") }, ["ns.yaml", "../../../../etc/passwd"]),
        "gamma",
        request,
      ),
    );
    expect(err.issues).toEqual([
      {
        field: "clusters/aks-dev-weu/gamma.yaml",
        rule: "cannot build gamma: gamma/kustomization.yaml: ../../../../etc/passwd leaves the Flux repo (it goes above its root)",
      },
    ]);
  });

  it("an alias bomb in a clusters/ file is named when nothing is found, not ignored", async () => {
    const bomb = `a: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n`;
    const err = await unmappable(
      adoption.plan(handWritten().apply(new Map([["clusters/aks-dev-weu/zeta.yaml", bomb]])), "zeta", request),
    );
    expect(err.issues).toEqual([
      {
        field: "clusters",
        rule: "no Flux Kustomization under clusters/ builds a Namespace named zeta: nothing to adopt",
      },
      {
        field: "clusters/aks-dev-weu/zeta.yaml",
        rule: "cannot be read, so adoption could not look for zeta in it: uses a YAML alias; adoption reads no anchors or aliases (one can expand without bound): write the values out",
      },
    ]);
  });

  it("a file the repository fails to read stops the adoption with that error, not a file skipped as unreadable", async () => {
    const failing = new Error("git cat-file: object 1234 is missing");
    class BrokenTree extends MemoryRepoTree {
      override async read(path: string): Promise<string | undefined> {
        if (path === "clusters/aks-dev-weu/gamma.yaml") throw failing;
        return super.read(path);
      }
    }
    const broken = new BrokenTree(gamma({}, ["ns.yaml"]).toRecord());
    expect(await adoption.plan(broken, "gamma", request).catch((e: unknown) => e)).toBe(failing);
  });
});
