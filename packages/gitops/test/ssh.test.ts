// needs: sshd
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GitOpsError } from "../src/index.js";
import { startGitSshServer, type GitSshServer } from "../../../tests/support/git-ssh-server.js";
import { type BareRepo, createBareRepo, inspectRemote } from "../../../tests/support/git-remotes.js";
import { change, openRepo, origin } from "./helpers.js";

// No skip when sshd is missing: `npm test` installs openssh-server (infra/test-tools/debian-packages.txt), and a
// test that skips in CI proves nothing. Without it, beforeAll fails and says what to install.
describe("FluxRepo over SSH with a deploy key", () => {
  let server: GitSshServer;
  const remotes: BareRepo[] = [];
  beforeAll(async () => {
    server = await startGitSshServer();
  });
  afterAll(async () => {
    await server?.stop();
    for (const r of remotes) await r.remove();
  });

  it("commits with the deploy key and a pinned host key", async () => {
    const remote = await createBareRepo();
    remotes.push(remote);
    const url = server.repoUrl(remote.dir);
    const { repo, cleanup } = await openRepo(url, {
      auth: { kind: "ssh", privateKeyPath: server.privateKeyPath, knownHostsPath: server.knownHostsPath },
    });
    try {
      await repo.ping();
      const results = await Promise.all(
        Array.from({ length: 5 }, (_, i) =>
          repo.transact(async () => change(`ssh ${i}`, { [`s/${i}.txt`]: `${i}` }), origin),
        ),
      );
      expect(results.every((r) => r.committed)).toBe(true);
      const state = await inspectRemote(remote.url);
      for (let i = 0; i < 5; i++) expect(state.files.get(`s/${i}.txt`)).toBe(`${i}`);
      expect(state.commits).toHaveLength(5);
    } finally {
      await cleanup();
    }
  });

  it("trusts the host key on first use when no known_hosts is given", async () => {
    const remote = await createBareRepo();
    remotes.push(remote);
    const { repo, cleanup } = await openRepo(server.repoUrl(remote.dir), {
      auth: { kind: "ssh", privateKeyPath: server.privateKeyPath },
    });
    try {
      await repo.transact(async () => change("tofu", { "a.txt": "a" }), origin);
      expect((await inspectRemote(remote.url)).files.get("a.txt")).toBe("a");
    } finally {
      await cleanup();
    }
  });

  it("fails fast with an auth error for an unknown key or a spoofed host key", async () => {
    const remote = await createBareRepo();
    remotes.push(remote);
    const url = server.repoUrl(remote.dir);
    for (const auth of [
      { kind: "ssh" as const, privateKeyPath: server.unauthorizedKeyPath, knownHostsPath: server.knownHostsPath },
      { kind: "ssh" as const, privateKeyPath: server.privateKeyPath, knownHostsPath: server.wrongKnownHostsPath },
    ]) {
      const { repo, cleanup } = await openRepo(url, { auth, timeoutMs: 20_000 });
      try {
        const started = Date.now();
        const err = await repo.ping().catch((e: unknown) => e);
        expect(Date.now() - started).toBeLessThan(5_000);
        expect(err).toBeInstanceOf(GitOpsError);
        expect((err as GitOpsError).kind).toBe("auth");
      } finally {
        await cleanup();
      }
    }
    expect((await inspectRemote(remote.url)).head).toBeUndefined();
  });
});
