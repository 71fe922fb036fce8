import { z } from "zod";
import { DNS_LABEL, GUID, LOWERCASE_GUID } from "./patterns.js";
import { containerLimitsSchema, quotaSchema, ROLE_ID, templateVersionSchema } from "./team.js";

/**
 * The platform's own settings that shape every team's manifests. Loaded and validated by @berth/config
 * (env + one YAML file); the domain only ever sees this parsed, typed form.
 */

/** Keys of the platform-vars ConfigMap, which Flux substitutes as `${KEY}`. */
export const PLATFORM_VAR_KEY = /^[A-Z][A-Z0-9_]*$/;

/** A folder of the Flux repo: `/`-separated segments, no empty segment, no `.` or `..`. */
const REPO_DIR = /^[a-z0-9][a-z0-9_-]*(\/[a-z0-9][a-z0-9_-]*)*$/;

/** Longest cluster name; with TEAM_NAME_MAX it bounds every derived name (see naming.ts). */
export const CLUSTER_NAME_MAX = 40;

/**
 * platform-vars keys the controller always writes for every cluster. A template may reference these
 * plus the keys the platform declares in `platformVars`; anything else could be undefined under Flux's
 * strict substitution and is a render error.
 */
export const CORE_PLATFORM_VARS = {
  TENANT_ID: "Entra ID tenant of the cluster's subscription",
  SUBSCRIPTION_ID: "Azure subscription the cluster (and each team's resources) live in",
  CLUSTER_NAME: "Name of the cluster, as in platform config",
  ENVIRONMENT: "Environment the cluster belongs to, as in platform config",
  CLUSTER_OIDC_ISSUER_URL: "The AKS cluster's OIDC issuer URL (oidcIssuerProfile.issuerURL)",
  CLUSTER_OIDC: "Alias of CLUSTER_OIDC_ISSUER_URL kept for older manifests",
  AZURE_LOCATION: "Azure region for team resource groups and identities",
} as const;
export type CorePlatformVar = keyof typeof CORE_PLATFORM_VARS;

/**
 * An Azure resource name as it appears in an ARM path segment (resource group, managed cluster, identity):
 * letters, digits, '-', '_', '.', '(' and ')', not ending in '.'; nothing that could change the URL.
 */
const AZURE_NAME = /^[-\w.()]{0,89}[-\w()]$/;
const azureName = (what: string) =>
  z
    .string()
    .regex(AZURE_NAME, `must be an Azure ${what} name (letters, digits, -, _, ., parentheses; 1-90 characters)`);

/**
 * Where the cluster lives in Azure, for live discovery (the controller's BERTH_PROVIDER=azure): the AKS
 * managed cluster (OIDC issuer, location; its subscription's tenant) and the user-assigned identity ASO
 * uses for the platform's own resources (its client id goes into the platform aso-credential).
 */
export const clusterAzureSchema = z
  .object({
    subscriptionId: z.string().regex(GUID, "must be a GUID"),
    /** Resource group of the AKS managed cluster. */
    resourceGroup: azureName("resource group"),
    managedClusterName: azureName("managed cluster"),
    /** Region for team resources; default: the managed cluster's location. */
    location: z
      .string()
      .regex(/^[a-z][a-z0-9]{1,39}$/, "must be an Azure region name, e.g. westeurope")
      .optional(),
    platformIdentity: z
      .object({
        resourceGroup: azureName("resource group"),
        name: azureName("identity"),
      })
      .strict(),
  })
  .strict();
export type ClusterAzure = z.infer<typeof clusterAzureSchema>;

export const clusterSchema = z
  .object({
    name: z.string().regex(DNS_LABEL).max(CLUSTER_NAME_MAX),
    /**
     * Static values: everything for the controller's static provider; with live discovery only what Azure
     * cannot tell (the keys declared in `platformVars`, e.g. SERVICEBUS_NAMESPACE).
     */
    vars: z.record(z.string().regex(PLATFORM_VAR_KEY), z.string()).default({}),
    /** Azure coordinates for live discovery; required when the controller runs with BERTH_PROVIDER=azure. */
    azure: clusterAzureSchema.optional(),
  })
  .strict();

export const environmentSchema = z
  .object({
    name: z.string().regex(DNS_LABEL).max(30),
    clusters: z.array(clusterSchema).min(1),
  })
  .strict();

/** Where a catalog role is granted. `${KEY}` references must be platform-vars keys. */
export const roleScopeSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("teamResourceGroup") }).strict(),
  z
    .object({
      kind: z.literal("armId"),
      armId: z.string().regex(/^\/subscriptions\/[^\s]+$/, "must be an ARM resource id starting with /subscriptions/"),
    })
    .strict(),
]);

export const roleCatalogEntrySchema = z
  .object({
    id: z
      .string()
      .regex(ROLE_ID, "must be 1-30 lowercase letters, digits and '-', starting with a letter and ending alphanumeric"),
    description: z.string().max(200).default(""),
    /** Built-in or custom role definition GUID (the last segment of its ARM id). */
    roleDefinitionId: z.string().regex(LOWERCASE_GUID),
    /** Role name as Azure shows it, used by live discovery to check the id. */
    roleName: z.string().max(100).optional(),
    scope: roleScopeSchema,
  })
  .strict();

export const federatedSubjectModeSchema = z.enum(["aso-controller", "aso-workload", "both"]);

/** How many hash slices a fleet may have: each a whole number of the 256 shards (ADR 0034). */
export const HASH_SLICE_COUNTS = [16, 32, 64, 128, 256] as const;

export const platformSchema = z
  .object({
    /** Namespace holding the ASO resources, the team Flux Kustomizations and platform-vars. */
    asoNamespace: z.string().regex(DNS_LABEL).max(63).default("flux-config"),
    platformVarsConfigMap: z.string().regex(DNS_LABEL).default("platform-vars"),
    /**
     * What the team Kustomizations pull from (ADR 0019). `GitRepository`: the fleet's GitRepository (name,
     * namespace), whose revision changes at every commit, so every commit reconciles every team. `ExternalArtifact`:
     * each team's own artifact (ExternalArtifact `<artifactPrefix><team>` beside its Kustomization, cut by the
     * cluster's ArtifactGenerators in flux/), which changes only when the team's files do. `artifactPrefix` must be
     * the name the cluster's generators give: `team-` for ADR 0019's single generator, `team-files-` for ADR 0022's
     * slices (a new name, so the old generator's finalizer deletes only artifacts nothing reads).
     */
    fluxSource: z
      .object({
        kind: z.enum(["GitRepository", "ExternalArtifact"]).default("GitRepository"),
        name: z.string().regex(DNS_LABEL).default("flux-system"),
        namespace: z.string().regex(DNS_LABEL).default("flux-system"),
        artifactPrefix: z
          .string()
          .regex(/^[a-z]([-a-z0-9]*-)?$/, "must be a lowercase name prefix ending in '-', such as team-files-")
          .max(40)
          .default("team-"),
      })
      .strict()
      .default({ kind: "GitRepository", name: "flux-system", namespace: "flux-system", artifactPrefix: "team-" }),
    /**
     * Berth's controller (docs/controller-contract.md). Every team namespace gets a RoleBinding granting this
     * ServiceAccount the ClusterRole `berth-controller-team-writer`: its only write access in team namespaces.
     */
    controller: z
      .object({
        namespace: z.string().regex(DNS_LABEL).max(63).default("berth-system"),
        serviceAccount: z.string().regex(DNS_LABEL).max(253).default("berth-controller"),
      })
      .strict()
      .default({ namespace: "berth-system", serviceAccount: "berth-controller" }),
    /**
     * The ServiceAccount in asoNamespace that team Kustomizations impersonate from template v4 on (Flux's
     * multi-tenancy lockdown, ADR 0023). flux/clusters/<cluster>/berth-teams.yaml installs it with a ClusterRole
     * limited to the kinds team trees hold and a ValidatingAdmissionPolicy that keeps each team inside its own names.
     * The policy names this account and asoNamespace in its CEL: rename either there too, or the account keeps its
     * RBAC without the policy (tests/install checks that the shipped pair agrees).
     */
    fluxServiceAccount: z.string().regex(DNS_LABEL).max(253).default("berth-team-applier"),
    /** The template version new teams are onboarded with (templates/<version>/). */
    templateVersion: templateVersionSchema.default("v1"),
    layout: z
      .object({
        teamsDir: z.string().regex(REPO_DIR, "must be a relative folder such as teams or fleet/teams").default("teams"),
        clustersDir: z
          .string()
          .regex(REPO_DIR, "must be a relative folder such as clusters or fleet/clusters")
          .default("clusters"),
        /** One small file per rollout (its state); outside clustersDir, so Flux never applies it. */
        rolloutsDir: z
          .string()
          .regex(REPO_DIR, "must be a relative folder such as rollouts or fleet/rollouts")
          .default("rollouts"),
        /**
         * What applies each cluster's team Kustomizations, so what Berth writes beside them (ADR 0032).
         * `cluster-index`: one Kustomization applies `<clustersDir>/<cluster>/teams` through the indexes Berth keeps
         * there (ADRs 0013, 0019). `slices`: flux/'s slice Kustomizations apply the team files directly (ADR 0022), so
         * Berth writes no index, a write touches only its team's paths, and a same-version rollout deletes the indexes
         * an earlier layout left.
         */
        appliedBy: z.enum(["cluster-index", "slices"]).default("cluster-index"),
        /**
         * How the slices cut the fleet (appliedBy slices only). `first-letter`: 26 slices by the team name's first
         * letter, team folders at `<teamsDir>/<team>/` (ADR 0022). `hash`: `count` slices by the first hex digits of
         * the SHA-256 of the name, team folders at `<teamsDir>/<hh>/<team>/` (ADR 0034), even whatever the names;
         * `count` is read by `berth cluster add` and `berth cluster slices`, which moves an installed cluster to it.
         * `fetch` (hash only): `whole`, one GitRepository fetches the repository and source-watcher cuts it into the
         * slices at each commit; `per-slice`, each slice fetches only its shards' folders (a sparse checkout) from a
         * branch of its own, which the API moves to the main branch only when a commit changes the slice, and the
         * Receiver wakes only the slices a push touched (ADR 0036).
         */
        slices: z
          .object({
            by: z.enum(["first-letter", "hash"]).default("first-letter"),
            count: z.literal(HASH_SLICE_COUNTS).default(16),
            fetch: z.enum(["whole", "per-slice"]).default("whole"),
          })
          .strict()
          .default({ by: "first-letter", count: 16, fetch: "whole" }),
      })
      .strict()
      // Disjoint folders: otherwise a team's folder could hold a cluster's folder (or the reverse).
      .refine(({ teamsDir, clustersDir, rolloutsDir }) => {
        const dirs = [teamsDir, clustersDir, rolloutsDir];
        return dirs.every((a, i) => dirs.every((b, j) => i === j || (a !== b && !`${a}/`.startsWith(`${b}/`))));
      }, "teamsDir, clustersDir and rolloutsDir must not be the same folder or contain each other")
      .default({
        teamsDir: "teams",
        clustersDir: "clusters",
        rolloutsDir: "rollouts",
        appliedBy: "cluster-index",
        slices: { by: "first-letter", count: 16, fetch: "whole" },
      }),
    federatedCredential: z
      .object({
        subjectMode: federatedSubjectModeSchema.default("aso-controller"),
        asoNamespace: z.string().regex(DNS_LABEL).default("azureserviceoperator-system"),
        asoServiceAccount: z.string().regex(DNS_LABEL).default("azureserviceoperator-default"),
        audience: z.string().default("api://AzureADTokenExchange"),
      })
      .strict()
      .default({
        subjectMode: "aso-controller",
        asoNamespace: "azureserviceoperator-system",
        asoServiceAccount: "azureserviceoperator-default",
        audience: "api://AzureADTokenExchange",
      }),
    environments: z
      .array(environmentSchema)
      .min(1)
      .refine((envs) => new Set(envs.map((e) => e.name)).size === envs.length, "environment names must be unique")
      .refine((envs) => {
        const names = envs.flatMap((e) => e.clusters.map((c) => c.name));
        return new Set(names).size === names.length;
      }, "cluster names must be unique across environments"),
    /** Extra platform-vars keys (beyond CORE_PLATFORM_VARS) that templates and the role catalog may use. */
    platformVars: z.record(z.string().regex(PLATFORM_VAR_KEY), z.string().max(200)).default({}),
    roleCatalog: z
      .array(roleCatalogEntrySchema)
      .default([])
      .refine((rs) => new Set(rs.map((r) => r.id)).size === rs.length, "role catalog ids must be unique"),
    defaults: z
      .object({
        quota: quotaSchema.default({ cpu: "4", memory: "8Gi", pods: 50 }),
        containerLimits: containerLimitsSchema.default({
          defaultRequest: { cpu: "100m", memory: "128Mi" },
          default: { cpu: "500m", memory: "512Mi" },
        }),
      })
      .strict()
      .default({
        quota: { cpu: "4", memory: "8Gi", pods: 50 },
        containerLimits: {
          defaultRequest: { cpu: "100m", memory: "128Mi" },
          default: { cpu: "500m", memory: "512Mi" },
        },
      }),
    /** Namespaces of the platform a team may not take, beyond the built-in reserved list. */
    reservedNames: z.array(z.string()).default([]),
  })
  .strict()
  .superRefine((platform, ctx) => {
    // The slices cut each team's own artifact: a team Kustomization reading the fleet's GitRepository would apply
    // nothing the slices cut, and without indexes nothing would apply it.
    if (platform.layout.appliedBy === "slices" && platform.fluxSource.kind !== "ExternalArtifact") {
      ctx.addIssue({
        code: "custom",
        path: ["layout", "appliedBy"],
        message: "slices need fluxSource.kind ExternalArtifact (each team reads the artifact its slice cuts)",
      });
    }
    // Team folders by hash are read by hash slices only: cluster indexes would name folders nothing else moved.
    if (platform.layout.slices.by === "hash" && platform.layout.appliedBy !== "slices") {
      ctx.addIssue({
        code: "custom",
        path: ["layout", "slices", "by"],
        message: "hash slices need layout.appliedBy slices (the slices apply the team files; ADR 0034)",
      });
    }
    // A sparse checkout selects folders, and only hash slices are whole folders (a shard's): first-letter slices glob.
    if (platform.layout.slices.fetch === "per-slice" && platform.layout.slices.by !== "hash") {
      ctx.addIssue({
        code: "custom",
        path: ["layout", "slices", "fetch"],
        message: "per-slice fetch needs layout.slices.by hash (a slice fetches its shards' folders; ADR 0036)",
      });
    }
    // A role scope may only use platform-vars keys that are always defined, or Flux's strict substitution
    // fails the team's whole build: refuse such a config at start rather than at the first render.
    const known = new Set([...Object.keys(CORE_PLATFORM_VARS), ...Object.keys(platform.platformVars)]);
    platform.roleCatalog.forEach((entry, i) => {
      if (entry.scope.kind !== "armId") return;
      for (const [placeholder] of entry.scope.armId.matchAll(/\$\{[^}:]*/g)) {
        const name = placeholder.slice("${".length);
        if (!known.has(name)) {
          ctx.addIssue({
            code: "custom",
            path: ["roleCatalog", i, "scope", "armId"],
            message: `\${${name}} is not a platform-vars key (declare it in platformVars)`,
          });
        }
      }
    });
  });

export type Platform = z.infer<typeof platformSchema>;
export type PlatformInput = z.input<typeof platformSchema>;
export type Cluster = z.infer<typeof clusterSchema> & { environment: string };
export type RoleCatalogEntry = z.infer<typeof roleCatalogEntrySchema>;

/** Every cluster of the platform, flattened, with its environment. */
export function allClusters(platform: Platform): Cluster[] {
  return platform.environments.flatMap((env) => env.clusters.map((c) => ({ ...c, environment: env.name })));
}
