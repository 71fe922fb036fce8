/**
 * After each push the API asks the Flux of each cluster the push concerns to fetch now (ADR 0020): a POST to the
 * cluster's Receiver, signed with its HMAC key. Here each cluster's Receiver is a small HTTP server that checks the
 * signature as notification-controller's generic-hmac Receiver does (tests/flux/team-artifacts.test.ts runs the
 * real one). What is checked: who is told (the clusters that read what the push changed, nobody for a rollout's
 * state file), the signature and body (the shards of the teams it touched, ADR 0036), that a cluster that does not answer costs the write nothing and is retried
 * with backoff, then given up, and counted in the metrics; a burst of pushes coalesces; the key is read at each
 * notification (a rotated Secret) and never logged; a redirect is never followed (the signed body stays with the
 * Receiver), and no failure logs the URL's userinfo or path.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage } from "node:http";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Writable } from "node:stream";
import { rolloutCreatedResponse, writeResponse } from "@berth/api-contract";
import { teamShard } from "@berth/core";
import pino from "pino";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { FluxNotifier } from "../../apps/api/src/adapters/flux-notifier.js";
import { DEV_TOKEN, startBerth, type RunningBerth } from "../support/berth.js";
import { readAnswer } from "../support/contract.js";
import { createBareRepo, git, makeTempDir, type BareRepo } from "../support/git-remotes.js";
import { LoopbackServers } from "../support/loopback-servers.js";
import { sample } from "../support/prometheus.js";
import { ScriptedStatusReader } from "../support/scripted-status.js";
import { eventually } from "../support/wait.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const auth = { authorization: `Bearer ${DEV_TOKEN}` };
const CLUSTERS = ["aks-dev-weu", "aks-prod-weu", "aks-prod-neu"] as const;
type Cluster = (typeof CLUSTERS)[number];

interface Delivery {
  revision: string;
  /** The shards the body names (undefined: none named, every slice). */
  shards?: string[];
  at: number;
}

/** A cluster's Receiver: answers as told (`answer`), accepts only bodies signed with `key` (X-Signature: sha256=...). */
class ReceiverStandIn {
  readonly deliveries: Delivery[] = [];
  readonly refused: string[] = [];
  /** The next answers, in order; 200 once they are used up. "hang" never answers (until the client gives up). */
  answers: Array<number | "hang"> = [];
  /** The Location sent with a 3xx answer. */
  location = "";
  key: string;

  constructor(key: string) {
    this.key = key;
  }

  handle = async (req: IncomingMessage, res: import("node:http").ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const answer = this.answers.shift() ?? 200;
    if (answer === "hang") return;
    const want = Buffer.from(`sha256=${createHmac("sha256", this.key).update(body).digest("hex")}`);
    const got = Buffer.from(String(req.headers["x-signature"] ?? ""));
    if (req.method !== "POST" || got.length !== want.length || !timingSafeEqual(got, want)) {
      this.refused.push(String(req.headers["x-signature"]));
      res.writeHead(400).end();
      return;
    }
    if (answer === 200) {
      const { revision, shards } = JSON.parse(body.toString()) as { revision: string; shards?: string[] };
      this.deliveries.push({ revision, ...(shards ? { shards } : {}), at: Date.now() });
    }
    res.writeHead(answer, answer >= 300 && answer < 400 ? { location: this.location } : {}).end();
  };
}

describe("the API tells each cluster's Flux to fetch after a push", () => {
  let remote: BareRepo;
  let berth: RunningBerth;
  const servers = new LoopbackServers();
  const receivers = {} as Record<Cluster, ReceiverStandIn>;
  let keyDir: string;

  beforeAll(async () => {
    remote = await createBareRepo();
    keyDir = await makeTempDir("berth-receiver-keys-");
    const config: Record<string, { url: string; tokenFile: string }> = {};
    for (const cluster of CLUSTERS) {
      const key = `hmac-key-of-${cluster}-${"x".repeat(20)}`;
      receivers[cluster] = new ReceiverStandIn(key);
      const url = await servers.listen(createServer((req, res) => void receivers[cluster].handle(req, res)));
      const tokenFile = join(keyDir, cluster);
      await writeFile(tokenFile, `${key}\n`);
      config[cluster] = { url: `${url}/hook/0123456789abcdef`, tokenFile };
    }
    berth = await startBerth({
      remoteUrl: remote.url,
      listen: true,
      startEngine: false,
      statusReader: new ScriptedStatusReader(),
      env: { BERTH_LOG_LEVEL: "debug" },
      config: (raw) => {
        // Staged rollouts need status access to their clusters (never read here: the engine does not run).
        raw.api.clusters = Object.fromEntries(CLUSTERS.map((c) => [c, { kubeconfig: "/dev/null" }]));
        raw.api.fluxReceivers = config;
        // What flux/ installs: the slices apply the team files, so a write touches only its team's paths (no index).
        raw.platform.fluxSource = { kind: "ExternalArtifact", artifactPrefix: "team-files-" };
        raw.platform.layout = { appliedBy: "slices" };
        raw.api.fluxNotify = { attempts: 3, minDelayMs: 50, maxDelayMs: 200, timeoutMs: 500 };
      },
    });
    // A team in every environment: every cluster is told. From here on, only some.
    expect(
      (await post("/v1/teams", { name: "first", owners: [OWNER], environments: ["dev", "prod"] })).statusCode,
    ).toBe(201);
    await berth.services.notifier.idle();
  }, 120_000);

  beforeEach(() => {
    for (const r of Object.values(receivers)) r.deliveries.length = 0;
  });

  afterEach(async () => {
    await berth.services.notifier.idle();
    for (const r of Object.values(receivers)) {
      r.deliveries.length = 0;
      r.refused.length = 0;
      r.answers = [];
    }
  });

  afterAll(async () => {
    await berth?.stop();
    await servers.close();
    await remote?.remove();
  });

  const post = (url: string, payload: unknown) =>
    berth.server.inject({ method: "POST", url, headers: auth, payload: payload as object });
  const put = (url: string, payload: unknown) =>
    berth.server.inject({ method: "PUT", url, headers: auth, payload: payload as object });
  const delivered = () =>
    Object.fromEntries(CLUSTERS.map((c) => [c, receivers[c].deliveries.map((d) => d.revision)])) as Record<
      Cluster,
      string[]
    >;
  const metric = async (cluster: Cluster, result: string) =>
    sample(await berth.services.metrics.registry.metrics(), "berth_api_flux_notifications_total", {
      cluster,
      result,
    }) ?? 0;

  it("tells the clusters a team lands on, signed with each one's key, naming the pushed commit", async () => {
    const res = await post("/v1/teams", { name: "payments", owners: [OWNER], environments: ["dev"] });
    expect(res.statusCode, res.body).toBe(201);
    await berth.services.notifier.idle();
    expect(delivered()).toEqual({
      "aks-dev-weu": [readAnswer(res, writeResponse).revision],
      "aks-prod-weu": [],
      "aks-prod-neu": [],
    });
    // The shard of the team it touched, so that per-slice fetch wakes that slice alone (ADR 0036).
    expect(receivers["aks-dev-weu"].deliveries[0]!.shards).toEqual([teamShard("payments")]);
    expect(Object.values(receivers).flatMap((r) => r.refused)).toEqual([]);
  });

  it("tells every cluster of the team when only its base changes, nobody for a rollout's state file", async () => {
    const created = await post("/v1/teams", { name: "orders", owners: [OWNER], environments: ["dev", "prod"] });
    expect(created.statusCode, created.body).toBe(201);
    await berth.services.notifier.idle();
    for (const r of Object.values(receivers)) r.deliveries.length = 0;

    // The description lives in the team's base only (its team file and its namespace's annotation).
    const updated = await put("/v1/teams/orders", {
      description: "Orders",
      owners: [OWNER],
      environments: ["dev", "prod"],
    });
    expect(updated.statusCode, updated.body).toBe(200);
    const { files, revision } = readAnswer(updated, writeResponse);
    const paths = files.map((f) => f.path);
    expect(paths.length).toBeGreaterThan(0);
    for (const path of paths) expect(path).toMatch(/^teams\/orders\/base\//);
    await berth.services.notifier.idle();
    expect(delivered()).toEqual({
      "aks-dev-weu": [revision],
      "aks-prod-weu": [revision],
      "aks-prod-neu": [revision],
    });

    // A staged rollout's creation commits only its state file (rollouts/<id>.yaml), which no cluster applies.
    for (const r of Object.values(receivers)) r.deliveries.length = 0;
    const rollout = await post("/v1/rollouts", {
      target: { templateVersion: "v3" },
      waves: [{ name: "all" }],
      gate: { timeoutSeconds: 600 },
    });
    expect(rollout.statusCode, rollout.body).toBe(201);
    await berth.services.notifier.idle();
    expect(delivered()).toEqual({ "aks-dev-weu": [], "aks-prod-weu": [], "aks-prod-neu": [] });
    const id = readAnswer(rollout, rolloutCreatedResponse).rollout.metadata.name;
    expect((await post(`/v1/rollouts/${id}/abort`, {})).statusCode).toBe(200);
  });

  it("a cluster that does not answer costs the write nothing: retried with backoff, then given up, and counted", async () => {
    const before = {
      failed: await metric("aks-prod-weu", "failed"),
      gaveUp: await metric("aks-prod-weu", "gave_up"),
      delivered: await metric("aks-prod-neu", "delivered"),
    };
    receivers["aks-prod-weu"].answers = ["hang", 503, 500];
    const res = await post("/v1/teams", { name: "ledger", owners: [OWNER], environments: ["prod"] });
    expect(res.statusCode, res.body).toBe(201);
    // Answered while the notification is still being tried (its first attempt alone waits 500 ms for the hanging
    // Receiver): the write never waits for it.
    expect(await metric("aks-prod-weu", "gave_up")).toBe(before.gaveUp);
    await berth.services.notifier.idle();
    expect(receivers["aks-prod-weu"].answers).toEqual([]);
    expect(delivered()).toEqual({
      "aks-dev-weu": [],
      "aks-prod-weu": [],
      "aks-prod-neu": [readAnswer(res, writeResponse).revision],
    });
    expect(await metric("aks-prod-weu", "failed")).toBe(before.failed + 3);
    expect(await metric("aks-prod-weu", "gave_up")).toBe(before.gaveUp + 1);
    expect(await metric("aks-prod-neu", "delivered")).toBe(before.delivered + 1);
    const gaveUp = berth
      .logEntries<{ msg: string; cluster?: string }>()
      .find((l) => l.msg.startsWith("flux notify: gave up"));
    expect(gaveUp?.cluster).toBe("aks-prod-weu");
  });

  it("retries until the cluster takes it", async () => {
    const before = await metric("aks-dev-weu", "failed");
    receivers["aks-dev-weu"].answers = [500, 502];
    const res = await post("/v1/teams", { name: "billing", owners: [OWNER], environments: ["dev"] });
    expect(res.statusCode, res.body).toBe(201);
    await berth.services.notifier.idle();
    expect(delivered()["aks-dev-weu"]).toEqual([readAnswer(res, writeResponse).revision]);
    expect(await metric("aks-dev-weu", "failed")).toBe(before + 2);
  });

  it("a burst of pushes while a notification is on its way is carried by one more, naming the newest commit", async () => {
    receivers["aks-dev-weu"].answers = [503];
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        post("/v1/teams", { name: `burst-${i}`, owners: [OWNER], environments: ["dev"] }),
      ),
    );
    for (const r of results) expect(r.statusCode, r.body).toBe(201);
    await berth.services.notifier.idle();
    const newest = (await git(["ls-remote", remote.url, "refs/heads/main"])).split("\t")[0];
    const got = delivered()["aks-dev-weu"];
    expect(got.length).toBeLessThan(results.length);
    expect(got.at(-1)).toBe(newest);
    // What the coalesced notifications name together: every team's shard, none lost by the burst.
    const named = new Set(receivers["aks-dev-weu"].deliveries.flatMap((d) => d.shards ?? []));
    expect([...named].sort()).toEqual([...new Set(results.map((_, i) => teamShard(`burst-${i}`)))].sort());
  });

  it("reads the key at each notification (a rotated Secret), and never logs it", async () => {
    receivers["aks-dev-weu"].key = `rotated-${"y".repeat(30)}`;
    await writeFile(join(keyDir, "aks-dev-weu"), receivers["aks-dev-weu"].key);
    const res = await post("/v1/teams", { name: "rotated", owners: [OWNER], environments: ["dev"] });
    expect(res.statusCode, res.body).toBe(201);
    await berth.services.notifier.idle();
    expect(delivered()["aks-dev-weu"]).toEqual([readAnswer(res, writeResponse).revision]);
    expect(receivers["aks-dev-weu"].refused).toEqual([]);
    const logs = berth.logs.join("");
    for (const c of CLUSTERS) expect(logs).not.toContain(`hmac-key-of-${c}`);
    expect(logs).not.toContain("rotated-yyyy");
    expect(logs).not.toContain("/hook/0123456789abcdef");
  });

  it("a redirect is a failed attempt, never followed: the signed body does not reach another origin", async () => {
    const elsewhere: string[] = [];
    const other = await servers.listen(
      createServer((req, res) => {
        elsewhere.push(`${req.method} ${req.url} ${String(req.headers["x-signature"])}`);
        res.writeHead(200).end();
      }),
    );
    const before = await metric("aks-prod-neu", "failed");
    receivers["aks-prod-neu"].location = `${other}/stolen/0123456789abcdef`;
    receivers["aks-prod-neu"].answers = [307, 308];
    const from = berth.logs.length;
    const res = await post("/v1/teams", { name: "redirected", owners: [OWNER], environments: ["prod"] });
    expect(res.statusCode, res.body).toBe(201);
    await berth.services.notifier.idle();
    expect(elsewhere).toEqual([]);
    expect(await metric("aks-prod-neu", "failed")).toBe(before + 2);
    expect(delivered()["aks-prod-neu"]).toEqual([readAnswer(res, writeResponse).revision]);
    const logs = berth.logs.slice(from).join("");
    expect(logs).toContain("the Receiver answered HTTP 307");
    expect(logs).not.toContain("/stolen/");
    expect(logs).not.toContain("/hook/0123456789abcdef");
  });

  it("a Receiver that refuses the signature (a wrong key) is a failed attempt, not a delivery", async () => {
    const before = await metric("aks-prod-neu", "gave_up");
    await writeFile(join(keyDir, "aks-prod-neu"), "not-the-receivers-key-at-all-zzzz");
    try {
      const res = await post("/v1/teams", { name: "wrongkey", owners: [OWNER], environments: ["prod"] });
      expect(res.statusCode, res.body).toBe(201);
      await eventually(
        "the notification given up",
        async () => (await metric("aks-prod-neu", "gave_up")) === before + 1,
        10_000,
      );
      expect(receivers["aks-prod-neu"].deliveries).toEqual([]);
      expect(receivers["aks-prod-neu"].refused).toHaveLength(3);
    } finally {
      await writeFile(join(keyDir, "aks-prod-neu"), receivers["aks-prod-neu"].key);
    }
  });
});

describe("the notifier's logs", () => {
  const servers = new LoopbackServers();
  afterAll(() => servers.close());

  it("never name a Receiver URL's user:password@ or path, even when the URL cannot be used at all", async () => {
    const keyDir = await makeTempDir("berth-receiver-keys-");
    await writeFile(join(keyDir, "key"), "a-receiver-key-of-some-length");
    const url = await servers.listen(createServer((_req, res) => void res.writeHead(200).end()));
    const logs: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        logs.push(String(chunk));
        done();
      },
    });
    // The config schema refuses userinfo; the notifier still never repeats a URL it was given.
    const withPassword = url.replace("http://", "http://berth:s3cret-password@");
    const notifier = new FluxNotifier(
      { "aks-dev-weu": { url: `${withPassword}/hook/0123456789abcdef`, tokenFile: join(keyDir, "key") } },
      { attempts: 2, minDelayMs: 10, maxDelayMs: 20, timeoutMs: 500, logger: pino({ level: "debug" }, sink) },
    );
    notifier.notify(new Map([["aks-dev-weu", undefined]]), "0".repeat(40));
    await notifier.idle();
    const written = logs.join("");
    expect(written).toContain("flux notify: gave up");
    expect(written).not.toContain("s3cret-password");
    expect(written).not.toContain("/hook/0123456789abcdef");
    // What is left says what is wrong, with the URL redacted to where it points.
    const gaveUp = logs
      .map((l) => JSON.parse(l) as { msg: string; reason?: string })
      .find((l) => l.msg.includes("gave up"));
    expect(gaveUp?.reason).toBe(
      `no answer: Request cannot be constructed from a URL that includes credentials: ${url}/[redacted]`,
    );
  });
});
