import { ValueUnavailableError, type Cluster, type Platform, type PlatformValuesProvider } from "@berth/core";

/**
 * Checks of the platform in Azure that ASO cannot make: ASO reconciles each resource it is given, so a
 * catalog role id that names another role than the catalog says is granted without complaint, and an
 * unregistered resource provider shows only as every team's identity failing, one by one. Berth checks
 * both once per cluster, from live discovery (the static provider has no Azure to ask).
 *
 * Microsoft.Resources and Microsoft.Authorization (resource groups, role assignments) cannot be
 * unregistered; the identities and their federated credentials need Microsoft.ManagedIdentity.
 */
export const REQUIRED_RESOURCE_PROVIDERS = ["Microsoft.ManagedIdentity"] as const;

export interface PlatformFinding {
  /** The Warning Event's reason. */
  reason: "RoleCatalogMismatch" | "RoleNotFound" | "RoleNameAmbiguous" | "ResourceProviderNotRegistered";
  message: string;
}

/**
 * The findings for `cluster` ([] = all good); undefined when the provider has no Azure; `{ skipped }` when
 * Azure does not answer now or refuses (no read permission): not a finding (an outage is
 * PlatformValuesFresh's to report).
 */
export async function platformFindings(
  provider: PlatformValuesProvider,
  platform: Platform,
  cluster: Cluster,
  subscriptionId: string,
): Promise<PlatformFinding[] | { skipped: string } | undefined> {
  const { roleDefinitionId, resourceProviderState } = provider;
  if (!roleDefinitionId || !resourceProviderState) return undefined;
  const where = `in subscription ${subscriptionId} (cluster ${cluster.name})`;
  try {
    const roles = platform.roleCatalog.flatMap((entry) =>
      entry.roleName ? [{ entry, roleName: entry.roleName }] : [],
    );
    const [roleFindings, providerFindings] = await Promise.all([
      Promise.all(
        roles.map(async ({ entry, roleName }): Promise<PlatformFinding | undefined> => {
          let id: string | undefined;
          try {
            id = await roleDefinitionId.call(provider, cluster, roleName);
          } catch (err) {
            // Several roles with one name: which one the catalog meant needs a person, not a retry.
            if (err instanceof ValueUnavailableError && err.severity === "Error")
              return {
                reason: "RoleNameAmbiguous",
                message: `role catalog entry '${entry.id}': ${err.message} ${where}`,
              };
            throw err;
          }
          if (id === undefined)
            return {
              reason: "RoleNotFound",
              message: `role catalog entry '${entry.id}': no role named '${roleName}' ${where}; its roleDefinitionId ${entry.roleDefinitionId} cannot be checked`,
            };
          if (id !== entry.roleDefinitionId.toLowerCase()) {
            return {
              reason: "RoleCatalogMismatch",
              message: `role catalog entry '${entry.id}' grants roleDefinitionId ${entry.roleDefinitionId}, but '${roleName}' is ${id} ${where}: teams get another role than the catalog names`,
            };
          }
          return undefined;
        }),
      ),
      Promise.all(
        REQUIRED_RESOURCE_PROVIDERS.map(async (namespace): Promise<PlatformFinding | undefined> => {
          const state = await resourceProviderState.call(provider, cluster, namespace);
          if (state === "Registered") return undefined;
          return {
            reason: "ResourceProviderNotRegistered",
            message: `${namespace} is ${state ?? "unknown to ARM"} ${where}: ASO cannot create the team identities until it is registered (az provider register --namespace ${namespace})`,
          };
        }),
      ),
    ]);
    return [...roleFindings, ...providerFindings].filter((f): f is PlatformFinding => f !== undefined);
  } catch (err) {
    if (err instanceof ValueUnavailableError) return { skipped: err.message };
    throw err;
  }
}
