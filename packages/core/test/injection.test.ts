/**
 * Injection: team input is the only untrusted data that reaches the manifests. Every structured field has a
 * syntax that cannot hold YAML or Flux syntax, so crafted values are refused by validateTeam with an issue
 * naming the field. The description is free text: it refuses control and format characters and `$`, and
 * everything else it may hold (`: `, `#`, quotes, `---`, ...) stays one string in the output.
 */
import { describe, expect, it } from "vitest";
import {
  Onboarding,
  parseTeamFile,
  TeamValidationError,
  teamShard,
  validateTeam,
  validateTeamSpec,
  type FieldIssue,
  type Platform,
  type TeamInput,
} from "@berth/core";
import { loadTemplates, makePlatform, OWNERS, PLATFORM, teamInput } from "./fixtures.js";
import { goDisagreements, parseDocs, parseObjects, type Manifest } from "./yaml-helpers.js";

/** Crafted strings; each is tried as a prefix and as a suffix of an otherwise valid value. */
const PAYLOADS: Record<string, string> = {
  "newline + key": "\nkind: Secret",
  "carriage return": "\rx",
  CRLF: "\r\nx",
  "second document": "\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: stolen",
  "document end": "\n...\n",
  "inline ---": "---",
  "inline ...": "...",
  "colon space": ": x",
  comment: " # x",
  "bare #": "#x",
  "python tag": "!!python/object/apply:os.system",
  "local tag": "!x",
  anchor: "&a",
  alias: "*a",
  "merge key": "<<",
  "double quote": '"',
  "single quote": "'",
  "flow map": "{a: 1}",
  "flow sequence": "[a, b]",
  "flow comma": ",",
  "line separator U+2028": "\u2028x",
  "paragraph separator U+2029": "\u2029x",
  "next line U+0085": "\u0085x",
  "zero-width space": "\u200b",
  "zero-width joiner": "\u200d",
  "byte order mark": "\ufeff",
  "right-to-left override": "\u202e",
  "left-to-right isolate": "\u2066",
  tab: "\tx",
  NUL: "\u0000",
  "escape char": "\u001b[31m",
  "Flux substitution": "${TENANT_ID}",
  "Flux default": "${X:=a}",
  "Flux escaped substitution": "$${TENANT_ID}",
  "bare $VAR": "$TENANT_ID",
  placeholder: "{{ names.namespace }}",
  backslash: "\\",
  backtick: "`",
  space: " x",
  "lone surrogate": "\ud800",
  "noncharacter U+FFFE": "\ufffe",
};

interface Field {
  /** The issue's field. */
  field: string;
  /** A team input with the crafted value in this field. */
  input: (value: (valid: string) => string) => TeamInput;
}

const OWNER = OWNERS.payments;
const FIELDS: Field[] = [
  { field: "name", input: (v) => teamInput({ name: v("orders") }) },
  { field: "owners.0", input: (v) => teamInput({ owners: [v(OWNER)] }) },
  { field: "owners.1", input: (v) => teamInput({ owners: [OWNER, v(OWNERS.data)] }) },
  { field: "environments.0", input: (v) => teamInput({ environments: [v("dev")] }) },
  { field: "environments.1", input: (v) => teamInput({ environments: ["dev", v("prod")] }) },
  { field: "roleAssignments.0.role", input: (v) => teamInput({ roleAssignments: [{ role: v("rg-contributor") }] }) },
  {
    field: "roleAssignments.1.role",
    input: (v) => teamInput({ roleAssignments: [{ role: "rg-contributor" }, { role: v("postgres-reader") }] }),
  },
  { field: "labels.tier", input: (v) => teamInput({ labels: { tier: v("gold") } }) },
  { field: "labels.example.com/tier", input: (v) => teamInput({ labels: { "example.com/tier": v("gold") } }) },
  { field: "quota.cpu", input: (v) => teamInput({ quota: { cpu: v("2"), memory: "4Gi", pods: 10 } }) },
  { field: "quota.memory", input: (v) => teamInput({ quota: { cpu: "2", memory: v("4Gi"), pods: 10 } }) },
  {
    field: "containerLimits.defaultRequest.cpu",
    input: (v) => teamInput({ containerLimits: limits({ defaultRequestCpu: v("100m") }) }),
  },
  {
    field: "containerLimits.defaultRequest.memory",
    input: (v) => teamInput({ containerLimits: limits({ defaultRequestMemory: v("128Mi") }) }),
  },
  {
    field: "containerLimits.default.cpu",
    input: (v) => teamInput({ containerLimits: limits({ defaultCpu: v("500m") }) }),
  },
  {
    field: "containerLimits.default.memory",
    input: (v) => teamInput({ containerLimits: limits({ defaultMemory: v("512Mi") }) }),
  },
];

function limits(o: {
  defaultRequestCpu?: string;
  defaultRequestMemory?: string;
  defaultCpu?: string;
  defaultMemory?: string;
}) {
  return {
    defaultRequest: { cpu: o.defaultRequestCpu ?? "100m", memory: o.defaultRequestMemory ?? "128Mi" },
    default: { cpu: o.defaultCpu ?? "500m", memory: o.defaultMemory ?? "512Mi" },
  };
}

function issuesOf(fn: () => unknown): FieldIssue[] | "accepted" | Error {
  try {
    fn();
    return "accepted";
  } catch (err) {
    if (err instanceof TeamValidationError) return err.issues;
    return err as Error;
  }
}

/** Problems with how `input` was refused; empty when it was refused with issues only on `field`. */
function refusalProblems(input: unknown, field: string, platform: Platform = PLATFORM): string[] {
  const problems: string[] = [];
  for (const [how, run] of [
    ["validateTeam", () => validateTeam(input, platform)],
    [
      "validateTeamSpec",
      () => {
        const { name, ...spec } = input as TeamInput;
        return validateTeamSpec(name, spec, platform);
      },
    ],
  ] as const) {
    if (how === "validateTeamSpec" && field === "name") continue; // the name comes from the URL there
    const result = issuesOf(run);
    if (result === "accepted") problems.push(`${how} accepted it`);
    else if (result instanceof Error) problems.push(`${how} threw ${result.name}: ${result.message}`);
    else {
      if (!result.some((i) => i.field === field))
        problems.push(`${how}: no issue names ${field}: ${JSON.stringify(result)}`);
      if (result.some((i) => !i.rule || i.rule === "Invalid key in record"))
        problems.push(`${how}: an issue does not name its rule: ${JSON.stringify(result)}`);
    }
  }
  return problems;
}

describe("crafted values in structured fields are refused, naming the field", () => {
  it.each(FIELDS.map((f) => [f.field, f] as const))("%s", (_name, { field, input }) => {
    // The unmodified value is valid, so each refusal below is the payload's doing.
    expect(() =>
      validateTeam(
        input((v) => v),
        PLATFORM,
      ),
    ).not.toThrow();
    const problems: string[] = [];
    for (const [label, payload] of Object.entries(PAYLOADS)) {
      for (const [where, wrap] of [
        ["suffix", (v: string) => v + payload],
        ["prefix", (v: string) => payload + v],
      ] as const) {
        for (const p of refusalProblems(input(wrap), field)) problems.push(`${label} as ${where}: ${p}`);
      }
      // The payload alone, too.
      for (const p of refusalProblems(
        input(() => payload),
        field,
      ))
        problems.push(`${label} alone: ${p}`);
    }
    expect(problems).toEqual([]);
  });

  it("refuses crafted label keys, naming the key and the rule", () => {
    const problems: string[] = [];
    for (const [label, payload] of Object.entries(PAYLOADS)) {
      for (const key of [
        `team${payload}`,
        `${payload}team`,
        `example.com/team${payload}`,
        `${payload}example.com/team`,
        payload,
      ]) {
        const result = issuesOf(() => validateTeam(teamInput({ labels: { [key]: "x" } }), PLATFORM));
        if (!Array.isArray(result)) problems.push(`${label} in key ${JSON.stringify(key)}: ${String(result)}`);
        else if (
          !result.some((i) => i.field === `labels.${key}` && i.rule === "must be a valid Kubernetes label key")
        ) {
          problems.push(`${label} in key ${JSON.stringify(key)}: ${JSON.stringify(result)}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it("refuses non-string values where strings are expected, and numbers as strings", () => {
    const cases: Array<[string, TeamInput]> = [
      ["name", teamInput({ name: 42 as unknown as string })],
      ["description", teamInput({ description: { a: 1 } as unknown as string })],
      ["owners.0", teamInput({ owners: [{ id: OWNER } as unknown as string] })],
      ["environments.0", teamInput({ environments: [["dev"] as unknown as string] })],
      ["labels.tier", teamInput({ labels: { tier: 1 as unknown as string } })],
      ["labels.tier", teamInput({ labels: { tier: null as unknown as string } })],
      ["roleAssignments.0.role", teamInput({ roleAssignments: [{ role: ["rg-contributor"] as unknown as string }] })],
      ["quota.pods", teamInput({ quota: { cpu: "1", memory: "1Gi", pods: "50\nkind: Secret" as unknown as number } })],
      ["quota.pods", teamInput({ quota: { cpu: "1", memory: "1Gi", pods: "50" as unknown as number } })],
      ["quota.cpu", teamInput({ quota: { cpu: 2 as unknown as string, memory: "1Gi", pods: 5 } })],
    ];
    for (const [field, input] of cases) expect(refusalProblems(input, field), field).toEqual([]);
  });

  it("refuses fields the model does not have, at every level", () => {
    const cases: Array<[string, Record<string, unknown>]> = [
      ["(body)", { ...teamInput(), apiVersion: "v1" }],
      ["(body)", { ...teamInput(), metadata: { name: "x" } }],
      ["quota", { ...teamInput(), quota: { cpu: "1", memory: "1Gi", pods: 5, "limits.cpu": "100" } }],
      [
        "containerLimits.default",
        { ...teamInput(), containerLimits: { ...limits({}), default: { cpu: "1", memory: "1Gi", ephemeral: "1" } } },
      ],
      [
        "roleAssignments.0",
        { ...teamInput(), roleAssignments: [{ role: "rg-contributor", scope: "/subscriptions/x" }] },
      ],
    ];
    for (const [field, input] of cases) {
      const result = issuesOf(() => validateTeam(input, PLATFORM));
      expect(
        Array.isArray(result) && result.some((i) => i.field === field && /unrecognized/i.test(i.rule)),
        `${field}: ${JSON.stringify(result)}`,
      ).toBe(true);
    }
  });

  it("does not let a `__proto__` label key through or pollute prototypes", () => {
    const input = JSON.parse(
      `{"name":"orders","owners":["${OWNER}"],"environments":["dev"],"labels":{"__proto__":{"polluted":"yes"},"tier":"gold"}}`,
    );
    // zod drops the key rather than refusing it; either way it must not reach the team or its manifests.
    const team = validateTeam(input, PLATFORM);
    expect(Object.getOwnPropertyNames(team.labels)).toEqual(["tier"]);
    expect(Object.getPrototypeOf(team.labels)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    for (const text of onboarding.render(team).values()) expect(text).not.toContain("polluted");
  });
});

describe("the description", () => {
  const REFUSED = Object.entries(PAYLOADS).filter(([, p]) => /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\uFFFE$\\`<>]/u.test(p));

  it("refuses control, format and separator characters, `$`, `\\`, backtick and angle brackets", () => {
    expect(REFUSED.length).toBeGreaterThan(20);
    const problems = REFUSED.flatMap(([label, payload]) =>
      [`Orders ${payload}`, `${payload} Orders`].flatMap((d) =>
        refusalProblems(teamInput({ description: d }), "description").map((p) => `${label}: ${p}`),
      ),
    );
    expect(problems).toEqual([]);
  });

  it("refuses more than 256 characters", () => {
    expect(() => validateTeam(teamInput({ description: "x".repeat(256) }), PLATFORM)).not.toThrow();
    expect(refusalProblems(teamInput({ description: "x".repeat(257) }), "description")).toEqual([]);
  });

  const ALLOWED = Object.entries(PAYLOADS).filter(([label]) => !REFUSED.some(([l]) => l === label));
  it.each(ALLOWED)("keeps %s as one string, in the Namespace annotation and in team.yaml", (_label, payload) => {
    for (const description of [`Orders ${payload}`, `${payload} Orders`, payload])
      expectDescriptionRoundTrips(description);
  });
});

const onboarding = new Onboarding(PLATFORM, loadTemplates());

const baselines = new WeakMap<TeamInput, Map<string, string>>();
function baselineRender(input: TeamInput, platform: Platform): Map<string, string> {
  expect(platform).toBe(PLATFORM);
  let files = baselines.get(input);
  if (!files) baselines.set(input, (files = onboarding.render(validateTeam(input, platform))));
  return files;
}

/**
 * Renders a team and checks that each file (or each file matching `only`; the others must equal a render
 * of `baseline`) parses to the objects intended, the same under YAML 1.1, 1.2 and Go's yaml.
 */
function renderParsed(input: TeamInput, platform: Platform = PLATFORM, only?: { files: RegExp; baseline: TeamInput }) {
  const team = validateTeam(input, platform);
  const files = (platform === PLATFORM ? onboarding : new Onboarding(platform, loadTemplates())).render(team);
  const parsed = new Map<string, Manifest[]>();
  const baseline = only && baselineRender(only.baseline, platform);
  for (const [path, text] of files) {
    if (only && baseline && !only.files.test(path)) {
      expect(text, path).toBe(baseline.get(path));
      continue;
    }
    const v11 = parseObjects(text, "1.1");
    expect(parseObjects(text, "1.2"), path).toEqual(v11);
    for (const doc of parseDocs(text, "1.1")) expect(goDisagreements(doc), path).toEqual([]);
    // No payload can add a document or change a file's shape.
    expect(v11.length, path).toBe(
      path.endsWith("role-assignment.yaml")
        ? team.roleAssignments.length
        : path.endsWith("federated-credential.yaml")
          ? platform.federatedCredential.subjectMode === "both"
            ? 3
            : 2
          : 1,
    );
    parsed.set(path, v11 as Manifest[]);
  }
  return { team, files, parsed };
}

/** The files that hold team-provided text: the rest must not change when it does. */
const TEXT_FILES = { files: /\/(namespace|team|resource-quota|limit-range)\.yaml$/, baseline: teamInput() };

function expectDescriptionRoundTrips(description: string) {
  const { team, files, parsed } = renderParsed(teamInput({ description }), PLATFORM, TEXT_FILES);
  expect(team.description).toBe(description);
  const ns = parsed.get(`teams/${team.name}/base/namespace.yaml`)![0]!;
  expect(ns.metadata.annotations).toEqual({ "berth.dev/description": description });
  expect(Object.keys(ns.metadata)).toEqual(["name", "labels", "annotations"]);
  const spec = parsed.get(`teams/${team.name}/base/team.yaml`)![0]!;
  expect(spec.spec?.description).toBe(description);
  // Berth reads its own team file back to the same team.
  expect(parseTeamFile(files.get(`teams/${team.name}/base/team.yaml`)!, "team.yaml")).toEqual({
    ...team,
    templateVersion: "v1",
  });
}

describe("allowed values that YAML would read as something else stay strings", () => {
  const SCALARS = [
    "yes",
    "no",
    "on",
    "off",
    "y",
    "n",
    "Y",
    "N",
    "null",
    "Null",
    "NULL",
    "~",
    "true",
    "True",
    "FALSE",
    "0x1F",
    "0X1F",
    "1e3",
    "1E3",
    "0777",
    "0o17",
    "0O17",
    "0B1",
    "0b101",
    "1_000",
    "0x_1F",
    "12:30",
    "190:20:30",
    "2001-12-14",
    "2001-1-2",
    ".inf",
    "-.inf",
    ".nan",
    "1.5",
    "-1",
    "+1",
    "0",
    "=",
    "-",
    "?",
    "a: b # c",
    "- item",
    "? key",
    "--- x",
    "... x",
    "&a *a",
    "!!python/object:os.system",
    "{a: 1}",
    "[1, 2]",
    "'single'",
    '"double"',
    "%YAML 1.1",
    "@x",
    "| x",
    "trailing ",
    " leading",
    "{{ names.namespace }}",
    "#",
    "a #b",
    "é ü ß 日本",
    "emoji 🚀",
    "nbsp\u00a0x",
  ];

  it.each(SCALARS)("description %j", (value) => expectDescriptionRoundTrips(value));

  const LABEL_VALUES = SCALARS.filter((v) => /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/.test(v));
  it("label values and keys", () => {
    expect(LABEL_VALUES).toEqual(
      expect.arrayContaining([
        "yes",
        "no",
        "on",
        "off",
        "y",
        "n",
        "null",
        "true",
        "0x1F",
        "1e3",
        "0777",
        "0o17",
        "1_000",
      ]),
    );
    for (const value of LABEL_VALUES) {
      const { team, parsed } = renderParsed(
        teamInput({ labels: { [value]: value, tier: value } }),
        PLATFORM,
        TEXT_FILES,
      );
      const ns = parsed.get(`teams/${team.name}/base/namespace.yaml`)![0]!;
      expect(ns.metadata.labels?.[value], value).toBe(value);
      expect(ns.metadata.labels?.tier, value).toBe(value);
      expect(parsed.get(`teams/${team.name}/base/team.yaml`)![0]!.spec!.labels).toEqual({
        [value]: value,
        tier: value,
      });
    }
  });

  it("quantities", () => {
    for (const q of ["1e3", "0777", "08", "1", "0", "1.5", "2E", "1e9", "010"]) {
      const { team, parsed } = renderParsed(
        teamInput({
          quota: { cpu: q, memory: q, pods: 7 },
          containerLimits: limits({ defaultRequestCpu: q, defaultRequestMemory: q, defaultCpu: q, defaultMemory: q }),
        }),
        PLATFORM,
        TEXT_FILES,
      );
      const hard = parsed.get(`teams/${team.name}/base/resource-quota.yaml`)![0]!.spec!.hard;
      expect(hard, q).toEqual({
        "requests.cpu": q,
        "limits.cpu": q,
        "requests.memory": q,
        "limits.memory": q,
        pods: "7",
      });
      const [limit] = parsed.get(`teams/${team.name}/base/limit-range.yaml`)![0]!.spec!.limits as unknown[];
      expect(limit, q).toEqual({
        type: "Container",
        defaultRequest: { cpu: q, memory: q },
        default: { cpu: q, memory: q },
      });
    }
  });

  it("team, environment, cluster and role names", () => {
    const words = ["on", "no", "yes", "off", "true", "null"];
    const platform = makePlatform({
      environments: [
        { name: "on", clusters: [{ name: "yes" }] },
        { name: "no", clusters: [{ name: "null" }, { name: "true" }] },
      ],
      roleCatalog: words.map((id) => ({
        id,
        roleDefinitionId: "b24988ac-6180-42a0-ab88-20f7382dd24c",
        scope: { kind: "teamResourceGroup" as const },
      })),
    });
    for (const name of ["no", "off", "null", "true", "yes"]) {
      const { parsed } = renderParsed(
        {
          name,
          owners: [OWNER],
          environments: ["on", "no"],
          roleAssignments: words.map((role) => ({ role })),
          labels: {},
        },
        platform,
      );
      const ns = parsed.get(`teams/${name}/base/namespace.yaml`)![0]!;
      expect(ns.metadata.name).toBe(name);
      expect(ns.metadata.labels?.["berth.dev/team"]).toBe(name);
      expect(parsed.get(`teams/${name}/base/team.yaml`)![0]!.spec!.environments).toEqual(["on", "no"]);
      const rg = parsed.get(`teams/${name}/clusters/null/resource-group.yaml`)![0]!;
      expect(rg.spec?.tags).toEqual({ "berth-team": name, "berth-cluster": "null" });
      const roles = parsed
        .get(`teams/${name}/clusters/true/role-assignment.yaml`)!
        .map((ra) => ra.metadata.labels?.["berth.dev/role"]);
      expect(roles).toEqual(words);
      expect(parsed.get(`clusters/yes/teams/${teamShard(name)}/${name}.yaml`)![0]!.spec!.path).toBe(
        `./teams/${name}/clusters/yes`,
      );
    }
  });
});
