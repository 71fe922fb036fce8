/** Every rule of the team model (team.ts) and the platform checks (validate.ts), each naming field and rule. */
import { describe, expect, it } from "vitest";
import {
  MANAGED_LABEL_PREFIXES,
  platformSchema,
  RESERVED_TEAM_NAMES,
  TEAM_NAME_MAX,
  TeamValidationError,
  validateTeam,
  validateTeamSpec,
  type FieldIssue,
  type Platform,
} from "@berth/core";
import { makePlatform, OWNERS, PLATFORM, platformInput, teamInput } from "./fixtures.js";

function issues(input: unknown, platform: Platform = PLATFORM): FieldIssue[] {
  try {
    validateTeam(input, platform);
  } catch (err) {
    expect(err).toBeInstanceOf(TeamValidationError);
    const e = err as TeamValidationError;
    expect(e.message).toContain(e.issues[0]!.field);
    return e.issues;
  }
  throw new Error(`accepted ${JSON.stringify(input)}`);
}

/** Asserts the input is refused with issues on `field` only, one of them with a rule matching `rule`. */
function refused(input: unknown, field: string, rule: RegExp, platform: Platform = PLATFORM) {
  const found = issues(input, platform);
  expect(
    found.map((i) => i.field),
    JSON.stringify(found),
  ).toEqual(found.map(() => field));
  expect(
    found.some((i) => rule.test(i.rule)),
    JSON.stringify(found),
  ).toBe(true);
}

const accepted = (input: unknown, platform: Platform = PLATFORM) => validateTeam(input, platform);
const uuid = (i: number) => `${i.toString(16).padStart(8, "0")}-0000-4000-8000-000000000000`;

describe("name", () => {
  it("is 2 to 40 characters", () => {
    refused(teamInput({ name: "a" }), "name", /at least 2/);
    expect(accepted(teamInput({ name: "ab" })).name).toBe("ab");
    expect(TEAM_NAME_MAX).toBe(40);
    expect(accepted(teamInput({ name: `a${"b".repeat(39)}` })).name).toHaveLength(40);
    refused(teamInput({ name: `a${"b".repeat(40)}` }), "name", /at most 40/);
    refused(teamInput({ name: "" }), "name", /at least 2/);
  });

  it.each(["Orders", "orders_eu", "1orders", "-orders", "orders-", "orders.eu", "orders eu", "ördérs", "orders\u0131"])(
    "refuses %j: not a DNS label",
    (name) => {
      refused(teamInput({ name }), "name", /DNS-1123 label/);
    },
  );

  it("refuses '--'", () => {
    refused(teamInput({ name: "orders--eu" }), "name", /must not contain '--'/);
    expect(accepted(teamInput({ name: "orders-eu-1" })).name).toBe("orders-eu-1");
  });

  it.each([...RESERVED_TEAM_NAMES])("refuses the reserved name %s", (name) => {
    const found = issues(teamInput({ name }));
    expect(
      found.some((i) => i.field === "name" && /reserved/.test(i.rule)),
      JSON.stringify(found),
    ).toBe(true);
  });

  it.each(["kube-public", "kube-x", "azure-x", "aks-x", "flux-x", "berth-x", "openshift", "openshift-x", "openshiftx"])(
    "refuses the reserved prefix in %s",
    (name) => {
      refused(teamInput({ name }), "name", /reserved/);
    },
  );

  it("allows names that merely contain a reserved word", () => {
    for (const name of ["kube", "my-kube-app", "azure", "flux", "team-berth", "defaults", "platforms"])
      expect(accepted(teamInput({ name })).name).toBe(name);
  });

  it("refuses the fixture platform's reservedNames", () => {
    for (const name of ["monitoring", "ingress-nginx", "flux-config", "flux-system", "azureserviceoperator-system"])
      refused(teamInput({ name }), "name", /reserved/);
  });

  it("refuses the platform's reservedNames and namespaces, on create and on update", () => {
    const platform = makePlatform({
      reservedNames: ["observability"],
      asoNamespace: "aso-resources",
      fluxSource: { name: "repo", namespace: "gitops" },
      federatedCredential: { asoNamespace: "aso-system" },
      controller: { namespace: "platform-controller" },
    });
    for (const name of ["observability", "aso-resources", "gitops", "aso-system", "platform-controller"]) {
      refused(teamInput({ name }), "name", /reserved for the platform/, platform);
      const { name: _n, ...spec } = teamInput({ name });
      expect(() => validateTeamSpec(name, spec, platform)).toThrow(TeamValidationError);
      expect(accepted(teamInput({ name })).name).toBe(name); // only reserved on that platform
    }
  });

  it("on update comes from the URL: a name in the spec is refused, and the URL's name is checked", () => {
    const { name: _n, ...spec } = teamInput();
    expect(validateTeamSpec("orders", spec, PLATFORM).name).toBe("orders");
    expect(() => validateTeamSpec("orders", { ...spec, name: "other" }, PLATFORM)).toThrow(TeamValidationError);
    for (const bad of ["Bad", "kube-x", "a"])
      expect(() => validateTeamSpec(bad, spec, PLATFORM)).toThrow(TeamValidationError);
  });
});

describe("owners", () => {
  it("are 1 to 20 distinct lowercase UUIDs", () => {
    refused(teamInput({ owners: [] }), "owners", /at least one owner/);
    refused({ ...teamInput(), owners: undefined }, "owners", /expected array/);
    expect(accepted(teamInput({ owners: Array.from({ length: 20 }, (_, i) => uuid(i)) })).owners).toHaveLength(20);
    refused(teamInput({ owners: Array.from({ length: 21 }, (_, i) => uuid(i)) }), "owners", /20/);
    refused(teamInput({ owners: [OWNERS.payments, OWNERS.payments] }), "owners", /must not repeat/);
  });

  it.each([
    OWNERS.payments.toUpperCase(),
    "not-a-uuid",
    `{${OWNERS.payments}}`,
    OWNERS.payments.replaceAll("-", ""),
    `${OWNERS.payments} `,
    "payments-owners@example.com",
  ])("refuses %j", (owner) =>
    refused(teamInput({ owners: [OWNERS.data, owner] }), "owners.1", /Entra ID group object id/),
  );
});

describe("environments", () => {
  it("are 1 to 10 distinct DNS labels, each an environment of the platform", () => {
    refused(teamInput({ environments: [] }), "environments", /at least one environment/);
    refused(teamInput({ environments: ["dev", "dev"] }), "environments", /must not repeat/);
    // Eleven unknown environments: too many, and each unknown (both reported at once).
    const tooMany = issues(teamInput({ environments: Array.from({ length: 11 }, (_, i) => `e${i}`) }));
    expect(tooMany).toContainEqual({ field: "environments", rule: expect.stringMatching(/10/) });
    expect(tooMany.filter((i) => i.field !== "environments").map((i) => i.field)).toEqual(
      Array.from({ length: 11 }, (_, i) => `environments.${i}`),
    );
    refused(
      teamInput({ environments: ["dev", "qa"] }),
      "environments.1",
      /must be one of the platform's environments: dev, staging, prod/,
    );
    refused(teamInput({ environments: ["Dev"] }), "environments.0", /Invalid|match/i);
    refused(teamInput({ environments: [`e${"x".repeat(30)}`] }), "environments.0", /30/);
    expect(accepted(teamInput({ environments: ["prod", "dev", "staging"] })).environments).toEqual([
      "prod",
      "dev",
      "staging",
    ]);
  });

  it("reports schema and platform problems in one answer", () => {
    const found = issues(teamInput({ name: "Bad_Name", environments: ["qa"], roleAssignments: [{ role: "owner" }] }));
    expect(found.map((i) => i.field).sort()).toEqual(["environments.0", "name", "roleAssignments.0.role"]);
    const spec = (() => {
      try {
        validateTeamSpec("payments", { owners: ["nope"], environments: ["qa"] }, PLATFORM);
      } catch (err) {
        return (err as TeamValidationError).issues;
      }
      return [];
    })();
    expect(spec.map((i) => i.field).sort()).toEqual(["environments.0", "owners.0"]);
  });

  it("reports every unknown environment", () => {
    const found = issues(teamInput({ environments: ["qa", "dev", "uat"] }));
    expect(found.map((i) => i.field)).toEqual(["environments.0", "environments.2"]);
  });
});

describe("roleAssignments", () => {
  it("name catalog roles, at most once each, at most 20", () => {
    expect(
      accepted(teamInput({ roleAssignments: [{ role: "postgres-reader" }, { role: "rg-contributor" }] }))
        .roleAssignments,
    ).toHaveLength(2);
    expect(accepted(teamInput()).roleAssignments).toEqual([]);
    refused(
      teamInput({ roleAssignments: [{ role: "rg-contributor" }, { role: "owner" }] }),
      "roleAssignments.1.role",
      /role catalog's ids: rg-contributor, .*postgres-reader/,
    );
    refused(
      teamInput({ roleAssignments: [{ role: "rg-contributor" }, { role: "rg-contributor" }] }),
      "roleAssignments",
      /must not repeat a role/,
    );
    const tooMany = issues(teamInput({ roleAssignments: Array.from({ length: 21 }, (_, i) => ({ role: `r${i}` })) }));
    expect(tooMany).toContainEqual({ field: "roleAssignments", rule: expect.stringMatching(/20/) });
    expect(tooMany.filter((i) => i.field !== "roleAssignments").every((i) => /role catalog/.test(i.rule))).toBe(true);
    refused(teamInput({ roleAssignments: [{ role: "Owner" }] }), "roleAssignments.0.role", /role catalog/);
    refused(teamInput({ roleAssignments: [{ role: "reader-" }] }), "roleAssignments.0.role", /role catalog/);
    refused({ ...teamInput(), roleAssignments: [{}] }, "roleAssignments.0.role", /expected string/);
  });

  it("are refused when the platform offers no roles", () => {
    refused(
      teamInput({ roleAssignments: [{ role: "rg-contributor" }] }),
      "roleAssignments.0.role",
      /no roles are offered/,
      makePlatform({ roleCatalog: [] }),
    );
  });
});

describe("labels", () => {
  it("accept valid Kubernetes label keys and values, at most 20", () => {
    const labels = {
      "cost-center": "cc-4711",
      "example.com/tier": "gold",
      "app.kubernetes.io/part-of": "shop",
      A_b: "",
      [`k${"x".repeat(62)}`]: "v".repeat(63),
    };
    expect(accepted(teamInput({ labels })).labels).toEqual(labels);
    expect(
      Object.keys(
        accepted(teamInput({ labels: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, "v"])) }))
          .labels,
      ),
    ).toHaveLength(20);
    refused(
      teamInput({ labels: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, "v"])) }),
      "labels",
      /at most 20 labels/,
    );
  });

  it.each([
    [`k${"x".repeat(63)}`, "name part over 63"],
    ["-tier", "starts with -"],
    ["tier-", "ends with -"],
    ["Example.com/tier", "uppercase prefix"],
    ["example..com/tier", "empty prefix label"],
    ["/tier", "empty prefix"],
    ["example.com/", "empty name"],
    ["a/b/c", "two slashes"],
    [`${"a".repeat(250)}.com/x`, "prefix over 253"],
    ["", "empty key"],
  ])("refuse the key %j (%s)", (key) => {
    refused(teamInput({ labels: { [key]: "v" } }), `labels.${key}`, /^must be a valid Kubernetes label key$/);
  });

  it.each([
    ...MANAGED_LABEL_PREFIXES.map((p) => (p.endsWith("/") ? `${p}x` : p)),
    "pod-security.kubernetes.io/enforce",
    "pod-security.kubernetes.io/enforce-version",
    "pod-security.kubernetes.io/audit",
    "node-role.kubernetes.io/x",
    "sub.k8s.io/x",
    "helm.toolkit.fluxcd.io/name",
    "x.berth.dev/y",
  ])("refuse the managed key %s", (key) => {
    refused(
      teamInput({ labels: { [key]: "v" } }),
      `labels.${key}`,
      /^is managed by the platform and cannot be set by a team$/,
    );
  });

  it("leave keys that only resemble managed ones to the team", () => {
    const labels = {
      "app.kubernetes.io/name": "shop",
      "app.kubernetes.io/part-of": "shop",
      "notkubernetes.io/x": "v",
      "kubernetes.io.example.com/x": "v",
      "berth-dev/x": "v",
    };
    expect(accepted(teamInput({ labels })).labels).toEqual(labels);
  });

  it.each(["v".repeat(64), "-v", "v-", "a b", "a/b", "a:b", "ü"])("refuse the value %j", (value) => {
    refused(teamInput({ labels: { tier: value } }), "labels.tier", /valid Kubernetes label value/);
  });
});

describe("quota and container limits", () => {
  it.each([
    "500m",
    "2",
    "1.5",
    "4Gi",
    "128Mi",
    "1Ki",
    "2k",
    "3M",
    "1G",
    "1T",
    "1P",
    "1E",
    "1Ti",
    "1Pi",
    "1Ei",
    "1e3",
    "0",
    "0777",
  ])("accept the quantity %s", (q) => {
    expect(accepted(teamInput({ quota: { cpu: q, memory: q, pods: 1 } })).quota).toEqual({
      cpu: q,
      memory: q,
      pods: 1,
    });
  });

  it.each([
    "",
    "-1",
    "+1",
    "1.5.5",
    ".5",
    "5.",
    "4GB",
    "4gi",
    "4 Gi",
    " 1",
    "1 ",
    "1e",
    "1e-3",
    "0x10",
    "Infinity",
    "NaN",
    "1".repeat(33),
  ])("refuse the quantity %j", (q) => {
    refused(teamInput({ quota: { cpu: q, memory: "1Gi", pods: 1 } }), "quota.cpu", /Kubernetes quantity|<=32/);
    refused(
      teamInput({ containerLimits: { defaultRequest: { cpu: "1", memory: q }, default: { cpu: "1", memory: "1Gi" } } }),
      "containerLimits.defaultRequest.memory",
      /Kubernetes quantity|<=32/,
    );
  });

  it("count pods as an integer from 1 to 10000", () => {
    expect(accepted(teamInput({ quota: { cpu: "1", memory: "1Gi", pods: 10_000 } })).quota?.pods).toBe(10_000);
    refused(teamInput({ quota: { cpu: "1", memory: "1Gi", pods: 0 } }), "quota.pods", />=1|at least|too small/i);
    refused(teamInput({ quota: { cpu: "1", memory: "1Gi", pods: 10_001 } }), "quota.pods", /<=10000|at most|too big/i);
    refused(teamInput({ quota: { cpu: "1", memory: "1Gi", pods: 1.5 } }), "quota.pods", /int/i);
  });

  it("need every field when given", () => {
    refused({ ...teamInput(), quota: { cpu: "1", memory: "1Gi" } }, "quota.pods", /expected number/);
    refused(
      { ...teamInput(), containerLimits: { defaultRequest: { cpu: "1", memory: "1Gi" } } },
      "containerLimits.default",
      /expected object/,
    );
  });

  it("are optional: the team then has none and renders the platform defaults", () => {
    const team = accepted(teamInput());
    expect(team.quota).toBeUndefined();
    expect(team.containerLimits).toBeUndefined();
  });
});

describe("the other fields", () => {
  it("default description, roleAssignments and labels", () => {
    const team = accepted({ name: "orders", owners: [OWNERS.payments], environments: ["dev"] });
    expect(team).toEqual({
      name: "orders",
      description: "",
      owners: [OWNERS.payments],
      environments: ["dev"],
      roleAssignments: [],
      labels: {},
    });
  });

  it("refuses a body that is not an object", () => {
    for (const body of [null, "orders", 42, [], undefined]) {
      const found = issues(body);
      expect(found[0]!.field).toBe("(body)");
    }
  });

  it("reports every schema issue at once, each with its field", () => {
    const found = issues({
      name: "Bad",
      owners: ["x"],
      environments: [],
      labels: { "berth.dev/team": "x" },
      quota: { cpu: "x", memory: "1Gi", pods: 1 },
    });
    expect(found.map((i) => i.field).sort()).toEqual([
      "environments",
      "labels.berth.dev/team",
      "name",
      "owners.0",
      "quota.cpu",
    ]);
  });
});

describe("the platform", () => {
  it("refuses role ids that could not be label values or end object names", () => {
    for (const id of ["reader-", "Reader", "1reader", `r${"x".repeat(30)}`]) {
      const input = platformInput({
        roleCatalog: [
          { id, roleDefinitionId: "acdd72a7-3385-48ef-bd42-f606fba81ae7", scope: { kind: "teamResourceGroup" } },
        ],
      });
      expect(platformSchema.safeParse(input).success, id).toBe(false);
    }
    const ok = platformInput({
      roleCatalog: [
        { id: "r", roleDefinitionId: "acdd72a7-3385-48ef-bd42-f606fba81ae7", scope: { kind: "teamResourceGroup" } },
      ],
    });
    expect(platformSchema.safeParse(ok).success).toBe(true);
  });

  it("refuses a role scope that references a platform-vars key nobody defines", () => {
    const scoped = (armId: string) =>
      platformInput({
        roleCatalog: [
          { id: "sb", roleDefinitionId: "090c5cfd-751d-490a-894a-3ce6f1109419", scope: { kind: "armId", armId } },
        ],
      });
    const bad = platformSchema.safeParse(
      scoped(
        "/subscriptions/${SUBSCRIPTION_ID}/resourceGroups/shared/providers/Microsoft.ServiceBus/namespaces/${SB_NAME}",
      ),
    );
    expect(bad.success).toBe(false);
    expect(bad.error!.issues.map((i) => [i.path.join("."), i.message])).toEqual([
      ["roleCatalog.0.scope.armId", "${SB_NAME} is not a platform-vars key (declare it in platformVars)"],
    ]);
    expect(
      platformSchema.safeParse(
        scoped(
          "/subscriptions/${SUBSCRIPTION_ID}/resourceGroups/shared/providers/Microsoft.ServiceBus/namespaces/${SERVICEBUS_NAMESPACE}",
        ),
      ).success,
    ).toBe(true);
  });

  it("refuses cluster names over 40 characters and duplicate clusters or environments", () => {
    const env = (name: string, ...clusters: string[]) => ({ name, clusters: clusters.map((c) => ({ name: c })) });
    expect(platformSchema.safeParse(platformInput({ environments: [env("dev", `c${"x".repeat(39)}`)] })).success).toBe(
      true,
    );
    expect(platformSchema.safeParse(platformInput({ environments: [env("dev", `c${"x".repeat(40)}`)] })).success).toBe(
      false,
    );
    expect(platformSchema.safeParse(platformInput({ environments: [env("dev", "a"), env("prod", "a")] })).success).toBe(
      false,
    );
    expect(platformSchema.safeParse(platformInput({ environments: [env("dev", "a"), env("dev", "b")] })).success).toBe(
      false,
    );
  });
});
