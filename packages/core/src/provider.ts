import type { Cluster } from "./platform.js";

/**
 * Where the controller gets the values it writes to `platform-vars` and the ASO credential secrets.
 * Implementations: static platform config (apps/controller), live Azure discovery (packages/azure).
 * A provider answers with complete values or throws; it never returns empty strings or partial objects,
 * so nothing half-known is ever written.
 */

/** Facts about the cluster and its subscription, as discovered (or configured). */
export interface ClusterFacts {
  tenantId: string;
  subscriptionId: string;
  /** The AKS cluster's OIDC issuer URL (oidcIssuerProfile.issuerURL). */
  oidcIssuerUrl: string;
  /** Azure region for team resources. */
  location: string;
}

/** The identity ASO uses for the platform's own ASO resources (the team identities, groups, ...). */
export interface PlatformCredential {
  tenantId: string;
  subscriptionId: string;
  clientId: string;
}

/** A team's user-assigned identity, as ASO exported it or as Azure reports it. */
export interface TeamIdentity {
  clientId: string;
  principalId: string;
  tenantId: string;
}

export interface PlatformValuesProvider {
  clusterFacts(cluster: Cluster): Promise<ClusterFacts>;
  platformCredential(cluster: Cluster): Promise<PlatformCredential>;
  /**
   * The team identity from Azure, for when ASO's ConfigMap is missing or to verify it. Undefined when the
   * identity does not exist (yet). Optional: the static provider cannot know it.
   */
  teamIdentity?(team: string, cluster: Cluster): Promise<TeamIdentity | undefined>;
  /**
   * The GUID of the role definition Azure calls `roleName` in the cluster's subscription; undefined when
   * there is none. Optional (live discovery only): it checks the role catalog's ids against their names.
   */
  roleDefinitionId?(cluster: Cluster, roleName: string): Promise<string | undefined>;
  /**
   * The registration state ("Registered", "NotRegistered", "Registering", ...) of a resource provider
   * namespace in the cluster's subscription; undefined when Azure does not know the namespace. Optional.
   */
  resourceProviderState?(cluster: Cluster, namespace: string): Promise<string | undefined>;
}

/**
 * Thrown by a provider when a value is not known (yet); the caller retries later and writes nothing.
 * `reason` names the cause in one CamelCase word and `severity` says, as ASO does, whether it may pass on
 * its own ("Warning": Azure unreachable, throttled) or needs a person ("Error": no OIDC issuer, a value
 * missing from platform config).
 */
export class ValueUnavailableError extends Error {
  override readonly name = "ValueUnavailableError";
  readonly reason: string;
  readonly severity: "Error" | "Warning";

  constructor(message: string, options: { cause?: unknown; reason?: string; severity?: "Error" | "Warning" } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = options.reason ?? "ProviderUnavailable";
    this.severity = options.severity ?? "Warning";
  }
}
