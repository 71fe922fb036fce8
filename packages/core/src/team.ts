import { z } from "zod";
import { DNS_LABEL, LOWERCASE_GUID } from "./patterns.js";

/**
 * The team model: one zod source for the TypeScript types, request validation and the OpenAPI schema.
 *
 * Every free-text field is restricted to a character set that cannot leave a YAML scalar or start a Flux
 * substitution: no newline or other control character, no `$`, and nothing that is not printable.
 */

/** Longest team name: every name derived from it must still fit its own limit (see naming.ts). */
export const TEAM_NAME_MAX = 40;

/**
 * Printable text without `$` (Flux substitution), backslash, backtick or angle brackets. Lone surrogates
 * and U+FFFE/U+FFFF are refused too: YAML does not allow them in a stream, and Go's yaml rejects the file.
 */
const SAFE_TEXT = /^[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\uFFFE\uFFFF$\\`<>]*$/u;
/** A role catalog id: also a Kubernetes label value and part of object names, so it ends alphanumeric. */
export const ROLE_ID = /^[a-z]([a-z0-9-]{0,28}[a-z0-9])?$/;
/** Kubernetes resource.Quantity syntax (decimal SI, binary SI, or decimal exponent). */
const QUANTITY = /^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|e[0-9]+)?$/;
const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_PREFIX = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

/** Names no team may take: Kubernetes', Flux's, ASO's and the platform's own namespaces. */
export const RESERVED_TEAM_NAMES: readonly string[] = [
  "default",
  "flux-system",
  "flux-config",
  "azureserviceoperator-system",
  "berth",
  "berth-system",
  "cert-manager",
  "gatekeeper-system",
  "calico-system",
  "tigera-operator",
  "aks-command",
  "app-routing-system",
  "platform",
  "preview",
  "status",
];
const RESERVED_PREFIXES: readonly string[] = ["kube-", "azure-", "aks-", "flux-", "berth-", "openshift"];

/** Label keys Berth sets itself; a team may not set or override them. */
export const MANAGED_LABEL_PREFIXES: readonly string[] = [
  "berth.dev/",
  "toolkit.fluxcd.io/",
  "kustomize.toolkit.fluxcd.io/",
  "kubernetes.io/",
  "k8s.io/",
  "backstage.io/",
  "azure.workload.identity/",
  "app.kubernetes.io/managed-by",
];
/**
 * Label key prefixes whose subdomains belong to Kubernetes and Flux as well (e.g.
 * `pod-security.kubernetes.io/enforce-version`, which would weaken Pod Security admission). The
 * recommended `app.kubernetes.io/*` labels stay open to teams, except managed-by.
 */
const MANAGED_LABEL_DOMAINS: readonly string[] = ["kubernetes.io", "k8s.io", "fluxcd.io", "berth.dev"];
const TEAM_LABEL_DOMAINS: readonly string[] = ["app.kubernetes.io"];

function isManagedLabelKey(key: string): boolean {
  if (MANAGED_LABEL_PREFIXES.some((p) => key === p || key.startsWith(p))) return true;
  const slash = key.indexOf("/");
  if (slash === -1) return false;
  const prefix = key.slice(0, slash);
  if (TEAM_LABEL_DOMAINS.includes(prefix)) return false;
  return MANAGED_LABEL_DOMAINS.some((d) => prefix === d || prefix.endsWith(`.${d}`));
}

export const teamNameSchema = z
  .string()
  .min(2, "must be at least 2 characters")
  .max(TEAM_NAME_MAX, `must be at most ${TEAM_NAME_MAX} characters so every derived Azure and Kubernetes name fits`)
  .regex(DNS_LABEL, "must be a DNS-1123 label: lowercase letters, digits and '-', starting with a letter")
  .refine((name) => !name.includes("--"), "must not contain '--'")
  .refine(
    (name) => !RESERVED_TEAM_NAMES.includes(name) && !RESERVED_PREFIXES.some((p) => name.startsWith(p)),
    "is reserved for the platform",
  );

export const safeTextSchema = (max: number) =>
  z
    .string()
    .max(max, `must be at most ${max} characters`)
    .regex(SAFE_TEXT, "must be printable text without newlines, '$', '\\', '`', '<' or '>'");

export const quantitySchema = z.string().max(32).regex(QUANTITY, "must be a Kubernetes quantity such as 500m, 2, 4Gi");

const labelKeySchema = z
  .string()
  .max(253)
  .refine((key) => {
    const slash = key.indexOf("/");
    if (slash === -1) return LABEL_NAME.test(key);
    const prefix = key.slice(0, slash);
    const name = key.slice(slash + 1);
    return prefix.length <= 253 && LABEL_PREFIX.test(prefix) && LABEL_NAME.test(name);
  }, "must be a valid Kubernetes label key")
  .refine((key) => !isManagedLabelKey(key), "is managed by the platform and cannot be set by a team");

export const labelsSchema = z
  .record(labelKeySchema, z.string().regex(LABEL_VALUE, "must be a valid Kubernetes label value (max 63)").max(63))
  .refine((labels) => Object.keys(labels).length <= 20, "at most 20 labels");

export const quotaSchema = z
  .object({
    cpu: quantitySchema.describe("requests.cpu and limits.cpu of the namespace"),
    memory: quantitySchema.describe("requests.memory and limits.memory of the namespace"),
    pods: z.number().int().min(1).max(10_000),
  })
  .strict();

export const containerLimitsSchema = z
  .object({
    defaultRequest: z.object({ cpu: quantitySchema, memory: quantitySchema }).strict(),
    default: z.object({ cpu: quantitySchema, memory: quantitySchema }).strict(),
  })
  .strict();

/** A template version: the name of a folder under templates/ (`v1`, `v3`, ...). */
export const TEMPLATE_VERSION = /^v[1-9][0-9]{0,3}$/;
export const templateVersionSchema = z
  .string()
  .regex(TEMPLATE_VERSION, "must name a template version such as v1 or v3");

export const roleAssignmentRequestSchema = z
  .object({
    role: z
      .string()
      .regex(ROLE_ID, "must name an entry of the platform's role catalog")
      .describe("The id of a role catalog entry in platform config"),
  })
  .strict();

/** An Azure resource group name (1-90: letters, digits, '-', '_', '.', parentheses; not ending in '.'). */
const AZURE_RESOURCE_GROUP = /^[-\w.()]{0,89}[-\w()]$/;
/** A user-assigned identity name (3-128: letters, digits, '-', '_', starting alphanumeric). */
const AZURE_IDENTITY = /^[A-Za-z0-9][-\w]{2,127}$/;
const clusterKey = z.string().regex(DNS_LABEL).max(40);

/**
 * Azure names a team keeps from before Berth managed it (adoption), per cluster. Renaming a resource group
 * or an identity in Azure means a new one (an empty group, a new client and principal id), so an adopted
 * team keeps its names; Berth's own (`rg-<team>--<cluster>`, `id-<team>--<cluster>`) apply elsewhere.
 */
export const azureNamesSchema = z
  .object({
    resourceGroups: z
      .record(clusterKey, z.string().regex(AZURE_RESOURCE_GROUP, "must be an Azure resource group name"))
      .optional()
      .describe("Resource group name per cluster"),
    identities: z
      .record(clusterKey, z.string().regex(AZURE_IDENTITY, "must be an Azure user-assigned identity name"))
      .optional()
      .describe("User-assigned identity name per cluster"),
  })
  .strict();
export type AzureNames = z.infer<typeof azureNamesSchema>;

/**
 * One of the team's own manifests that Berth does not render (a NetworkPolicy, a second ServiceAccount, a
 * HelmRepository...), carried by adoption or given through the API, and applied by the team's Flux
 * Kustomization with Berth's own (docs/decisions/0016-extra-manifests.md). The object is checked against
 * the platform in validate.ts (namespace, kind, variables); here only its shape and size.
 */
export const extraManifestSchema = z
  .object({
    cluster: z
      .string()
      .regex(DNS_LABEL)
      .max(40)
      .optional()
      .describe("The cluster it is applied on; every cluster of the team when absent"),
    object: z
      .record(z.string(), z.unknown())
      .refine((o) => JSON.stringify(o).length <= 64 * 1024, "must be at most 64 KiB as JSON")
      .meta({ "x-kubernetes-preserve-unknown-fields": true })
      .describe("The Kubernetes object, as applied (apiVersion, kind, metadata.name and metadata.namespace required)"),
  })
  .strict();
export type ExtraManifest = z.infer<typeof extraManifestSchema>;

/**
 * What is read of an object from outside (an extra manifest, a rendered document) to name it: anything may
 * be missing or not a string, so every leaf is unknown.
 */
export interface LooseKubeObject {
  apiVersion?: unknown;
  kind?: unknown;
  metadata?: { name?: unknown; namespace?: unknown };
  spec?: { owner?: { name?: unknown } };
}

/** The fields of a team, as stored in the Flux repo and accepted by the API. */
export const teamSpecSchema = z
  .object({
    description: safeTextSchema(256).default(""),
    owners: z
      .array(z.string().regex(LOWERCASE_GUID, "must be an Entra ID group object id (lowercase UUID)"))
      .min(1, "at least one owner group is required")
      .max(20)
      .refine((ids) => new Set(ids).size === ids.length, "must not repeat a group"),
    environments: z
      .array(z.string().regex(DNS_LABEL).max(30))
      .min(1, "at least one environment is required")
      .max(10)
      .refine((envs) => new Set(envs).size === envs.length, "must not repeat an environment"),
    quota: quotaSchema.optional(),
    containerLimits: containerLimitsSchema.optional(),
    roleAssignments: z
      .array(roleAssignmentRequestSchema)
      .max(20)
      .default([])
      .refine((ras) => new Set(ras.map((r) => r.role)).size === ras.length, "must not repeat a role"),
    labels: labelsSchema.default({}),
    azureNames: azureNamesSchema
      .optional()
      .describe(
        "Azure names kept from before Berth (set by adoption, POST /v1/teams/{name}/adopt); Berth's own names otherwise",
      ),
    extraManifests: z
      .array(extraManifestSchema)
      .max(100)
      .optional()
      .describe(
        "The team's own manifests Berth does not render, applied with the team's (adoption carries them; docs/adoption.md)",
      ),
    templateVersion: templateVersionSchema
      .optional()
      .describe(
        "The template version the team is rendered with. New teams: the platform default unless given; an update keeps the team's version (only a rollout changes it).",
      ),
  })
  .strict();

export const teamSchema = teamSpecSchema.extend({ name: teamNameSchema }).strict();

export type TeamSpec = z.infer<typeof teamSpecSchema>;
export type Team = z.infer<typeof teamSchema>;
/** A team whose template version is settled: read from the repo (a file without one is v1) or prepared to write. */
export type VersionedTeam = Team & { templateVersion: string };
export type TeamInput = z.input<typeof teamSchema>;
