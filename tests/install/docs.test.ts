/**
 * docs/install.md, run: every shell block is marked `sh test` (run here, in order) or `sh azure` (needs Azure,
 * run by no test), and every `sh test` block runs with bash -euo pipefail against
 *
 *   - $BERTH: this checkout; $FLEET: a clone of a local bare "fleet" repository that `flux bootstrap` would have
 *     set up (clusters/<cluster>/flux-system/, a stand-in kustomization);
 *   - kubectl: the test kube-apiserver, standing for both clusters, with what Flux would have applied on the
 *     workload cluster (the Team CRD, the controller overlay's RBAC) and one Team;
 *   - the values the `sh azure` blocks before them produce: the status reader's token and CA (`token`, `ca.crt`,
 *     from the TokenRequest API here) and $SERVER; the git token file of step 5.
 *
 * Then the results are checked: the Secrets exist with the right keys, each commit of the fleet repo builds,
 * the upgrade commit changes one file and every Deployment's image, the uninstall commit leaves no Berth file.
 */
// needs: cluster
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBareRepo, git, type BareRepo } from "../support/git-remotes.js";
import { REPO_ROOT, startKubeCluster, type KubeCluster } from "../support/kube-cluster.js";
import { applyObject, kubeRequest, requestServiceAccountToken } from "../support/kube-http.js";
import { kustomizeBuild } from "../support/kustomize.js";

const run = promisify(execFile);
const DOC = join(REPO_ROOT, "docs", "install.md");
const CLUSTERS = ["management", "aks-dev-weu"];

interface Block {
  lang: string;
  tag: string | undefined;
  code: string;
  line: number;
}

function blocks(markdown: string): Block[] {
  const out: Block[] = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)(?: (\S+))?\s*$/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    const code: string[] = [];
    for (i++; i < lines.length && lines[i] !== "```"; i++) code.push(lines[i]!);
    out.push({ lang: open[1]!, tag: open[2], code: code.join("\n"), line: start + 1 });
  }
  return out;
}

const shellBlocks = () =>
  blocks(readFileSync(DOC, "utf8")).filter((b) => ["sh", "bash", "shell", "console"].includes(b.lang));

describe("docs/install.md", () => {
  it("marks every shell block as run by this test or as needing Azure", () => {
    const all = shellBlocks();
    expect(
      all
        .filter((b) => b.tag !== "test" && b.tag !== "azure")
        .map((b) => `line ${b.line}: \`\`\`${b.lang} ${b.tag ?? ""}`),
    ).toEqual([]);
    expect(all.filter((b) => b.tag === "test").length).toBeGreaterThanOrEqual(8);
  });

  it("is linked from the README", () => {
    expect(readFileSync(join(REPO_ROOT, "README.md"), "utf8")).toContain("(docs/install.md)");
  });
});

describe("docs/install.md, the `sh test` blocks run in order", () => {
  let cluster: KubeCluster;
  let fleetRemote: BareRepo;
  const work = mkdtempSync(join(tmpdir(), "berth-install-doc-"));
  const fleet = join(work, "fleet");
  const outputs: string[] = [];
  const gitToken = "ghs_stand-in-for-the-fleet-token";

  beforeAll(async () => {
    [cluster, fleetRemote] = await Promise.all([startKubeCluster(), createBareRepo()]);
    const admin = cluster.kubeConfig();
    // What Flux applied on the workload cluster in step 6: the CRD, the controller overlay (RBAC, ServiceAccounts).
    for (const crd of await kustomizeBuild(join(REPO_ROOT, "flux", "berth", "crds")))
      await applyObject(admin, crd, "kustomize-controller");
    for (let i = 0; ; i++) {
      const r = await kubeRequest(admin, { method: "GET", path: "/apis/berth.dev/v1alpha1/teams" });
      if (r.status === 200) break;
      if (i > 100) throw new Error(`Team CRD not served: ${r.status}`);
      await new Promise((res) => setTimeout(res, 100));
    }
    const overlay = await kustomizeBuild(join(REPO_ROOT, "flux", "berth", "overlays", "aks-dev-weu"));
    await applyObject(
      admin,
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "flux-config" } },
      "kustomize-controller",
    );
    for (const kind of ["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"]) {
      for (const o of overlay.filter((x) => x.kind === kind)) await applyObject(admin, o, "kustomize-controller");
    }
    await applyObject(
      admin,
      {
        apiVersion: "berth.dev/v1alpha1",
        kind: "Team",
        metadata: { name: "payments" },
        spec: { description: "Payments team", owners: ["0b9a3c1e-1111-4222-8333-444455556666"], environments: ["dev"] },
      },
      "kustomize-controller",
    );

    // The fleet repository after `flux bootstrap` of both clusters.
    await git(["clone", "--quiet", fleetRemote.url, fleet]);
    for (const c of CLUSTERS) {
      mkdirSync(join(fleet, "clusters", c, "flux-system"), { recursive: true });
      writeFileSync(
        join(fleet, "clusters", c, "flux-system", "kustomization.yaml"),
        "# stand-in for flux bootstrap's gotk-components.yaml and gotk-sync.yaml\nresources: []\n",
      );
    }
    await git(["add", "."], { cwd: fleet });
    await git(
      ["-c", "user.name=flux", "-c", "user.email=flux@example.com", "commit", "-q", "-m", "Add Flux sync manifests"],
      { cwd: fleet },
    );
    await git(["push", "-q", "origin", "HEAD:main"], { cwd: fleet });

    // What the `sh azure` blocks before the test blocks produce.
    writeFileSync(join(work, "git-token.txt"), gitToken);
    writeFileSync(join(work, "token"), await requestServiceAccountToken(admin, "berth-system", "berth-status-reader"));
    writeFileSync(join(work, "ca.crt"), Buffer.from(cluster.caData!, "base64"));
  }, 180_000);

  afterAll(async () => {
    await cluster?.stop();
    await fleetRemote?.remove();
    rmSync(work, { recursive: true, force: true });
  });

  it("runs every `sh test` block successfully", async () => {
    const env = {
      ...process.env,
      BERTH: REPO_ROOT,
      FLEET: fleet,
      SERVER: cluster.server,
      KUBECONFIG: await cluster.writeKubeconfigFile("admin"),
      GIT_AUTHOR_NAME: "Platform Team",
      GIT_AUTHOR_EMAIL: "platform@example.com",
      GIT_COMMITTER_NAME: "Platform Team",
      GIT_COMMITTER_EMAIL: "platform@example.com",
      GIT_TERMINAL_PROMPT: "0",
    };
    for (const block of shellBlocks().filter((b) => b.tag === "test")) {
      const t0 = Date.now();
      try {
        // At a lower CPU priority (step 1 builds the image): the suite's timing-sensitive tests run beside it.
        const { stdout, stderr } = await run(
          "nice",
          ["-n", "10", "bash", "-euo", "pipefail", "-c", `cd "$WORK"\n${block.code}`],
          { cwd: work, env: { ...env, WORK: work }, maxBuffer: 64 * 1024 * 1024, timeout: 600_000 },
        );
        outputs.push(stdout + stderr);
      } catch (err) {
        const e = err as { stdout?: string; stderr?: string; message: string };
        throw new Error(
          `docs/install.md line ${block.line} failed:\n${block.code}\n--- output ---\n${(e.stdout ?? "").slice(-3000)}${(e.stderr ?? e.message).slice(-3000)}`,
          { cause: err },
        );
      }
      console.log(`[tests/install] docs/install.md line ${block.line}: ${Date.now() - t0} ms`);
    }
  }, 900_000);

  it("built and described the image, and the status reader sees the cluster's Teams", () => {
    const all = outputs.join("\n");
    expect(all).toMatch(/berth image \S+: /);
    expect(all).toContain('"org.opencontainers.image.revision"');
    expect(all).toMatch(/^payments\s/m); // kubectl get teams with the status reader's kubeconfig
    expect(all).toContain("builds: berth/overlays/aks-dev-weu/");
    expect(all).toContain("builds: berth/overlays/management/");
  });

  it("created the API's Secrets as the Deployment mounts them", async () => {
    const admin = cluster.kubeConfig();
    const git = (await kubeRequest(admin, { method: "GET", path: "/api/v1/namespaces/berth-api/secrets/berth-git" }))
      .json as { data: Record<string, string> };
    expect(Buffer.from(git.data.token!, "base64").toString()).toBe(gitToken);
    const status = (
      await kubeRequest(admin, { method: "GET", path: "/api/v1/namespaces/berth-api/secrets/berth-status-kubeconfigs" })
    ).json as { data: Record<string, string> };
    const kubeconfig = Buffer.from(status.data["aks-dev-weu.kubeconfig"]!, "base64").toString();
    expect(kubeconfig).toContain(cluster.server);
    expect(kubeconfig).toContain("berth-status-reader");
    // The paths the API reads them from: the Deployment's mounts and the platform config.
    const api = (await kustomizeBuild(join(REPO_ROOT, "flux", "berth", "overlays", "management"))).find(
      (o) => o.kind === "Deployment",
    )!;
    const c = api.spec.template.spec.containers[0];
    const mount = (volume: string) =>
      c.volumeMounts.find((m: { name: string }) => m.name === volume).mountPath as string;
    const secretOf = (volume: string) =>
      api.spec.template.spec.volumes.find((v: { name: string }) => v.name === volume).secret.secretName as string;
    expect([secretOf("git-credential"), secretOf("status-kubeconfigs")]).toEqual([
      "berth-git",
      "berth-status-kubeconfigs",
    ]);
    expect(c.env.find((e: { name: string }) => e.name === "BERTH_GIT_TOKEN_FILE").value).toBe(
      `${mount("git-credential")}/token`,
    );
    expect(readFileSync(join(REPO_ROOT, "flux", "berth", "platform", "berth.yaml"), "utf8")).toContain(
      `kubeconfig: ${mount("status-kubeconfigs")}/aks-dev-weu.kubeconfig`,
    );
    // The Receiver keys (step 7): the Secret the docs create, where the Deployment mounts it and the config reads it.
    expect(secretOf("flux-receivers")).toBe("berth-flux-receivers");
    const install = readFileSync(join(REPO_ROOT, "docs", "install.md"), "utf8");
    expect(install).toContain("create secret generic berth-flux-receivers --from-file=aks-dev-weu=");
    expect(install).toContain(`tokenFile: ${mount("flux-receivers")}/aks-dev-weu`);
    expect(readFileSync(join(REPO_ROOT, "flux", "berth", "platform", "berth.yaml"), "utf8")).toContain(
      `tokenFile: ${mount("flux-receivers")}/aks-dev-weu`,
    );
  });

  it("pushed an install that builds, an upgrade that changes one file and every image, and an uninstall", async () => {
    const log = (await git(["log", "--format=%H %s", "main"], { cwd: fleetRemote.dir }))
      .trim()
      .split("\n")
      .map((l) => ({ sha: l.slice(0, 40), subject: l.slice(41) }));
    expect(log.map((c) => c.subject)).toEqual([
      "Uninstall Berth",
      "Berth 0.2.0",
      "Install Berth",
      "Add Flux sync manifests",
    ]);
    const at = async (subject: string) => {
      const dir = mkdtempSync(join(work, "checkout-"));
      await git(["--work-tree", dir, "checkout", log.find((c) => c.subject === subject)!.sha, "--", "."], {
        cwd: fleetRemote.dir,
      });
      return dir;
    };
    const images = async (dir: string) => {
      const out: string[] = [];
      for (const overlay of ["management", "aks-dev-weu"]) {
        for (const d of (await kustomizeBuild(join(dir, "berth", "overlays", overlay))).filter(
          (o) => o.kind === "Deployment",
        ))
          out.push(`${d.metadata.name} ${d.spec.template.spec.containers[0].image}`);
      }
      return out;
    };

    const installed = await at("Install Berth");
    // Each cluster root builds (with bootstrap's flux-system stand-in) to the Flux Kustomizations for it.
    const roots = Object.fromEntries(
      await Promise.all(
        CLUSTERS.map(
          async (c) =>
            [
              c,
              (await kustomizeBuild(join(installed, "clusters", c)))
                .filter((o) => o.kind === "Kustomization")
                .map((o) => o.metadata.name)
                .sort(),
            ] as const,
        ),
      ),
    );
    expect(roots).toEqual({
      management: ["berth-api"],
      "aks-dev-weu": [
        "berth-controller",
        "berth-crds",
        ..."abcdefghijklmnopqrstuvwxyz".split("").map((l) => `berth-teams-${l}`),
      ],
    });
    expect(await images(installed)).toEqual([
      "berth-api myregistry.azurecr.io/berth:0.1.0",
      "berth-controller myregistry.azurecr.io/berth:0.1.0",
    ]);

    const upgrade = log.find((c) => c.subject === "Berth 0.2.0")!.sha;
    expect((await git(["diff", "--name-only", `${upgrade}~1`, upgrade], { cwd: fleetRemote.dir })).trim()).toBe(
      "berth/release/kustomization.yaml",
    );
    expect(await images(await at("Berth 0.2.0"))).toEqual([
      "berth-api myregistry.azurecr.io/berth:0.2.0",
      "berth-controller myregistry.azurecr.io/berth:0.2.0",
    ]);

    const uninstalled = await at("Uninstall Berth");
    const files = (await git(["ls-tree", "-r", "--name-only", log[0]!.sha], { cwd: fleetRemote.dir }))
      .trim()
      .split("\n");
    expect(files.sort()).toEqual(
      CLUSTERS.flatMap((c) => [
        `clusters/${c}/flux-system/kustomization.yaml`,
        `clusters/${c}/kustomization.yaml`,
      ]).sort(),
    );
    for (const c of CLUSTERS)
      expect(
        (await kustomizeBuild(join(uninstalled, "clusters", c))).filter((o) => o.kind === "Kustomization"),
      ).toEqual([]);
  });
});
