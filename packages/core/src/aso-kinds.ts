/**
 * The Azure Service Operator kinds a team's templates render, in the order their Team conditions chain: one table
 * the controller (watches, status, offboarding), the test harness's ASO stand-in and the install's RBAC are held to
 * (tests/install/aso-kinds.test.ts). Adding a kind: docs/templates.md, "Adding an ASO kind".
 */
export const ASO_KINDS = [
  {
    group: "resources.azure.com",
    version: "v1api20200601",
    plural: "resourcegroups",
    kind: "ResourceGroup",
    condition: "ResourceGroupReady",
  },
  {
    group: "managedidentity.azure.com",
    version: "v1api20230131",
    plural: "userassignedidentities",
    kind: "UserAssignedIdentity",
    condition: "IdentityReady",
  },
  {
    group: "managedidentity.azure.com",
    version: "v1api20230131",
    plural: "federatedidentitycredentials",
    kind: "FederatedIdentityCredential",
    condition: "FederatedCredentialsReady",
  },
  {
    group: "authorization.azure.com",
    version: "v1api20220401",
    plural: "roleassignments",
    kind: "RoleAssignment",
    condition: "RoleAssignmentsReady",
  },
] as const satisfies ReadonlyArray<{ group: string; version: string; plural: string; kind: string; condition: string }>;

export type AsoKind = (typeof ASO_KINDS)[number];
export type AsoKindName = AsoKind["kind"];
/** The Team condition that sums up one ASO kind's Ready conditions. */
export type AsoKindCondition = AsoKind["condition"];

/** `group/version`, as a manifest's apiVersion names the kind. */
export const asoApiVersion = (k: Pick<AsoKind, "group" | "version">): string => `${k.group}/${k.version}`;
