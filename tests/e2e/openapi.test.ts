/**
 * The OpenAPI document against the routes' real answers: every operation it lists is called, without a token,
 * with one, and past the rate limit, and every status it answered must be declared for that operation (a client
 * generated from the document must know each of them). Problem answers parse with @berth/api-contract's schema.
 */
import { problemSchema } from "@berth/api-contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, startBerth, type RunningBerth } from "../support/berth.js";
import { checkBody } from "../support/contract.js";
import { createBareRepo } from "../support/git-remotes.js";

type Operation = { responses: Record<string, unknown>; requestBody?: unknown };
type Doc = { paths: Record<string, Record<string, Operation>> };

const SAMPLE_PARAMS: Record<string, string> = { name: "payments", id: "ro-20261127-000000-abcdef" };
const METHODS = ["get", "post", "put", "delete", "patch"] as const;

describe("the OpenAPI document declares every status the routes answer", () => {
  let berth: RunningBerth;
  let limited: RunningBerth;
  let doc: Doc;

  beforeAll(async () => {
    const remote = await createBareRepo();
    berth = await startBerth({ remoteUrl: remote.url });
    // One request per budget and window: the second read and the second write are refused (429), on any route.
    limited = await startBerth({
      remoteUrl: remote.url,
      api: { rateLimit: { reads: 1, writes: 1, unauthenticated: 1000, windowSeconds: 600 } },
    });
    doc = (await berth.server.inject({ url: "/openapi.json" })).json() as Doc; // the document, not a contract answer
  });
  afterAll(async () => {
    await berth?.stop();
    await limited?.stop();
  });

  const operations = () =>
    Object.entries(doc.paths)
      .filter(([path]) => path.startsWith("/v1/"))
      .flatMap(([path, ops]) =>
        METHODS.filter((m) => ops[m]).map((method) => ({
          path,
          method,
          op: ops[method]!,
          url: path.replace(/\{(\w+)\}/g, (_m, p: string) => SAMPLE_PARAMS[p] ?? "x"),
        })),
      );

  it("lists the API's operations", () => {
    expect(operations().length).toBeGreaterThanOrEqual(20);
  });

  it("each status answered without a token, with one, and past the rate limit is declared", async () => {
    const undeclared: string[] = [];
    const seen = new Set<number>();
    const check = (o: ReturnType<typeof operations>[number], status: number, body: string, how: string) => {
      seen.add(status);
      if (!(String(status) in o.op.responses))
        undeclared.push(`${o.method.toUpperCase()} ${o.path}: ${status} (${how})`);
      if (status >= 400)
        checkBody(`${o.method.toUpperCase()} ${o.url} (${how})`, status, JSON.parse(body), problemSchema);
    };
    const send = (api: RunningBerth, o: ReturnType<typeof operations>[number], headers: Record<string, string>) =>
      api.server.inject({
        method: o.method.toUpperCase() as "GET",
        url: o.url,
        headers,
        ...(o.op.requestBody ? { payload: {} } : {}),
      });
    const auth = { authorization: `Bearer ${DEV_TOKEN}` };
    for (const o of operations()) {
      const anonymous = await send(berth, o, {});
      check(o, anonymous.statusCode, anonymous.body, "no token");
      const answered = await send(berth, o, auth);
      check(o, answered.statusCode, answered.body, "with a token");
    }
    // Use up the one read and the one write, then every route is past its limit.
    await limited.server.inject({ url: "/v1/teams", headers: auth });
    await limited.server.inject({ method: "POST", url: "/v1/teams/preview", headers: auth, payload: {} });
    for (const o of operations()) {
      const refused = await send(limited, o, auth);
      expect(refused.statusCode, `${o.method} ${o.path}`).toBe(429);
      check(o, refused.statusCode, refused.body, "past the rate limit");
    }
    expect([...seen]).toEqual(expect.arrayContaining([401, 429]));
    expect(undeclared).toEqual([]);
  });
});
