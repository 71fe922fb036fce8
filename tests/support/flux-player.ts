/**
 * Plays Flux and Azure Service Operator on a test cluster for one team, from what Berth committed:
 *
 * - `applyTeam` does what Flux's kustomize-controller does for `clusters/<cluster>/teams/<shard>/<team>.yaml`:
 *   it creates that Kustomization, builds `teams/<team>/clusters/<cluster>` (the team's base plus the
 *   cluster's ASO objects), substitutes `${VARS}` from the `platform-vars` ConfigMap the controller
 *   wrote (strictly, as Flux 2.9 does), applies every object, and marks the Kustomization Ready.
 * - `asoStatus` / `writeIdentity` do what ASO does once Azure answers: Ready conditions (with reason and
 *   severity) on the team's objects of one kind, and the `<team>-identity` ConfigMap.
 *
 * The controller under test sees exactly the objects and statuses it sees in production.
 */
import { teamShard } from "@berth/core";
import { parseAllDocuments } from "yaml";
import { Admin, type Obj } from "../controller/helpers.js";
import { eventually } from "./wait.js";
import { inspectRemote } from "./git-remotes.js";

export const ASO_KINDS = {
  ResourceGroup: "resources.azure.com/v1api20200601",
  UserAssignedIdentity: "managedidentity.azure.com/v1api20230131",
  FederatedIdentityCredential: "managedidentity.azure.com/v1api20230131",
  RoleAssignment: "authorization.azure.com/v1api20220401",
} as const;
export type AsoKind = keyof typeof ASO_KINDS;

/** Flux's post-build substitution: `${VAR}`, `${VAR:=default}`, `${VAR:-default}`; an undefined VAR fails the build. */
export function substitute(text: string, vars: Record<string, string>, where: string): string {
  return text.replace(/(\$)?\$\{([A-Za-z_][A-Za-z0-9_]*)(?::[=-]([^}]*))?\}/g, (match, escaped: string | undefined, name: string, fallback: string | undefined) => {
    if (escaped) return match.slice(1);
    const value = vars[name] ?? fallback;
    if (value === undefined) throw new Error(`${where}: variable ${name} is not defined (Flux would fail the build)`);
    return value;
  });
}

export class FluxPlayer {
  constructor(
    readonly admin: Admin,
    readonly remoteUrl: string,
    readonly cluster: string,
    readonly asoNamespace = "flux-config",
  ) {}

  private async platformVars(): Promise<Record<string, string>> {
    const cm = await eventually(
      "platform-vars written by the controller",
      () => this.admin.get("v1", "ConfigMap", this.asoNamespace, "platform-vars"),
      60_000,
    );
    return (cm.data ?? {}) as Record<string, string>;
  }

  /** Reconciles the team's Kustomization on this cluster; returns the revision it applied. */
  async applyTeam(team: string): Promise<string> {
    const state = await inspectRemote(this.remoteUrl);
    const vars = await this.platformVars();
    const revision = `main@sha1:${state.head}`;
    const kustomizationFile = state.files.get(`clusters/${this.cluster}/teams/${teamShard(team)}/${team}.yaml`);
    if (!kustomizationFile) throw new Error(`team ${team} has no Flux Kustomization for ${this.cluster} in the repo`);
    const objects: Obj[] = [];
    const files = [...state.files.entries()].filter(
      ([path]) => (path.startsWith(`teams/${team}/base/`) || path.startsWith(`teams/${team}/clusters/${this.cluster}/`)) && !path.endsWith("/kustomization.yaml"),
    );
    for (const [path, text] of files) {
      for (const doc of parseAllDocuments(substitute(text, vars, path), { version: "1.1" })) {
        const obj = doc.toJS() as Obj | null;
        if (obj) objects.push(obj);
      }
    }
    // Namespaces first, as kustomize orders them.
    objects.sort((a, b) => Number(b.kind === "Namespace") - Number(a.kind === "Namespace"));
    for (const obj of objects) await this.admin.create(obj);

    const kustomization = parseAllDocuments(kustomizationFile, { version: "1.1" })[0]!.toJS() as Obj;
    await this.admin.create(kustomization);
    await this.admin.setStatus(kustomization, {
      lastAppliedRevision: revision,
      lastAttemptedRevision: revision,
      conditions: [{ type: "Ready", status: "True", reason: "ReconciliationSucceeded", message: `Applied revision: ${revision}`, lastTransitionTime: new Date().toISOString() }],
    });
    return revision;
  }

  /** Sets ASO's Ready condition on every object of `kind` labelled for the team. */
  async asoStatus(team: string, kind: AsoKind, ready: "True" | "False", extra: { reason?: string; severity?: string; message?: string } = {}): Promise<number> {
    const objects = await this.admin.list(ASO_KINDS[kind], kind, this.asoNamespace, `?labelSelector=${encodeURIComponent(`berth.dev/team=${team}`)}`);
    for (const obj of objects) {
      const generation = (obj.metadata as { generation?: number }).generation ?? 1;
      await this.admin.setStatus(obj, {
        conditions: [
          {
            type: "Ready",
            status: ready,
            reason: extra.reason ?? (ready === "True" ? "Succeeded" : "Reconciling"),
            ...(extra.severity ? { severity: extra.severity } : {}),
            ...(extra.message ? { message: extra.message } : {}),
            observedGeneration: generation,
            lastTransitionTime: new Date().toISOString(),
          },
        ],
      });
    }
    return objects.length;
  }

  /** What ASO exports once the team's managed identity exists. */
  async writeIdentity(team: string, clientId: string): Promise<void> {
    await this.admin.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: `${team}-identity`, namespace: this.asoNamespace },
      data: { clientId, principalId: "99999999-9999-4999-8999-999999999999", tenantId: "11111111-1111-4111-8111-111111111111" },
    });
  }
}
