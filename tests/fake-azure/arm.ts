/**
 * Stateful, in-memory fake of the slice of Azure Resource Manager that Berth uses.
 *
 * Shapes follow the recordings in shared/arm-recordings (see replay.test.ts) and the public REST
 * specs. Resource ids are matched case-insensitively; names keep the case they were created with.
 */
import { createHash, randomBytes } from "node:crypto";
import type { FakeEntra, FederatedCredential, IdentityPrincipal } from "./entra.js";
import { armTimestamp, dotnetTicks, guid, isGuid, sleep, type ResponseSpec } from "./util.js";

// ---------------------------------------------------------------------------------------------
// Options and records

export interface LroTiming {
  /** Polls answered 202 before the operation reports done (the N+1th poll gets 200). Default 1. */
  polls?: number;
  /** Or: done this many ms after the DELETE (also completes without polling). */
  ms?: number;
  /** Retry-After (seconds) on the 202s. Real ARM sends 15 for resource group deletion; default 1 to keep tests fast. */
  retryAfterSeconds?: number;
}

export interface PageSizes {
  resourceGroups: number;
  userAssignedIdentities: number;
  federatedIdentityCredentials: number;
  managedClusters: number;
  roleDefinitions: number;
  roleAssignments: number;
  subscriptions: number;
}

export interface RoleDefinitionSeed {
  id: string;
  roleName: string;
  description?: string;
  type?: "BuiltInRole" | "CustomRole";
  actions?: string[];
  notActions?: string[];
  dataActions?: string[];
  notDataActions?: string[];
  assignableScopes?: string[];
}

export interface ArmOptions {
  subscriptions: Array<{ subscriptionId: string; tenantId: string; displayName?: string }>;
  defaultTenantId: string;
  pageSize: PageSizes;
  lro: LroTiming;
  /** How long a federated identity credential write holds the identity's write lock. */
  ficWriteLatencyMs: number;
  /**
   * How long a new identity's service principal stays unknown to role-assignment writes (Entra ID's replication
   * delay: ARM answers PrincipalNotFound meanwhile). Default 0.
   */
  principalReplicationMs: number;
  maxFederatedCredentialsPerIdentity: number;
  roleDefinitions: RoleDefinitionSeed[];
  /** Reject api-versions the real service does not know (default true). */
  strictApiVersions: boolean;
  /** Opaque `c=` value for signed operation URLs (base64url). */
  operationCertificate: string;
}

interface Subscription {
  subscriptionId: string;
  tenantId: string;
  displayName: string;
}

interface ResourceGroup {
  subscriptionId: string;
  name: string;
  location: string;
  tags?: Record<string, string>;
  managedBy?: string;
  deleting?: Operation;
}

interface Operation {
  id: string;
  subscriptionId: string;
  rgKey: string;
  polls: number;
  startedAt: number;
  done: boolean;
  timer?: NodeJS.Timeout;
}

export interface IdentityRecord {
  subscriptionId: string;
  resourceGroup: string;
  name: string;
  location: string;
  tags: Record<string, string>;
  clientId: string;
  principalId: string;
  tenantId: string;
  isolationScope?: string;
  fics: Map<string, FicRecord>;
  ficWritesInFlight: number;
  /** When Azure created it (ms): its principal replicates from then on. */
  createdAt: number;
}

export interface FicRecord {
  name: string;
  issuer: string;
  subject: string;
  audiences: string[];
}

export interface ClusterSeed {
  subscriptionId?: string;
  resourceGroup: string;
  name: string;
  location?: string;
  /** Default: enabled with a generated `https://{location}.oic.prod-aks.azure.com/{tenant}/{guid}/`. */
  oidcIssuerEnabled?: boolean;
  issuerURL?: string;
  workloadIdentityEnabled?: boolean;
  kubernetesVersion?: string;
  tags?: Record<string, string>;
}

interface ClusterRecord {
  subscriptionId: string;
  resourceGroup: string;
  name: string;
  location: string;
  tags?: Record<string, string>;
  kubernetesVersion: string;
  oidcIssuerEnabled: boolean;
  issuerURL?: string;
  workloadIdentityEnabled: boolean;
  principalId: string;
  dnsPrefix: string;
  fqdnSuffix: string;
}

interface RoleAssignmentRecord {
  scope: string;
  name: string;
  roleDefinitionId: string;
  roleDefinitionGuid: string;
  principalId: string;
  principalType: string;
  description: string | null;
  condition: string | null;
  conditionVersion: string | null;
  createdOn: string;
  updatedOn: string;
  createdBy: string | null;
  updatedBy: string | null;
}

export interface ArmRequest {
  method: string;
  /** Decoded path segments (original case). */
  segments: string[];
  query: URLSearchParams;
  body: Buffer;
  /** `https://host[:port]` the client used; nextLink / Location URLs are built on it. */
  base: string;
  claims: Record<string, unknown> & { tid: string; oid: string };
  route: ArmRoute;
}

export interface ArmRoute {
  operation: string;
  family: ApiFamily;
  subscriptionId?: string;
}

type ApiFamily =
  | "resources"
  | "subscriptions"
  | "managedIdentity"
  | "federatedCredentials"
  | "containerService"
  | "roleDefinitions"
  | "roleAssignments"
  | "none";

// ---------------------------------------------------------------------------------------------
// Constants

const API_VERSIONS: Record<Exclude<ApiFamily, "containerService" | "none">, string[]> = {
  resources: [
    "2014-04-01",
    "2015-01-01",
    "2015-11-01",
    "2016-02-01",
    "2016-07-01",
    "2016-09-01",
    "2017-05-10",
    "2018-02-01",
    "2018-05-01",
    "2019-03-01",
    "2019-05-01",
    "2019-05-10",
    "2019-07-01",
    "2019-08-01",
    "2019-10-01",
    "2020-06-01",
    "2020-08-01",
    "2020-10-01",
    "2021-01-01",
    "2021-04-01",
    "2022-09-01",
    "2023-07-01",
    "2024-03-01",
    "2024-07-01",
    "2024-11-01",
    "2025-01-01",
    "2025-03-01",
    "2025-04-01",
  ],
  subscriptions: [
    "2014-04-01",
    "2015-01-01",
    "2016-06-01",
    "2018-06-01",
    "2019-06-01",
    "2019-11-01",
    "2020-01-01",
    "2021-01-01",
    "2022-01-01",
    "2022-09-01",
    "2022-12-01",
  ],
  managedIdentity: [
    "2015-08-31-preview",
    "2018-11-30",
    "2021-09-30-preview",
    "2022-01-31-preview",
    "2023-01-31",
    "2023-07-31-preview",
    "2024-11-30",
    "2025-01-31-preview",
    "2025-05-31-preview",
  ],
  federatedCredentials: [
    "2022-01-31-preview",
    "2023-01-31",
    "2023-07-31-preview",
    "2024-11-30",
    "2025-01-31-preview",
    "2025-05-31-preview",
  ],
  roleDefinitions: ["2015-07-01", "2018-01-01-preview", "2022-04-01", "2022-05-01-preview"],
  roleAssignments: [
    "2015-07-01",
    "2017-10-01-preview",
    "2018-01-01-preview",
    "2018-09-01-preview",
    "2020-03-01-preview",
    "2020-04-01-preview",
    "2020-08-01-preview",
    "2020-10-01-preview",
    "2022-04-01",
  ],
};

/** The resource provider namespaces the fake knows (Microsoft.Resources and Microsoft.Authorization cannot be unregistered). */
const RESOURCE_PROVIDERS: Array<{
  namespace: string;
  resourceTypes: string[];
  apiVersions: string[];
  registrationPolicy: "RegistrationRequired" | "RegistrationFree";
}> = [
  {
    namespace: "Microsoft.ManagedIdentity",
    resourceTypes: ["userAssignedIdentities", "userAssignedIdentities/federatedIdentityCredentials", "operations"],
    apiVersions: API_VERSIONS.managedIdentity.slice().reverse(),
    registrationPolicy: "RegistrationRequired",
  },
  {
    namespace: "Microsoft.ContainerService",
    resourceTypes: ["managedClusters", "operations"],
    apiVersions: ["2025-01-01", "2024-10-01", "2024-05-01"],
    registrationPolicy: "RegistrationRequired",
  },
  {
    namespace: "Microsoft.Resources",
    resourceTypes: ["resourceGroups", "subscriptions", "operations"],
    apiVersions: API_VERSIONS.resources.slice().reverse(),
    registrationPolicy: "RegistrationFree",
  },
  {
    namespace: "Microsoft.Authorization",
    resourceTypes: ["roleAssignments", "roleDefinitions", "operations"],
    apiVersions: API_VERSIONS.roleAssignments.slice().reverse(),
    registrationPolicy: "RegistrationFree",
  },
];

/** The RBAC action ARM checks for each write or delete the fake serves (Azure's resource provider operations). */
const ARM_ACTIONS: Record<string, string> = {
  ResourceGroups_CreateOrUpdate: "Microsoft.Resources/subscriptions/resourceGroups/write",
  ResourceGroups_Update: "Microsoft.Resources/subscriptions/resourceGroups/write",
  ResourceGroups_Delete: "Microsoft.Resources/subscriptions/resourceGroups/delete",
  UserAssignedIdentities_CreateOrUpdate: "Microsoft.ManagedIdentity/userAssignedIdentities/write",
  UserAssignedIdentities_Update: "Microsoft.ManagedIdentity/userAssignedIdentities/write",
  UserAssignedIdentities_Delete: "Microsoft.ManagedIdentity/userAssignedIdentities/delete",
  FederatedIdentityCredentials_CreateOrUpdate:
    "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials/write",
  FederatedIdentityCredentials_Delete:
    "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials/delete",
  RoleAssignments_Create: "Microsoft.Authorization/roleAssignments/write",
  RoleAssignments_Delete: "Microsoft.Authorization/roleAssignments/delete",
};

const FIC_NAME_RE = /^[a-zA-Z0-9][a-zA-Z0-9-_]{2,119}$/;
const IDENTITY_NAME_RE = /^[a-zA-Z0-9][a-zA-Z0-9-_]{2,127}$/;
const RG_NAME_RE = /^[-\w._()]{1,90}$/u;

const CONTRIBUTOR_NOT_ACTIONS = [
  "Microsoft.Authorization/*/Delete",
  "Microsoft.Authorization/*/Write",
  "Microsoft.Authorization/elevateAccess/Action",
  "Microsoft.Blueprint/blueprintAssignments/write",
  "Microsoft.Blueprint/blueprintAssignments/delete",
  "Microsoft.Compute/galleries/share/action",
  "Microsoft.Purview/consents/write",
  "Microsoft.Purview/consents/delete",
  "Microsoft.Resources/deploymentStacks/manageDenySetting/action",
  "Microsoft.Subscription/cancel/action",
  "Microsoft.Subscription/enable/action",
];

export const BUILT_IN_ROLES: RoleDefinitionSeed[] = [
  {
    id: "b24988ac-6180-42a0-ab88-20f7382dd24c",
    roleName: "Contributor",
    description:
      "Grants full access to manage all resources, but does not allow you to assign roles in Azure RBAC, manage assignments in Azure Blueprints, or share image galleries.",
    actions: ["*"],
    notActions: CONTRIBUTOR_NOT_ACTIONS,
  },
  {
    id: "acdd72a7-3d41-4ff1-9a1f-6bef14e3d45c",
    roleName: "Reader",
    description: "View all resources, but does not allow you to make any changes.",
    actions: ["*/read"],
  },
  {
    id: "8e3af657-a8ff-443c-a75c-2fe8c4bcb635",
    roleName: "Owner",
    description: "Grants full access to manage all resources, including the ability to assign roles in Azure RBAC.",
    actions: ["*"],
  },
  {
    id: "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9",
    roleName: "User Access Administrator",
    description: "Lets you manage user access to Azure resources.",
    actions: ["*/read", "Microsoft.Authorization/*", "Microsoft.Support/*"],
  },
  {
    id: "090c5cfd-751d-490a-894a-3ce6f1109419",
    roleName: "Azure Service Bus Data Owner",
    description: "Allows for full access to Azure Service Bus resources.",
    actions: ["Microsoft.ServiceBus/*"],
    dataActions: ["Microsoft.ServiceBus/*"],
  },
  {
    id: "69a216fc-b8fb-44d8-bc22-1f3c2cd27a39",
    roleName: "Azure Service Bus Data Sender",
    description: "Allows for send access to Azure Service Bus resources.",
    actions: [
      "Microsoft.ServiceBus/*/queues/read",
      "Microsoft.ServiceBus/*/topics/read",
      "Microsoft.ServiceBus/*/topics/subscriptions/read",
    ],
    dataActions: ["Microsoft.ServiceBus/*/send/action"],
  },
  {
    id: "4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0",
    roleName: "Azure Service Bus Data Receiver",
    description: "Allows for receive access to Azure Service Bus resources.",
    actions: [
      "Microsoft.ServiceBus/*/queues/read",
      "Microsoft.ServiceBus/*/topics/read",
      "Microsoft.ServiceBus/*/topics/subscriptions/read",
    ],
    dataActions: ["Microsoft.ServiceBus/*/receive/action"],
  },
  {
    id: "f1a07417-d97a-45cb-824c-7a7467783830",
    roleName: "Managed Identity Operator",
    description: "Read and Assign User Assigned Identity",
    actions: [
      "Microsoft.ManagedIdentity/userAssignedIdentities/*/read",
      "Microsoft.ManagedIdentity/userAssignedIdentities/*/assign/action",
      "Microsoft.Authorization/*/read",
      "Microsoft.Insights/alertRules/*",
      "Microsoft.Resources/subscriptions/resourceGroups/read",
      "Microsoft.Resources/deployments/*",
      "Microsoft.Support/*",
    ],
  },
  {
    id: "4abbcc35-e782-43d8-92c5-2d3f1bd2253f",
    roleName: "Azure Kubernetes Service Cluster User Role",
    description: "List cluster user credential action.",
    actions: [
      "Microsoft.ContainerService/managedClusters/listClusterUserCredential/action",
      "Microsoft.ContainerService/managedClusters/read",
    ],
  },
  {
    id: "4633458b-17de-408a-b874-0445c86b69e6",
    roleName: "Key Vault Secrets User",
    description:
      "Read secret contents. Only works for key vaults that use the 'Azure role-based access control' permission model.",
    dataActions: [
      "Microsoft.KeyVault/vaults/secrets/getSecret/action",
      "Microsoft.KeyVault/vaults/secrets/readMetadata/action",
    ],
  },
  {
    id: "ba92f5b4-2d11-453d-a403-e96b0029c9fe",
    roleName: "Storage Blob Data Contributor",
    description: "Allows for read, write and delete access to Azure Storage blob containers and data",
    actions: [
      "Microsoft.Storage/storageAccounts/blobServices/containers/delete",
      "Microsoft.Storage/storageAccounts/blobServices/containers/read",
      "Microsoft.Storage/storageAccounts/blobServices/containers/write",
      "Microsoft.Storage/storageAccounts/blobServices/generateUserDelegationKey/action",
    ],
    dataActions: [
      "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/delete",
      "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read",
      "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write",
      "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/move/action",
      "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/add/action",
    ],
  },
];

// ---------------------------------------------------------------------------------------------
// Helpers

export class ArmError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** A request the fake has no answer for: recorded as such (`Stats.unknown()`), so a test fails instead of passing on a 404. */
export class NotImplementedByFake extends ArmError {}

/** A permission the fake withholds from a principal: that action answers 403 AuthorizationFailed, as ARM does. */
export interface WithheldPermission {
  /** The caller's object id (`oid`) or application id (`appid`, a client id). */
  principal: string;
  /** An ARM action (e.g. `Microsoft.Authorization/roleAssignments/write`); `*` for every one. */
  action: string;
  /** Only at or below this scope (case-insensitive resource id); default everywhere. */
  scope?: string;
}

const GATEWAY = { "X-Ms-Failure-Cause": "gateway" };

function rgNotFound(name: string): ArmError {
  return new ArmError(404, "ResourceGroupNotFound", `Resource group '${name}' could not be found.`, GATEWAY);
}

function resourceNotFound(type: string, name: string, rg: string): ArmError {
  return new ArmError(
    404,
    "ResourceNotFound",
    `The Resource '${type}/${name}' under resource group '${rg}' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix`,
    GATEWAY,
  );
}

/** ARM's job-id escaping: upper-case, every character outside [A-Z0-9] becomes `:XX` (hex). */
function jobEscape(s: string): string {
  return [...s.toUpperCase()]
    .map((ch) => (/[A-Z0-9]/.test(ch) ? ch : `:${ch.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`))
    .join("");
}

/** Operation id for a resource group deletion — deterministic, the way ARM builds it. */
export function rgDeletionOperationId(rgName: string, location: string): string {
  const job = {
    jobId: `RESOURCEGROUPDELETIONJOB-${jobEscape(rgName)}-${jobEscape(location)}`,
    jobLocation: location.toLowerCase(),
  };
  return Buffer.from(JSON.stringify(job)).toString("base64url");
}

function parseJson(body: Buffer): Record<string, unknown> {
  if (body.length === 0) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch (err) {
    throw new ArmError(
      400,
      "InvalidRequestContent",
      `The request content was invalid and could not be deserialized: '${(err as Error).message}'.`,
    );
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new ArmError(
      400,
      "InvalidRequestContent",
      "The request content was invalid and could not be deserialized: 'expected a JSON object'.",
    );
  }
  return parsed as Record<string, unknown>;
}

function stringMap(v: unknown, what = "tags"): Record<string, string> | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "object" || Array.isArray(v))
    throw new ArmError(400, "InvalidRequestContent", `The request content was invalid: '${what}' must be an object.`);
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(v as Record<string, unknown>)) {
    if (typeof val !== "string")
      throw new ArmError(
        400,
        "InvalidRequestContent",
        `The request content was invalid: ${what} values must be strings.`,
      );
    out[k] = val;
  }
  return out;
}

function lc(s: string): string {
  return s.toLowerCase();
}

function scopeString(segments: string[]): string {
  return segments.length === 0 ? "/" : "/" + segments.join("/");
}

/** Is `a` equal to, or an ancestor of, `b` (case-insensitive scope strings)? */
function isAncestorOrSelf(a: string, b: string): boolean {
  const x = lc(a).replace(/\/+$/, "");
  const y = lc(b).replace(/\/+$/, "");
  if (x === "") return true;
  return y === x || y.startsWith(x + "/");
}

// ---------------------------------------------------------------------------------------------
// Routing

/** Classify a request into an Azure REST operation id (used for stats, faults, dispatch). */
export function classifyArm(method: string, segments: string[]): ArmRoute {
  const l = segments.map(lc);
  const m = method.toUpperCase();
  const op = (name: string, family: ApiFamily): ArmRoute => {
    const route: ArmRoute = { operation: name, family };
    if (l[0] === "subscriptions" && segments[1]) route.subscriptionId = segments[1];
    return route;
  };
  // Microsoft.Authorization at any scope
  for (let i = 0; i + 1 < l.length; i++) {
    if (l[i] === "providers" && l[i + 1] === "microsoft.authorization") {
      const rest = l.slice(i + 2);
      if (rest[0] === "roledefinitions") {
        if (rest.length === 1 && m === "GET") return op("RoleDefinitions_List", "roleDefinitions");
        if (rest.length === 2 && m === "GET") return op("RoleDefinitions_Get", "roleDefinitions");
        if (rest.length === 2)
          return op(
            `RoleDefinitions_${m === "PUT" ? "CreateOrUpdate" : m === "DELETE" ? "Delete" : "Unsupported"}`,
            "roleDefinitions",
          );
      }
      if (rest[0] === "roleassignments") {
        if (rest.length === 1 && m === "GET") return op("RoleAssignments_ListForScope", "roleAssignments");
        if (rest.length === 2) {
          if (m === "PUT") return op("RoleAssignments_Create", "roleAssignments");
          if (m === "GET") return op("RoleAssignments_Get", "roleAssignments");
          if (m === "DELETE") return op("RoleAssignments_Delete", "roleAssignments");
        }
      }
      return op("Unknown", "none");
    }
  }
  if (l[0] !== "subscriptions") return op("Unknown", "none");
  if (l.length === 1 && m === "GET") return op("Subscriptions_List", "subscriptions");
  if (l.length === 2 && m === "GET") return op("Subscriptions_Get", "subscriptions");
  if (l[2] === "operationresults" && l.length === 4 && m === "GET") return op("OperationResults_Get", "resources");
  if (l[2] === "providers" && l.length === 4 && m === "GET") return op("Providers_Get", "resources");
  if (l[2] === "providers" && l.length === 5) {
    if (l[3] === "microsoft.managedidentity" && l[4] === "userassignedidentities" && m === "GET")
      return op("UserAssignedIdentities_ListBySubscription", "managedIdentity");
    if (l[3] === "microsoft.containerservice" && l[4] === "managedclusters" && m === "GET")
      return op("ManagedClusters_List", "containerService");
  }
  if (l[2] === "resourcegroups") {
    if (l.length === 3 && m === "GET") return op("ResourceGroups_List", "resources");
    if (l.length === 4) {
      const names: Record<string, string> = {
        PUT: "ResourceGroups_CreateOrUpdate",
        GET: "ResourceGroups_Get",
        DELETE: "ResourceGroups_Delete",
        PATCH: "ResourceGroups_Update",
        HEAD: "ResourceGroups_CheckExistence",
      };
      return op(names[m] ?? "Unknown", names[m] ? "resources" : "none");
    }
    if (l[4] === "providers" && l.length >= 7) {
      const ns = l[5];
      const type = l[6];
      if (ns === "microsoft.managedidentity" && type === "userassignedidentities") {
        if (l.length === 7 && m === "GET") return op("UserAssignedIdentities_ListByResourceGroup", "managedIdentity");
        if (l.length === 8) {
          const names: Record<string, string> = {
            PUT: "UserAssignedIdentities_CreateOrUpdate",
            GET: "UserAssignedIdentities_Get",
            DELETE: "UserAssignedIdentities_Delete",
            PATCH: "UserAssignedIdentities_Update",
          };
          return op(names[m] ?? "Unknown", names[m] ? "managedIdentity" : "none");
        }
        if (l[8] === "federatedidentitycredentials") {
          if (l.length === 9 && m === "GET") return op("FederatedIdentityCredentials_List", "federatedCredentials");
          if (l.length === 10) {
            const names: Record<string, string> = {
              PUT: "FederatedIdentityCredentials_CreateOrUpdate",
              GET: "FederatedIdentityCredentials_Get",
              DELETE: "FederatedIdentityCredentials_Delete",
            };
            return op(names[m] ?? "Unknown", names[m] ? "federatedCredentials" : "none");
          }
        }
      }
      if (ns === "microsoft.containerservice" && type === "managedclusters") {
        if (l.length === 7 && m === "GET") return op("ManagedClusters_ListByResourceGroup", "containerService");
        if (l.length === 8 && m === "GET") return op("ManagedClusters_Get", "containerService");
        if (l.length === 8)
          return op(
            `ManagedClusters_${m === "PUT" ? "CreateOrUpdate" : m === "DELETE" ? "Delete" : "Unsupported"}`,
            "containerService",
          );
      }
    }
  }
  return op("Unknown", "none");
}

// ---------------------------------------------------------------------------------------------
// The fake

export class FakeArm {
  readonly subscriptions = new Map<string, Subscription>();
  readonly resourceGroups = new Map<string, ResourceGroup>();
  readonly identities = new Map<string, IdentityRecord>();
  readonly clusters = new Map<string, ClusterRecord>();
  readonly roleDefinitions = new Map<string, Required<RoleDefinitionSeed>>();
  readonly roleAssignments = new Map<string, RoleAssignmentRecord>();
  readonly operations = new Map<string, Operation>();
  /** Registration state per `subscription/namespace` (lowercase); a known namespace not set here is Registered. */
  readonly providerStates = new Map<string, string>();
  /** Permissions withheld (`withhold`): everything else is allowed, as for an Owner of every subscription. */
  readonly withheld = new Set<WithheldPermission>();
  private readonly rateLimits = new Map<string, { reads: number; writes: number; deletes: number }>();

  constructor(
    readonly opts: ArmOptions,
    private readonly entra: FakeEntra,
  ) {
    for (const s of opts.subscriptions) this.addSubscription(s);
    for (const r of [...BUILT_IN_ROLES, ...opts.roleDefinitions]) this.addRoleDefinition(r);
  }

  // ----- seeding / test API ------------------------------------------------------------------

  addSubscription(s: { subscriptionId: string; tenantId?: string; displayName?: string }): void {
    const tenantId = lc(s.tenantId ?? this.opts.defaultTenantId);
    this.subscriptions.set(lc(s.subscriptionId), {
      subscriptionId: lc(s.subscriptionId),
      tenantId,
      displayName: s.displayName ?? `Fake subscription ${s.subscriptionId.slice(0, 8)}`,
    });
    this.entra.tenants.add(tenantId);
  }

  addRoleDefinition(r: RoleDefinitionSeed): void {
    this.roleDefinitions.set(lc(r.id), {
      id: lc(r.id),
      roleName: r.roleName,
      description: r.description ?? "",
      type: r.type ?? (BUILT_IN_ROLES.some((b) => b.id === r.id) ? "BuiltInRole" : "CustomRole"),
      actions: r.actions ?? [],
      notActions: r.notActions ?? [],
      dataActions: r.dataActions ?? [],
      notDataActions: r.notDataActions ?? [],
      assignableScopes: r.assignableScopes ?? ["/"],
    });
  }

  /** E.g. `NotRegistered` for Microsoft.ManagedIdentity: ASO then cannot create identities in that subscription. */
  setResourceProviderState(o: {
    subscriptionId?: string;
    namespace: string;
    state: "Registered" | "NotRegistered" | "Registering" | "Unregistering";
  }): void {
    this.providerStates.set(`${lc(o.subscriptionId ?? this.defaultSubscriptionId())}/${lc(o.namespace)}`, o.state);
  }

  seedResourceGroup(o: {
    subscriptionId?: string;
    name: string;
    location?: string;
    tags?: Record<string, string>;
  }): void {
    const sub = lc(o.subscriptionId ?? this.defaultSubscriptionId());
    const key = `${sub}/${lc(o.name)}`;
    if (!this.resourceGroups.has(key)) {
      this.resourceGroups.set(key, {
        subscriptionId: sub,
        name: o.name,
        location: o.location ?? "westus2",
        ...(o.tags ? { tags: o.tags } : {}),
      });
    }
  }

  seedManagedCluster(seed: ClusterSeed): ClusterRecord {
    const sub = lc(seed.subscriptionId ?? this.defaultSubscriptionId());
    const location = seed.location ?? "westus2";
    this.seedResourceGroup({ subscriptionId: sub, name: seed.resourceGroup, location });
    const tenant = this.subscriptions.get(sub)?.tenantId ?? this.opts.defaultTenantId;
    const enabled = seed.oidcIssuerEnabled ?? true;
    const record: ClusterRecord = {
      subscriptionId: sub,
      resourceGroup: this.resourceGroups.get(`${sub}/${lc(seed.resourceGroup)}`)!.name,
      name: seed.name,
      location,
      ...(seed.tags ? { tags: seed.tags } : {}),
      kubernetesVersion: seed.kubernetesVersion ?? "1.31.2",
      oidcIssuerEnabled: enabled,
      ...(enabled
        ? { issuerURL: seed.issuerURL ?? `https://${location}.oic.prod-aks.azure.com/${tenant}/${guid()}/` }
        : {}),
      workloadIdentityEnabled: seed.workloadIdentityEnabled ?? enabled,
      principalId: guid(),
      dnsPrefix: `${seed.name.slice(0, 40)}-dns`,
      fqdnSuffix: randomBytes(4).toString("hex"),
    };
    this.clusters.set(`${sub}/${lc(seed.resourceGroup)}/${lc(seed.name)}`, record);
    return record;
  }

  setClusterOidcIssuer(o: {
    subscriptionId?: string;
    resourceGroup: string;
    name: string;
    enabled?: boolean;
    issuerURL?: string;
  }): void {
    const sub = lc(o.subscriptionId ?? this.defaultSubscriptionId());
    const c = this.clusters.get(`${sub}/${lc(o.resourceGroup)}/${lc(o.name)}`);
    if (!c) throw new Error(`no seeded cluster ${o.resourceGroup}/${o.name}`);
    c.oidcIssuerEnabled = o.enabled ?? true;
    if (c.oidcIssuerEnabled) {
      c.issuerURL =
        o.issuerURL ??
        c.issuerURL ??
        `https://${c.location}.oic.prod-aks.azure.com/${this.opts.defaultTenantId}/${guid()}/`;
    } else {
      delete c.issuerURL;
    }
  }

  defaultSubscriptionId(): string {
    const first = this.subscriptions.values().next();
    if (first.done) throw new Error("the fake has no subscription");
    return first.value.subscriptionId;
  }

  findIdentityByClientId(clientId: string): IdentityPrincipal | undefined {
    for (const i of this.identities.values()) {
      if (i.clientId === lc(clientId)) {
        return {
          clientId: i.clientId,
          principalId: i.principalId,
          tenantId: i.tenantId,
          resourceId: this.identityId(i),
          federatedCredentials: [...i.fics.values()].map<FederatedCredential>((f) => ({
            issuer: f.issuer,
            subject: f.subject,
            audiences: f.audiences,
          })),
        };
      }
    }
    return undefined;
  }

  private principalType(principalId: string): string | undefined {
    const id = lc(principalId);
    for (const i of this.identities.values()) {
      if (i.principalId === id)
        return Date.now() - i.createdAt >= this.opts.principalReplicationMs ? "ServicePrincipal" : undefined;
    }
    for (const c of this.clusters.values()) if (c.principalId === id) return "ServicePrincipal";
    return this.entra.principals.get(id)?.type;
  }

  close(): void {
    for (const op of this.operations.values()) if (op.timer) clearTimeout(op.timer);
  }

  /** Withhold a permission from a principal until the returned function restores it. */
  withhold(permission: WithheldPermission): () => void {
    this.withheld.add(permission);
    return () => this.withheld.delete(permission);
  }

  /**
   * ARM's authorization check for a request: 403 AuthorizationFailed with ARM's message when the caller's
   * permission to the operation's action at the request's scope is withheld.
   */
  authorize(r: ArmRequest): void {
    const action = ARM_ACTIONS[r.route.operation];
    if (!action || this.withheld.size === 0) return;
    const scope = scopeString(r.segments);
    const caller = [lc(r.claims.oid), lc(String(r.claims.appid ?? ""))];
    for (const w of this.withheld) {
      if (!caller.includes(lc(w.principal))) continue;
      if (w.action !== "*" && lc(w.action) !== lc(action)) continue;
      if (w.scope !== undefined && !isAncestorOrSelf(w.scope, scope)) continue;
      throw new ArmError(
        403,
        "AuthorizationFailed",
        `The client '${r.claims.appid ?? r.claims.oid}' with object id '${r.claims.oid}' does not have authorization to perform action '${action}' over scope '${scope}' or the scope is invalid. If access was recently granted, please refresh your credentials.`,
      );
    }
  }

  // ----- request entry point -----------------------------------------------------------------

  /** Headers ARM adds to every response (error or not). */
  commonHeaders(
    method: string,
    subscriptionId: string | undefined,
    correlationId: string | undefined,
  ): Record<string, string> {
    const requestId = guid();
    const headers: Record<string, string> = {
      "Cache-Control": "no-cache",
      Pragma: "no-cache",
      Expires: "-1",
      "Strict-Transport-Security": "max-age=31536000; includeSubDomains",
      "X-Content-Type-Options": "nosniff",
      "x-ms-request-id": requestId,
      "x-ms-correlation-request-id": correlationId ?? requestId,
      "x-ms-routing-request-id": `WESTUS2:${new Date()
        .toISOString()
        .replace(/[-:]/g, "")
        .replace(/\.\d+Z$/, "Z")}:${requestId}`,
    };
    if (subscriptionId) {
      const key = lc(subscriptionId);
      const rl = this.rateLimits.get(key) ?? { reads: 12000, writes: 1200, deletes: 15000 };
      this.rateLimits.set(key, rl);
      const m = method.toUpperCase();
      if (m === "GET" || m === "HEAD")
        headers["x-ms-ratelimit-remaining-subscription-reads"] = String((rl.reads = Math.max(0, rl.reads - 1)));
      else if (m === "DELETE")
        headers["x-ms-ratelimit-remaining-subscription-deletes"] = String((rl.deletes = Math.max(0, rl.deletes - 1)));
      else headers["x-ms-ratelimit-remaining-subscription-writes"] = String((rl.writes = Math.max(0, rl.writes - 1)));
    }
    return headers;
  }

  /** api-version and subscription checks; throws ArmError. */
  precheck(route: ArmRoute, query: URLSearchParams, segments: string[], claims: { tid: string }): void {
    const apiVersion = query.get("api-version");
    if (!apiVersion) {
      throw new ArmError(
        400,
        "MissingApiVersionParameter",
        "The api-version query parameter (?api-version=) is required for all requests.",
        GATEWAY,
      );
    }
    if (route.subscriptionId) {
      const sub = this.subscriptions.get(lc(route.subscriptionId));
      if (!sub) {
        if (!isGuid(route.subscriptionId)) {
          throw new ArmError(
            400,
            "InvalidSubscriptionId",
            `The provided subscription identifier '${route.subscriptionId}' is malformed or invalid.`,
            GATEWAY,
          );
        }
        throw new ArmError(
          404,
          "SubscriptionNotFound",
          `The subscription '${route.subscriptionId}' could not be found.`,
          GATEWAY,
        );
      }
      if (lc(claims.tid) !== sub.tenantId) {
        throw new ArmError(
          401,
          "InvalidAuthenticationTokenTenant",
          `The access token is from the wrong issuer 'https://sts.windows.net/${claims.tid}/'. It must match the tenant 'https://sts.windows.net/${sub.tenantId}/' associated with this subscription. Please use the authority (URL) 'https://login.windows.net/${sub.tenantId}' to get the token. Note, if the subscription is transferred to another tenant there is no impact to the services, but information about new tenant could take time to propagate (up to an hour). If you just transferred your subscription and see this error message, please try back later.`,
          {
            ...GATEWAY,
            "WWW-Authenticate": `Bearer authorization_uri="https://login.windows.net/${sub.tenantId}", error="invalid_token", error_description="The access token is from the wrong issuer. It must match the tenant associated with this subscription. Please use correct authority to get the token."`,
          },
        );
      }
    }
    if (!this.opts.strictApiVersions || route.family === "none") return;
    if (route.family === "containerService") {
      if (!/^\d{4}-\d{2}-\d{2}(-preview)?$/.test(apiVersion)) this.badApiVersion(route, apiVersion, segments);
      return;
    }
    if (!API_VERSIONS[route.family].includes(apiVersion)) this.badApiVersion(route, apiVersion, segments);
  }

  private badApiVersion(route: ArmRoute, apiVersion: string, segments: string[]): never {
    if (route.family === "resources" || route.family === "subscriptions") {
      throw new ArmError(
        400,
        "InvalidApiVersionParameter",
        `The api-version '${apiVersion}' is invalid. The supported versions are '${API_VERSIONS[route.family].slice().reverse().join(",")}'.`,
        GATEWAY,
      );
    }
    const types: Record<string, string> = {
      managedIdentity: "userAssignedIdentities",
      federatedCredentials: "userAssignedIdentities/federatedIdentityCredentials",
      containerService: "managedClusters",
      roleDefinitions: "roleDefinitions",
      roleAssignments: "roleAssignments",
    };
    const supported =
      route.family === "containerService" ? [] : API_VERSIONS[route.family as keyof typeof API_VERSIONS];
    const l = segments.map(lc);
    const rg = l[2] === "resourcegroups" && segments[3] ? this.resourceGroups.get(`${l[1]}/${l[3]}`) : undefined;
    throw new ArmError(
      400,
      "NoRegisteredProviderFound",
      `No registered resource provider found for location '${rg?.location ?? "global"}' and API version '${apiVersion}' for type '${types[route.family]}'. The supported api-versions are '${supported.join(", ")}'. The supported locations are 'eastus, westus2, westeurope, northeurope'.`,
      GATEWAY,
    );
  }

  async handle(r: ArmRequest): Promise<ResponseSpec> {
    const s = r.segments;
    switch (r.route.operation) {
      case "Subscriptions_List":
        return this.listSubscriptions(r);
      case "Subscriptions_Get":
        return { status: 200, body: this.subscriptionJson(this.subscriptions.get(lc(s[1]!))!) };
      case "ResourceGroups_List":
        return this.page(
          r,
          this.rgsOf(s[1]!).map((g) => this.rgJson(g)),
          this.opts.pageSize.resourceGroups,
        );
      case "ResourceGroups_CreateOrUpdate":
        return this.putResourceGroup(r);
      case "ResourceGroups_Get":
        return { status: 200, body: this.rgJson(this.requireRg(s[1]!, s[3]!)) };
      case "ResourceGroups_CheckExistence":
        return { status: this.resourceGroups.has(`${lc(s[1]!)}/${lc(s[3]!)}`) ? 204 : 404 };
      case "ResourceGroups_Update":
        return this.patchResourceGroup(r);
      case "ResourceGroups_Delete":
        return this.deleteResourceGroup(r);
      case "OperationResults_Get":
        return this.pollOperation(r);
      case "Providers_Get":
        return { status: 200, body: this.providerJson(s[1]!, s[3]!) };
      case "UserAssignedIdentities_ListBySubscription":
        return this.page(
          r,
          [...this.identities.values()].filter((i) => i.subscriptionId === lc(s[1]!)).map((i) => this.identityJson(i)),
          this.opts.pageSize.userAssignedIdentities,
        );
      case "UserAssignedIdentities_ListByResourceGroup": {
        const rg = this.requireRg(s[1]!, s[3]!);
        return this.page(
          r,
          [...this.identities.values()]
            .filter((i) => i.subscriptionId === lc(s[1]!) && lc(i.resourceGroup) === lc(rg.name))
            .map((i) => this.identityJson(i)),
          this.opts.pageSize.userAssignedIdentities,
        );
      }
      case "UserAssignedIdentities_CreateOrUpdate":
        return this.putIdentity(r);
      case "UserAssignedIdentities_Update":
        return this.patchIdentity(r);
      case "UserAssignedIdentities_Get": {
        this.requireRg(s[1]!, s[3]!);
        const i = this.identities.get(this.identityKey(s));
        if (!i) throw resourceNotFound("Microsoft.ManagedIdentity/userAssignedIdentities", s[7]!, s[3]!);
        return { status: 200, body: this.identityJson(i) };
      }
      case "UserAssignedIdentities_Delete": {
        this.requireRg(s[1]!, s[3]!);
        const key = this.identityKey(s);
        if (!this.identities.delete(key)) return { status: 204 };
        return { status: 200 };
      }
      case "FederatedIdentityCredentials_List": {
        const i = this.requireIdentityForChild(s);
        return this.page(
          r,
          [...i.fics.values()].map((f) => this.ficJson(i, f)),
          this.opts.pageSize.federatedIdentityCredentials,
        );
      }
      case "FederatedIdentityCredentials_Get": {
        this.requireRg(s[1]!, s[3]!);
        const i = this.identities.get(this.identityKey(s));
        const f = i?.fics.get(lc(s[9]!));
        if (!i || !f) {
          const id = `/subscriptions/${s[1]}/resourcegroups/${s[3]}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/${s[7]}/federatedIdentityCredentials/${s[9]}`;
          throw new ArmError(404, "NotFound", `Resource '${id}' was not found.`);
        }
        return { status: 200, body: this.ficJson(i, f) };
      }
      case "FederatedIdentityCredentials_CreateOrUpdate":
        return this.putFic(r);
      case "FederatedIdentityCredentials_Delete":
        return this.deleteFic(r);
      case "ManagedClusters_Get": {
        this.requireRg(s[1]!, s[3]!);
        const c = this.clusters.get(`${lc(s[1]!)}/${lc(s[3]!)}/${lc(s[7]!)}`);
        if (!c) throw resourceNotFound("Microsoft.ContainerService/managedClusters", s[7]!, s[3]!);
        return { status: 200, body: this.clusterJson(c) };
      }
      case "ManagedClusters_ListByResourceGroup": {
        this.requireRg(s[1]!, s[3]!);
        const items = [...this.clusters.values()].filter(
          (c) => c.subscriptionId === lc(s[1]!) && lc(c.resourceGroup) === lc(s[3]!),
        );
        return this.page(
          r,
          items.map((c) => this.clusterJson(c)),
          this.opts.pageSize.managedClusters,
        );
      }
      case "ManagedClusters_List": {
        const items = [...this.clusters.values()].filter((c) => c.subscriptionId === lc(s[1]!));
        return this.page(
          r,
          items.map((c) => this.clusterJson(c)),
          this.opts.pageSize.managedClusters,
        );
      }
      case "RoleDefinitions_List":
        return this.listRoleDefinitions(r);
      case "RoleDefinitions_Get":
        return this.getRoleDefinition(r);
      case "RoleAssignments_ListForScope":
        return this.listRoleAssignments(r);
      case "RoleAssignments_Create":
        return this.putRoleAssignment(r);
      case "RoleAssignments_Get": {
        const { scope, name } = this.authzScope(s);
        const ra = this.roleAssignments.get(
          lc(`${scope === "/" ? "" : scope}/providers/Microsoft.Authorization/roleAssignments/${name}`),
        );
        if (!ra) throw new ArmError(404, "RoleAssignmentNotFound", `The role assignment '${name}' is not found.`);
        return { status: 200, body: this.roleAssignmentJson(ra) };
      }
      case "RoleAssignments_Delete": {
        const { scope, name } = this.authzScope(s);
        const key = lc(`${scope === "/" ? "" : scope}/providers/Microsoft.Authorization/roleAssignments/${name}`);
        const ra = this.roleAssignments.get(key);
        if (!ra) return { status: 204 };
        this.roleAssignments.delete(key);
        return { status: 200, body: this.roleAssignmentJson(ra) };
      }
      case "ManagedClusters_CreateOrUpdate":
      case "ManagedClusters_Delete":
      case "ManagedClusters_Unsupported":
      case "RoleDefinitions_CreateOrUpdate":
      case "RoleDefinitions_Delete":
      case "RoleDefinitions_Unsupported":
        throw new NotImplementedByFake(
          405,
          "MethodNotAllowedByFake",
          `The fake does not implement '${r.route.operation}'. Seed this state through the FakeAzure test API.`,
        );
      default:
        throw new NotImplementedByFake(
          404,
          "InvalidResourceType",
          `The resource type '${s.slice(0, 8).join("/")}' could not be found (not implemented by the fake) for api version '${r.query.get("api-version")}'.`,
        );
    }
  }

  // ----- paging ------------------------------------------------------------------------------

  private page(r: ArmRequest, items: unknown[], pageSize: number): ResponseSpec {
    const token = r.query.get("$skiptoken") ?? r.query.get("$skipToken");
    let offset = 0;
    if (token) {
      const n = Number(
        Buffer.from(token, "base64url")
          .toString("utf8")
          .replace(/^offset:/, ""),
      );
      if (!Number.isInteger(n) || n < 0)
        throw new ArmError(400, "InvalidSkipToken", `The skip token '${token}' is invalid.`);
      offset = n;
    }
    const size = Math.max(1, pageSize);
    const slice = items.slice(offset, offset + size);
    const body: { value: unknown[]; nextLink?: string } = { value: slice };
    if (offset + size < items.length) {
      const next = new URLSearchParams();
      for (const [k, v] of r.query) if (k.toLowerCase() !== "$skiptoken") next.append(k, v);
      next.set("$skiptoken", Buffer.from(`offset:${offset + size}`).toString("base64url"));
      body.nextLink = `${r.base}/${r.segments.map(encodeURIComponent).join("/")}?${next.toString()}`;
    }
    return { status: 200, body };
  }

  // ----- subscriptions -----------------------------------------------------------------------

  private subscriptionJson(s: Subscription): unknown {
    return {
      id: `/subscriptions/${s.subscriptionId}`,
      authorizationSource: "RoleBased",
      managedByTenants: [],
      subscriptionId: s.subscriptionId,
      tenantId: s.tenantId,
      displayName: s.displayName,
      state: "Enabled",
      subscriptionPolicies: {
        locationPlacementId: "Public_2014-09-01",
        quotaId: "PayAsYouGo_2014-09-01",
        spendingLimit: "Off",
      },
    };
  }

  private listSubscriptions(r: ArmRequest): ResponseSpec {
    const subs = [...this.subscriptions.values()].filter((s) => s.tenantId === lc(r.claims.tid));
    const res = this.page(
      r,
      subs.map((s) => this.subscriptionJson(s)),
      this.opts.pageSize.subscriptions,
    );
    (res.body as Record<string, unknown>).count = { type: "Total", value: subs.length };
    return res;
  }

  // ----- resource groups ---------------------------------------------------------------------

  private rgsOf(sub: string): ResourceGroup[] {
    return [...this.resourceGroups.values()].filter((g) => g.subscriptionId === lc(sub));
  }

  /** GET /subscriptions/{s}/providers/{namespace}: as ARM answers it, trimmed to the resource types Berth's templates use. */
  private providerJson(sub: string, namespace: string): unknown {
    const known = RESOURCE_PROVIDERS.find((p) => lc(p.namespace) === lc(namespace));
    if (!known)
      throw new ArmError(404, "InvalidResourceNamespace", `The resource namespace '${namespace}' is invalid.`, GATEWAY);
    const state = this.providerStates.get(`${lc(sub)}/${lc(namespace)}`) ?? "Registered";
    return {
      id: `/subscriptions/${lc(sub)}/providers/${known.namespace}`,
      namespace: known.namespace,
      resourceTypes: known.resourceTypes.map((resourceType) => ({
        resourceType,
        locations: ["East US", "West US 2", "West Europe", "North Europe"],
        apiVersions: known.apiVersions,
        capabilities: "None",
      })),
      registrationState: state,
      registrationPolicy: known.registrationPolicy,
    };
  }

  private requireRg(sub: string, name: string): ResourceGroup {
    const g = this.resourceGroups.get(`${lc(sub)}/${lc(name)}`);
    if (!g) throw rgNotFound(name);
    return g;
  }

  private requireWritableRg(sub: string, name: string): ResourceGroup {
    const g = this.requireRg(sub, name);
    if (g.deleting) {
      throw new ArmError(
        409,
        "ResourceGroupBeingDeleted",
        `The resource group '${g.name}' is in deprovisioning state and cannot perform this operation.`,
      );
    }
    return g;
  }

  private rgJson(g: ResourceGroup): unknown {
    return {
      id: `/subscriptions/${g.subscriptionId}/resourceGroups/${g.name}`,
      name: g.name,
      type: "Microsoft.Resources/resourceGroups",
      location: g.location,
      ...(g.managedBy ? { managedBy: g.managedBy } : {}),
      ...(g.tags ? { tags: g.tags } : {}),
      properties: { provisioningState: g.deleting ? "Deleting" : "Succeeded" },
    };
  }

  private putResourceGroup(r: ArmRequest): ResponseSpec {
    const [, sub, , name] = r.segments as [string, string, string, string];
    if (!RG_NAME_RE.test(name) || name.endsWith(".")) {
      throw new ArmError(
        400,
        "InvalidResourceGroup",
        `The provided resource group name '${name}' has these invalid characters: '${name.replace(/[-\w._()]/gu, "")}'. The name can only be a letter, digit, '-', '.', '(', ')' or '_'.`,
      );
    }
    const body = parseJson(r.body);
    const location = body.location;
    if (typeof location !== "string" || location === "") {
      throw new ArmError(400, "LocationRequired", "The location property is required for this definition.");
    }
    const key = `${lc(sub)}/${lc(name)}`;
    const existing = this.resourceGroups.get(key);
    const tags = stringMap(body.tags);
    if (existing) {
      if (existing.deleting) {
        throw new ArmError(
          409,
          "ResourceGroupBeingDeleted",
          `The resource group '${existing.name}' is in deprovisioning state and cannot perform this operation.`,
        );
      }
      if (lc(existing.location) !== lc(location).replace(/\s/g, "")) {
        throw new ArmError(
          409,
          "InvalidResourceGroupLocation",
          `Invalid resource group location '${location}'. The Resource group already exists in location '${existing.location}'.`,
        );
      }
      if (tags) existing.tags = tags;
      else delete existing.tags;
      if (typeof body.managedBy === "string") existing.managedBy = body.managedBy;
      return { status: 200, body: this.rgJson(existing) };
    }
    const g: ResourceGroup = {
      subscriptionId: lc(sub),
      name,
      location: lc(location).replace(/\s/g, ""),
      ...(tags ? { tags } : {}),
      ...(typeof body.managedBy === "string" ? { managedBy: body.managedBy } : {}),
    };
    this.resourceGroups.set(key, g);
    return { status: 201, body: this.rgJson(g) };
  }

  private patchResourceGroup(r: ArmRequest): ResponseSpec {
    const g = this.requireWritableRg(r.segments[1]!, r.segments[3]!);
    const body = parseJson(r.body);
    const tags = stringMap(body.tags);
    if (tags) g.tags = tags;
    if (typeof body.managedBy === "string") g.managedBy = body.managedBy;
    return { status: 200, body: this.rgJson(g) };
  }

  private operationLocation(r: ArmRequest, op: Operation): string {
    const apiVersion = r.query.get("api-version") ?? "2020-06-01";
    const path = `/subscriptions/${op.subscriptionId}/operationresults/${op.id}`;
    const t = dotnetTicks();
    const c = this.opts.operationCertificate;
    const h = createHash("sha256").update(`${path}?api-version=${apiVersion}&t=${t}&c=${c}`).digest("base64url");
    const sig = randomBytes(256).toString("base64url");
    return `${r.base}${path}?api-version=${apiVersion}&t=${t}&c=${c}&s=${sig}&h=${h}`;
  }

  private lroHeaders(r: ArmRequest, op: Operation): Record<string, string> {
    return { Location: this.operationLocation(r, op), "Retry-After": String(this.opts.lro.retryAfterSeconds ?? 1) };
  }

  private deleteResourceGroup(r: ArmRequest): ResponseSpec {
    const g = this.requireRg(r.segments[1]!, r.segments[3]!);
    if (g.deleting) return { status: 202, headers: this.lroHeaders(r, g.deleting) };
    const rgKey = `${g.subscriptionId}/${lc(g.name)}`;
    const op: Operation = {
      id: rgDeletionOperationId(g.name, g.location),
      subscriptionId: g.subscriptionId,
      rgKey,
      polls: 0,
      startedAt: Date.now(),
      done: false,
    };
    this.operations.set(lc(op.id), op);
    g.deleting = op;
    const headers = this.lroHeaders(r, op);
    const { polls, ms } = this.lroTiming();
    if (ms !== undefined) {
      op.timer = setTimeout(() => this.completeOperation(op), ms);
      op.timer.unref();
    } else if (polls === 0) {
      this.completeOperation(op);
    }
    return { status: 202, headers };
  }

  private lroTiming(): { polls: number | undefined; ms: number | undefined } {
    const { polls, ms } = this.opts.lro;
    if (polls === undefined && ms === undefined) return { polls: 1, ms: undefined };
    return { polls, ms };
  }

  private completeOperation(op: Operation): void {
    if (op.done) return;
    op.done = true;
    if (op.timer) clearTimeout(op.timer);
    const g = this.resourceGroups.get(op.rgKey);
    if (!g) return;
    this.resourceGroups.delete(op.rgKey);
    const prefix = `${op.rgKey}/`;
    for (const k of [...this.identities.keys()]) if (k.startsWith(prefix)) this.identities.delete(k);
    for (const k of [...this.clusters.keys()]) if (k.startsWith(prefix)) this.clusters.delete(k);
    const rgScope = `/subscriptions/${g.subscriptionId}/resourcegroups/${lc(g.name)}`;
    for (const [k, ra] of [...this.roleAssignments])
      if (isAncestorOrSelf(rgScope, ra.scope)) this.roleAssignments.delete(k);
  }

  private pollOperation(r: ArmRequest): ResponseSpec {
    const op = this.operations.get(lc(r.segments[3]!));
    if (!op || op.subscriptionId !== lc(r.segments[1]!)) {
      throw new ArmError(404, "NotFound", `The operation '${r.segments[3]}' could not be found.`);
    }
    if (!op.done) {
      op.polls++;
      const { polls, ms } = this.lroTiming();
      if ((polls !== undefined && op.polls > polls) || (ms !== undefined && Date.now() - op.startedAt >= ms)) {
        this.completeOperation(op);
      }
    }
    if (op.done) return { status: 200 };
    return { status: 202, headers: this.lroHeaders(r, op) };
  }

  // ----- user-assigned identities ------------------------------------------------------------

  private identityKey(s: string[]): string {
    return `${lc(s[1]!)}/${lc(s[3]!)}/${lc(s[7]!)}`;
  }

  identityId(i: IdentityRecord): string {
    return `/subscriptions/${i.subscriptionId}/resourcegroups/${i.resourceGroup}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/${i.name}`;
  }

  private identityJson(i: IdentityRecord): unknown {
    return {
      location: i.location,
      tags: i.tags,
      id: this.identityId(i),
      name: i.name,
      type: "Microsoft.ManagedIdentity/userAssignedIdentities",
      properties: {
        tenantId: i.tenantId,
        principalId: i.principalId,
        clientId: i.clientId,
        ...(i.isolationScope ? { isolationScope: i.isolationScope } : {}),
      },
    };
  }

  private putIdentity(r: ArmRequest): ResponseSpec {
    const s = r.segments;
    const g = this.requireWritableRg(s[1]!, s[3]!);
    const name = s[7]!;
    if (!IDENTITY_NAME_RE.test(name)) {
      throw new ArmError(
        400,
        "InvalidResourceName",
        `Resource name ${name} is invalid. The name can be 3-128 characters long and must start with a letter or number; it may contain letters, numbers, hyphens and underscores.`,
      );
    }
    const body = parseJson(r.body);
    const location = body.location;
    if (typeof location !== "string" || location === "") {
      throw new ArmError(400, "LocationRequired", "The location property is required for this definition.");
    }
    const loc = lc(location).replace(/\s/g, "");
    const tags = stringMap(body.tags) ?? {};
    const props = (body.properties ?? {}) as Record<string, unknown>;
    const key = this.identityKey(s);
    const existing = this.identities.get(key);
    if (existing) {
      if (existing.location !== loc) {
        throw new ArmError(
          400,
          "InvalidResourceLocation",
          `The resource '${existing.name}' already exists in location '${existing.location}' in resource group '${g.name}'. A resource with the same name cannot be created in location '${loc}'. Please select a new resource name.`,
        );
      }
      existing.tags = tags;
      if (typeof props.isolationScope === "string") existing.isolationScope = props.isolationScope;
      return { status: 200, body: this.identityJson(existing) };
    }
    const sub = this.subscriptions.get(lc(s[1]!))!;
    const rec: IdentityRecord = {
      subscriptionId: sub.subscriptionId,
      resourceGroup: g.name,
      name,
      location: loc,
      tags,
      clientId: guid(),
      principalId: guid(),
      tenantId: sub.tenantId,
      ...(typeof props.isolationScope === "string" ? { isolationScope: props.isolationScope } : {}),
      fics: new Map(),
      ficWritesInFlight: 0,
      createdAt: Date.now(),
    };
    this.identities.set(key, rec);
    return { status: 201, headers: { Location: this.identityId(rec) }, body: this.identityJson(rec) };
  }

  private patchIdentity(r: ArmRequest): ResponseSpec {
    const s = r.segments;
    this.requireWritableRg(s[1]!, s[3]!);
    const i = this.identities.get(this.identityKey(s));
    if (!i) throw resourceNotFound("Microsoft.ManagedIdentity/userAssignedIdentities", s[7]!, s[3]!);
    const body = parseJson(r.body);
    const tags = stringMap(body.tags);
    if (tags) i.tags = tags;
    return { status: 200, body: this.identityJson(i) };
  }

  private requireIdentityForChild(s: string[]): IdentityRecord {
    this.requireRg(s[1]!, s[3]!);
    const i = this.identities.get(this.identityKey(s));
    if (!i) {
      throw new ArmError(
        404,
        "ParentResourceNotFound",
        `Failed to perform 'read' on resource(s) of type 'userAssignedIdentities/federatedIdentityCredentials', because the parent resource '/subscriptions/${s[1]}/resourceGroups/${s[3]}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/${s[7]}' could not be found.`,
        GATEWAY,
      );
    }
    return i;
  }

  private ficId(i: IdentityRecord, f: { name: string }): string {
    return `${this.identityId(i)}/federatedIdentityCredentials/${f.name}`;
  }

  private ficJson(i: IdentityRecord, f: FicRecord): unknown {
    return {
      id: this.ficId(i, f),
      name: f.name,
      type: "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials",
      properties: { issuer: f.issuer, subject: f.subject, audiences: f.audiences },
    };
  }

  /** Serialise FIC writes per identity: a second overlapping write gets the real 409. */
  private async ficWrite<T>(i: IdentityRecord, fn: () => T): Promise<T> {
    if (i.ficWritesInFlight > 0) {
      throw new ArmError(
        409,
        "ConcurrentFederatedIdentityCredentialsWritesForSingleManagedIdentity",
        `Too many Federated Identity Credentials are written concurrently for the managed identity ${this.identityId(i)}. Concurrent Federated Identity Credentials writes under the same managed identity are not supported.`,
      );
    }
    i.ficWritesInFlight++;
    try {
      if (this.opts.ficWriteLatencyMs > 0) await sleep(this.opts.ficWriteLatencyMs);
      return fn();
    } finally {
      i.ficWritesInFlight--;
    }
  }

  private async putFic(r: ArmRequest): Promise<ResponseSpec> {
    const s = r.segments;
    this.requireWritableRg(s[1]!, s[3]!);
    const i = this.identities.get(this.identityKey(s));
    if (!i) {
      throw new ArmError(
        404,
        "ParentResourceNotFound",
        `Failed to perform 'write' on resource(s) of type 'userAssignedIdentities/federatedIdentityCredentials', because the parent resource '/subscriptions/${s[1]}/resourceGroups/${s[3]}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/${s[7]}' could not be found.`,
        GATEWAY,
      );
    }
    const name = s[9]!;
    if (!FIC_NAME_RE.test(name)) {
      throw new ArmError(
        400,
        "BadRequest",
        `The federated identity credential name '${name}' is invalid. It must be 3-120 characters long, start with a letter or number, and contain only letters, numbers, hyphens and underscores.`,
      );
    }
    const body = parseJson(r.body);
    const props = body.properties as Record<string, unknown> | undefined;
    const issuer = props?.issuer;
    const subject = props?.subject;
    const audiences = props?.audiences;
    if (typeof issuer !== "string" || !/^https:\/\/\S+$/.test(issuer) || issuer.length > 600) {
      throw new ArmError(
        400,
        "BadRequest",
        "The issuer of a federated identity credential must be an https URL of at most 600 characters.",
      );
    }
    if (typeof subject !== "string" || subject.length === 0 || subject.length > 600) {
      throw new ArmError(
        400,
        "BadRequest",
        "The subject of a federated identity credential must be 1-600 characters long.",
      );
    }
    if (
      !Array.isArray(audiences) ||
      audiences.length !== 1 ||
      typeof audiences[0] !== "string" ||
      audiences[0].length === 0 ||
      audiences[0].length > 600
    ) {
      throw new ArmError(
        400,
        "BadRequest",
        "A federated identity credential must have exactly one audience of 1-600 characters.",
      );
    }
    const key = lc(name);
    return this.ficWrite(i, () => {
      const existing = i.fics.get(key);
      const clash = [...i.fics.values()].find(
        (f) => lc(f.name) !== key && f.issuer === issuer && f.subject === subject,
      );
      if (clash) {
        throw new ArmError(
          400,
          "BadRequest",
          `A federated identity credential with the same issuer and subject already exists on this identity ('${clash.name}').`,
        );
      }
      if (!existing && i.fics.size >= this.opts.maxFederatedCredentialsPerIdentity) {
        throw new ArmError(
          400,
          "BadRequest",
          `A maximum of ${this.opts.maxFederatedCredentialsPerIdentity} federated identity credentials can be added to an application or user-assigned managed identity.`,
        );
      }
      const rec: FicRecord = { name: existing?.name ?? name, issuer, subject, audiences: [audiences[0] as string] };
      i.fics.set(key, rec);
      return existing
        ? { status: 200, body: this.ficJson(i, rec) }
        : { status: 201, headers: { Location: this.ficId(i, rec) }, body: this.ficJson(i, rec) };
    });
  }

  private async deleteFic(r: ArmRequest): Promise<ResponseSpec> {
    const s = r.segments;
    this.requireRg(s[1]!, s[3]!);
    const i = this.identities.get(this.identityKey(s));
    if (!i) return { status: 204 };
    return this.ficWrite(i, () => (i.fics.delete(lc(s[9]!)) ? { status: 200 } : { status: 204 }));
  }

  // ----- managed clusters --------------------------------------------------------------------

  private clusterJson(c: ClusterRecord): unknown {
    const tenant = this.subscriptions.get(c.subscriptionId)?.tenantId ?? this.opts.defaultTenantId;
    const fqdn = `${c.dnsPrefix}-${c.fqdnSuffix}.hcp.${c.location}.azmk8s.io`;
    return {
      id: `/subscriptions/${c.subscriptionId}/resourcegroups/${c.resourceGroup}/providers/Microsoft.ContainerService/managedClusters/${c.name}`,
      location: c.location,
      name: c.name,
      type: "Microsoft.ContainerService/ManagedClusters",
      ...(c.tags ? { tags: c.tags } : {}),
      properties: {
        provisioningState: "Succeeded",
        powerState: { code: "Running" },
        kubernetesVersion: c.kubernetesVersion,
        currentKubernetesVersion: c.kubernetesVersion,
        dnsPrefix: c.dnsPrefix,
        fqdn,
        azurePortalFQDN: fqdn.replace(".hcp.", ".portal.hcp."),
        agentPoolProfiles: [
          {
            name: "nodepool1",
            count: 3,
            vmSize: "Standard_D4ds_v5",
            osDiskSizeGB: 128,
            osDiskType: "Ephemeral",
            maxPods: 110,
            type: "VirtualMachineScaleSets",
            provisioningState: "Succeeded",
            powerState: { code: "Running" },
            orchestratorVersion: c.kubernetesVersion,
            currentOrchestratorVersion: c.kubernetesVersion,
            mode: "System",
            osType: "Linux",
            osSKU: "Ubuntu",
          },
        ],
        nodeResourceGroup: `MC_${c.resourceGroup}_${c.name}_${c.location}`,
        enableRBAC: true,
        networkProfile: {
          networkPlugin: "azure",
          networkPluginMode: "overlay",
          podCidr: "10.244.0.0/16",
          serviceCidr: "10.0.0.0/16",
          dnsServiceIP: "10.0.0.10",
          outboundType: "loadBalancer",
          loadBalancerSku: "standard",
        },
        aadProfile: { managed: true, enableAzureRBAC: true, tenantID: tenant },
        oidcIssuerProfile: c.oidcIssuerEnabled ? { enabled: true, issuerURL: c.issuerURL } : { enabled: false },
        securityProfile: c.workloadIdentityEnabled ? { workloadIdentity: { enabled: true } } : {},
      },
      identity: { type: "SystemAssigned", principalId: c.principalId, tenantId: tenant },
      sku: { name: "Base", tier: "Free" },
    };
  }

  // ----- authorization -----------------------------------------------------------------------

  /** Split `/{scope}/providers/Microsoft.Authorization/{type}/{name}` into scope + name. */
  private authzScope(s: string[]): { scope: string; scopeSegments: string[]; name: string | undefined } {
    let idx = -1;
    for (let i = 0; i + 1 < s.length; i++)
      if (lc(s[i]!) === "providers" && lc(s[i + 1]!) === "microsoft.authorization") idx = i;
    const scopeSegments = s.slice(0, idx);
    return { scope: scopeString(scopeSegments), scopeSegments, name: s[idx + 3] };
  }

  private checkScopeExists(scopeSegments: string[]): void {
    const l = scopeSegments.map(lc);
    if (l.length >= 4 && l[2] === "resourcegroups") this.requireRg(scopeSegments[1]!, scopeSegments[3]!);
    if (l.length === 8 && l[4] === "providers") {
      const key = `${l[1]}/${l[3]}/${l[7]}`;
      if (l[5] === "microsoft.managedidentity" && l[6] === "userassignedidentities" && !this.identities.has(key)) {
        throw resourceNotFound(
          "Microsoft.ManagedIdentity/userAssignedIdentities",
          scopeSegments[7]!,
          scopeSegments[3]!,
        );
      }
      if (l[5] === "microsoft.containerservice" && l[6] === "managedclusters" && !this.clusters.has(key)) {
        throw resourceNotFound("Microsoft.ContainerService/managedClusters", scopeSegments[7]!, scopeSegments[3]!);
      }
    }
  }

  private roleDefinitionIdFor(scopeSegments: string[], guidValue: string): string {
    const sub = lc(scopeSegments[0] ?? "") === "subscriptions" ? scopeSegments[1] : undefined;
    return `${sub ? `/subscriptions/${sub}` : ""}/providers/Microsoft.Authorization/roleDefinitions/${guidValue}`;
  }

  private roleDefinitionJson(scopeSegments: string[], d: Required<RoleDefinitionSeed>): unknown {
    return {
      properties: {
        roleName: d.roleName,
        type: d.type,
        description: d.description,
        assignableScopes: d.assignableScopes,
        permissions: [
          {
            actions: d.actions,
            notActions: d.notActions,
            dataActions: d.dataActions,
            notDataActions: d.notDataActions,
          },
        ],
        createdOn: "2015-02-02T21:55:09.8806423Z",
        updatedOn: "2024-05-01T10:00:00.0000000Z",
        createdBy: null,
        updatedBy: null,
      },
      id: this.roleDefinitionIdFor(scopeSegments, d.id),
      type: "Microsoft.Authorization/roleDefinitions",
      name: d.id,
    };
  }

  private visibleRoleDefinitions(scope: string): Array<Required<RoleDefinitionSeed>> {
    return [...this.roleDefinitions.values()].filter(
      (d) =>
        d.type === "BuiltInRole" ||
        d.assignableScopes.some((a) => isAncestorOrSelf(a, scope) || isAncestorOrSelf(scope, a)),
    );
  }

  private listRoleDefinitions(r: ArmRequest): ResponseSpec {
    const { scope, scopeSegments } = this.authzScope(r.segments);
    this.checkScopeExists(scopeSegments);
    let defs = this.visibleRoleDefinitions(scope);
    const filter = r.query.get("$filter");
    if (filter) {
      for (const clause of filter.split(/\s+and\s+/i)) {
        const m = /^\s*(roleName|type)\s+eq\s+'((?:[^']|'')*)'\s*$/i.exec(clause);
        if (!m) {
          throw new ArmError(
            400,
            "BadRequest",
            `The filter '${filter}' is not supported. Supported filters: roleName eq '{value}', type eq 'BuiltInRole|CustomRole'.`,
          );
        }
        const value = m[2]!.replace(/''/g, "'");
        defs =
          lc(m[1]!) === "rolename"
            ? defs.filter((d) => lc(d.roleName) === lc(value))
            : defs.filter((d) => lc(d.type) === lc(value));
      }
    }
    return this.page(
      r,
      defs.map((d) => this.roleDefinitionJson(scopeSegments, d)),
      this.opts.pageSize.roleDefinitions,
    );
  }

  private getRoleDefinition(r: ArmRequest): ResponseSpec {
    const { scope, scopeSegments, name } = this.authzScope(r.segments);
    const d = this.roleDefinitions.get(lc(name ?? ""));
    if (!d || !this.visibleRoleDefinitions(scope).includes(d)) {
      throw new ArmError(
        404,
        "RoleDefinitionDoesNotExist",
        `The specified role definition with ID '${name}' does not exist.`,
      );
    }
    return { status: 200, body: this.roleDefinitionJson(scopeSegments, d) };
  }

  private roleAssignmentJson(ra: RoleAssignmentRecord): unknown {
    return {
      properties: {
        roleDefinitionId: ra.roleDefinitionId,
        principalId: ra.principalId,
        principalType: ra.principalType,
        scope: ra.scope,
        condition: ra.condition,
        conditionVersion: ra.conditionVersion,
        createdOn: ra.createdOn,
        updatedOn: ra.updatedOn,
        createdBy: ra.createdBy,
        updatedBy: ra.updatedBy,
        delegatedManagedIdentityResourceId: null,
        description: ra.description,
      },
      id: `${ra.scope === "/" ? "" : ra.scope}/providers/Microsoft.Authorization/roleAssignments/${ra.name}`,
      type: "Microsoft.Authorization/roleAssignments",
      name: ra.name,
    };
  }

  private putRoleAssignment(r: ArmRequest): ResponseSpec {
    const { scope, scopeSegments, name } = this.authzScope(r.segments);
    if (!name || !isGuid(name)) {
      throw new ArmError(
        400,
        "InvalidRoleAssignmentId",
        `The role assignment ID '${name}' is not valid. The role assignment ID must be a GUID.`,
      );
    }
    this.checkScopeExists(scopeSegments);
    const body = parseJson(r.body);
    const props = (body.properties ?? {}) as Record<string, unknown>;
    const roleDefinitionId = props.roleDefinitionId;
    const principalId = props.principalId;
    if (typeof roleDefinitionId !== "string" || typeof principalId !== "string") {
      throw new ArmError(
        400,
        "InvalidRequestContent",
        "The request content was invalid: 'properties.roleDefinitionId' and 'properties.principalId' are required.",
      );
    }
    const defGuid = lc(roleDefinitionId.split("/").pop() ?? "");
    const def = this.roleDefinitions.get(defGuid);
    if (!def || !this.visibleRoleDefinitions(scope).includes(def)) {
      throw new ArmError(
        400,
        "RoleDefinitionDoesNotExist",
        `The specified role definition with ID '${defGuid}' does not exist.`,
      );
    }
    const knownType = this.principalType(principalId);
    if (!isGuid(principalId) || !knownType) {
      const tenant = this.subscriptions.get(lc(scopeSegments[1] ?? ""))?.tenantId ?? lc(r.claims.tid);
      throw new ArmError(
        400,
        "PrincipalNotFound",
        `Principal ${principalId.replace(/-/g, "")} does not exist in the directory ${tenant}. Check that you have the correct principal ID. If you are creating this principal and then immediately assigning a role, this error might be related to a replication delay. In this case, set the role assignment principalType property to a value, such as ServicePrincipal, User, or Group.  See https://aka.ms/docs-principaltype`,
      );
    }
    const key = lc(`${scope === "/" ? "" : scope}/providers/Microsoft.Authorization/roleAssignments/${name}`);
    const existing = this.roleAssignments.get(key);
    if (existing) {
      if (existing.principalId !== lc(principalId) || existing.roleDefinitionGuid !== defGuid) {
        throw new ArmError(
          400,
          "RoleAssignmentUpdateNotPermitted",
          "Tenant ID, application ID, principal ID, and scope are not allowed to be updated.",
        );
      }
      return { status: 201, body: this.roleAssignmentJson(existing) };
    }
    for (const ra of this.roleAssignments.values()) {
      if (lc(ra.scope) === lc(scope) && ra.principalId === lc(principalId) && ra.roleDefinitionGuid === defGuid) {
        throw new ArmError(409, "RoleAssignmentExists", "The role assignment already exists.");
      }
    }
    const now = armTimestamp();
    const rec: RoleAssignmentRecord = {
      scope,
      name: lc(name),
      roleDefinitionId: this.roleDefinitionIdFor(scopeSegments, def.id),
      roleDefinitionGuid: defGuid,
      principalId: lc(principalId),
      principalType: typeof props.principalType === "string" ? props.principalType : knownType,
      description: typeof props.description === "string" ? props.description : null,
      condition: typeof props.condition === "string" ? props.condition : null,
      conditionVersion: typeof props.conditionVersion === "string" ? props.conditionVersion : null,
      createdOn: now,
      updatedOn: now,
      createdBy: null,
      updatedBy: r.claims.oid,
    };
    this.roleAssignments.set(key, rec);
    return { status: 201, body: this.roleAssignmentJson(rec) };
  }

  private listRoleAssignments(r: ArmRequest): ResponseSpec {
    const { scope, scopeSegments } = this.authzScope(r.segments);
    this.checkScopeExists(scopeSegments);
    let atScope = false;
    let principal: string | undefined;
    const filter = r.query.get("$filter");
    if (filter) {
      for (const clause of filter.split(/\s+and\s+/i)) {
        let m: RegExpExecArray | null;
        if (/^\s*atScope\(\)\s*$/i.test(clause)) atScope = true;
        else if ((m = /^\s*principalId\s+eq\s+'([^']*)'\s*$/i.exec(clause))) principal = lc(m[1]!);
        else if ((m = /^\s*assignedTo\('([^']*)'\)\s*$/i.exec(clause))) principal = lc(m[1]!);
        else {
          throw new ArmError(
            400,
            "UnsupportedQuery",
            `The filter '${filter}' is not supported. Supported: atScope(), principalId eq '{id}', assignedTo('{id}').`,
          );
        }
      }
    }
    const items = [...this.roleAssignments.values()].filter(
      (ra) =>
        (isAncestorOrSelf(ra.scope, scope) || (!atScope && isAncestorOrSelf(scope, ra.scope))) &&
        (principal === undefined || ra.principalId === principal),
    );
    return this.page(
      r,
      items.map((ra) => this.roleAssignmentJson(ra)),
      this.opts.pageSize.roleAssignments,
    );
  }
}
