/**
 * The CLI's HTTP client against hostile servers on 127.0.0.1 (real sockets, no stand-in for fetch): one that
 * accepts and never answers, one that drips a byte at a time, one whose answer never ends, and redirects to
 * another origin. Garbage collection runs all along: on Node 20 a timeout signal composed with
 * AbortSignal.any was collected and never fired, which is what these tests caught.
 */
import { createServer as createHttpServer, type IncomingMessage } from "node:http";
import { createServer } from "node:net";
import v8 from "node:v8";
import vm from "node:vm";
import { statusResponse, teamListResponse } from "@berth/api-contract";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LoopbackServers } from "../../../tests/support/loopback-servers.js";
import { BerthClient, DEFAULT_LIMITS } from "../src/client.js";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

const servers = new LoopbackServers();
const listen = (server: Parameters<LoopbackServers["listen"]>[0]) => servers.listen(server);

describe("the CLI's HTTP client", () => {
  let collector: NodeJS.Timeout;
  beforeAll(() => {
    collector = setInterval(gc, 20);
  });
  afterAll(async () => {
    clearInterval(collector);
    await servers.close();
  });
  let interrupt: AbortController;
  afterEach(() => interrupt?.abort());

  /** As the CLI builds it: with a Ctrl-C signal, so the timeout must coexist with it. */
  const client = (server: string, limits: Partial<typeof DEFAULT_LIMITS> = {}) => {
    interrupt = new AbortController();
    return new BerthClient(server, "test-token", fetch, interrupt.signal, { ...DEFAULT_LIMITS, ...limits });
  };

  // Each test's own time limit (15 s) is only the harness's: without the bound, these requests never settle.
  it(
    "gives up on a server that accepts the connection and never answers, whatever the garbage collector does",
    { timeout: 15_000 },
    async () => {
      const url = await listen(createServer(() => {}));
      await expect(
        client(url).request("GET", "/v1/teams", { schema: teamListResponse, timeoutMs: 500 }),
      ).rejects.toMatchObject({
        exitCode: 7,
        message: `the Berth API at ${url} gave no complete answer within 0.5s`,
      });
    },
  );

  it(
    "bounds a request's total time: an answer that drips one byte at a time is cut off",
    { timeout: 15_000 },
    async () => {
      const url = await listen(
        createHttpServer((_req, res) => {
          res.writeHead(200, { "content-type": "application/json" });
          res.write("{");
          const drip = setInterval(() => res.write(" "), 100);
          res.on("close", () => clearInterval(drip));
        }),
      );
      await expect(
        client(url).request("GET", "/v1/teams", { schema: teamListResponse, timeoutMs: 800 }),
      ).rejects.toMatchObject({
        exitCode: 7,
        message: `the Berth API at ${url} gave no complete answer within 0.8s`,
      });
    },
  );

  it("--request-timeout wins over a command's own, longer timeout", { timeout: 15_000 }, async () => {
    const url = await listen(createServer(() => {}));
    await expect(
      client(url, { maxRequestTimeoutMs: 300 }).request("GET", "/v1/teams", {
        schema: teamListResponse,
        timeoutMs: 300_000,
      }),
    ).rejects.toMatchObject({
      message: `the Berth API at ${url} gave no complete answer within 0.3s`,
    });
  });

  it("refuses an answer larger than its bound while it streams in, declared or not", { timeout: 15_000 }, async () => {
    const max = 1024 * 1024;
    let sent = 0;
    const url = await listen(
      createHttpServer((req, res) => {
        if (req.url === "/declared") {
          res.writeHead(200, { "content-type": "application/json", "content-length": String(1024 * 1024 * 1024) });
          res.write("[");
          return;
        }
        res.writeHead(200, { "content-type": "application/json" });
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        const pump = () => {
          // Bounded, so a client that never stops reading ends the test instead of filling memory.
          while (sent < 64 * max && res.write(chunk)) sent += chunk.length;
          if (sent >= 64 * max) res.end("]");
        };
        res.on("drain", pump);
        pump();
      }),
    );
    await expect(
      client(url, { maxAnswerBytes: max }).request("GET", "/declared", { schema: teamListResponse }),
    ).rejects.toMatchObject({
      exitCode: 7,
      message: `the answer to GET /declared is ${1024 * 1024 * 1024} bytes, more than the ${max} this CLI reads`,
    });
    await expect(
      client(url, { maxAnswerBytes: max }).request("GET", "/endless", { schema: teamListResponse }),
    ).rejects.toMatchObject({
      exitCode: 7,
      message: `the answer to GET /endless is more than the ${max} bytes this CLI reads`,
    });
    expect(sent).toBeLessThan(64 * max);
  });

  it("follows a redirect on the same origin, and names one to another origin without sending it the token", async () => {
    const elsewhere: IncomingMessage[] = [];
    const other = await listen(
      createHttpServer((req, res) => {
        elsewhere.push(req);
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ items: [], revision: null }));
      }),
    );
    const url = await listen(
      createHttpServer((req, res) => {
        if (req.url === "/moved") return res.writeHead(308, { location: "/v1/teams" }).end();
        if (req.url === "/away") return res.writeHead(307, { location: `${other}/v1/teams` }).end();
        expect(req.headers.authorization).toBe("Bearer test-token");
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ items: [], revision: null }));
      }),
    );
    expect((await client(url).request("GET", "/moved", { schema: teamListResponse })).body).toEqual({
      items: [],
      broken: [],
      revision: null,
    });
    await expect(client(url).request("GET", "/away", { schema: teamListResponse })).rejects.toMatchObject({
      exitCode: 7,
      message: `the Berth API at ${url} redirected GET /away to another origin, ${other}: not followed, so the token was not sent there`,
      details: [`if ${other} is your Berth API, use --server ${other} (or berth login --server ${other})`],
    });
    expect(elsewhere).toEqual([]);
  });

  it("shows escape sequences and other control characters from the server as text, never raw", async () => {
    const ESC = "\u001b";
    const problem = {
      type: "https://berth.dev/problems/invalid-team",
      title: `Invalid${ESC}]0;pwned\u0007 team`,
      status: 422,
      detail: `owners: hidden`,
      errors: [{ field: `owners${ESC}[8m`, rule: `hidden\u009b31m\rover` }],
      requestId: `req${ESC}[1A`,
    };
    const condition = {
      type: "IdentityReady",
      status: "False",
      reason: "AzureError",
      severity: "Error",
      message: `no access${ESC}[31m\u007f`,
    };
    const url = await listen(
      createHttpServer((req, res) => {
        if (req.url === "/problem")
          return res.writeHead(422, { "content-type": "application/problem+json" }).end(JSON.stringify(problem));
        if (req.url === "/html")
          return res.writeHead(502, { "content-type": "text/html" }).end(`<h1>${ESC}[5mBad gateway</h1>`);
        const cluster = {
          cluster: "aks-dev-weu",
          environment: "dev",
          state: "reported",
          ready: false,
          stale: false,
          conditions: [condition],
        };
        res
          .writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify({ team: "payments", revision: null, ready: false, clusters: [cluster] }));
      }),
    );
    // eslint-disable-next-line no-control-regex -- the test looks for control characters that got through
    const raw = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
    const refused = (await client(url)
      .request("POST", "/problem", { schema: teamListResponse })
      .catch((err: unknown) => err)) as Error & { details: string[] };
    expect(refused.message).toBe("Invalid\\x1b]0;pwned\\x07 team"); // with field errors, the detail only repeats them
    expect(refused.details).toEqual(["owners\\x1b[8m: hidden\\x9b31m\\x0dover", "request id: req\\x1b[1A"]);
    const html = (await client(url)
      .request("GET", "/html", { schema: teamListResponse })
      .catch((err: unknown) => err)) as Error;
    expect(html.message).toBe("HTTP 502 Bad Gateway: <h1>\\x1b[5mBad gateway</h1>");
    const { body } = await client(url).request("GET", "/v1/teams/payments/status", { schema: statusResponse });
    expect(body!.clusters[0]!.conditions[0]!.message).toBe("no access\\x1b[31m\\x7f");
    expect(JSON.stringify(body)).not.toMatch(raw);
  });
});
