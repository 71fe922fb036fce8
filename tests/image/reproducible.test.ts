/**
 * The image build is reproducible: a second `infra/image/build.mjs` of the same checkout, with the created time
 * moved by a day (SOURCE_DATE_EPOCH), must give the same layers byte for byte and differ only in the
 * timestamps the build names — config.created, each history entry's created, and the label/annotation
 * org.opencontainers.image.created. With those put back, config and manifest hash to the first build's
 * digests: two builds of the same commit (same SOURCE_DATE_EPOCH, the commit's time by default) are
 * byte-identical.
 *
 * The second build reuses the base root filesystem (ensure-base.sh's cache, reproducible on its own: mmdebstrap
 * with SOURCE_DATE_EPOCH) and compressed layers whose content digest it already knows; it re-runs pnpm deploy
 * and re-packs every layer, so the layers' diff ids are recomputed from scratch.
 */
// needs: image
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { IMAGE_ARCHIVE, readImageSummary, skipWithoutImage } from "../support/image.js";
import { REPO_ROOT } from "../support/kube-cluster.js";

const run = promisify(execFile);
const skip = skipWithoutImage();
const dir = mkdtempSync(join(tmpdir(), "berth-image-again-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** One blob of an OCI archive, parsed. */
async function blob(archive: string, digest: string): Promise<{ text: string; json: Record<string, unknown> }> {
  const { stdout } = await run("tar", ["-xOf", archive, `blobs/sha256/${digest.replace("sha256:", "")}`], {
    maxBuffer: 16 * 1024 * 1024,
  });
  return { text: stdout, json: JSON.parse(stdout) as Record<string, unknown> };
}

/** JSON paths where `a` and `b` differ. */
function differences(a: unknown, b: unknown, path = ""): string[] {
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return a === b ? [] : [path];
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].flatMap((k) =>
    differences(
      (a as Record<string, unknown>)[k],
      (b as Record<string, unknown>)[k],
      Array.isArray(a) ? `${path}[${k}]` : path ? `${path}.${k}` : k,
    ),
  );
}

const sha256 = (text: string) => `sha256:${createHash("sha256").update(text).digest("hex")}`;

describe.skipIf(skip)("the image build is reproducible", () => {
  it("a second build one day later differs only in the created timestamps; with them equal it is byte-identical", async () => {
    // A snapshot of the first build: another test (docs/install.md's `npm run image`) may write it again meanwhile.
    const archive = join(dir, "first.oci.tar");
    copyFileSync(IMAGE_ARCHIVE, archive);
    copyFileSync(IMAGE_ARCHIVE.replace(/\.tar$/, ".json"), join(dir, "first.oci.json"));
    const first = readImageSummary(archive);
    const epoch = Date.parse(first.created) / 1000 + 86_400;
    const output = join(dir, "again.oci.tar");
    const t0 = Date.now();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      SOURCE_DATE_EPOCH: String(epoch),
      BERTH_IMAGE_VERSION: first.version,
    };
    if (first.source !== "unknown") env.BERTH_IMAGE_SOURCE = first.source;
    // At a lower CPU priority: the suite's timing-sensitive tests (git push races) run beside it.
    await run(
      "nice",
      ["-n", "10", process.execPath, join(REPO_ROOT, "infra", "image", "build.mjs"), "--output", output],
      { cwd: REPO_ROOT, env, maxBuffer: 64 * 1024 * 1024 },
    );
    const second = readImageSummary(output);
    const created = new Date(epoch * 1000).toISOString().replace(".000Z", "Z");
    expect(second.created).toBe(created);

    // Layers: the same bytes, uncompressed and compressed.
    expect(second.layers.map((l) => [l.name, l.diffId, l.digest, l.size])).toEqual(
      first.layers.map((l) => [l.name, l.diffId, l.digest, l.size]),
    );

    // Config and manifest: only the named timestamps (and the config digest the manifest carries) differ.
    const [config1, config2] = await Promise.all([
      blob(archive, first.configDigest),
      blob(output, second.configDigest),
    ]);
    const history = (config1.json.history as unknown[]).map((_, i) => `history[${i}].created`);
    expect(differences(config1.json, config2.json).sort()).toEqual(
      ["config.Labels.org.opencontainers.image.created", "created", ...history].sort(),
    );
    const [manifest1, manifest2] = await Promise.all([blob(archive, first.digest), blob(output, second.digest)]);
    expect(differences(manifest1.json, manifest2.json).sort()).toEqual([
      "annotations.org.opencontainers.image.created",
      "config.digest",
    ]);

    // Put the first build's time back: the same bytes, so the same digests.
    const restored = config2.text.replaceAll(`"${created}"`, `"${first.created}"`);
    expect(sha256(restored)).toBe(first.configDigest);
    const restoredManifest = manifest2.text
      .replaceAll(`"${created}"`, `"${first.created}"`)
      .replace(second.configDigest, first.configDigest);
    expect(sha256(restoredManifest)).toBe(first.digest);
    console.log(
      `[tests/image] rebuilt in ${((Date.now() - t0) / 1000).toFixed(1)} s (load ${second.loadAverage}): layers identical, config and manifest differ only in ${["created", ...history, "the created label"].join(", ")}`,
    );
  }, 600_000);
});
