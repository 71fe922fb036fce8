import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GitOpsError } from "../src/index.js";
import { type BareRepo, createBareRepo, inspectRemote } from "../../../tests/support/git-remotes.js";
import { change, openRepo, origin } from "./helpers.js";

describe("a push whose outcome is not a plain rejection", () => {
  let remote: BareRepo;
  beforeAll(async () => {
    remote = await createBareRepo();
  });
  afterAll(async () => {
    await remote.remove();
  });

  it("is reported as failed when the remote does not hold the commit (never acknowledged as written)", async () => {
    const { repo, cleanup } = await openRepo(remote.url);
    try {
      await repo.transact(async () => change("first", { "a.txt": "a" }), origin);
      const before = (await inspectRemote(remote.url)).commits.length;
      // The remote refuses with a message the writer does not read as "the branch moved": it fetches to see
      // whether the push landed anyway. It did not, so the transaction must fail.
      const hook = join(remote.dir, "hooks", "pre-receive");
      await writeFile(hook, "#!/bin/sh\ncat >/dev/null\necho 'policy says no' >&2\nexit 1\n", { mode: 0o755 });
      try {
        const outcome = await repo
          .transact(async () => change("second", { "b.txt": "b" }), origin)
          .then(
            (r) => ({ ok: true as const, r }),
            (e: unknown) => ({ ok: false as const, e }),
          );
        expect(outcome.ok, JSON.stringify(outcome)).toBe(false);
        expect((outcome as { e: unknown }).e).toBeInstanceOf(GitOpsError);
      } finally {
        await rm(hook, { force: true });
      }
      const after = await inspectRemote(remote.url);
      expect(after.commits.length).toBe(before);
      expect(after.files.has("b.txt")).toBe(false);
    } finally {
      await cleanup();
    }
  });
});
