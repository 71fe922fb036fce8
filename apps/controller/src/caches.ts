import { teamNames, type Platform } from "@berth/core";
import {
  ACCESS_FINALIZER,
  ASO_KINDS,
  FLUX_KUSTOMIZATION,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  PLATFORM_KEY,
  TEAM_GROUP,
  TEAM_LABEL,
  TEAM_PLURAL,
  TEAM_ROLE_BINDING,
  TEAM_VERSION,
  teamKey,
} from "./names.js";
import { isDeleting, type ConfigMapLike, type KubeObject, type KustomizationLike, type SecretLike, type TeamObject, type WithConditions } from "./reconcile/objects.js";
import { PLATFORM_CREDENTIAL_SECRET } from "./reconcile/platform.js";

/**
 * What the controller watches, and which work-queue keys a change of each object maps to. Informers only
 * enqueue keys; reconcilers read these caches (never the events) to decide.
 */

/** The read side of an informer handle. */
export interface Store<T> {
  get(namespace: string | undefined, name: string): T | undefined;
  list(): T[];
}

export interface WatchSpec {
  name: string;
  /** Collection path the informer lists and watches. */
  path: string;
  labelSelector?: string;
  /**
   * Sent with the list and the watch. `metadata.name=<name>` lets RBAC authorize the list/watch against
   * `resourceNames` (the apiserver treats it as a request for that name).
   */
  fieldSelector?: string;
  /** Work-queue keys an object of this watch maps to. */
  keys(obj: KubeObject): string[];
}

/** The controller's watches, for one platform config. Paths are the exact collections RBAC grants. */
export function watchSpecs(platform: Platform): Record<WatchName, WatchSpec> {
  const aso = platform.asoNamespace;
  const nameOf = (o: KubeObject) => o.metadata?.name ?? "";
  const labelTeam = (o: KubeObject) => (o.metadata?.labels?.[TEAM_LABEL] ? [teamKey(o.metadata.labels[TEAM_LABEL])] : []);
  const asoSpecs = Object.fromEntries(
    ASO_KINDS.map((k) => [
      `aso:${k.kind}`,
      { name: `aso-${k.plural}`, path: `/apis/${k.group}/${k.version}/namespaces/${aso}/${k.plural}`, labelSelector: TEAM_LABEL, keys: labelTeam },
    ]),
  ) as Record<`aso:${string}`, WatchSpec>;
  return {
    teams: { name: "teams", path: `/apis/${TEAM_GROUP}/${TEAM_VERSION}/${TEAM_PLURAL}`, keys: (o) => [teamKey(nameOf(o))] },
    asoConfigMaps: {
      name: "aso-configmaps",
      path: `/api/v1/namespaces/${aso}/configmaps`,
      keys: (o) => {
        const name = nameOf(o);
        if (name === platform.platformVarsConfigMap) return [PLATFORM_KEY];
        return name.endsWith("-identity") && name.length > 9 ? [teamKey(name.slice(0, -9))] : [];
      },
    },
    asoSecrets: {
      name: "aso-secrets",
      path: `/api/v1/namespaces/${aso}/secrets`,
      labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}`,
      keys: (o) => (nameOf(o) === PLATFORM_CREDENTIAL_SECRET ? [PLATFORM_KEY] : []),
    },
    teamSecrets: {
      name: "team-secrets",
      path: "/api/v1/secrets",
      labelSelector: TEAM_LABEL,
      keys: (o) => {
        if (nameOf(o) !== "aso-credential" || o.metadata?.namespace === aso) return [];
        // The namespace is the team; a label naming another team is tampering, so look at both.
        return [...new Set([teamKey(o.metadata?.namespace ?? ""), ...labelTeam(o)])];
      },
    },
    serviceAccounts: {
      name: "serviceaccounts",
      path: "/api/v1/serviceaccounts",
      labelSelector: TEAM_LABEL,
      keys: (o) => (nameOf(o) === "workload" ? [teamKey(o.metadata?.namespace ?? "")] : []),
    },
    // The controller's own RoleBinding in each team namespace: offboarding releases its finalizer last.
    // Name-selected, so RBAC grants the list/watch for that name only.
    roleBindings: {
      name: "rolebindings",
      path: "/apis/rbac.authorization.k8s.io/v1/rolebindings",
      fieldSelector: `metadata.name=${TEAM_ROLE_BINDING}`,
      labelSelector: TEAM_LABEL,
      keys: (o) => (nameOf(o) === TEAM_ROLE_BINDING && o.metadata?.namespace && o.metadata.namespace !== aso ? [teamKey(o.metadata.namespace)] : []),
    },
    kustomizations: {
      name: "kustomizations",
      path: `/apis/${FLUX_KUSTOMIZATION.group}/${FLUX_KUSTOMIZATION.version}/namespaces/${aso}/${FLUX_KUSTOMIZATION.plural}`,
      labelSelector: TEAM_LABEL,
      keys: labelTeam,
    },
    ...asoSpecs,
  };
}

export type WatchName = "teams" | "asoConfigMaps" | "asoSecrets" | "teamSecrets" | "serviceAccounts" | "roleBindings" | "kustomizations" | `aso:${string}`;

/** Typed reads over the informer stores. */
export class Caches {
  constructor(
    private readonly platform: Platform,
    private readonly stores: Record<WatchName, Store<KubeObject>>,
  ) {}

  team(name: string): TeamObject | undefined {
    return this.stores.teams.get(undefined, name) as TeamObject | undefined;
  }

  teamNames(): string[] {
    const names = new Set<string>();
    for (const t of this.stores.teams.list()) if (t.metadata?.name) names.add(t.metadata.name);
    // Teams whose Team object is gone but whose credential is still there (offboarding in progress).
    for (const s of this.stores.teamSecrets.list()) if (s.metadata?.namespace && s.metadata.name === "aso-credential") names.add(s.metadata.namespace);
    // ...and whose RoleBinding still waits for the controller to release it (offboarding's last step).
    for (const rb of this.stores.roleBindings.list()) {
      if (rb.metadata?.namespace && isDeleting(rb) && rb.metadata.finalizers?.includes(ACCESS_FINALIZER)) names.add(rb.metadata.namespace);
    }
    return [...names].sort();
  }

  identity(team: string): ConfigMapLike | undefined {
    return this.stores.asoConfigMaps.get(this.platform.asoNamespace, teamNames(team).identityConfigMap) as ConfigMapLike | undefined;
  }

  /** clientId → team, from every `<team>-identity` ConfigMap: to name the team a tampered credential points at. */
  clientIdOwners(): Map<string, string> {
    const owners = new Map<string, string>();
    for (const cm of this.stores.asoConfigMaps.list() as ConfigMapLike[]) {
      const name = cm.metadata?.name ?? "";
      const id = cm.data?.clientId?.trim();
      if (id && name.endsWith("-identity")) owners.set(id, name.slice(0, -9));
    }
    return owners;
  }

  platformVars(): ConfigMapLike | undefined {
    return this.stores.asoConfigMaps.get(this.platform.asoNamespace, this.platform.platformVarsConfigMap) as ConfigMapLike | undefined;
  }

  platformSecret(): SecretLike | undefined {
    return this.stores.asoSecrets.get(this.platform.asoNamespace, PLATFORM_CREDENTIAL_SECRET) as SecretLike | undefined;
  }

  teamSecret(team: string): SecretLike | undefined {
    const n = teamNames(team);
    return this.stores.teamSecrets.get(n.namespace, n.asoCredentialSecret) as SecretLike | undefined;
  }

  serviceAccount(team: string): KubeObject | undefined {
    const n = teamNames(team);
    return this.stores.serviceAccounts.get(n.namespace, n.serviceAccount);
  }

  /** The team's RoleBinding berth-controller (the controller's write access in the team namespace). */
  roleBinding(team: string): KubeObject | undefined {
    return this.stores.roleBindings.get(teamNames(team).namespace, TEAM_ROLE_BINDING);
  }

  kustomization(team: string): KustomizationLike | undefined {
    return this.stores.kustomizations.get(this.platform.asoNamespace, teamNames(team).fluxKustomization) as KustomizationLike | undefined;
  }

  /** The team's ASO objects in the ASO namespace, by kind. */
  asoObjects(team: string): Record<string, WithConditions[]> {
    const out: Record<string, WithConditions[]> = {};
    for (const k of ASO_KINDS) {
      out[k.kind] = (this.stores[`aso:${k.kind}`]?.list() ?? []).filter((o) => o.metadata?.labels?.[TEAM_LABEL] === team) as WithConditions[];
    }
    return out;
  }
}
