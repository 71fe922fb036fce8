/**
 * Shared test fixtures for @berth/core: a realistic platform, example teams that together use every
 * template and option, the v1 template set read from disk, and an in-memory RepoTree.
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { filesOf } from "../../../tests/support/folder.js";
import {
  Fleet,
  Onboarding,
  parseTemplateSet,
  platformSchema,
  type Platform,
  type PlatformInput,
  type CommitInfo,
  type RepoChange,
  type RepoTree,
  type TeamInput,
  type TemplateSet,
  TemplateCatalog,
} from "@berth/core";

export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
export const TEMPLATES_DIR = `${REPO_ROOT}templates`;
export const GOLDEN_DIR = `${REPO_ROOT}tests/golden`;

/** Reads templates/<version>/ the way @berth/config's loadTemplateSet does (without depending on it). */
export function templateFiles(version = "v1"): Map<string, string> {
  const dir = `${TEMPLATES_DIR}/${version}`;
  return new Map(
    readdirSync(dir)
      .filter((n) => n.endsWith(".yaml"))
      .sort()
      .map((n) => [n, readFileSync(`${dir}/${n}`, "utf8")] as const),
  );
}

/** Every version folder of templates/, oldest first. */
export const TEMPLATE_VERSIONS: readonly string[] = readdirSync(TEMPLATES_DIR)
  .filter((n) => /^v[1-9][0-9]*$/.test(n))
  .sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));

const cachedTemplates = new Map<string, TemplateSet>();
export function loadTemplates(version = "v1"): TemplateSet {
  let set = cachedTemplates.get(version);
  if (!set) cachedTemplates.set(version, (set = parseTemplateSet(version, templateFiles(version))));
  return set;
}

/** Every version, side by side, with `defaultVersion` as the one new teams get. */
export function loadCatalog(defaultVersion = "v1"): TemplateCatalog {
  return new TemplateCatalog(
    TEMPLATE_VERSIONS.map((v) => loadTemplates(v)),
    defaultVersion,
  );
}

// ---------------------------------------------------------------------------------------------------
// Platform

export const ROLE_DEFINITIONS = {
  contributor: "b24988ac-6180-42a0-ab88-20f7382dd24c",
  serviceBusDataOwner: "090c5cfd-751d-490a-894a-3ce6f1109419",
  reader: "acdd72a7-3385-48ef-bd42-f606fba81ae7",
  keyVaultSecretsUser: "4633458b-17de-408a-b874-0445c86b69e6",
} as const;

export const SERVICEBUS_ARM_ID =
  "/subscriptions/${SUBSCRIPTION_ID}/resourceGroups/rg-platform-shared/providers/Microsoft.ServiceBus/namespaces/${SERVICEBUS_NAMESPACE}";
export const POSTGRES_ARM_ID =
  "/subscriptions/${SUBSCRIPTION_ID}/resourceGroups/rg-platform-data/providers/Microsoft.DBforPostgreSQL/flexibleServers/${POSTGRES_SERVER}";

/** Platform config as an operator writes it (before defaults). */
export function platformInput(overrides: Partial<PlatformInput> = {}): PlatformInput {
  return {
    environments: [
      { name: "dev", clusters: [{ name: "aks-dev-weu", vars: { AZURE_LOCATION: "westeurope" } }] },
      { name: "staging", clusters: [{ name: "aks-stg-weu" }] },
      {
        name: "prod",
        clusters: [{ name: "aks-prod-weu" }, { name: "aks-prod-neu", vars: { AZURE_LOCATION: "northeurope" } }],
      },
    ],
    platformVars: {
      SERVICEBUS_NAMESPACE: "Shared Service Bus namespace of the cluster's environment",
      POSTGRES_SERVER: "Shared PostgreSQL flexible server of the cluster's environment",
    },
    roleCatalog: [
      {
        id: "rg-contributor",
        description: "Contributor on the team's own resource group",
        roleDefinitionId: ROLE_DEFINITIONS.contributor,
        roleName: "Contributor",
        scope: { kind: "teamResourceGroup" },
      },
      {
        id: "rg-keyvault-secrets",
        description: "Read Key Vault secrets in the team's resource group",
        roleDefinitionId: ROLE_DEFINITIONS.keyVaultSecretsUser,
        roleName: "Key Vault Secrets User",
        scope: { kind: "teamResourceGroup" },
      },
      {
        id: "servicebus-data-owner",
        description: "Full data access to the shared Service Bus namespace",
        roleDefinitionId: ROLE_DEFINITIONS.serviceBusDataOwner,
        roleName: "Azure Service Bus Data Owner",
        scope: { kind: "armId", armId: SERVICEBUS_ARM_ID },
      },
      {
        id: "postgres-reader",
        description: "Read the shared PostgreSQL server's configuration",
        roleDefinitionId: ROLE_DEFINITIONS.reader,
        roleName: "Reader",
        scope: { kind: "armId", armId: POSTGRES_ARM_ID },
      },
    ],
    reservedNames: ["monitoring", "ingress-nginx"],
    ...overrides,
  };
}

export function makePlatform(overrides: Partial<PlatformInput> = {}): Platform {
  return platformSchema.parse(platformInput(overrides));
}

export type SubjectMode = "aso-controller" | "aso-workload" | "both";

export function platformWithSubjectMode(mode: SubjectMode, overrides: Partial<PlatformInput> = {}): Platform {
  return makePlatform({ federatedCredential: { subjectMode: mode }, ...overrides });
}

/** The default test platform: subject mode aso-controller, default layout and namespaces. */
export const PLATFORM: Platform = makePlatform();

/** Team folders in their shard's folder, read by hash slices (ADR 0034). */
export const HASH_SLICES_PLATFORM: Platform = makePlatform({
  fluxSource: { kind: "ExternalArtifact", artifactPrefix: "team-files-" },
  layout: { appliedBy: "slices", slices: { by: "hash", count: 32 } },
});

export const CLUSTERS = ["aks-dev-weu", "aks-stg-weu", "aks-prod-weu", "aks-prod-neu"] as const;

// ---------------------------------------------------------------------------------------------------
// Teams

export const OWNERS = {
  payments: "0b9a3c1e-1111-4222-8333-444455556666",
  paymentsOncall: "5f0e2d4c-7a8b-4c9d-8e1f-2a3b4c5d6e7f",
  data: "9c8b7a65-4321-4fed-8cba-0987654321fe",
  search: "1d2c3b4a-5e6f-4a7b-9c8d-e0f1a2b3c4d5",
  checkout: "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee",
} as const;

export interface Example {
  /** Folder name under tests/golden/. */
  name: string;
  /** What this example covers, for the reader of the goldens. */
  covers: string;
  platform: Platform;
  team: TeamInput;
}

/**
 * Example teams. Together they use every template (the aso-workload ServiceAccount only renders with
 * subject mode aso-workload or both), every role scope kind, and default vs. explicit quota and limits.
 */
export const EXAMPLES: readonly Example[] = [
  {
    name: "minimal",
    covers: "one environment/cluster, platform default quota and limits, no roles, no labels, empty description",
    platform: PLATFORM,
    team: { name: "search", owners: [OWNERS.search], environments: ["dev"] },
  },
  {
    name: "payments",
    covers:
      "two environments (three clusters), explicit quota and limits, one teamResourceGroup role, labels given unsorted, two owners",
    platform: PLATFORM,
    team: {
      name: "payments",
      description: "Payments: card and SEPA processing (owned by #team-payments)",
      owners: [OWNERS.payments, OWNERS.paymentsOncall],
      environments: ["prod", "dev"],
      quota: { cpu: "16", memory: "32Gi", pods: 200 },
      containerLimits: { defaultRequest: { cpu: "250m", memory: "256Mi" }, default: { cpu: "1", memory: "1Gi" } },
      roleAssignments: [{ role: "rg-contributor" }],
      labels: { "cost-center": "cc-4711", "app.kubernetes.io/part-of": "payments", criticality: "high" },
    },
  },
  {
    name: "data-workload",
    covers:
      "subject mode aso-workload (per-team ASO ServiceAccount), staging + prod, many roles incl. armId scopes, explicit quota with default limits",
    platform: platformWithSubjectMode("aso-workload"),
    team: {
      name: "data-platform",
      description: "Data platform: ingestion and reporting",
      owners: [OWNERS.data],
      environments: ["staging", "prod"],
      quota: { cpu: "8", memory: "64Gi", pods: 120 },
      roleAssignments: [
        { role: "rg-contributor" },
        { role: "servicebus-data-owner" },
        { role: "postgres-reader" },
        { role: "rg-keyvault-secrets" },
      ],
      labels: { "data-classification": "confidential" },
    },
  },
  {
    name: "checkout-both",
    covers:
      "subject mode both, custom ASO namespace / Flux source / controller ServiceAccount / layout / platform-vars ConfigMap, all environments, explicit limits with default quota, YAML-ambiguous label values",
    platform: platformWithSubjectMode("both", {
      asoNamespace: "aso-resources",
      platformVarsConfigMap: "cluster-vars",
      fluxSource: { name: "platform-gitops", namespace: "flux-system" },
      controller: { namespace: "platform-controllers", serviceAccount: "berth" },
      layout: { teamsDir: "tenants", clustersDir: "fleet/clusters" },
    }),
    team: {
      name: "checkout",
      description: "yes",
      owners: [OWNERS.checkout],
      environments: ["dev", "staging", "prod"],
      containerLimits: { defaultRequest: { cpu: "50m", memory: "64Mi" }, default: { cpu: "200m", memory: "256Mi" } },
      roleAssignments: [{ role: "servicebus-data-owner" }, { role: "rg-contributor" }],
      labels: { "on-call": "on", legacy: "no", tier: "1e3", version: "0777", hex: "0x1F", oct: "0o17" },
    },
  },
  {
    name: "adopted",
    covers:
      "a team adopted from hand-written manifests that keeps its Azure resource group and identity names on two of its clusters",
    platform: PLATFORM,
    team: {
      name: "ledger",
      description: "Ledger (adopted)",
      owners: [OWNERS.payments],
      environments: ["dev", "prod"],
      roleAssignments: [{ role: "rg-contributor" }],
      azureNames: {
        resourceGroups: { "aks-dev-weu": "rg-ledger-dev-weu", "aks-prod-weu": "rg-ledger-prod-weu" },
        identities: { "aks-dev-weu": "id-ledger-dev" },
      },
    },
  },
];

export function example(name: string): Example {
  const found = EXAMPLES.find((e) => e.name === name);
  if (!found) throw new Error(`no example ${name}`);
  return found;
}

/** A valid team input with overrides; the base lands on dev only. */
export function teamInput(overrides: Partial<TeamInput> & Record<string, unknown> = {}): TeamInput {
  return {
    name: "orders",
    description: "Orders",
    owners: [OWNERS.payments],
    environments: ["dev"],
    ...overrides,
  } as TeamInput;
}

// ---------------------------------------------------------------------------------------------------
// In-memory RepoTree

/** Every file below `dir` (a folder of this repository), as a repo tree rooted there. */
export function treeFromFolder(dir: string, revision = "hand-written"): MemoryRepoTree {
  return new MemoryRepoTree(filesOf(dir), revision);
}

/** A Map-backed RepoTree. `list(dir)` is recursive and sorted, like the git adapter's. */
export class MemoryRepoTree implements RepoTree {
  private readonly files: Map<string, string>;

  constructor(
    files: Iterable<readonly [string, string]> | Record<string, string> = [],
    readonly revision: string | undefined = undefined,
  ) {
    const entries =
      Symbol.iterator in files ? [...(files as Iterable<readonly [string, string]>)] : Object.entries(files);
    this.files = new Map(entries.map(([p, c]) => [MemoryRepoTree.normalize(p), c] as const));
  }

  private static normalize(path: string): string {
    if (path.startsWith("/") || path.split("/").some((s) => s === "" || s === "." || s === "..")) {
      throw new Error(`not a repo-relative POSIX path: ${JSON.stringify(path)}`);
    }
    return path;
  }

  async read(path: string): Promise<string | undefined> {
    return this.files.get(path);
  }

  async list(dir: string): Promise<string[]> {
    const trimmed = dir.replace(/\/+$/, "");
    const prefix = trimmed === "" || trimmed === "." ? "" : `${trimmed}/`;
    return [...this.files.keys()].filter((p) => p.startsWith(prefix)).sort();
  }

  async hasContent(path: string, content: string): Promise<boolean> {
    return this.files.get(path) === content;
  }

  /** A tree in memory has no history: no commit of it holds any trailer. */
  async findCommit(): Promise<CommitInfo | undefined> {
    return undefined;
  }

  /** Every file, sorted by path. */
  paths(): string[] {
    return [...this.files.keys()].sort();
  }

  get(path: string): string | undefined {
    return this.files.get(path);
  }

  get size(): number {
    return this.files.size;
  }

  /** A new tree with the change applied (null deletes); this tree is left as it is. */
  apply(change: RepoChange | ReadonlyMap<string, string | null>, revision?: string): MemoryRepoTree {
    const files =
      "files" in change && change.files instanceof Map ? change.files : (change as ReadonlyMap<string, string | null>);
    const next = new Map(this.files);
    for (const [path, content] of files) {
      if (content === null) {
        if (!next.delete(path)) throw new Error(`change deletes ${path}, which does not exist`);
      } else next.set(MemoryRepoTree.normalize(path), content);
    }
    return new MemoryRepoTree(next, revision ?? this.revision);
  }

  toRecord(): Record<string, string> {
    return Object.fromEntries(this.paths().map((p) => [p, this.files.get(p)!]));
  }
}

/** The tree after onboarding each of the given examples' teams, in order, on one platform. */
/**
 * A one-team rollout plan, as the rollout API makes it (Fleet.plan): the team re-rendered on `version`
 * (default: its own). Throws the render failure, if any.
 */
export async function rerender(
  onboarding: Onboarding,
  tree: RepoTree,
  name: string,
  version?: string,
): Promise<{ from: string | undefined; to: string | undefined; files: Map<string, string | null> }> {
  const plan = await new Fleet(onboarding).plan(tree, [name], version);
  if (plan.failed.length) throw new Error(plan.failed[0]!.error);
  const moved = plan.changed[0];
  return { from: moved?.from, to: moved?.to, files: plan.files };
}

export async function treeWithTeams(
  onboarding: Onboarding,
  teams: readonly TeamInput[],
  start = new MemoryRepoTree(),
): Promise<MemoryRepoTree> {
  let tree = start;
  for (const team of teams) tree = tree.apply((await onboarding.planCreate(tree, team)).change);
  return tree;
}

/** Every rendered file of an example on `version`: exactly what planCreate writes on an empty tree. */
export async function renderExample(ex: Example, version = "v1"): Promise<Map<string, string>> {
  const { change } = await new Onboarding(ex.platform, loadCatalog(version)).planCreate(new MemoryRepoTree(), ex.team);
  const files = new Map<string, string>();
  for (const [path, content] of change.files) {
    if (content === null) throw new Error(`planCreate on an empty tree deletes ${path}`);
    files.set(path, content);
  }
  return files;
}
