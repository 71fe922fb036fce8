import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { type Plan, planConflicts } from "../src/batch.js";
import { buildCommitMessage, parseTrailers, sanitizeLine } from "../src/commit-message.js";
import { BatchOverlay, type TxnView } from "../src/git-tree.js";
import { assertWritablePath, normalizeDir } from "../src/paths.js";
import { buildGitEnvironment } from "../src/remote-auth.js";

describe("paths", () => {
  it("accepts plain relative POSIX paths", () => {
    for (const p of [
      "a",
      "teams/a/team.yaml",
      "clusters/c-1/teams/kustomization.yaml",
      "x/.hidden",
      "a/b_c.d+e=f@g,h~i",
    ]) {
      expect(() => assertWritablePath(p), p).not.toThrow();
    }
  });
  it("normalizes folders for list()", () => {
    expect(normalizeDir("")).toBe("");
    expect(normalizeDir(".")).toBe("");
    expect(normalizeDir("/")).toBe("");
    expect(normalizeDir("teams/")).toBe("teams");
    expect(() => normalizeDir("../x")).toThrow();
  });
});

describe("commit messages", () => {
  it("puts subject, body and trailers in separate paragraphs", () => {
    expect(
      buildCommitMessage({ subject: "s", body: ["b1", "b2"], files: new Map() }, { actor: "a", requestId: "r" }),
    ).toBe("s\n\nb1\nb2\n\nBerth-Requested-By: a\nBerth-Request-Id: r\n");
    expect(buildCommitMessage({ subject: "", files: new Map() }, { actor: "", requestId: "" })).toBe(
      "berth: update\n\nBerth-Requested-By: unknown\nBerth-Request-Id: unknown\n",
    );
  });
  it("appends the origin's extra trailers in order, as git itself reads them", () => {
    const origin = {
      actor: "alice",
      requestId: "r1",
      trailers: [
        { key: "Berth-Action", value: "create" },
        { key: "Berth-Idempotency-Key", value: "k-1\nBerth-Requested-By: mallory" },
        { key: "Berth-Empty", value: "\u0000 " },
      ],
    };
    const message = buildCommitMessage({ subject: "s", files: new Map() }, origin);
    expect(message).toBe(
      "s\n\nBerth-Requested-By: alice\nBerth-Request-Id: r1\nBerth-Action: create\nBerth-Idempotency-Key: k-1 Berth-Requested-By: mallory\n",
    );
    const parsedByGit = execFileSync("git", ["interpret-trailers", "--parse"], { input: message, encoding: "utf8" });
    expect(parseTrailers(parsedByGit)).toEqual([
      { key: "Berth-Requested-By", value: "alice" },
      { key: "Berth-Request-Id", value: "r1" },
      { key: "Berth-Action", value: "create" },
      { key: "Berth-Idempotency-Key", value: "k-1 Berth-Requested-By: mallory" },
    ]);
  });
  it("refuses trailer keys outside Berth-*, and a key given twice", () => {
    const build = (trailers: Array<{ key: string; value: string }>) => () =>
      buildCommitMessage({ subject: "s", files: new Map() }, { actor: "a", requestId: "r", trailers });
    for (const key of ["Signed-off-by", "Berth-", "Berth-a b", "Berth-x:y", "berth-lower", "Berth-A\nB"])
      expect(build([{ key, value: "v" }]), key).toThrow(/invalid trailer key/);
    expect(build([{ key: "Berth-Requested-By", value: "mallory" }])).toThrow(/twice/);
    expect(
      build([
        { key: "Berth-X", value: "1" },
        { key: "Berth-x", value: "2" },
      ]),
    ).toThrow(/twice/);
  });
  it("sanitizes to one bounded line", () => {
    expect(sanitizeLine("a\r\nb\u2028c\u202ed\u0000e", 100)).toBe("a b c d e");
    expect(sanitizeLine("x".repeat(300), 10)).toBe(`${"x".repeat(9)}…`);
  });
});

describe("planConflicts", () => {
  const view = (reads: string[], lists: string[] = []) =>
    ({ reads: new Set(reads), lists: new Set(lists) }) as unknown as TxnView;
  const plan = (txns: Plan["txns"]): Plan => ({ base: "x", txns });

  it("ignores changes to paths nobody touched", () => {
    const p = plan([
      {
        kind: "commit",
        files: new Map([["teams/a.yaml", "a"]]),
        message: "m",
        view: view(["teams/a.yaml"], ["clusters/c1/teams"]),
      },
    ]);
    expect(planConflicts(p, ["image-automation/1.txt", "clusters/c2/teams/x.yaml", "teams/ab.yaml"])).toBe(false);
    expect(planConflicts(p, [])).toBe(false);
  });

  it("sees a changed read, write, listed folder or file/folder clash", () => {
    const p = plan([
      { kind: "noop", view: view(["teams/index.txt"]) },
      {
        kind: "commit",
        files: new Map([["teams/b/team.yaml", "b"]]),
        message: "m",
        view: view([], ["clusters/c1/teams"]),
      },
      { kind: "error", error: new Error("x"), view: view(["teams/z/team.yaml"]) },
    ]);
    expect(planConflicts(p, ["teams/index.txt"])).toBe(true); // read
    expect(planConflicts(p, ["teams/b/team.yaml"])).toBe(true); // written
    expect(planConflicts(p, ["clusters/c1/teams/x.yaml"])).toBe(true); // in a listed folder
    expect(planConflicts(p, ["clusters/c1/teams/deep/x.yaml"])).toBe(true);
    expect(planConflicts(p, ["teams/b"])).toBe(true); // a file where we write a folder
    expect(planConflicts(p, ["teams/z/team.yaml"])).toBe(true); // what a failed mutate read
    expect(planConflicts(p, ["clusters"])).toBe(true); // a file replacing a listed folder's parent
  });

  it("treats a listing of the root as depending on everything", () => {
    const p = plan([{ kind: "noop", view: view([], [""]) }]);
    expect(planConflicts(p, ["anything.txt"])).toBe(true);
  });
});

describe("git environment", () => {
  it("keeps credentials out of argv, drops dangerous inherited variables, redacts secrets", () => {
    const saved = { ...process.env };
    try {
      Object.assign(process.env, {
        GIT_DIR: "/elsewhere",
        GIT_SSH_COMMAND: "evil",
        EDITOR: "vim",
        GIT_SSL_CAINFO: "/ca.pem",
        GIT_TRACE: "1",
      });
      const e = buildGitEnvironment({
        gitDir: "/w",
        auth: { kind: "token", token: "s3cr3t-t0ken" },
        connectTimeoutSec: 5,
      });
      expect(e.env.GIT_DIR).toBe("/w");
      expect(e.env.GIT_SSH_COMMAND).toBeUndefined();
      expect(e.env.GIT_TRACE).toBeUndefined();
      expect(e.env.EDITOR).toBeUndefined();
      expect(e.env.GIT_SSL_CAINFO).toBe("/ca.pem");
      expect(e.env.GIT_TERMINAL_PROMPT).toBe("0");
      const header = Object.entries(e.env).find(([, v]) => v.startsWith("Authorization: Basic "));
      expect(header).toBeDefined();
      const b64 = Buffer.from("x-access-token:s3cr3t-t0ken").toString("base64");
      expect(header?.[1]).toBe(`Authorization: Basic ${b64}`);
      expect(e.redact(`fatal: token s3cr3t-t0ken header Authorization: Basic ${b64} and ${b64}`)).toBe(
        "fatal: token *** header Authorization: Basic *** and ***",
      );
      const ssh = buildGitEnvironment({
        gitDir: "/w",
        auth: { kind: "ssh", privateKeyPath: "/keys/it's key" },
        connectTimeoutSec: 5,
      });
      const cmd = Object.values(ssh.env).find((v) => v.startsWith("ssh "));
      expect(cmd).toContain(`-i '/keys/it'\\''s key'`);
      expect(cmd).toContain("StrictHostKeyChecking=accept-new");
      expect(cmd).toContain("IdentitiesOnly=yes");
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  });
});

describe("BatchOverlay", () => {
  // Transaction 0 writes a and b/x; 1 deletes a and rewrites b/x; 2 writes b/c/y. Each transaction's window
  // must show the changes of the transactions before it, never its own or later ones.
  const overlay = new BatchOverlay();
  overlay.add(
    0,
    new Map([
      ["a", "a0"],
      ["b/x", "x0"],
    ]),
  );
  overlay.add(
    1,
    new Map<string, string | null>([
      ["a", null],
      ["b/x", "x1"],
    ]),
  );
  overlay.add(2, new Map([["b/c/y", "y2"]]));
  const below = (position: number, dir: string) => Object.fromEntries(overlay.at(position).below(dir));

  it("shows transaction n the changes of the transactions before n, in order", () => {
    expect(overlay.at(0).lookup("a")).toBeUndefined();
    expect(overlay.at(1).lookup("a")?.content).toBe("a0");
    expect(overlay.at(2).lookup("a")?.content).toBeNull();
    expect(overlay.at(2).lookup("b/x")?.content).toBe("x1");
    expect(overlay.at(1).lookup("b/x")?.content).toBe("x0");
    expect(overlay.at(2).lookup("b/c/y")).toBeUndefined();
    expect(overlay.at(3).lookup("b/c/y")?.content).toBe("y2");
    expect(overlay.at(3).lookup("b")).toBeUndefined();
  });
  it("lists what lies below a folder, at any depth, as that transaction sees it", () => {
    expect(below(0, "")).toEqual({});
    expect(below(1, "")).toEqual({ a: "a0", "b/x": "x0" });
    expect(below(2, "b")).toEqual({ "b/x": "x1" });
    expect(below(3, "b")).toEqual({ "b/x": "x1", "b/c/y": "y2" });
    expect(below(3, "b/c")).toEqual({ "b/c/y": "y2" });
    expect(below(3, "")).toEqual({ a: null, "b/x": "x1", "b/c/y": "y2" });
    expect(below(3, "c")).toEqual({});
  });
});
