/**
 * HTTP protocol edge cases a hostile client sends (issue 10, defects 2–8), over real sockets: the answers
 * fetch-like clients never provoke. Each test names the defect it pins down.
 */
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { problemSchema } from "@berth/api-contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, startBerth, type RunningBerth } from "../support/berth.js";
import { checkBody } from "../support/contract.js";
import { createBareRepo, inspectRemote, type BareRepo } from "../support/git-remotes.js";
import {
  openSocket,
  rawRequest,
  readResponse,
  requestBytes,
  waitForClose,
  type RawResponse,
} from "../support/raw-http.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const PROBLEM = "https://berth.dev/problems/";
const TIMEOUTS = { headersMs: 1000, requestMs: 2000, idleMs: 2000, keepAliveMs: 1000 };

/** Every error the server sends: problem+json, a stable documented type, the request id in header and body, no framework codes. */
function expectProblem(res: RawResponse, status: number, type: string) {
  expect(res.status, res.body).toBe(status);
  expect(res.headers["content-type"]?.[0]).toMatch(/^application\/problem\+json/);
  checkBody("a raw request", res.status, res.json, problemSchema);
  expect(res.json, res.body).toMatchObject({ type: `${PROBLEM}${type}`, status });
  const requestId = res.headers["x-request-id"]?.[0];
  expect(requestId).toMatch(/^[A-Za-z0-9._-]{1,64}$/);
  expect(res.json?.requestId).toBe(requestId);
  expect(res.body).not.toMatch(/FST_|ERR_|HPE_/);
  expect(res.headers["x-content-type-options"]).toEqual(["nosniff"]);
  expect(res.headers["cache-control"]).toEqual(["no-store"]);
}

describe("HTTP protocol edge cases", () => {
  let remote: BareRepo;
  let berth: RunningBerth;
  let port: number;
  const head = (method: string, path: string, extra: string[] = []) => [
    `${method} ${path} HTTP/1.1`,
    "Host: berth.test",
    "Connection: close",
    ...extra,
  ];
  const authed = (method: string, path: string, extra: string[] = []) =>
    head(method, path, [`Authorization: Bearer ${DEV_TOKEN}`, ...extra]);
  const teamJson = (name: string) => JSON.stringify({ name, owners: [OWNER], environments: ["dev"] });
  const commits = async () => (await inspectRemote(remote.url)).commits.length;

  beforeAll(async () => {
    remote = await createBareRepo();
    berth = await startBerth({ remoteUrl: remote.url, listen: true, api: { timeouts: TIMEOUTS } });
    port = Number(new URL(berth.url).port);
    // One team so the remote's branch exists and "nothing was committed" can be checked by counting.
    const first = await rawRequest(
      port,
      requestBytes(authed("POST", "/v1/teams", ["Content-Type: application/json"]), teamJson("first")),
    );
    expect(first.status).toBe(201);
  });
  afterAll(async () => {
    await berth?.stop();
    await remote?.remove();
  });

  it("defect 2: refuses a body that is not valid UTF-8 (400) instead of replacing bytes with U+FFFD", async () => {
    const before = await commits();
    const bad = Buffer.concat([
      Buffer.from('{"name":"utf-eight","owners":["'),
      Buffer.from(OWNER),
      Buffer.from('"],"environments":["dev"],"description":"caf'),
      Buffer.from([0xe9]),
      Buffer.from('"}'),
    ]);
    const overlong = Buffer.concat([
      Buffer.from('{"name":"utf-eight","owners":["'),
      Buffer.from(OWNER),
      Buffer.from('"],"environments":["dev"],"description":"'),
      Buffer.from([0xc0, 0xaf]),
      Buffer.from('"}'),
    ]);
    const surrogate = Buffer.concat([
      Buffer.from('{"name":"utf-eight","owners":["'),
      Buffer.from(OWNER),
      Buffer.from('"],"environments":["dev"],"description":"'),
      Buffer.from([0xed, 0xa0, 0x80]),
      Buffer.from('"}'),
    ]);
    for (const body of [bad, overlong, surrogate]) {
      const res = await rawRequest(
        port,
        requestBytes(authed("POST", "/v1/teams", ["Content-Type: application/json"]), body),
      );
      expectProblem(res, 400, "bad-request");
      expect(res.json?.detail).toMatch(/UTF-8/);
    }
    const put = await rawRequest(
      port,
      requestBytes(
        authed("PUT", "/v1/teams/first", ["Content-Type: application/json; charset=utf-8"]),
        Buffer.concat([
          Buffer.from('{"owners":["'),
          Buffer.from(OWNER),
          Buffer.from('"],"environments":["dev"],"description":"'),
          Buffer.from([0xff]),
          Buffer.from('"}'),
        ]),
      ),
    );
    expectProblem(put, 400, "bad-request");
    expect(await commits()).toBe(before);
  });

  it("defect 7: refuses duplicate keys in a JSON body (400), at any depth, naming the key", async () => {
    const before = await commits();
    const cases = [
      `{"name":"\${EVIL}","name":"shadowed","owners":["${OWNER}"],"environments":["dev"]}`,
      `{"name":"shadowed","owners":["${OWNER}"],"environments":["dev"],"labels":{"team":"a","team":"b"}}`,
      `{"name":"shadowed","owners":["${OWNER}"],"environments":["dev"],"quota":{"cpu":"1","memory":"1Gi","pods":1,"pods":2}}`,
      // The same key spelled with an escape is still the same key.
      `{"name":"shadowed","\\u006eame":"other","owners":["${OWNER}"],"environments":["dev"]}`,
    ];
    for (const body of cases) {
      const res = await rawRequest(
        port,
        requestBytes(authed("POST", "/v1/teams", ["Content-Type: application/json"]), body),
      );
      expectProblem(res, 400, "bad-request");
      expect(res.json?.detail, body).toMatch(/duplicate key/);
    }
    expect(await commits()).toBe(before);
    const absent = await rawRequest(port, requestBytes(authed("GET", "/v1/teams/shadowed")));
    expect(absent.status).toBe(404);
  });

  it("defect 3: refuses a request with two Authorization headers, whichever comes first", async () => {
    for (const pair of [
      [`Bearer ${DEV_TOKEN}`, "Bearer wrong-token-wrong-token"],
      ["Bearer wrong-token-wrong-token", `Bearer ${DEV_TOKEN}`],
      [`Bearer ${DEV_TOKEN}`, `Bearer ${DEV_TOKEN}`],
    ]) {
      const res = await rawRequest(
        port,
        requestBytes(
          head(
            "GET",
            "/v1/teams",
            pair.map((v) => `Authorization: ${v}`),
          ),
        ),
      );
      expectProblem(res, 400, "bad-request");
      expect(res.headers["www-authenticate"]?.[0]).toMatch(/^Bearer .*error="invalid_request"/);
    }
  });

  it("defect 8: reads the auth scheme case-insensitively (RFC 9110)", async () => {
    for (const scheme of ["bearer", "BEARER", "bEaReR"]) {
      const res = await rawRequest(
        port,
        requestBytes(head("GET", "/v1/teams", [`Authorization: ${scheme} ${DEV_TOKEN}`])),
      );
      expect(res.status, scheme).toBe(200);
    }
    const basic = await rawRequest(
      port,
      requestBytes(head("GET", "/v1/teams", [`Authorization: Basic ${Buffer.from("a:b").toString("base64")}`])),
    );
    expectProblem(basic, 401, "unauthorized");
  });

  it("defect 4: answers errors raised before routing with problem+json, a request id and no framework codes", async () => {
    expectProblem(await rawRequest(port, requestBytes(head("FOO", "/v1/teams"))), 400, "bad-request");
    expectProblem(
      await rawRequest(port, requestBytes(head("GET", "/v1/teams/%zz", [`Authorization: Bearer ${DEV_TOKEN}`]))),
      400,
      "bad-request",
    );
    expectProblem(
      await rawRequest(port, requestBytes(authed("GET", `/v1/teams/${"a".repeat(150)}`))),
      414,
      "bad-request",
    );
    expectProblem(
      await rawRequest(port, requestBytes(head("GET", "/healthz", [`X-Big: ${"a".repeat(20_000)}`]))),
      431,
      "bad-request",
    );
    expectProblem(
      await rawRequest(
        port,
        Buffer.from("GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"),
      ),
      400,
      "bad-request",
    );
    expectProblem(await rawRequest(port, Buffer.from("\u0001\u0002 nonsense\r\n\r\n")), 400, "bad-request");
    const tooLarge = await rawRequest(
      port,
      requestBytes(
        authed("POST", "/v1/teams", ["Content-Type: application/json"]),
        JSON.stringify({ name: "big", description: "x".repeat(70_000) }),
      ),
    );
    expectProblem(tooLarge, 413, "bad-request");
    expect(tooLarge.json?.title).toBe("Payload Too Large");
    const wrongType = await rawRequest(
      port,
      requestBytes(authed("POST", "/v1/teams", ["Content-Type: text/plain"]), "x"),
    );
    expectProblem(wrongType, 415, "bad-request");
    expect(wrongType.json?.title).toBe("Unsupported Media Type");
    const badJson = await rawRequest(
      port,
      requestBytes(authed("POST", "/v1/teams", ["Content-Type: application/json"]), "{nope"),
    );
    expectProblem(badJson, 400, "bad-request");
    expect(badJson.json?.title).toBe("Bad Request");
  });

  it("defect 5: never echoes or logs a query string (a token sent as ?access_token=)", async () => {
    const secret = "query-secret-ZXhhbXBsZQ";
    const paths = [
      `/v1/teams/nobody?access_token=${secret}`,
      `/v1/teams?access_token=${secret}`,
      `/no-such-route?access_token=${secret}&x=1`,
    ];
    const answers = [
      await rawRequest(port, requestBytes(authed("GET", paths[0]!))),
      await rawRequest(port, requestBytes(head("GET", paths[1]!))),
      await rawRequest(port, requestBytes(authed("GET", paths[2]!))),
    ];
    expect(answers.map((a) => a.status)).toEqual([404, 401, 404]);
    expect(answers.map((a, i) => checkBody(`raw request ${i}`, a.status, a.json, problemSchema).instance)).toEqual([
      "/v1/teams/nobody",
      "/v1/teams",
      "/no-such-route",
    ]);
    for (const a of answers) expect(a.body).not.toContain(secret);
    await expect.poll(() => berth.logs.some((l) => l.includes("/no-such-route"))).toBe(true);
    expect(berth.logs.join("")).not.toContain(secret);
  });

  it("defect 6: closes a connection that never sends a request", async () => {
    const socket = await openSocket(port);
    const closed = await waitForClose(socket, 30_000);
    expect(closed.closedBy).toBe("server");
  });

  it("defect 6: answers a request whose headers never finish with 408 problem+json and closes", async () => {
    const socket = await openSocket(port);
    const response = readResponse(socket);
    socket.write("GET /v1/teams HTTP/1.1\r\nHost: berth.test\r\n");
    expectProblem(await response, 408, "request-timeout");
    expect((await waitForClose(socket, 30_000)).closedBy).toBe("server");
  });

  it("defect 6: closes an idle keep-alive connection after its answer", async () => {
    const socket = await openSocket(port);
    const response = readResponse(socket);
    socket.write(requestBytes(["GET /healthz HTTP/1.1", "Host: berth.test"]));
    expect((await response).status).toBe(200);
    expect((await waitForClose(socket, 30_000)).closedBy).toBe("server");
  });

  it("defect 6: keeps a connection open while a request is being answered, however long that takes", async () => {
    // The idle timeout is 2 s; a write that waits longer on the Flux repo must still get its answer. The
    // remote is made slow by a pre-receive hook that sleeps, so the commit takes longer than every timeout.
    const hook = join(remote.dir, "hooks", "pre-receive");
    await writeFile(hook, "#!/bin/sh\ncat >/dev/null\nsleep 3\n", { mode: 0o755 });
    try {
      const res = await rawRequest(
        port,
        requestBytes(authed("POST", "/v1/teams", ["Content-Type: application/json"]), teamJson("slow-team")),
      );
      expect(res.status, res.body).toBe(201);
    } finally {
      await rm(hook, { force: true });
    }
  });

  describe("defect 6: a body that stalls (slowloris on the body)", () => {
    // Its own server: the request timeout far above the idle one, so only the idle timer can close the stall
    // within the test's wait (with the idle timer gone, the request timeout would take 60 s).
    let slowBodies: RunningBerth;
    beforeAll(async () => {
      slowBodies = await startBerth({
        remoteUrl: remote.url,
        listen: true,
        api: { timeouts: { ...TIMEOUTS, requestMs: 60_000 } },
      });
    });
    afterAll(async () => {
      await slowBodies?.stop();
    });

    it("closes a connection whose body stops arriving, after the idle timeout rather than the request timeout", async () => {
      const before = await commits();
      const socket = await openSocket(Number(new URL(slowBodies.url).port));
      const body = teamJson("stalled-team");
      socket.write(
        Buffer.concat([
          requestBytes(
            authed("POST", "/v1/teams", ["Content-Type: application/json", `Content-Length: ${body.length}`]),
          ),
          Buffer.from(body.slice(0, 10)),
        ]),
      );
      expect((await waitForClose(socket, 30_000)).closedBy).toBe("server");
      expect(await commits()).toBe(before);
    });
  });
});
