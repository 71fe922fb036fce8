/**
 * Pull-request mode keeps rollout files on a branch of their own (berth/rollouts) and the teams on main: the API reads
 * one tree made of both (overlayFolder, apps/api/src/adapters/proposals.ts). Whatever is under rollouts/ comes from
 * the records branch only, everything else from main only; the revision and the history are the records branch's.
 */
import { describe, expect, it } from "vitest";
import { overlayFolder } from "../../apps/api/src/adapters/proposals.js";
import { MemoryRepoTree } from "../../packages/core/test/fixtures.js";

describe("the tree of rollout records over main", () => {
  const main = new MemoryRepoTree(
    {
      "teams/payments/base/team.yaml": "name: payments\n",
      // Left on main by an earlier layout or a hand edit: not what the records branch says.
      "rollouts/ro-20261201-000000-aaaaaa.yaml": "stale\n",
      "README.md": "fleet\n",
    },
    "main-sha",
  );
  const records = new MemoryRepoTree(
    {
      "rollouts/ro-20261203-120000-bbbbbb.yaml": "current\n",
      // The records branch holds rollouts only: anything else on it is not read.
      "teams/payments/base/team.yaml": "forged\n",
    },
    "records-sha",
  );
  const tree = overlayFolder(main, records, "rollouts");

  it("reads rollouts from the records branch and every other path from main", async () => {
    expect(await tree.read("rollouts/ro-20261203-120000-bbbbbb.yaml")).toBe("current\n");
    expect(await tree.read("rollouts/ro-20261201-000000-aaaaaa.yaml")).toBeUndefined();
    expect(await tree.read("teams/payments/base/team.yaml")).toBe("name: payments\n");
    expect(await tree.hasContent("teams/payments/base/team.yaml", "forged\n")).toBe(false);
    expect(await tree.list("rollouts")).toEqual(["rollouts/ro-20261203-120000-bbbbbb.yaml"]);
    expect(await tree.list("teams")).toEqual(["teams/payments/base/team.yaml"]);
  });

  it("lists the root as both: main's files, and the records branch's rollouts in place of main's", async () => {
    expect(await tree.list("")).toEqual([
      "README.md",
      "rollouts/ro-20261203-120000-bbbbbb.yaml",
      "teams/payments/base/team.yaml",
    ]);
  });

  it("is at the records branch's revision, whose history holds the rollouts' idempotent creates", () => {
    expect(tree.revision).toBe("records-sha");
  });
});
