/**
 * The ASO stand-in of the real-Flux platform (see AsoStandIn), and the ASO kinds Berth renders (core's table,
 * packages/core/src/aso-kinds.ts) by name.
 */
import { createHash } from "node:crypto";
import { ASO_KINDS, asoApiVersion, type AsoKindName } from "@berth/core";
import { startInformer, type Informer } from "@berth/kube-runtime";
import type { Admin, Obj } from "../controller/helpers.js";

/** Each ASO kind Berth renders (core's table) by name, with the apiVersion its templates write. */
export const ASO_API_VERSIONS = Object.fromEntries(ASO_KINDS.map((k) => [k.kind, asoApiVersion(k)])) as Record<
  AsoKindName,
  string
>;
const PLURALS = Object.fromEntries(ASO_KINDS.map((k) => [k.kind, k.plural])) as Record<AsoKindName, string>;
const ASO_FINALIZER = "serviceoperator.azure.com/finalizer";

/**
 * Plays Azure Service Operator where a test needs a state the real one does not reach against the fake Azure, or
 * measures Berth and Flux rather than ASO (docs/operations-test-cluster.md says which): for every ASO object of the four
 * kinds Berth renders, in the ASO namespace and in team namespaces, it adds ASO's finalizer, reports Ready for
 * the object's generation (or the failure a test scripts with `fail`), exports the `<team>-identity` ConfigMap a
 * Ready identity's operatorSpec asks for (owned by the identity, as ASO writes it), and, when the object is
 * deleted, releases the finalizer after `deleteDelayMs` (ASO deleting in Azure). It exports nothing else: the
 * issuer ConfigMaps of templates v3's credential chain are real ASO's (tests/flux/aso.test.ts). Started by
 * startFluxPlatform (tests/support/flux-platform.ts) unless a test asks for real ASO or none.
 */
export class AsoStandIn {
  /** team/kind → the Ready condition to report instead of success. */
  readonly failures = new Map<string, { reason: string; severity: "Error" | "Warning"; message: string }>();
  /** Teams whose objects get no status until `release` names their kind (a test walking the chain step by step). */
  private readonly held = new Map<string, Set<AsoKindName>>();
  deleteDelayMs = 1_000;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private readonly deletingSince = new Map<string, number>();
  /**
   * What each object was last settled at: its resourceVersion and the answer scripted for it. An object settled at
   * the same is not written or read again, as ASO, which watches, does not poll Azure or the apiserver for an object
   * that did not change: at 1,000 teams a GET of every identity's ConfigMap every tick kept the apiserver busy.
   */
  private readonly settledAt = new Map<string, string>();

  constructor(
    private readonly admin: Admin,
    /** The platform's tenant, which an identity's exported ConfigMap names. */
    private readonly tenantId: string,
  ) {}

  /** ASO reports this failure on the team's objects of `kind` (e.g. AuthorizationFailed, severity Error). */
  fail(
    team: string,
    kind: AsoKindName,
    failure: { reason: string; severity: "Error" | "Warning"; message: string },
  ): void {
    this.failures.set(`${team}/${kind}`, failure);
  }

  /** Report nothing for the team's objects (ASO has not answered yet) until their kind is released. */
  hold(team: string): void {
    this.held.set(team, new Set());
  }

  /** ASO answers for the team's objects of `kind` from now on (of every kind when none is named). */
  release(team: string, kind?: AsoKindName): void {
    if (kind === undefined) this.held.delete(team);
    else this.held.get(team)?.add(kind);
  }

  /**
   * Each kind's objects, cluster-wide, kept by a list and a watch as ASO's own informers keep them: a tick reads
   * them here, so a fleet of 1,000 teams costs the apiserver nothing between changes (a list of every object of
   * the four kinds at each tick was most of its work per onboarding in the Flux benchmark).
   */
  private informers: Array<{ kind: AsoKindName; apiVersion: string; objects: Informer<Obj> }> = [];

  start(intervalMs = 300): void {
    this.informers = (Object.entries(ASO_API_VERSIONS) as Array<[AsoKindName, string]>).map(([kind, apiVersion]) => ({
      kind,
      apiVersion,
      objects: startInformer<Obj>(
        this.admin.kc,
        { name: `aso-stand-in ${kind}`, path: `/apis/${apiVersion}/${PLURALS[kind]}` },
        () => {},
        { resyncMs: 0, backoffMaxMs: 2_000 },
      ),
    }));
    const tick = async () => {
      this.running = this.settle().catch(() => undefined);
      await this.running;
      this.timer = setTimeout(tick, intervalMs);
    };
    this.timer = setTimeout(tick, 0);
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
    for (const { objects } of this.informers) objects.stop();
  }

  private async settle(): Promise<void> {
    const listed = new Set<string>();
    for (const { kind, apiVersion, objects } of this.informers) {
      // A kind not listed yet (its CRD just installed, say) is settled once it is.
      if (!objects.hasSynced()) continue;
      for (const o of objects.list()) {
        listed.add(this.keyOf(kind, o));
        await this.settleOne(kind, apiVersion, o);
      }
    }
    // Forget what is gone, as an informer's cache does: a team offboarded and onboarded again starts afresh.
    for (const key of this.settledAt.keys()) if (!listed.has(key)) this.settledAt.delete(key);
    for (const key of this.deletingSince.keys()) if (!listed.has(key)) this.deletingSince.delete(key);
  }

  private keyOf(kind: AsoKindName, o: Obj): string {
    return `${o.metadata.namespace}/${kind}/${o.metadata.name}`;
  }

  private async settleOne(kind: AsoKindName, apiVersion: string, o: Obj): Promise<void> {
    const key = this.keyOf(kind, o);
    const path = await this.admin.path(apiVersion, kind, o.metadata.namespace, o.metadata.name);
    const finalizers = (o.metadata.finalizers as string[] | undefined) ?? [];
    if (o.metadata.deletionTimestamp) {
      const since = this.deletingSince.get(key) ?? Date.now();
      this.deletingSince.set(key, since);
      if (finalizers.includes(ASO_FINALIZER) && Date.now() - since >= this.deleteDelayMs) {
        await this.admin.req(
          "PATCH",
          path,
          {
            metadata: {
              finalizers: finalizers.filter((f) => f !== ASO_FINALIZER),
              resourceVersion: o.metadata.resourceVersion,
            },
          },
          "application/merge-patch+json",
        );
      }
      return;
    }
    const hadFinalizer = finalizers.includes(ASO_FINALIZER);
    if (!hadFinalizer) {
      await this.admin.req(
        "PATCH",
        path,
        { metadata: { finalizers: [...finalizers, ASO_FINALIZER], resourceVersion: o.metadata.resourceVersion } },
        "application/merge-patch+json",
      );
    }
    const team = (o.metadata.labels as Record<string, string> | undefined)?.["berth.dev/team"];
    const released = team === undefined ? undefined : this.held.get(team);
    if (released && !released.has(kind)) return;
    const failure = team === undefined ? undefined : this.failures.get(`${team}/${kind}`);
    const answer = `${o.metadata.resourceVersion} ${JSON.stringify(failure ?? null)}`;
    if (hadFinalizer && this.settledAt.get(key) === answer) return;
    const generation = o.metadata.generation as number;
    const want = failure
      ? { type: "Ready", status: "False", ...failure }
      : { type: "Ready", status: "True", reason: "Succeeded", message: "Resource successfully provisioned" };
    const current = ((o.status as { conditions?: Array<Record<string, unknown>> } | undefined)?.conditions ?? []).find(
      (c) => c.type === "Ready",
    );
    const wrote =
      !current ||
      current.status !== want.status ||
      current.reason !== want.reason ||
      current.observedGeneration !== generation;
    if (wrote) {
      await this.admin.req(
        "PATCH",
        `${path}/status`,
        {
          status: {
            conditions: [{ ...want, observedGeneration: generation, lastTransitionTime: new Date().toISOString() }],
          },
        },
        "application/merge-patch+json",
      );
    }
    if (kind === "UserAssignedIdentity" && !failure) await this.exportIdentity(o);
    // Settled at this resourceVersion only if nothing above wrote it (a write makes a new one, seen next tick).
    if (hadFinalizer && !wrote) this.settledAt.set(key, answer);
  }

  /** The ConfigMap an identity's `operatorSpec.configMaps` asks for, as ASO writes it (owned by the identity). */
  private async exportIdentity(identity: Obj): Promise<void> {
    const maps = ((identity.spec as { operatorSpec?: { configMaps?: Record<string, { name: string; key: string }> } })
      .operatorSpec?.configMaps ?? {}) as Record<string, { name: string; key: string }>;
    const team =
      (identity.metadata.labels as Record<string, string> | undefined)?.["berth.dev/team"] ?? identity.metadata.name;
    const values: Record<string, string> = {
      clientId: uuidFor(`${team}/client`),
      principalId: uuidFor(`${team}/principal`),
      tenantId: this.tenantId,
    };
    const byMap = new Map<string, Record<string, string>>();
    for (const [field, ref] of Object.entries(maps)) {
      if (values[field] === undefined) continue;
      byMap.set(ref.name, { ...(byMap.get(ref.name) ?? {}), [ref.key]: values[field]! });
    }
    for (const [name, data] of byMap) {
      const existing = await this.admin.get("v1", "ConfigMap", identity.metadata.namespace!, name);
      if (existing && JSON.stringify(existing.data) === JSON.stringify(data)) continue;
      const body = {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
          name,
          namespace: identity.metadata.namespace,
          ownerReferences: [
            {
              apiVersion: identity.apiVersion,
              kind: identity.kind,
              name: identity.metadata.name,
              uid: identity.metadata.uid,
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        },
        data,
      };
      await this.admin.req(
        "PATCH",
        `/api/v1/namespaces/${identity.metadata.namespace}/configmaps/${name}?fieldManager=azureserviceoperator&force=true`,
        body,
        "application/apply-patch+yaml",
      );
    }
  }
}

/** A stable UUID-shaped value per input (what Azure would have assigned). */
function uuidFor(seed: string): string {
  const s = createHash("sha256").update(seed).digest("hex");
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-4${s.slice(13, 16)}-8${s.slice(17, 20)}-${s.slice(20, 32)}`;
}
