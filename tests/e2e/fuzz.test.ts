/**
 * A seeded fuzz of request bodies (fast-check): at least 10 000 bodies, valid and invalid by construction,
 * sent to the write routes. Asserted: no 5xx; no 2xx for an invalid body; every error is problem+json
 * with a documented type; afterwards the remote's whole history holds only the valid teams.
 * FUZZ_RUNS and FUZZ_SEED override the defaults (CI runs the defaults).
 */
import { rm } from "node:fs/promises";
import fc from "fast-check";
import { teamShard } from "@berth/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, startBerth, type RunningBerth } from "../support/berth.js";
import { readProblem } from "../support/contract.js";
import { createBareRepo, git, makeTempDir, type BareRepo } from "../support/git-remotes.js";

const RUNS = Number(process.env.FUZZ_RUNS ?? 10_000);
const SEED = Number(process.env.FUZZ_SEED ?? 20261124);
const PROBLEM_TYPES = [
  "bad-request",
  "invalid-team",
  "invalid-request",
  "team-exists",
  "team-not-found",
  "not-found",
].map((t) => `https://berth.dev/problems/${t}`);
const BASE_TEAM = "fz-base";

interface Case {
  category: string;
  valid: boolean;
  method: "POST" | "PUT";
  url: string;
  contentType: string;
  body: Buffer;
  /** The team a valid create would onboard. */
  creates?: string;
}

// ---- valid teams, by construction ------------------------------------------------------------------

const uuid = fc.uuid().map((u) => u.toLowerCase());
const validSpec = fc.record(
  {
    description: fc.stringMatching(/^[A-Za-z0-9 .,_()éß-]{0,60}$/),
    owners: fc.uniqueArray(uuid, { minLength: 1, maxLength: 3 }),
    environments: fc.subarray(["dev", "prod"], { minLength: 1 }),
    roleAssignments: fc
      .subarray(["rg-contributor", "servicebus-data-owner", "postgres-reader"])
      .map((roles) => roles.map((role) => ({ role }))),
    labels: fc.dictionary(
      fc.constantFrom("cost-center", "tier", "app.kubernetes.io/part-of"),
      fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?$/),
      { maxKeys: 3 },
    ),
    quota: fc.record({
      cpu: fc.constantFrom("1", "500m", "4", "2.5"),
      memory: fc.constantFrom("1Gi", "512Mi", "8Gi"),
      pods: fc.integer({ min: 1, max: 10_000 }),
    }),
  },
  { requiredKeys: ["owners", "environments"] },
);
const validName = fc.stringMatching(/^[a-z][a-z0-9]{1,14}$/).map((s) => `fz-${s}`);
const validTeam = fc.tuple(validName, validSpec).map(([name, spec]) => ({ name, ...spec }) as Record<string, unknown>);

// ---- invalid values per field, each breaking a documented rule -------------------------------------

// eslint-disable-next-line no-control-regex -- NUL and BEL are among the characters a name must refuse
const badText = fc.stringMatching(/^[a-z ]{0,8}[$\n\r\u2028<>`\\\u0000\u202e\u0007][a-z ]{0,8}$/);
const invalidField: fc.Arbitrary<[string, unknown]> = fc.oneof(
  fc.tuple(
    fc.constant("name"),
    fc.oneof(
      fc.constantFrom(
        "",
        "a",
        "default",
        "kube-x",
        "flux-y",
        "aks-z",
        "azure-q",
        "kustomization",
        "team--x",
        "team-",
        "-team",
        "berth",
        "flux-config",
        "preview",
        "status",
      ),
      fc.stringMatching(/^[a-z]{41,60}$/),
      fc.stringMatching(/^[A-Z][a-z]{2,8}$/),
      fc.stringMatching(/^[0-9][a-z]{2,8}$/),
      badText,
      fc.integer(),
      fc.constant(null),
      fc.array(fc.string(), { maxLength: 2 }),
      fc.constant({}),
    ),
  ),
  fc.tuple(
    fc.constant("description"),
    fc.oneof(badText, fc.constant("x".repeat(257)), fc.integer(), fc.constant(null), fc.constant(["a"])),
  ),
  fc.tuple(
    fc.constant("owners"),
    fc.oneof(
      fc.constant([]),
      fc.array(fc.stringMatching(/^[a-z0-9]{1,20}$/), { minLength: 1, maxLength: 2 }),
      uuid.map((u) => [u.toUpperCase()]),
      uuid.map((u) => [u, u]),
      fc.array(uuid, { minLength: 21, maxLength: 22 }),
      uuid,
      fc.constant(null),
    ),
  ),
  fc.tuple(
    fc.constant("environments"),
    fc.oneof(
      fc.constant([]),
      fc.constant(["staging"]),
      fc.constant(["dev", "dev"]),
      fc.constant("dev"),
      fc.constant([1]),
      fc.constant(["Dev"]),
    ),
  ),
  fc.tuple(
    fc.constant("roleAssignments"),
    fc.oneof(
      fc.constant([{ role: "owner" }]),
      fc.constant([{ role: "rg-contributor" }, { role: "rg-contributor" }]),
      fc.constant([{ role: "rg-contributor", scope: "/" }]),
      fc.constant(["rg-contributor"]),
      fc.constant({}),
    ),
  ),
  fc.tuple(
    fc.constant("labels"),
    fc.oneof(
      fc.constant({ "berth.dev/team": "x" }),
      fc.constant({ "pod-security.kubernetes.io/enforce": "privileged" }),
      fc.constant({ "toolkit.fluxcd.io/tenant": "other" }),
      badText.map((v) => ({ "cost-center": v })),
      fc.constant({ "bad key!": "v" }),
      fc.constant({ k: "x".repeat(64) }),
      fc.constant(Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`l${i}`, "v"]))),
      fc.constant([]),
      fc.constant("x"),
    ),
  ),
  fc.tuple(
    fc.constant("quota"),
    fc.oneof(
      fc.constant({ cpu: "4; rm -rf /", memory: "1Gi", pods: 1 }),
      fc.constant({ cpu: "1", memory: "1Gi", pods: 0 }),
      fc.constant({ cpu: "1", memory: "1Gi", pods: 10_001 }),
      fc.constant({ cpu: "1", memory: "1Gi" }),
      fc.constant({ cpu: "1", memory: "1Gi", pods: 1.5 }),
      fc.constant({ cpu: "${CPU}", memory: "1Gi", pods: 1 }),
      fc.constant("big"),
    ),
  ),
  fc.tuple(
    fc.constant("containerLimits"),
    fc.constantFrom(
      { defaultRequest: { cpu: "x", memory: "1Gi" }, default: { cpu: "1", memory: "1Gi" } },
      { default: { cpu: "1", memory: "1Gi" } },
      7,
    ),
  ),
  fc
    .stringMatching(/^[a-zA-Z_]{1,12}$/)
    .filter((k) => !FIELDS.includes(k))
    .chain((k) => fc.tuple(fc.constant(k), fc.jsonValue({ maxDepth: 2 }))),
);
const REQUIRED = ["name", "owners", "environments"];
const FIELDS = [
  "name",
  "description",
  "owners",
  "environments",
  "roleAssignments",
  "labels",
  "quota",
  "containerLimits",
];

// ---- whole bodies --------------------------------------------------------------------------------

const json = (value: unknown) => Buffer.from(JSON.stringify(value), "utf8");
/** A valid body's text with the object's keys in random order and random insignificant whitespace. */
const reordered = (team: Record<string, unknown>) =>
  fc
    .tuple(
      fc.shuffledSubarray(Object.keys(team), { minLength: Object.keys(team).length }),
      fc.constantFrom("", " ", "\n", "\t  "),
    )
    .map(([keys, ws]) =>
      Buffer.from(
        `{${ws}${keys.map((k) => `${JSON.stringify(k)}:${ws}${JSON.stringify(team[k])}`).join(`,${ws}`)}${ws}}`,
        "utf8",
      ),
    );

const post = (
  category: string,
  valid: boolean,
  body: Buffer,
  creates?: string,
  contentType = "application/json",
): Case => ({ category, valid, method: "POST", url: "/v1/teams", contentType, body, creates });

const cases: fc.Arbitrary<Case> = fc.oneof(
  // Valid: a create (committed once per name), a preview (no commit), an update of the base team. About
  // 1.5 % each: they cost a render (and a commit) each, the invalid ones a few milliseconds.
  {
    weight: 1,
    arbitrary: validTeam.chain((t) => reordered(t).map((body) => post("valid create", true, body, t.name as string))),
  },
  {
    weight: 1,
    arbitrary: validTeam.map((t): Case => ({ ...post("valid preview", true, json(t)), url: "/v1/teams/preview" })),
  },
  {
    weight: 1,
    arbitrary: validSpec.map((s): Case => ({
      ...post("valid update", true, json(s)),
      method: "PUT",
      url: `/v1/teams/${BASE_TEAM}`,
    })),
  },
  // Schema and platform rules, one broken field at a time (or a required one missing).
  {
    weight: 60,
    arbitrary: fc
      .tuple(validTeam, invalidField)
      .map(([t, [k, v]]) => post(`invalid ${FIELDS.includes(k) ? k : "unknown field"}`, false, json({ ...t, [k]: v }))),
  },
  {
    weight: 8,
    arbitrary: fc
      .tuple(validTeam, fc.constantFrom(...REQUIRED))
      .map(([t, k]) =>
        post(`missing ${k}`, false, json(Object.fromEntries(Object.entries(t).filter(([key]) => key !== k)))),
      ),
  },
  {
    weight: 12,
    arbitrary: fc.tuple(validSpec, invalidField).map(([s, [k, v]]): Case => ({
      ...post(`invalid update ${FIELDS.includes(k) ? k : "unknown field"}`, false, json({ ...s, [k]: v })),
      method: "PUT",
      url: `/v1/teams/${BASE_TEAM}`,
    })),
  },
  {
    weight: 8,
    arbitrary: fc.tuple(validTeam, invalidField).map(([t, [k, v]]): Case => ({
      ...post("invalid preview", false, json({ ...t, [k]: v })),
      url: "/v1/teams/preview",
    })),
  },
  // Not a team at all.
  {
    weight: 8,
    arbitrary: fc
      .oneof(
        fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }),
        fc.string(),
        fc.integer(),
        fc.constant(null),
        fc.boolean(),
      )
      .map((v) => post("not an object", false, json(v))),
  },
  {
    weight: 8,
    arbitrary: fc
      .dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 })
      .filter((o) => !("owners" in o))
      .map((o) => post("random object", false, json(o))),
  },
  // Bytes that are not strict JSON: invalid UTF-8, duplicate keys, truncation, junk, JSON5-isms.
  {
    weight: 16,
    arbitrary: fc
      .tuple(
        validTeam,
        fc.constantFrom(
          [0xff],
          [0x80],
          [0xc0, 0xaf],
          [0xed, 0xa0, 0x80],
          [0xe2, 0x82],
          [0xf8, 0x88, 0x80, 0x80, 0x80],
          [0xfe, 0xfe],
        ),
      )
      .map(([t, bad]) => {
        const [before, after] = JSON.stringify({ ...t, description: "@MARK@" }).split("@MARK@") as [string, string];
        return post(
          "invalid UTF-8",
          false,
          Buffer.concat([Buffer.from(`${before}ok`), Buffer.from(bad), Buffer.from(after)]),
        );
      }),
  },
  {
    weight: 12,
    arbitrary: fc.tuple(validTeam, fc.constantFrom("name", "owners", "environments")).map(([t, k]) => {
      const text = JSON.stringify(t);
      return post(
        "duplicate key",
        false,
        Buffer.from(`${text.slice(0, -1)},${JSON.stringify(k)}:${JSON.stringify(t[k])}}`),
      );
    }),
  },
  {
    weight: 6,
    arbitrary: validTeam.map((t) =>
      post("__proto__ key", false, Buffer.from(`{"__proto__":{"admin":true},${JSON.stringify(t).slice(1)}`)),
    ),
  },
  {
    weight: 4,
    arbitrary: fc
      .tuple(validTeam, fc.integer({ min: 40, max: 2000 }))
      .map(([t, depth]) =>
        post("deep nesting", false, json({ ...t, labels: JSON.parse(`${"[".repeat(depth)}${"]".repeat(depth)}`) })),
      ),
  },
  {
    weight: 10,
    arbitrary: fc.tuple(validTeam, fc.nat()).map(([t, cut]) => {
      const text = JSON.stringify(t);
      return post("truncated", false, Buffer.from(text.slice(0, cut % text.length)));
    }),
  },
  {
    weight: 6,
    arbitrary: fc
      .tuple(validTeam, fc.constantFrom("x", "}", ",", " 1", "{}", "//"))
      .map(([t, junk]) => post("trailing junk", false, Buffer.from(JSON.stringify(t) + junk))),
  },
  {
    weight: 6,
    arbitrary: validTeam
      .map((t) => JSON.stringify(t))
      .chain((text) =>
        fc
          .constantFrom(
            text.replace(/"/g, "'"),
            text.replace(/}$/, ",}"),
            `/* c */${text}`,
            text.replace(/"environments":/, "environments:"),
            text.replace(/\[/, "[NaN,"),
          )
          .map((b) => post("JSON5-ism", false, Buffer.from(b))),
      ),
  },
  {
    weight: 6,
    arbitrary: fc
      .uint8Array({ minLength: 0, maxLength: 200 })
      .map((bytes) => post("random bytes", false, Buffer.from(bytes))),
  },
  {
    weight: 6,
    arbitrary: fc
      .tuple(
        validTeam,
        fc.constantFrom(
          "text/plain",
          "application/x-www-form-urlencoded",
          "application/json; charset=latin1",
          "application/xml",
        ),
      )
      .map(([t, ct]) => post("wrong content type", false, json(t), undefined, ct)),
  },
);

describe(`fuzzed request bodies (${RUNS} runs, seed ${SEED})`, () => {
  let remote: BareRepo;
  let berth: RunningBerth;
  beforeAll(async () => {
    remote = await createBareRepo();
    // Quiet logs: 10 000 request lines would only cost time. Audit lines are still written (at info).
    berth = await startBerth({ remoteUrl: remote.url, env: { BERTH_LOG_LEVEL: "warn" } });
    const base = await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: { authorization: `Bearer ${DEV_TOKEN}` },
      payload: { name: BASE_TEAM, owners: ["0b9a3c1e-1111-4222-8333-444455556666"], environments: ["dev"] },
    });
    expect(base.statusCode).toBe(201);
  });
  afterAll(async () => {
    await berth?.stop();
    await remote?.remove();
  });

  it(
    "never answers 5xx, never 2xx for an invalid body, always problem+json for errors; the history holds only valid teams",
    { timeout: 1_800_000 },
    async () => {
      const created = new Set<string>([BASE_TEAM]);
      const counts = new Map<string, { n: number; statuses: Set<number>; ms: number }>();
      await fc.assert(
        fc.asyncProperty(cases, async (c) => {
          const started = performance.now();
          const res = await berth.server.inject({
            method: c.method,
            url: c.url,
            headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": c.contentType },
            payload: c.body,
          });
          const seen = counts.get(c.category) ?? { n: 0, statuses: new Set<number>(), ms: 0 };
          seen.n += 1;
          seen.ms += performance.now() - started;
          seen.statuses.add(res.statusCode);
          counts.set(c.category, seen);
          const label = `${c.category} ${c.method} ${c.url} -> ${res.statusCode} ${res.body.slice(0, 300)}`;
          expect(res.statusCode, label).toBeLessThan(500);
          if (res.statusCode >= 400) {
            expect(res.headers["content-type"], label).toMatch(/^application\/problem\+json/);
            const problem = readProblem(res);
            expect(PROBLEM_TYPES, label).toContain(problem.type);
            expect(problem.status, label).toBe(res.statusCode);
            expect(problem.requestId, label).toBe(res.headers["x-request-id"]);
          }
          if (!c.valid) {
            expect(res.statusCode, label).toBeGreaterThanOrEqual(400);
            return;
          }
          if (c.creates) {
            expect(res.statusCode, label).toBe(created.has(c.creates) ? 409 : 201);
            created.add(c.creates);
          } else {
            expect(res.statusCode, label).toBe(200);
          }
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      );

      if (process.env.FUZZ_REPORT)
        for (const [category, { n, ms, statuses }] of counts)
          process.stdout.write(
            `${category}: ${n} runs, ${(ms / n).toFixed(1)} ms each, statuses ${[...statuses].join(",")}\n`,
          );
      // The generator reached every kind of body, valid and invalid, several times.
      const minPerCategory = RUNS >= 5000 ? 20 : 1;
      for (const [category, { n }] of counts) expect(n, category).toBeGreaterThanOrEqual(minPerCategory);
      expect([...counts.keys()].length).toBeGreaterThanOrEqual(20);
      expect(created.size).toBeGreaterThan(RUNS >= 5000 ? 20 : 1);

      // Every path any commit ever touched belongs to a team that was validly created (or the index files).
      const clone = await makeTempDir("berth-fuzz-");
      try {
        await git(["clone", "--quiet", remote.url, `${clone}/repo`]);
        const touched = (await git(["log", "--name-only", "--format="], { cwd: `${clone}/repo` }))
          .split("\n")
          .filter(Boolean);
        const teamsOf = new Set<string>();
        for (const path of touched) {
          // A team's folder or its Flux file in its shard; otherwise a cluster's top index or a shard's.
          const flux = /^clusters\/[^/]+\/teams\/([0-9a-f]{2})\/([^/]+)\.yaml$/.exec(path);
          const team =
            /^teams\/([^/]+)\//.exec(path)?.[1] ?? (flux && flux[2] !== "kustomization" ? flux[2] : undefined);
          if (flux && team) expect(teamShard(team), path).toBe(flux[1]);
          if (team) teamsOf.add(team);
          else expect(path, path).toMatch(/^clusters\/[^/]+\/teams\/([0-9a-f]{2}\/)?kustomization\.yaml$/);
        }
        expect([...teamsOf].sort()).toEqual([...created].sort());
        const subjects = (await git(["log", "--format=%s"], { cwd: `${clone}/repo` })).split("\n").filter(Boolean);
        for (const s of subjects) expect(s).toMatch(/^berth: (onboard team fz-[a-z0-9-]+|update team fz-base)$/);
      } finally {
        await rm(clone, { recursive: true, force: true });
      }
    },
  );
});
