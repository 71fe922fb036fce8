/**
 * platformFindings: the decisions on what Azure answered (the answers themselves come from the real SDK
 * against the fake Azure in tests/azure/values.test.ts and tests/controller/azure.test.ts).
 */
import { ValueUnavailableError, type PlatformValuesProvider } from "@berth/core";
import { describe, expect, it } from "vitest";
import { platformFindings } from "../src/reconcile/platform-checks.js";
import { clusterOf, FACTS, platform, SUBSCRIPTION } from "./fixtures.js";

const READER = "acdd72a7-3385-48ef-bd42-f606fba81ae7";
const CONTRIBUTOR = "b24988ac-6180-42a0-ab88-20f7382dd24c";
const catalog = {
  roleCatalog: [
    { id: "reader", roleDefinitionId: READER, roleName: "Reader", scope: { kind: "teamResourceGroup" } },
    { id: "no-name", roleDefinitionId: CONTRIBUTOR, scope: { kind: "teamResourceGroup" } },
  ],
};

/** The findings, failing the test when the check was skipped or impossible. */
async function findingsOf(result: ReturnType<typeof platformFindings>) {
  const r = await result;
  if (!Array.isArray(r)) throw new Error(`expected findings, got ${JSON.stringify(r)}`);
  return r;
}

/** A provider answering from tables: role name → id (or an error), namespace → state. */
function provider(
  roles: Record<string, string | Error>,
  providers: Record<string, string | Error> = { "Microsoft.ManagedIdentity": "Registered" },
): PlatformValuesProvider & { asked: string[] } {
  const asked: string[] = [];
  const answer = (v: string | Error | undefined) => (v instanceof Error ? Promise.reject(v) : Promise.resolve(v));
  return {
    asked,
    clusterFacts: async () => FACTS,
    platformCredential: async () => ({ tenantId: FACTS.tenantId, subscriptionId: SUBSCRIPTION, clientId: READER }),
    roleDefinitionId: (_cluster, roleName) => {
      asked.push(`role ${roleName}`);
      return answer(roles[roleName]);
    },
    resourceProviderState: (_cluster, namespace) => {
      asked.push(`provider ${namespace}`);
      return answer(providers[namespace]);
    },
  };
}

describe("platformFindings", () => {
  const p = platform(catalog);
  const cluster = clusterOf(p);

  it("all good: no finding; entries without a roleName are not looked up", async () => {
    const prov = provider({ Reader: READER });
    expect(await platformFindings(prov, p, cluster, SUBSCRIPTION)).toEqual([]);
    expect(prov.asked.sort()).toEqual(["provider Microsoft.ManagedIdentity", "role Reader"]);
  });

  it("an id that is another role's, a name Azure does not know, an unregistered provider: one finding each", async () => {
    const mismatch = await platformFindings(provider({ Reader: CONTRIBUTOR }), p, cluster, SUBSCRIPTION);
    expect(mismatch).toEqual([
      {
        reason: "RoleCatalogMismatch",
        message: expect.stringContaining(`grants roleDefinitionId ${READER}, but 'Reader' is ${CONTRIBUTOR}`),
      },
    ]);
    const missing = await findingsOf(
      platformFindings(provider({}, { "Microsoft.ManagedIdentity": "NotRegistered" }), p, cluster, SUBSCRIPTION),
    );
    expect(missing.map((f) => f.reason)).toEqual(["RoleNotFound", "ResourceProviderNotRegistered"]);
    expect(missing[1]?.message).toContain("az provider register --namespace Microsoft.ManagedIdentity");
    const unknown = await findingsOf(platformFindings(provider({ Reader: READER }, {}), p, cluster, SUBSCRIPTION));
    expect(unknown[0]?.message).toContain("Microsoft.ManagedIdentity is unknown to ARM");
  });

  it("a name two roles share needs a person: a finding; Azure not answering is not one (skipped: cannot tell now)", async () => {
    const ambiguous = new ValueUnavailableError("role definition 'Reader': 2 role definitions have this name", {
      reason: "RoleNameAmbiguous",
      severity: "Error",
    });
    expect(
      (await findingsOf(platformFindings(provider({ Reader: ambiguous }), p, cluster, SUBSCRIPTION))).map(
        (f) => f.reason,
      ),
    ).toEqual(["RoleNameAmbiguous"]);
    const away = new ValueUnavailableError("role definition 'Reader': 503", { reason: "AzureUnavailable" });
    expect(await platformFindings(provider({ Reader: away }), p, cluster, SUBSCRIPTION)).toEqual({
      skipped: "role definition 'Reader': 503",
    });
    expect(
      await platformFindings(
        provider({ Reader: READER }, { "Microsoft.ManagedIdentity": away }),
        p,
        cluster,
        SUBSCRIPTION,
      ),
    ).toEqual({ skipped: "role definition 'Reader': 503" });
    // Anything else is a bug, not an answer.
    await expect(
      platformFindings(provider({ Reader: new TypeError("boom") }), p, cluster, SUBSCRIPTION),
    ).rejects.toThrow("boom");
  });

  it("a provider without Azure (static) cannot check: undefined", async () => {
    const { roleDefinitionId: _r, resourceProviderState: _p, ...staticLike } = provider({});
    expect(await platformFindings(staticLike, p, cluster, SUBSCRIPTION)).toBeUndefined();
  });
});
