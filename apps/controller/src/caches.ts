/**
 * Typed reads over the informer stores (what is watched and kept: watches.ts). A reconcile pass reads through
 * `recording()`, so what it was handed is known: the team reconciler's memo is keyed on exactly those reads.
 */
import { teamNames, type Platform } from "@berth/core";
import { ACCESS_FINALIZER, ASO_KINDS, TEAM_ROLE_BINDING } from "./names.js";
import {
  isDeleting,
  type ConfigMapLike,
  type KubeObject,
  type KustomizationLike,
  type SecretLike,
  type TeamObject,
  type WithConditions,
} from "./reconcile/objects.js";
import { PLATFORM_CREDENTIAL_SECRET } from "./reconcile/platform.js";
import { BY_CLIENT_ID, BY_TEAM, byTeamLabel, type Store, type WatchName } from "./watches.js";

/**
 * What one pass was handed by the caches: each read (an object by name, an index lookup, a list) and the
 * resourceVersions it returned. `unchanged()` asks the stores again: true when every read would return the
 * same versions, i.e. the pass would see what it saw. A read added to a pass is recorded like any other.
 */
export class RecordedReads {
  private readonly reads = new Map<string, { again: () => string; seen: string }>();

  /** The first read of `key` in a pass counts: a later change shows in `unchanged()`. */
  record(key: string, again: () => string, seen: string): void {
    if (!this.reads.has(key)) this.reads.set(key, { again, seen });
  }

  unchanged(): boolean {
    for (const read of this.reads.values()) if (read.again() !== read.seen) return false;
    return true;
  }

  get size(): number {
    return this.reads.size;
  }
}

const versionOf = (o: KubeObject | undefined) => o?.metadata?.resourceVersion ?? "-";
const versionsOf = (list: KubeObject[]) => list.map(versionOf).sort().join(",");

/** `store`, with every read it answers recorded in `reads` under `watch`. */
function recordingStore(watch: string, store: Store<KubeObject>, reads: RecordedReads): Store<KubeObject> {
  const { byIndex } = store;
  return {
    get: (namespace, name) => {
      const again = () => versionOf(store.get(namespace, name));
      const o = store.get(namespace, name);
      reads.record(`${watch} ${namespace ?? ""}/${name}`, again, versionOf(o));
      return o;
    },
    list: () => {
      const list = store.list();
      reads.record(`${watch} *`, () => versionsOf(store.list()), versionsOf(list));
      return list;
    },
    ...(byIndex && {
      byIndex: (index: string, value: string) => {
        const list = byIndex.call(store, index, value);
        reads.record(
          `${watch} ${index}=${value}`,
          () => versionsOf(byIndex.call(store, index, value)),
          versionsOf(list),
        );
        return list;
      },
    }),
  };
}

/** Typed reads over the informer stores. */
export class Caches {
  private readonly recorded = new Map<WatchName, Store<KubeObject>>();

  constructor(
    private readonly platform: Platform,
    private readonly stores: Record<WatchName, Store<KubeObject>>,
    private readonly reads?: RecordedReads,
  ) {}

  /** These caches, over the same stores, with every read recorded: for a pass whose result is memoized. */
  recording(): { caches: Caches; reads: RecordedReads } {
    const reads = new RecordedReads();
    return { caches: new Caches(this.platform, this.stores, reads), reads };
  }

  /** A watch's store (recording, for a recording view); an ASO kind's may be absent (not watched). */
  private store(watch: Exclude<WatchName, `aso:${string}`>): Store<KubeObject>;
  private store(watch: WatchName): Store<KubeObject> | undefined;
  private store(watch: WatchName): Store<KubeObject> | undefined {
    const store = this.stores[watch];
    if (!this.reads || !store) return store;
    let recording = this.recorded.get(watch);
    if (!recording) this.recorded.set(watch, (recording = recordingStore(watch, store, this.reads)));
    return recording;
  }

  private indexed(
    store: Store<KubeObject> | undefined,
    index: string,
    value: string,
    fallback: (o: KubeObject) => string[],
  ): KubeObject[] {
    if (!store) return [];
    if (store.byIndex) return store.byIndex(index, value);
    return store.list().filter((o) => fallback(o).includes(value));
  }

  team(name: string): TeamObject | undefined {
    return this.store("teams").get(undefined, name) as TeamObject | undefined;
  }

  teamNames(): string[] {
    const names = new Set<string>();
    for (const t of this.store("teams").list()) if (t.metadata?.name) names.add(t.metadata.name);
    // Teams whose Team object is gone but whose credential is still there (offboarding in progress).
    for (const s of this.store("teamSecrets").list())
      if (s.metadata?.namespace && s.metadata.name === "aso-credential") names.add(s.metadata.namespace);
    // ...and whose RoleBinding still waits for the controller to release it (offboarding's last step).
    for (const rb of this.store("roleBindings").list()) {
      if (rb.metadata?.namespace && isDeleting(rb) && rb.metadata.finalizers?.includes(ACCESS_FINALIZER))
        names.add(rb.metadata.namespace);
    }
    return [...names].sort();
  }

  identity(team: string): ConfigMapLike | undefined {
    return this.store("asoConfigMaps").get(this.platform.asoNamespace, teamNames(team).identityConfigMap) as
      ConfigMapLike | undefined;
  }

  /** The team whose `<team>-identity` ConfigMap carries `clientId`: to name the team a tampered credential points at. */
  clientIdOwner(clientId: string): string | undefined {
    const owners = this.indexed(this.store("asoConfigMaps"), BY_CLIENT_ID, clientId, (o) => {
      const id = (o as ConfigMapLike).data?.clientId?.trim();
      return id && (o.metadata?.name ?? "").endsWith("-identity") ? [id] : [];
    });
    const name = owners.map((o) => o.metadata?.name ?? "").sort()[0];
    return name ? name.slice(0, -9) : undefined;
  }

  /** A ConfigMap of the ASO namespace by name (a chained credential's issuer ConfigMap). */
  asoConfigMap(name: string): ConfigMapLike | undefined {
    return this.store("asoConfigMaps").get(this.platform.asoNamespace, name) as ConfigMapLike | undefined;
  }

  platformVars(): ConfigMapLike | undefined {
    return this.store("asoConfigMaps").get(this.platform.asoNamespace, this.platform.platformVarsConfigMap) as
      ConfigMapLike | undefined;
  }

  platformSecret(): SecretLike | undefined {
    return this.store("asoSecrets").get(this.platform.asoNamespace, PLATFORM_CREDENTIAL_SECRET) as
      SecretLike | undefined;
  }

  teamSecret(team: string): SecretLike | undefined {
    const n = teamNames(team);
    return this.store("teamSecrets").get(n.namespace, n.asoCredentialSecret) as SecretLike | undefined;
  }

  serviceAccount(team: string): KubeObject | undefined {
    const n = teamNames(team);
    return this.store("serviceAccounts").get(n.namespace, n.serviceAccount);
  }

  /** The team's RoleBinding berth-controller (the controller's write access in the team namespace). */
  roleBinding(team: string): KubeObject | undefined {
    return this.store("roleBindings").get(teamNames(team).namespace, TEAM_ROLE_BINDING);
  }

  kustomization(team: string): KustomizationLike | undefined {
    return this.store("kustomizations").get(this.platform.asoNamespace, teamNames(team).fluxKustomization) as
      KustomizationLike | undefined;
  }

  /** The team's ASO objects in the ASO namespace, by kind (an index lookup, not a scan). */
  asoObjects(team: string): Record<string, WithConditions[]> {
    const out: Record<string, WithConditions[]> = {};
    for (const k of ASO_KINDS)
      out[k.kind] = this.indexed(this.store(`aso:${k.kind}`), BY_TEAM, team, byTeamLabel) as WithConditions[];
    return out;
  }
}
