/**
 * Adoption through the API against a real git remote holding hand-written tenants
 * (tests/fixtures/adoption/repo): the preview, the refusal to rename Azure resources, the commit with
 * kept names, and the 422 report for what cannot be mapped.
 */
import { join } from "node:path";
import { adoptionPreviewResponse, adoptionResponse, teamResponse } from "@berth/api-contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, REPO_ROOT, startBerth, type RunningBerth } from "../support/berth.js";
import { readAnswer, readProblem } from "../support/contract.js";
import { createBareRepo, inspectRemote, pushTree } from "../support/git-remotes.js";

const auth = { authorization: `Bearer ${DEV_TOKEN}` };

describe("adopting hand-written teams through the API", () => {
  let berth: RunningBerth;
  let url: string;
  let handWritten: string;

  beforeAll(async () => {
    url = (await createBareRepo()).url;
    handWritten = await pushTree({
      url,
      dir: join(REPO_ROOT, "tests/fixtures/adoption/repo"),
      subject: "tenants: payments and search (by hand)",
    });
    berth = await startBerth({ remoteUrl: url, env: { BERTH_LOG_LEVEL: "warn" } });
  });
  afterAll(async () => {
    await berth?.stop();
  });

  const post = (path: string, payload: object) =>
    berth.server.inject({ method: "POST", url: path, headers: auth, payload });

  it("previews: the inferred team, the Azure names it would rename, the diff; commits nothing", async () => {
    const res = await post("/v1/teams/payments/adopt/preview", { keepAzureNames: true });
    expect(res.statusCode, res.body).toBe(200);
    const body = readAnswer(res, adoptionPreviewResponse);
    expect(body.revision).toBe(handWritten);
    expect(body.team).toMatchObject({
      name: "payments",
      environments: ["dev", "prod"],
      owners: ["0b9a3c1e-1111-4222-8333-444455556666"],
      roleAssignments: [{ role: "rg-contributor" }],
    });
    expect(body.report.azureNames).toHaveLength(6);
    expect(body.files.find((f) => f.path === "clusters/aks-dev-weu/tenants/payments.yaml")?.status).toBe("modified");
    expect(body.diff).toContain("+  suspend: true");
    expect((await inspectRemote(url)).head).toBe(handWritten);
  });

  it("refuses to adopt when Azure would recreate the identity or the resource group, naming each", async () => {
    const res = await post("/v1/teams/payments/adopt", {});
    expect(res.statusCode).toBe(422);
    const problem = readProblem(res);
    expect(problem.type).toBe("https://berth.dev/problems/adoption-recreates-azure-resources");
    expect(problem.errors).toContainEqual({
      field:
        "aks-dev-weu UserAssignedIdentity tenants/payments/dev-weu/identity.yaml#UserAssignedIdentity/flux-config/payments-identity spec.azureName",
      rule: "is id-payments-dev-aks-dev-weu in Azure; Berth would name it id-payments--aks-dev-weu, and Azure would create a new identity (new client and principal id): adopt with keepAzureNames: true",
    });
    expect(problem.detail).toContain("nothing was committed");
    expect((await inspectRemote(url)).head).toBe(handWritten);
  });

  it("adopts with the names kept: one commit, the team is Berth's from then on", async () => {
    const res = await post("/v1/teams/payments/adopt", { keepAzureNames: true });
    expect(res.statusCode, res.body).toBe(201);
    const body = readAnswer(res, adoptionResponse);
    expect(res.headers.location).toBe("/v1/teams/payments");
    const remote = await inspectRemote(url);
    expect(remote.commits[0]).toMatchObject({ sha: body.revision, subject: "berth: adopt team payments" });
    expect(remote.commits[1]!.sha).toBe(handWritten);
    expect(remote.files.get("teams/payments/clusters/aks-prod-weu/identity.yaml")).toContain(
      "azureName: id-payments-prod-aks-prod-weu",
    );
    expect(remote.files.get("clusters/aks-prod-weu/tenants/payments.yaml")).toContain("suspend: true");
    expect(remote.files.get("tenants/payments/base/quota.yaml")).toContain("PLAT-1501"); // hand-written files stay until cleanup
    expect(body.report.cleanup).toContain("tenants/payments/base/quota.yaml");
    // Audited like every write: the refusal above, then this commit.
    const adopts = berth
      .logEntries<{ audit?: { action: string; outcome: string; status: number; revision: string | null } }>()
      .flatMap((l) => (l.audit?.action === "adopt" ? [[l.audit.outcome, l.audit.status, l.audit.revision]] : []));
    expect(adopts).toEqual([
      ["refused", 422, null],
      ["committed", 201, body.revision],
    ]);

    const team = readAnswer(await berth.server.inject({ url: "/v1/teams/payments", headers: auth }), teamResponse).team;
    expect(team).toMatchObject({
      quota: { cpu: "8", memory: "16Gi", pods: 100 },
      templateVersion: "v1",
      azureNames: { identities: { "aks-dev-weu": "id-payments-dev-aks-dev-weu" } },
    });
    // An ordinary team now: an update keeps the kept names.
    const { name: _n, templateVersion: _v, ...spec } = team;
    const put = await berth.server.inject({
      method: "PUT",
      url: "/v1/teams/payments",
      headers: auth,
      payload: { ...spec, description: "Payments (adopted)" },
    });
    expect(put.statusCode, put.body).toBe(200);
    expect((await inspectRemote(url)).files.get("teams/payments/clusters/aks-dev-weu/resource-group.yaml")).toContain(
      "azureName: rg-payments-dev-weu",
    );
    expect((await post("/v1/teams/payments/adopt", { keepAzureNames: true })).statusCode).toBe(409);
  });

  it("answers 422 with every part of a team it cannot map, and commits nothing", async () => {
    const before = (await inspectRemote(url)).head;
    const res = await post("/v1/teams/search/adopt", { keepAzureNames: true });
    expect(res.statusCode).toBe(422);
    const problem = readProblem(res);
    expect(problem.type).toBe("https://berth.dev/problems/adoption-unmappable");
    expect(problem.errors?.map((e) => e.field)).toEqual([
      "tenants/search/base/quota.yaml#ResourceQuota/search/search-quota spec.hard.persistentvolumeclaims",
      "tenants/search/base/quota.yaml#ResourceQuota/search/search-quota spec.hard",
      "tenants/search/dev-weu/azure.yaml#RoleAssignment/flux-config/search-owner spec.roleDefinitionReference",
    ]);
    expect((await inspectRemote(url)).head).toBe(before);
    expect((await post("/v1/teams/search/adopt", { keepAzureNames: "yes" })).statusCode).toBe(422);
  });
});
