// needs: cluster
/**
 * Berth in a real Backstage backend (startTestBackend with the real scaffolder and catalog plugins, SQLite) and
 * Berth's real API on its embedded default (infra/local/berth.yaml, a local bare repo as the Flux repo), reading
 * team status from a real kube-apiserver where the test stands where Flux and the controller would: it applies
 * the Team object with the status the controller writes. The example template (packages/backstage/examples)
 * runs end to end: the team is committed, waited for, and appears in the catalog.
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { schedulerServiceFactory } from "@backstage/backend-defaults/scheduler";
import type { BackendFeature } from "@backstage/backend-plugin-api";
import { mockCredentials, mockServices, startTestBackend } from "@backstage/backend-test-utils";
import catalogBackend from "@backstage/plugin-catalog-backend";
import scaffolderBackend from "@backstage/plugin-scaffolder-backend";
import templateKind from "@backstage/plugin-catalog-backend-module-scaffolder-entity-model";
import catalogModuleBerth from "@berth/backstage/catalog";
import scaffolderModuleBerth from "@berth/backstage/scaffolder";
import { parse, stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admin, INFRA, readManifests } from "../controller/helpers.js";
import { DEV_TOKEN, REPO_ROOT, startBerth, type RunningBerth } from "../support/berth.js";
import { createBareRepo, type BareRepo } from "../support/git-remotes.js";
import { startKubeCluster, type KubeCluster } from "../support/kube-cluster.js";
import { teamStatus } from "../support/team-status.js";
import { prepareCluster } from "../support/test-platform.js";
import { eventually } from "../support/wait.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const TEMPLATE = join(REPO_ROOT, "packages", "backstage", "examples", "template.yaml");
const user = {
  authorization: mockCredentials.user.header("user:default/jane.doe"),
  "content-type": "application/json",
};

interface TaskEvent {
  type: string;
  body: { message?: string; status?: string; stepId?: string; output?: Record<string, unknown> };
}

describe("Berth's scaffolder actions and catalog provider in a real Backstage backend", () => {
  let cluster: KubeCluster;
  let admin: Admin;
  let remote: BareRepo;
  let berth: RunningBerth;
  let backstage: { url: string; stop(): Promise<void> };

  beforeAll(async () => {
    cluster = await startKubeCluster({ crds: readManifests(join(INFRA, "crds")), startTimeoutMs: 240_000 });
    admin = new Admin(cluster.kubeConfig());
    await prepareCluster(admin);
    remote = await createBareRepo();
    berth = await startBerth({
      remoteUrl: remote.url,
      listen: true,
      env: {
        BERTH_STATUS_KUBECONFIGS: `aks-dev-weu=${await cluster.writeKubeconfigFile("berth-api")}`,
        BERTH_STATUS_CACHE_SECONDS: "1",
      },
    });
    // The example template, and a copy that waits 2 s (the retry case), registered as catalog locations.
    const dir = await mkdtemp(join(tmpdir(), "berth-backstage-"));
    const impatient = parse(await readFile(TEMPLATE, "utf8"));
    impatient.metadata.name = "berth-team-impatient";
    impatient.spec.steps[1].input.timeoutSeconds = 2;
    const impatientFile = join(dir, "impatient.yaml");
    await writeFile(impatientFile, stringify(impatient));
    backstage = await startBackstage(berth.url, [TEMPLATE, impatientFile]);
    for (const name of ["berth-team", "berth-team-impatient"])
      await eventually(`template ${name} in the catalog`, () => entity("template", "default", name), 60_000);
  }, 600_000);

  afterAll(async () => {
    await backstage?.stop();
    await berth?.stop();
    await cluster?.stop();
    await remote?.remove();
  });

  /** Starts the template and returns the task id. */
  const run = async (template: string, values: Record<string, unknown>): Promise<string> => {
    const res = await fetch(`${backstage.url}/api/scaffolder/v2/tasks`, {
      method: "POST",
      headers: user,
      body: JSON.stringify({ templateRef: `template:default/${template}`, values }),
    });
    expect(res.status, await res.clone().text()).toBe(201);
    return ((await res.json()) as { id: string }).id;
  };
  const events = async (task: string): Promise<TaskEvent[]> =>
    (await (
      await fetch(`${backstage.url}/api/scaffolder/v2/tasks/${task}/events`, { headers: user })
    ).json()) as TaskEvent[];
  const log = async (task: string) =>
    (await events(task))
      .filter((e) => e.type === "log")
      .map((e) => e.body.message ?? "")
      .join("\n");
  /** Waits for the task to end; its status and the output its completion event carries. */
  const finished = async (task: string) => {
    const status = await eventually(
      `task ${task} to end`,
      async () => {
        const res = await fetch(`${backstage.url}/api/scaffolder/v2/tasks/${task}`, { headers: user });
        const { status } = (await res.json()) as { status: string };
        return ["completed", "failed", "cancelled"].includes(status) ? status : undefined;
      },
      120_000,
    );
    const completion = (await events(task)).findLast((e) => e.type === "completion");
    return { status, output: completion?.body.output ?? {} };
  };
  const entity = async (kind: string, namespace: string, name: string) => {
    const res = await fetch(`${backstage.url}/api/catalog/entities/by-name/${kind}/${namespace}/${name}`, {
      headers: user,
    });
    return res.status === 200
      ? ((await res.json()) as { metadata: { annotations: Record<string, string> } })
      : undefined;
  };
  /** What Flux and the controller would do once the commit is applied: the Team object, Ready. */
  const becomeReady = async (team: string) => {
    const created = await admin.create({
      apiVersion: "berth.dev/v1alpha1",
      kind: "Team",
      metadata: { name: team },
      spec: { description: "", owners: [OWNER], environments: ["dev"] },
    });
    await admin.setStatus(created, teamStatus(undefined));
  };
  /** Berth's audit lines for `action` on `team`: one per request that reached it. */
  const audited = (action: string, team: string) =>
    berth
      .logEntries<{ audit?: { action: string; team: string | null; outcome: string } }>()
      .filter((l) => l.audit?.action === action && l.audit.team === team);
  const commitsFor = (team: string) =>
    execFileSync("git", ["--git-dir", remote.dir, "log", "--format=%H", `--grep=Berth-Team: ${team}$`, "--all"], {
      encoding: "utf8",
    })
      .split("\n")
      .filter(Boolean);

  it("the example template's form keeps Berth's own rules: its OpenAPI schema for POST /v1/teams", async () => {
    type JsonSchema = { $ref?: string; properties?: Record<string, JsonSchema>; items?: JsonSchema } & Record<
      string,
      unknown
    >;
    const doc = (await (await fetch(`${berth.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { requestBody: { content: Record<string, { schema: JsonSchema }> } }>>;
    } & Record<string, unknown>;
    const resolve = (schema: JsonSchema | undefined): JsonSchema | undefined => {
      if (!schema?.$ref) return schema;
      const target = schema.$ref
        .slice(2)
        .split("/")
        .reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], doc);
      return resolve(target as JsonSchema);
    };
    const body = resolve(doc.paths["/v1/teams"]?.post?.requestBody.content["application/json"]?.schema);
    const form = (
      parse(await readFile(TEMPLATE, "utf8")) as {
        spec: { parameters: Array<{ properties: Record<string, JsonSchema> }> };
      }
    ).spec.parameters[0]?.properties;
    const RULES = ["type", "minLength", "maxLength", "pattern", "minItems", "maxItems"];
    // Left out on purpose: the description's pattern uses \p{…} classes that the scaffolder's validator (no `u` flag)
    // would read as letters; Berth checks it.
    const waived = new Set(["description.pattern"]);
    const compare = (field: string, mine: JsonSchema | undefined, berths: JsonSchema | undefined) => {
      expect(berths, `${field} is a field of Berth's team`).toBeDefined();
      for (const rule of RULES) {
        if (waived.has(`${field}.${rule}`) || berths?.[rule] === undefined) continue;
        expect(mine?.[rule], `${field}.${rule}`).toEqual(berths[rule]);
      }
      if (berths?.items) compare(`${field}[]`, mine?.items, resolve(berths.items));
    };
    expect(Object.keys(form ?? {})).toEqual(["name", "description", "owners", "environments"]);
    for (const [field, mine] of Object.entries(form ?? {})) compare(field, mine, resolve(body?.properties?.[field]));
  });

  it("runs the example template: Berth commits the team, the wait step sees it Ready, the catalog shows it", async () => {
    const task = await run("berth-team", {
      name: "payments",
      description: "Card and SEPA payments",
      owners: [OWNER],
      environments: ["dev"],
    });
    // The create step commits; then the team becomes Ready on aks-dev-weu while the wait step polls.
    await eventually("Berth's commit of payments", async () => commitsFor("payments").length === 1, 60_000);
    await becomeReady("payments");
    const done = await finished(task);
    expect(done.status).toBe("completed");
    const text = await log(task);
    expect(text).toContain("Berth committed payments at");
    expect(text).toContain("payments is Ready on aks-dev-weu");
    expect(done.output).toMatchObject({
      links: [
        { title: "The team in Berth", url: `${berth.url}/ui/teams/payments` },
        { title: "The team in the catalog", entityRef: "group:default/payments" },
      ],
    });
    // The commit names the person who ran the template beside the caller Berth authenticated.
    const [commit] = commitsFor("payments");
    const trailers = execFileSync("git", ["--git-dir", remote.dir, "log", "-1", "--format=%(trailers)", commit ?? ""], {
      encoding: "utf8",
    });
    expect(trailers).toContain("Berth-Action: create");
    expect(trailers).toContain("Berth-On-Behalf-Of: user:default/jane.doe");

    const group = await eventually(
      "payments Ready in the catalog",
      async () => {
        const g = await entity("group", "default", "payments");
        return g?.metadata.annotations["berth.dev/ready"] === "true" ? g : undefined;
      },
      60_000,
    );
    expect(group.metadata.annotations["berth.dev/owner-groups"]).toBe(OWNER);
    const namespace = await entity("resource", "payments", "aks-dev-weu-namespace");
    expect(namespace?.metadata.annotations["backstage.io/kubernetes-namespace"]).toBe("payments");
    const identity = await entity("resource", "payments", "aks-dev-weu-identity");
    expect(identity?.metadata.annotations).toMatchObject({
      "berth.dev/client-id": "44444444-4444-4444-8444-444444444444",
      "berth.dev/azure-name": "id-payments--aks-dev-weu",
    });
  }, 300_000);

  it("a retried task reuses its create step: one commit, and the wait step finishes once the team is Ready", async () => {
    const task = await run("berth-team-impatient", { name: "ledger", owners: [OWNER], environments: ["dev"] });
    const first = await finished(task);
    expect(first.status).toBe("failed");
    expect(await log(task)).toContain("ledger is not Ready after 2 s");
    expect(commitsFor("ledger")).toHaveLength(1);
    const creates = audited("create", "ledger");
    expect(creates).toHaveLength(1);

    await becomeReady("ledger");
    const retried = await fetch(`${backstage.url}/api/scaffolder/v2/tasks/${task}/retry`, {
      method: "POST",
      headers: user,
      body: JSON.stringify({}),
    });
    expect(retried.status, await retried.clone().text()).toBe(201);
    await eventually("the retried task to complete", async () => (await finished(task)).status === "completed", 60_000);
    expect(commitsFor("ledger")).toHaveLength(1);
    // The create step's checkpoint answered the retry: Berth was not even asked again.
    expect(audited("create", "ledger")).toEqual(creates);
  });

  it("shows Berth's own problem, field by field, when Berth refuses the team; nothing is committed", async () => {
    // The form's rules (Berth's schema) pass it; Berth's own checks do not: the name is a platform namespace.
    const task = await run("berth-team", { name: "flux-system", owners: [OWNER], environments: ["dev"] });
    expect((await finished(task)).status).toBe("failed");
    const text = await log(task);
    expect(text).toMatch(/Berth refused \(422 invalid-request\)/);
    expect(text).toContain("name: is reserved for the platform");
    expect(commitsFor("flux-system")).toEqual([]);
  });

  it("refuses what the form's rules (Berth's schema) refuse before Berth is asked", async () => {
    const res = await fetch(`${backstage.url}/api/scaffolder/v2/tasks`, {
      method: "POST",
      headers: user,
      body: JSON.stringify({
        templateRef: "template:default/berth-team",
        values: { name: "search", owners: ["Not-A-Group"], environments: ["dev"] },
      }),
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("instance.owners[0] does not match pattern");
    expect(commitsFor("search")).toEqual([]);
  });

  it("a dry run shows Berth's preview and diff and commits nothing", async () => {
    const template = parse(await readFile(TEMPLATE, "utf8"));
    const res = await fetch(`${backstage.url}/api/scaffolder/v2/dry-run`, {
      method: "POST",
      headers: user,
      body: JSON.stringify({
        template,
        values: { name: "orders", owners: [OWNER], environments: ["dev"] },
        directoryContents: [],
      }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const body = (await res.json()) as { log: Array<{ body: { message: string } }> };
    const text = body.log.map((l) => l.body.message).join("\n");
    expect(text).toMatch(/Berth would write \d+ files for orders/);
    expect(text).toContain("+++ b/");
    expect(commitsFor("orders")).toEqual([]);
  });

  it("the catalog drops a team Berth offboarded", async () => {
    expect(await entity("group", "default", "payments")).toBeDefined();
    const res = await fetch(`${berth.url}/v1/teams/payments`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${DEV_TOKEN}` },
    });
    expect(res.status).toBe(200);
    await eventually(
      "payments gone from the catalog",
      async () => !(await entity("group", "default", "payments")),
      60_000,
    );
    expect(await entity("resource", "payments", "aks-dev-weu-namespace")).toBeUndefined();
  });

  it("fails the task with a clear message when Berth is down", async () => {
    await berth.stop();
    const task = await run("berth-team", { name: "billing", owners: [OWNER], environments: ["dev"] });
    expect((await finished(task)).status).toBe("failed");
    expect(await log(task)).toMatch(new RegExp(`Berth at ${berth.url} did not answer POST /v1/teams: ECONNREFUSED`));
  });
});

/** A Backstage backend with the real scaffolder and catalog plugins and Berth's two modules, on a free port. */
async function startBackstage(berthUrl: string, templates: string[]): Promise<{ url: string; stop(): Promise<void> }> {
  const backend = await startTestBackend({
    features: [
      pluginOf(scaffolderBackend),
      pluginOf(catalogBackend),
      // The catalog accepts the Template kind only with this module, as in any Backstage app.
      pluginOf(templateKind),
      scaffolderModuleBerth,
      catalogModuleBerth,
      // Backstage's own scheduler, not the test mock (which runs a task only when told): the provider's poll runs as in an app.
      schedulerServiceFactory,
      mockServices.rootConfig.factory({
        data: {
          berth: {
            baseUrl: berthUrl,
            token: DEV_TOKEN,
            scaffolder: { waitPollSeconds: 0.5 },
            catalog: { pollSeconds: 1, fullRefreshMinutes: 30 },
          },
          catalog: {
            rules: [{ allow: ["Template", "Group", "Resource", "Location", "User"] }],
            locations: templates.map((target) => ({ type: "file", target })),
            processingInterval: { seconds: 1 },
          },
        },
      }),
    ],
  });
  const port = (backend.server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}`, stop: () => backend.stop() };
}

/**
 * A CommonJS plugin package's default export. TypeScript (NodeNext) types the default import as module.exports,
 * whose `default` is the plugin; vitest's interop hands over the plugin itself. Either way, the plugin.
 */
function pluginOf(mod: { default: BackendFeature } | BackendFeature): BackendFeature {
  return "default" in mod ? mod.default : mod;
}
