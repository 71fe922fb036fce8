import type { FleetTeam } from "@berth/api-contract";
import type { Team } from "@berth/core";
import {
  EntityPolicies,
  FieldFormatEntityPolicy,
  groupEntityV1alpha1Validator,
  NoForeignRootFieldsEntityPolicy,
  resourceEntityV1alpha1Validator,
  SchemaValidEntityPolicy,
  type Entity,
} from "@backstage/catalog-model";
import { describe, expect, it } from "vitest";
import { fleetEntities, teamEntities } from "../src/catalog/entities.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const links = {
  teamPage: (t: string) => `https://berth.example.com/ui/teams/${t}`,
  origin: "https://berth.example.com",
};

const team = (name: string, extra: Partial<Team> = {}): Team => ({
  name,
  description: "",
  owners: [OWNER],
  environments: ["dev"],
  roleAssignments: [],
  labels: {},
  ...extra,
});

const reported = (name: string, cluster: string, ready: boolean): FleetTeam => ({
  team: name,
  ready,
  clusters: [
    {
      cluster,
      environment: "dev",
      state: "reported",
      ready,
      stale: false,
      conditions: [],
      ...(ready ? { clientId: "44444444-4444-4444-8444-444444444444" } : {}),
    },
  ],
});

/** Backstage's own checks, as its catalog runs them on every entity a provider emits. */
async function acceptedByBackstage(entity: Entity): Promise<void> {
  const policies = EntityPolicies.allOf([
    new SchemaValidEntityPolicy(),
    new NoForeignRootFieldsEntityPolicy(),
    new FieldFormatEntityPolicy(),
  ]);
  await expect(policies.enforce(entity)).resolves.toBeDefined();
  const kind = entity.kind === "Group" ? groupEntityV1alpha1Validator : resourceEntityV1alpha1Validator;
  await expect(kind.check(entity)).resolves.toBe(true);
}

describe("Berth's teams as catalog entities", () => {
  it("gives the longest team and cluster names entities Backstage's catalog accepts", async () => {
    const name = `t${"a".repeat(38)}z`; // 40, Berth's longest team name
    const cluster = `c${"b".repeat(38)}z`; // 40, its longest cluster name
    const entities = teamEntities(team(name), reported(name, cluster, true), links);
    expect(entities.map((e) => `${e.kind}:${e.metadata.namespace}/${e.metadata.name}`)).toEqual([
      `Group:default/${name}`,
      `Resource:${name}/${cluster}-namespace`,
      `Resource:${name}/${cluster}-identity`,
      `Resource:${name}/${cluster}-resource-group`,
      `Resource:${name}/${cluster}-kustomization`,
    ]);
    for (const entity of entities) await acceptedByBackstage(entity);
  });

  it("names an adopted team's Azure resources by the names it kept", () => {
    const adopted = team("ledger", {
      azureNames: { identities: { "aks-dev-weu": "ledger-identity" }, resourceGroups: { "aks-dev-weu": "ledger-rg" } },
    });
    const [, , identity, group] = teamEntities(adopted, reported("ledger", "aks-dev-weu", false), links);
    expect(identity?.metadata.annotations?.["berth.dev/azure-name"]).toBe("ledger-identity");
    expect(identity?.metadata.annotations?.["berth.dev/client-id"]).toBeUndefined();
    expect(group?.metadata.annotations?.["berth.dev/azure-name"]).toBe("ledger-rg");
    expect(identity?.metadata.annotations?.["berth.dev/ready"]).toBe("false");
    expect(identity?.metadata.annotations?.["berth.dev/phase"]).toBe("progressing");
  });

  it("gives a team with no status row its Group only, not Ready", () => {
    const entities = fleetEntities([team("search")], [], links);
    expect(entities).toHaveLength(1);
    expect(entities[0]?.metadata.annotations?.["berth.dev/ready"]).toBe("false");
  });
});
