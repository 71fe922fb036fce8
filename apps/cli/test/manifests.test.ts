import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { CliError } from "../src/exit-codes.js";
import { parseDocuments, readRolloutRequest, readTeamDocuments, toTeamDocuments } from "../src/manifests.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const read = (paths: string[], cwd: string, stdin = "") =>
  readTeamDocuments(paths, { recursive: false, cwd, stdin: Readable.from([stdin]) });

async function failure(p: Promise<unknown>): Promise<CliError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CliError);
  return err as CliError;
}

describe("team files", () => {
  it("reads the API's shape and Berth's Team object alike, from YAML documents, JSON and stdin", async () => {
    const dir = await mkdtemp(join(tmpdir(), "berth-manifests-"));
    await writeFile(
      join(dir, "a.yaml"),
      `name: payments\nowners: [${OWNER}]\nenvironments: [dev]\n---\n# only a comment\n---\napiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: { name: search }\nspec: { owners: [${OWNER}], environments: [prod] }\n`,
    );
    await writeFile(
      join(dir, "b.json"),
      JSON.stringify([{ name: "checkout", owners: [OWNER], environments: ["dev"] }]),
    );
    const docs = await read(
      ["a.yaml", "b.json", "-"],
      dir,
      JSON.stringify({
        apiVersion: "berth.dev/v1alpha1",
        kind: "TeamList",
        items: [
          {
            apiVersion: "berth.dev/v1alpha1",
            kind: "Team",
            metadata: { name: "orders" },
            spec: { owners: [OWNER], environments: ["dev"] },
          },
        ],
      }),
    );
    expect(docs.map((d) => [d.source, d.team.name])).toEqual([
      ["a.yaml#1", "payments"],
      ["a.yaml#3", "search"],
      ["b.json", "checkout"],
      ["-", "orders"],
    ]);
    // Defaults come from the same schema the API applies.
    expect(docs[0]!.team).toMatchObject({ description: "", roleAssignments: [], labels: {} });
  });

  it("reads a folder's team files (and its sub-folders with -R), ignoring other files", async () => {
    const dir = await mkdtemp(join(tmpdir(), "berth-manifests-"));
    await mkdir(join(dir, "teams", "more"), { recursive: true });
    await writeFile(join(dir, "teams", "b.yml"), `name: bravo\nowners: [${OWNER}]\nenvironments: [dev]\n`);
    await writeFile(join(dir, "teams", "a.yaml"), `name: alpha\nowners: [${OWNER}]\nenvironments: [dev]\n`);
    await writeFile(join(dir, "teams", "notes.txt"), "ignored");
    await writeFile(join(dir, "teams", "more", "c.yaml"), `name: charlie\nowners: [${OWNER}]\nenvironments: [dev]\n`);
    expect((await read(["teams"], dir)).map((d) => d.team.name)).toEqual(["alpha", "bravo"]);
    const recursive = await readTeamDocuments(["teams"], { recursive: true, cwd: dir, stdin: Readable.from([""]) });
    expect(recursive.map((d) => d.team.name)).toEqual(["alpha", "bravo", "charlie"]);
  });

  it("lists every problem with its file, document and field path, and refuses the whole set", async () => {
    const err = await failure(
      Promise.resolve().then(() =>
        toTeamDocuments([
          { source: "t.yaml#1", value: { name: "ok-team", owners: [OWNER], environments: ["dev"] } },
          { source: "t.yaml#2", value: { name: "bad", owners: ["x"], environments: ["dev"], extra: 1 } },
          { source: "t.yaml#3", value: { name: "ok-team", owners: [OWNER], environments: ["dev"] } },
        ]),
      ),
    );
    expect(err.exitCode).toBe(3);
    expect(err.details).toEqual([
      "t.yaml#2 (team bad): owners.0: must be an Entra ID group object id (lowercase UUID)",
      't.yaml#2 (team bad): (body): Unrecognized key: "extra"',
      "t.yaml#3: team ok-team is also defined in t.yaml#1",
    ]);
  });

  it("refuses what is not a Berth team, and YAML it cannot read, saying where", () => {
    expect(() =>
      toTeamDocuments([{ source: "p.yaml", value: { apiVersion: "v1", kind: "Pod", metadata: { name: "x" } } }]),
    ).toThrow("p.yaml: not a Berth team (apiVersion v1, kind Pod)");
    expect(() =>
      toTeamDocuments([
        {
          source: "t.yaml",
          value: { apiVersion: "berth.dev/v1alpha1", kind: "Team", metadata: { name: "x" }, spec: {}, extra: 1 },
        },
      ]),
    ).toThrow("unknown field extra");
    expect(() => parseDocuments("name: [unclosed\n", "broken.yaml")).toThrow(
      /broken\.yaml: not valid YAML \(line \d+\)/,
    );
    expect(() => parseDocuments("{ nope", "broken.json")).toThrow(/broken\.json: not valid JSON/);
    // YAML 1.1 as Kubernetes reads it: `on` stays a string only when quoted, and merge keys are plain keys.
    expect(parseDocuments("labels: { a: 'on' }\n", "y.yaml")[0]!.value).toEqual({ labels: { a: "on" } });
  });

  it("says so when there is nothing to read", async () => {
    const dir = await mkdtemp(join(tmpdir(), "berth-manifests-"));
    await mkdir(join(dir, "empty"));
    expect((await failure(read([], dir))).exitCode).toBe(2);
    expect((await failure(read(["missing.yaml"], dir))).message).toBe("missing.yaml: no such file or folder");
    expect((await failure(read(["empty"], dir))).message).toContain("no .yaml, .yml or .json files");
    await writeFile(join(dir, "blank.yaml"), "# nothing\n");
    expect((await failure(read(["blank.yaml"], dir))).message).toBe("the files hold no team");
  });
});

describe("rollout files", () => {
  const readRollout = (path: string, cwd: string, stdin = "") =>
    readRolloutRequest(path, { cwd, stdin: Readable.from([stdin]) });

  it("reads one YAML or JSON document in the API's shape, with the API's defaults", async () => {
    const dir = await mkdtemp(join(tmpdir(), "berth-rollout-"));
    await writeFile(
      join(dir, "r.yaml"),
      "target: { templateVersion: v3 }\nwaves:\n  - { name: dev, selector: { onlyEnvironments: [dev] } }\n  - { name: rest }\n",
    );
    expect(await readRollout("r.yaml", dir)).toEqual({
      description: "",
      target: { templateVersion: "v3" },
      selector: {},
      waves: [{ name: "dev", selector: { onlyEnvironments: ["dev"] } }, { name: "rest" }],
      gate: {},
    });
    expect((await readRollout("-", dir, JSON.stringify({ selector: { names: ["payments"] } }))).selector).toEqual({
      names: ["payments"],
    });
  });

  it("refuses two documents, unknown fields and a missing file, saying where, before anything is sent", async () => {
    const dir = await mkdtemp(join(tmpdir(), "berth-rollout-"));
    await writeFile(join(dir, "two.yaml"), "target: {}\n---\ntarget: {}\n");
    expect((await failure(readRollout("two.yaml", dir))).message).toBe(
      "two.yaml: a rollout file holds exactly one document, not 2",
    );
    await writeFile(join(dir, "typo.yaml"), "target: { templateVersion: v3 }\nwave: [{ name: dev }]\n");
    const typo = await failure(readRollout("typo.yaml", dir));
    expect(typo).toMatchObject({ exitCode: 3, message: "invalid rollout request: nothing was sent" });
    expect(typo.details.join("\n")).toMatch(/^typo\.yaml: .*wave/m);
    expect(await failure(readRollout("nope.yaml", dir))).toMatchObject({
      exitCode: 2,
      message: "nope.yaml: no such file",
    });
  });
});
