/**
 * Templates v5 (ADR 0024) with real Flux: one file of resources per folder instead of one file per template. A team
 * moved from v4 to v5 by a rollout keeps every object it had: Flux applies the same objects from new files, so the
 * team's Kustomization prunes nothing and its inventory is the same list. The apiserver's audit log of deletes shows
 * not one delete request; the namespace and every object keep their uids. A team onboarded on v5 is applied from
 * the two resources.yaml files alone.
 */
// needs: cluster dist
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devTeamsSeed } from "../support/fleet-seed.js";
import {
  answeredDeletes,
  apiRequest,
  ASO_NAMESPACE,
  startFluxPlatform,
  type FluxPlatform,
} from "../support/flux-platform.js";
import { inspectRemote } from "../support/git-remotes.js";
import type { Obj } from "../controller/helpers.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const CLUSTER = "aks-dev-weu";

type Inventory = { entries: Array<{ id: string; v: string }> };
const inventoryOf = (k: Obj | undefined) =>
  ((k?.status as { inventory?: Inventory } | undefined)?.inventory?.entries ?? []).map((e) => e.id).sort();
/** The kinds of an inventory (an id is `<namespace>_<name>_<group>_<kind>`). */
const kindsOf = (ids: string[]) => [...new Set(ids.map((id) => id.split("_").at(-1)))].sort();
/** What a team's folders hold on v4 and v5 (with one role assignment). */
const TEAM_KINDS = [
  "FederatedIdentityCredential",
  "LimitRange",
  "Namespace",
  "ResourceGroup",
  "ResourceQuota",
  "RoleAssignment",
  "RoleBinding",
  "ServiceAccount",
  "Team",
  "UserAssignedIdentity",
];

describe("templates v5 with real Flux: a rollout from v4 keeps every object, a new team is applied", () => {
  let platform: FluxPlatform;

  beforeAll(async () => {
    platform = await startFluxPlatform({
      platform: (p) => (p.templateVersion = "v4"),
      seed: devTeamsSeed(["alpha", "bravo"], OWNER),
    });
  }, 300_000);

  afterAll(async () => {
    await platform?.stop();
  });

  it("moves alpha from v4 to v5: same inventory, same objects, nothing deleted; bravo is not touched", async () => {
    const seeded = await platform.head();
    const alpha = await platform.waitKustomizationReady(ASO_NAMESPACE, "team-alpha", seeded, 180_000);
    await platform.waitKustomizationReady(ASO_NAMESPACE, "team-bravo", seeded, 180_000);
    const inventory = inventoryOf(alpha);
    expect(kindsOf(inventory)).toEqual(TEAM_KINDS.filter((k) => k !== "RoleAssignment"));
    const namespaceUid = (await platform.admin.get("v1", "Namespace", undefined, "alpha"))!.metadata.uid;
    const bravo = (await platform.kustomization(ASO_NAMESPACE, "team-bravo"))!;

    const res = await platform.request("POST", "/v1/rollouts", {
      description: "alpha to v5",
      target: { templateVersion: "v5" },
      selector: { names: ["alpha"] },
    });
    expect(res.statusCode, res.body).toBe(201);
    const revision = res.json.revision as string;

    const files = (await inspectRemote(platform.repoUrl, "main", platform.gitEnv)).files;
    const alphaFiles = [...files.keys()].filter((p) => p.startsWith("teams/alpha/")).sort();
    expect(alphaFiles).toEqual([
      "teams/alpha/base/kustomization.yaml",
      "teams/alpha/base/resources.yaml",
      "teams/alpha/base/team.yaml",
      `teams/alpha/clusters/${CLUSTER}/kustomization.yaml`,
      `teams/alpha/clusters/${CLUSTER}/resources.yaml`,
    ]);

    const moved = await platform.waitKustomizationReady(ASO_NAMESPACE, "team-alpha", revision, 180_000);
    expect(inventoryOf(moved)).toEqual(inventory);
    expect((await platform.admin.get("v1", "Namespace", undefined, "alpha"))!.metadata.uid).toBe(namespaceUid);
    const limits = await platform.admin.get("v1", "LimitRange", "alpha", "container-defaults");
    expect((limits!.metadata.labels as Record<string, string>)["berth.dev/template-version"]).toBe("v5");
    // bravo's files did not change: its artifact did not either, so Flux did not reconcile it.
    const bravoAfter = (await platform.kustomization(ASO_NAMESPACE, "team-bravo"))!;
    expect(bravoAfter.status).toEqual(bravo.status);
    // From the cluster's start to here: not one delete request.
    expect(await answeredDeletes(platform)).toEqual([]);
  }, 300_000);

  it("applies a team onboarded on v5 from its resources.yaml files", async () => {
    const api = await platform.startApi({ platform: (p) => (p.templateVersion = "v5") });
    const res = await apiRequest(api, "POST", "/v1/teams", {
      name: "charlie",
      owners: [OWNER],
      environments: ["dev"],
      roleAssignments: [{ role: "rg-contributor" }],
    });
    expect(res.statusCode, res.body).toBe(201);
    const files = (await inspectRemote(platform.repoUrl, "main", platform.gitEnv)).files;
    expect([...files.keys()].filter((p) => p.startsWith("teams/charlie/")).length).toBe(5);
    const k = await platform.waitKustomizationReady(
      ASO_NAMESPACE,
      "team-charlie",
      res.json.revision as string,
      180_000,
    );
    expect(kindsOf(inventoryOf(k))).toEqual(TEAM_KINDS);
    expect(await platform.admin.get("v1", "Namespace", undefined, "charlie")).toBeDefined();
  }, 300_000);
});
