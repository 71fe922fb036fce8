import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { teamShard } from "@berth/core";
import {
  deleteResponse,
  previewResponse,
  reviewListResponse,
  teamListResponse,
  teamResponse,
  writeResponse,
} from "@berth/api-contract";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, startBerth, type RunningBerth } from "../support/berth.js";
import { readAnswer, readProblem } from "../support/contract.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const auth = { authorization: `Bearer ${DEV_TOKEN}` };
const team = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  description: "A team",
  owners: [OWNER],
  environments: ["dev"],
  ...extra,
});

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, encoding: "utf8" }).trim();
}

/** A fresh clone of the remote: what Flux would pull. */
function cloneOf(remote: string): string {
  const dir = mkdtempSync(join(tmpdir(), "berth-verify-"));
  execFileSync("git", ["clone", "--quiet", remote, dir]);
  return dir;
}

describe("onboarding API against a file:// Flux repo", () => {
  let remote: string;
  let berth: RunningBerth;
  const remoteHead = () => git(remote.replace("file://", ""), "rev-parse", "--verify", "-q", "refs/heads/main");

  beforeAll(async () => {
    const bare = mkdtempSync(join(tmpdir(), "berth-remote-"));
    execFileSync("git", ["init", "--quiet", "--bare", "--initial-branch=main", bare]);
    remote = pathToFileURL(bare).href;
    berth = await startBerth({ remoteUrl: remote });
  });
  afterAll(async () => {
    await berth?.stop();
  });

  it("serves health and the API description without a token", async () => {
    expect((await berth.server.inject({ url: "/healthz" })).statusCode).toBe(200);
    expect((await berth.server.inject({ url: "/readyz" })).statusCode).toBe(200);
    const spec = await berth.server.inject({ url: "/openapi.json" });
    expect(spec.statusCode).toBe(200);
    const doc = spec.json(); // the OpenAPI document, not an answer of the contract
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(["/v1/teams", "/v1/teams/{name}", "/v1/teams/{name}/preview", "/v1/teams/preview"]),
    );
    expect(doc.paths["/v1/teams"].post.requestBody.content["application/json"].schema.properties.name).toBeDefined();
    // Fleet operations are described too, with their bodies.
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        "/v1/templates",
        "/v1/rollouts",
        "/v1/rollouts/preview",
        "/v1/rollouts/{id}",
        "/v1/rollouts/{id}/abort",
        "/v1/teams/{name}/adopt",
        "/v1/teams/{name}/adopt/preview",
        "/v1/fleet/drift",
      ]),
    );
    expect(
      doc.paths["/v1/rollouts"].post.requestBody.content["application/json"].schema.properties.target,
    ).toBeDefined();
    expect((await berth.server.inject({ url: "/docs/" })).statusCode).toBe(200);
  });

  it("describes in OpenAPI every status, header and query parameter the routes answer to", async () => {
    type Operation = {
      parameters?: Array<{ in: string; name: string }>;
      responses: Record<string, { headers?: Record<string, { $ref: string }> }>;
    };
    // The OpenAPI document, not an answer of the contract.
    const doc = (await berth.server.inject({ url: "/openapi.json" })).json() as {
      paths: Record<string, Record<string, Operation>>;
      components: { headers: Record<string, unknown> };
    };
    const paths = doc.paths;
    const op = (path: string, method: string) => paths[path]![method]!;
    const params = (o: Operation, where: string) =>
      (o.parameters ?? []).filter((p) => p.in === where).map((p) => p.name);
    const statuses = (o: Operation) => Object.keys(o.responses);
    const writes = [op("/v1/teams", "post"), op("/v1/teams/{name}", "put"), op("/v1/teams/{name}", "delete")];
    const withBody = [
      op("/v1/teams", "post"),
      op("/v1/teams/preview", "post"),
      op("/v1/teams/{name}", "put"),
      op("/v1/teams/{name}/preview", "post"),
    ];
    for (const o of writes) {
      expect(params(o, "header")).toContain("idempotency-key");
      // 409: team-exists, path-ownership, idempotency-key-in-use; 422: idempotency-key-reused and validation.
      expect(statuses(o)).toEqual(expect.arrayContaining(["400", "401", "403", "409", "422", "429", "503"]));
    }
    for (const o of withBody) expect(statuses(o)).toEqual(expect.arrayContaining(["400", "409", "413", "415", "422"]));
    // Every write that commits takes Berth-On-Behalf-Of, and answers 400 to a malformed one.
    const commits = [
      ...writes,
      op("/v1/teams/{name}/adopt", "post"),
      op("/v1/rollouts", "post"),
      ...["pause", "resume", "abort"].map((action) => op(`/v1/rollouts/{id}/${action}`, "post")),
    ];
    for (const o of commits) {
      expect(params(o, "header")).toContain("berth-on-behalf-of");
      expect(statuses(o)).toContain("400");
    }
    expect(params(op("/v1/teams", "get"), "query")).toEqual(expect.arrayContaining(["limit", "continue"]));
    for (const o of [op("/v1/teams", "get"), op("/v1/teams/{name}", "get")]) {
      expect(params(o, "header")).toContain("if-none-match");
      expect(statuses(o)).toEqual(expect.arrayContaining(["200", "304", "401", "429"]));
    }

    // The response headers the API sends, declared where it sends them (and each declared header defined).
    const headers = (o: Operation, status: string) => Object.keys(o.responses[status]?.headers ?? {}).sort();
    expect(headers(op("/v1/teams", "get"), "200")).toEqual(["ETag", "RateLimit", "RateLimit-Policy"]);
    expect(headers(op("/v1/teams/{name}", "get"), "304")).toEqual(["ETag", "RateLimit", "RateLimit-Policy"]);
    expect(headers(op("/v1/teams", "post"), "201")).toEqual([
      "Idempotent-Replayed",
      "Location",
      "RateLimit",
      "RateLimit-Policy",
    ]);
    expect(headers(op("/v1/teams/{name}", "put"), "200")).toEqual([
      "Idempotent-Replayed",
      "RateLimit",
      "RateLimit-Policy",
    ]);
    for (const o of writes)
      for (const status of ["409", "429", "503"]) expect(headers(o, status)).toContain("Retry-After");
    expect(headers(op("/v1/teams/preview", "post"), "200")).toEqual(["RateLimit", "RateLimit-Policy"]);
    const refs = Object.values(paths).flatMap((ops) =>
      Object.values(ops).flatMap((o) =>
        Object.values(o.responses).flatMap((r) => Object.values(r.headers ?? {}).map((h) => h.$ref)),
      ),
    );
    for (const ref of new Set(refs))
      expect(doc.components.headers, ref).toHaveProperty([ref.replace("#/components/headers/", "")]);
  });

  it("refuses every /v1 route without a valid token, with problem+json", async () => {
    const routes = [
      ["GET", "/v1/teams"],
      ["POST", "/v1/teams"],
      ["POST", "/v1/teams/preview"],
      ["GET", "/v1/teams/payments"],
      ["PUT", "/v1/teams/payments"],
      ["DELETE", "/v1/teams/payments"],
      ["POST", "/v1/teams/payments/preview"],
      ["GET", "/v1/teams/payments/status"],
      ["GET", "/v1/reviews"],
    ] as const;
    for (const [method, url] of routes) {
      for (const headers of [{}, { authorization: "Bearer wrong-token-wrong-token" }, { authorization: "Basic abc" }]) {
        const res = await berth.server.inject({
          method,
          url,
          headers,
          payload: method === "GET" || method === "DELETE" ? undefined : team("payments"),
        });
        expect(res.statusCode, `${method} ${url} ${JSON.stringify(headers)}`).toBe(401);
        expect(res.headers["content-type"]).toContain("application/problem+json");
        expect(res.headers["www-authenticate"]).toMatch(/^Bearer/);
      }
    }
  });

  it("onboards a team in one commit that a clone of the remote holds", async () => {
    const res = await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: { ...auth, "x-request-id": "req-create-1" },
      payload: team("payments", { roleAssignments: [{ role: "rg-contributor" }] }),
    });
    expect(res.statusCode).toBe(201);
    const body = readAnswer(res, writeResponse);
    expect(body.revision).toBe(remoteHead());
    expect(body.committed).toBe(true);
    expect(body.files.map((f) => f.path)).toContain("teams/payments/base/team.yaml");
    expect(res.headers.location).toBe("/v1/teams/payments");

    const clone = cloneOf(remote);
    try {
      const spec = parse(readFileSync(join(clone, "teams/payments/base/team.yaml"), "utf8"));
      expect(spec).toMatchObject({
        kind: "Team",
        metadata: { name: "payments" },
        spec: { owners: [OWNER], environments: ["dev"] },
      });
      for (const f of body.files) expect(existsSync(join(clone, f.path)), f.path).toBe(true);
      expect(
        parse(readFileSync(join(clone, "clusters/aks-dev-weu/teams/kustomization.yaml"), "utf8")).resources,
      ).toEqual([teamShard("payments")]);
      expect(
        readFileSync(join(clone, `clusters/aks-dev-weu/teams/${teamShard("payments")}/kustomization.yaml`), "utf8"),
      ).toContain("- payments.yaml");
      const message = git(clone, "log", "-1", "--format=%B");
      expect(message).toContain("berth: onboard team payments");
      expect(message).toContain("Berth-Requested-By: developer");
      expect(message).toContain("Berth-Request-Id: req-create-1");
      expect(git(clone, "rev-list", "--count", "HEAD")).toBe("1");
    } finally {
      rmSync(clone, { recursive: true, force: true });
    }
  });

  it("answers 409 for an existing team and commits nothing", async () => {
    const before = remoteHead();
    const res = await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: auth,
      payload: team("payments"),
    });
    expect(res.statusCode).toBe(409);
    expect(readProblem(res)).toMatchObject({ status: 409, type: "https://berth.dev/problems/team-exists" });
    expect(remoteHead()).toBe(before);
  });

  it("reads teams back from the repo", async () => {
    const list = await berth.server.inject({ url: "/v1/teams", headers: auth });
    expect(list.statusCode).toBe(200);
    expect(readAnswer(list, teamListResponse).items.map((t) => t.name)).toEqual(["payments"]);
    const one = await berth.server.inject({ url: "/v1/teams/payments", headers: auth });
    expect(readAnswer(one, teamResponse).team).toMatchObject({
      name: "payments",
      roleAssignments: [{ role: "rg-contributor" }],
    });
    const missing = await berth.server.inject({ url: "/v1/teams/nobody", headers: auth });
    expect(missing.statusCode).toBe(404);
    expect(missing.headers["content-type"]).toContain("application/problem+json");
    // Direct mode: every write went to main, nothing waits in review.
    const reviews = await berth.server.inject({ url: "/v1/reviews", headers: auth });
    expect(readAnswer(reviews, reviewListResponse)).toEqual({ review: "direct", items: [] });
  });

  it("previews a change as a unified diff without committing", async () => {
    const before = remoteHead();
    const res = await berth.server.inject({
      method: "POST",
      url: "/v1/teams/payments/preview",
      headers: auth,
      payload: { description: "Payments", owners: [OWNER], environments: ["dev", "prod"] },
    });
    expect(res.statusCode).toBe(200);
    const body = readAnswer(res, previewResponse);
    expect(body.files).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: "teams/payments/clusters/aks-prod-neu/identity.yaml", status: "added" }),
      ]),
    );
    expect(body.files).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          path: "teams/payments/clusters/aks-dev-weu/role-assignment.yaml",
          status: "deleted",
        }),
      ]),
    );
    expect(body.diff).toContain("+++ b/teams/payments/clusters/aks-prod-weu/resource-group.yaml");
    expect(body.diff).toContain("-  description: A team");
    const fresh = await berth.server.inject({
      method: "POST",
      url: "/v1/teams/preview",
      headers: auth,
      payload: team("search"),
    });
    expect(fresh.statusCode).toBe(200);
    expect(
      readAnswer(fresh, previewResponse).files.every(
        (f) => f.status === "added" || f.path.endsWith("kustomization.yaml"),
      ),
    ).toBe(true);
    expect(remoteHead()).toBe(before);
  });

  it("updates a team, committing only what changed, and nothing when nothing changed", async () => {
    const payload = {
      description: "Payments",
      owners: [OWNER],
      environments: ["dev", "prod"],
      roleAssignments: [{ role: "rg-contributor" }],
    };
    const res = await berth.server.inject({ method: "PUT", url: "/v1/teams/payments", headers: auth, payload });
    expect(res.statusCode).toBe(200);
    const body = readAnswer(res, writeResponse);
    expect(body.committed).toBe(true);
    expect(body.files).toEqual(
      expect.arrayContaining([
        { path: `clusters/aks-prod-weu/teams/${teamShard("payments")}/payments.yaml`, status: "added" },
        { path: "teams/payments/base/team.yaml", status: "modified" },
      ]),
    );
    expect(body.files.find((f) => f.path === "teams/payments/base/limit-range.yaml")).toBeUndefined();
    const head = remoteHead();
    expect(body.revision).toBe(head);

    const again = await berth.server.inject({ method: "PUT", url: "/v1/teams/payments", headers: auth, payload });
    expect(again.statusCode).toBe(200);
    expect(readAnswer(again, writeResponse)).toMatchObject({ committed: false, files: [], revision: head });
    expect(remoteHead()).toBe(head);
  });

  it("rejects invalid and injecting input with 422 naming the field, and commits nothing", async () => {
    const before = remoteHead();
    const cases: Array<[Record<string, unknown>, string]> = [
      [team("Payments"), "name"],
      [team("kube-payments"), "name"],
      [team("flux-config"), "name"],
      [team("ok-team", { description: "line\nkind: Secret" }), "description"],
      [team("ok-team", { description: "costs ${SUBSCRIPTION_ID}" }), "description"],
      [team("ok-team", { description: "a\u2028b" }), "description"],
      [team("ok-team", { labels: { "cost-center": "x\n---\nkind: Secret" } }), "labels.cost-center"],
      [team("ok-team", { labels: { "toolkit.fluxcd.io/tenant": "other" } }), "labels.toolkit.fluxcd.io/tenant"],
      [team("ok-team", { environments: ["staging"] }), "environments.0"],
      [team("ok-team", { roleAssignments: [{ role: "owner" }] }), "roleAssignments.0.role"],
      [team("ok-team", { owners: ["not-a-uuid"] }), "owners.0"],
      [team("ok-team", { quota: { cpu: "4; rm", memory: "1Gi", pods: 1 } }), "quota.cpu"],
      [{ ...team("ok-team"), extra: "field" }, "(body)"],
    ];
    for (const [payload, field] of cases) {
      const res = await berth.server.inject({ method: "POST", url: "/v1/teams", headers: auth, payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
      expect(res.headers["content-type"]).toContain("application/problem+json");
      const problem = readProblem(res);
      expect(
        problem.errors?.map((e) => e.field),
        JSON.stringify(payload),
      ).toContain(field);
      expect(problem.errors?.every((e) => e.rule.length > 0)).toBe(true);
    }
    expect(remoteHead()).toBe(before);
  });

  it("refuses a team whose files would land on a cluster's teams index, leaving every index intact", async () => {
    // Issue 10, defect 1: `kustomization` was accepted and its Flux file replaced every cluster's index.
    const before = remoteHead();
    for (const environments of [["dev"], ["dev", "prod"]]) {
      const res = await berth.server.inject({
        method: "POST",
        url: "/v1/teams",
        headers: auth,
        payload: team("kustomization", { environments }),
      });
      expect(res.statusCode).toBe(422);
      expect(res.headers["content-type"]).toContain("application/problem+json");
      const problem = readProblem(res);
      expect(problem.errors).toEqual([
        {
          field: "name",
          rule: expect.stringContaining(`clusters/aks-dev-weu/teams/${teamShard("kustomization")}/kustomization.yaml`),
        },
      ]);
      const preview = await berth.server.inject({
        method: "POST",
        url: "/v1/teams/preview",
        headers: auth,
        payload: team("kustomization", { environments }),
      });
      expect(preview.statusCode).toBe(422);
    }
    expect(remoteHead()).toBe(before);
    const clone = cloneOf(remote);
    try {
      const index = parse(readFileSync(join(clone, "clusters/aks-dev-weu/teams/kustomization.yaml"), "utf8"));
      expect(index.resources).not.toContain("kustomization.yaml");
      expect(existsSync(join(clone, "teams/kustomization"))).toBe(false);
    } finally {
      rmSync(clone, { recursive: true, force: true });
    }
  });

  it("answers malformed requests with problem+json", async () => {
    const badJson = await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: { ...auth, "content-type": "application/json" },
      payload: "{not json",
    });
    expect(badJson.statusCode).toBe(400);
    expect(badJson.headers["content-type"]).toContain("application/problem+json");
    const badType = await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: { ...auth, "content-type": "text/plain" },
      payload: "x",
    });
    expect(badType.statusCode).toBe(415);
    const tooBig = await berth.server.inject({
      method: "POST",
      url: "/v1/teams",
      headers: auth,
      payload: team("big", { description: "x".repeat(70_000) }),
    });
    expect(tooBig.statusCode).toBe(413);
    const badName = await berth.server.inject({ url: "/v1/teams/Not_A_Name", headers: auth });
    expect(badName.statusCode).toBe(422);
  });

  it("offboards a team in one commit, leaving other teams intact", async () => {
    expect(
      (await berth.server.inject({ method: "POST", url: "/v1/teams", headers: auth, payload: team("search") }))
        .statusCode,
    ).toBe(201);
    const res = await berth.server.inject({ method: "DELETE", url: "/v1/teams/payments", headers: auth });
    expect(res.statusCode).toBe(200);
    expect(
      readAnswer(res, deleteResponse).files.every(
        (f) => f.status === "deleted" || f.path.endsWith("/kustomization.yaml"),
      ),
    ).toBe(true);
    const clone = cloneOf(remote);
    try {
      expect(existsSync(join(clone, "teams/payments"))).toBe(false);
      expect(existsSync(join(clone, `clusters/aks-prod-weu/teams/${teamShard("payments")}`))).toBe(false);
      expect(existsSync(join(clone, "teams/search/base/team.yaml"))).toBe(true);
      expect(
        readFileSync(join(clone, `clusters/aks-dev-weu/teams/${teamShard("search")}/kustomization.yaml`), "utf8"),
      ).toContain("- search.yaml");
      // payments was alone in its shard: the shard folder went, and the top index lists search's only.
      expect(existsSync(join(clone, `clusters/aks-dev-weu/teams/${teamShard("payments")}`))).toBe(false);
      expect(
        parse(readFileSync(join(clone, "clusters/aks-dev-weu/teams/kustomization.yaml"), "utf8")).resources,
      ).toEqual([teamShard("search")]);
      expect(git(clone, "log", "-1", "--format=%s")).toBe("berth: offboard team payments");
    } finally {
      rmSync(clone, { recursive: true, force: true });
    }
    expect((await berth.server.inject({ method: "DELETE", url: "/v1/teams/payments", headers: auth })).statusCode).toBe(
      404,
    );
  });

  it("never writes the token or authorization header to the log", async () => {
    await berth.server.inject({ url: "/v1/teams", headers: auth });
    const all = berth.logs.join("");
    expect(all).toContain("reqId");
    expect(all).not.toContain(DEV_TOKEN);
  });
});
