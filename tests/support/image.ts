/**
 * Berth's OCI image (infra/image/build.mjs, `npm run image`) for tests: unpacked with buildah (its own vfs
 * storage in a temp folder, so parallel runs and other users of buildah never meet), and run the way a
 * container runtime runs it in a pod:
 *
 *   - the image's root filesystem mounted READ-ONLY (Deployment: readOnlyRootFilesystem), with tmpfs on
 *     /tmp and the given volumes bind-mounted on top (emptyDir, ConfigMap, Secret, ServiceAccount token);
 *   - the image's Entrypoint (tini) as PID 1 of a new PID namespace, then Cmd or the given args;
 *   - the image's Env, WorkingDir and User (65532:65532), HOME from the image's /etc/passwd;
 *   - the host's network (so a server inside is reachable on 127.0.0.1, and it reaches test servers there).
 *
 * `unshare` + `chroot` stand in for runc: `buildah run --isolation chroot` cannot run with a read-only root
 * (it writes /run/.containerenv), so buildah is used to unpack the archive and read its config, and for
 * commands where a writable root does not matter (`buildah run`, see `image.buildahRun`).
 *
 *   const image = await openImage();                          // ~10 s: buildah from oci-archive:...
 *   const c = runContainer(image, { args: ["node", "apps/controller/dist/main.js"], env: {...}, mounts: [...] });
 *   await c.stop();                                           // SIGTERM to tini (PID 1), like the kubelet
 *   await image.close();
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, lstatSync, mkdtempSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { REPO_ROOT } from "./kube-cluster.js";
import { requireNeed } from "./needs.js";

const run = promisify(execFile);

/** Where `npm run image` (and so `npm test`) writes the archive, and its summary beside it. */
export const IMAGE_ARCHIVE = process.env.BERTH_IMAGE_ARCHIVE || join(REPO_ROOT, ".berth", "image", "berth.oci.tar");

export interface ImageLayerSummary {
  name: string;
  holds: string;
  digest: string;
  diffId: string;
  size: number;
  uncompressedSize: number;
  cached: boolean;
}

/** What infra/image/build.mjs wrote beside the archive (`<archive>.json`). */
export interface ImageSummary {
  archive: string;
  reference: string;
  digest: string;
  configDigest: string;
  revision: string;
  dirty: boolean;
  created: string;
  version: string;
  source: string;
  labels: Record<string, string>;
  node: string;
  compressedSize: number;
  uncompressedSize: number;
  archiveSize: number;
  layers: ImageLayerSummary[];
  timingsMs: Record<string, number>;
  loadAverage: string;
}

export function readImageSummary(archive = IMAGE_ARCHIVE): ImageSummary {
  return JSON.parse(readFileSync(archive.replace(/\.tar$/, "") + ".json", "utf8")) as ImageSummary;
}

/**
 * Whether image tests skip: only on a developer machine where the archive was never built. In CI (env CI
 * set) a missing archive fails: `npm test` builds it before vitest.
 */
export function skipWithoutImage(): boolean {
  requireNeed("image");
  if (existsSync(IMAGE_ARCHIVE)) return false;
  const inCI = Boolean(process.env.CI) && process.env.CI !== "false" && process.env.CI !== "0";
  if (inCI) return false;
  console.warn(
    `[image tests] SKIPPED: ${IMAGE_ARCHIVE} does not exist. Run \`npm run image\` (npm test builds it first).`,
  );
  return true;
}

/** The parts of the OCI image config a runtime uses. */
export interface ImageConfig {
  User?: string;
  Env?: string[];
  Entrypoint?: string[];
  Cmd?: string[];
  WorkingDir?: string;
  Labels?: Record<string, string>;
  ExposedPorts?: Record<string, unknown>;
  StopSignal?: string;
}

export interface OpenImage {
  /** The image's root filesystem (buildah's working container, mounted). */
  rootfs: string;
  config: ImageConfig;
  /** `buildah run --isolation chroot [--user U] <container> -- args`: stdout. */
  buildahRun(args: string[], opts?: { user?: string }): Promise<string>;
  close(): Promise<void>;
}

export async function openImage(archive = IMAGE_ARCHIVE): Promise<OpenImage> {
  const dir = mkdtempSync(join(tmpdir(), "berth-image-test-"));
  const buildah = (args: string[]) =>
    run(
      "buildah",
      ["--root", join(dir, "storage"), "--runroot", join(dir, "run"), "--storage-driver", "vfs", ...args],
      { maxBuffer: 64 * 1024 * 1024 },
    );
  let container = "";
  try {
    container = (await buildah(["from", "--quiet", `oci-archive:${archive}`])).stdout.trim().split("\n").at(-1)!;
    const rootfs = (await buildah(["mount", container])).stdout.trim();
    const inspect = JSON.parse((await buildah(["inspect", "--type", "container", container])).stdout) as {
      OCIv1: { config: ImageConfig };
    };
    return {
      rootfs,
      config: inspect.OCIv1.config,
      async buildahRun(args, opts = {}) {
        return (
          await buildah([
            "run",
            "--isolation",
            "chroot",
            ...(opts.user ? ["--user", opts.user] : []),
            container,
            "--",
            ...args,
          ])
        ).stdout;
      },
      async close() {
        await buildah(["rm", container]).catch(() => undefined);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    if (container) await buildah(["rm", container]).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

export interface Mount {
  /** A host path (file or folder). */
  source: string;
  /** Where it appears inside the container. */
  target: string;
  readOnly?: boolean;
}

export interface RunOptions {
  /** Overrides the image's Cmd (a pod's `args`); the Entrypoint (tini) stays. */
  args?: string[];
  /** Added to (and overriding) the image's Env. */
  env?: Record<string, string>;
  mounts?: Mount[];
  /** uid:gid; default the image's User. */
  user?: string;
}

export interface RunningContainer {
  /** Host pid of the process `unshare` forked: tini, PID 1 inside. */
  pid(): number | undefined;
  /** stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code (or signal name) once the container is gone. */
  exited: Promise<number | string>;
  /** SIGTERM to PID 1 (as the kubelet does), then SIGKILL after `graceMs`; resolves with the exit code. */
  stop(graceMs?: number): Promise<number | string>;
}

/**
 * Mounts (in a private mount namespace that disappears with the process), then chroot into the read-only
 * root. Mount points are created in the working container before the root becomes read-only, as runc does.
 */
const RUNNER = String.raw`
set -eu
R=$1; USERSPEC=$2; WORKDIR=$3; shift 3
mkdir -p "$R/proc" "$R/dev" "$R/tmp"
mount --bind "$R" "$R"
mount -t proc -o nosuid,nodev,noexec proc "$R/proc"
mount -t tmpfs -o nosuid,mode=755 tmpfs "$R/dev"
for d in null zero full random urandom tty; do touch "$R/dev/$d"; mount --bind "/dev/$d" "$R/dev/$d"; done
ln -s /proc/self/fd "$R/dev/fd"
mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs "$R/tmp"
while [ "$1" != "--" ]; do
  src=$1; dst=$2; ro=$3; shift 3
  if [ -d "$src" ]; then mkdir -p "$R$dst"; else mkdir -p "$(dirname "$R$dst")"; [ -e "$R$dst" ] || touch "$R$dst"; fi
  mount --bind "$src" "$R$dst"
  if [ "$ro" = ro ]; then mount -o remount,bind,ro "$R$dst"; fi
done
shift
mount -o remount,bind,ro "$R"
exec chroot --userspec="$USERSPEC" "$R" /usr/bin/env -C "$WORKDIR" -i "$@"
`;

/**
 * `path` inside the root filesystem with its symlinks resolved against that root (Debian's /var/run is a link
 * to the absolute /run, which must not send a mount point to the host's /run), as runc does for mount points.
 */
export function resolveInRoot(rootfs: string, path: string): string {
  const out: string[] = [];
  const pending = path.split("/").filter(Boolean);
  for (let hops = 0; pending.length;) {
    const part = pending.shift()!;
    if (part === ".") continue;
    if (part === "..") {
      out.pop();
      continue;
    }
    const host = join(rootfs, ...out, part);
    let link: string | undefined;
    try {
      link = lstatSync(host).isSymbolicLink() ? readlinkSync(host) : undefined;
    } catch {
      link = undefined; // does not exist (yet): the runner creates it
    }
    if (link === undefined) {
      out.push(part);
      continue;
    }
    if (++hops > 40) throw new Error(`${path}: too many symlinks in ${rootfs}`);
    if (link.startsWith("/")) out.length = 0;
    pending.unshift(...link.split("/").filter(Boolean));
  }
  return `/${out.join("/")}`;
}

export function runContainer(image: OpenImage, opts: RunOptions = {}): RunningContainer {
  const user = opts.user ?? image.config.User ?? "0:0";
  const uid = user.split(":")[0];
  const home = readFileSync(join(image.rootfs, "etc", "passwd"), "utf8")
    .split("\n")
    .map((l) => l.split(":"))
    .find((f) => f[2] === uid)?.[5];
  const env = new Map<string, string>();
  for (const kv of image.config.Env ?? []) env.set(kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1));
  if (home && !env.has("HOME")) env.set("HOME", home);
  env.set("HOSTNAME", "berth-image-test");
  for (const [k, v] of Object.entries(opts.env ?? {})) env.set(k, v);
  const command = [...(image.config.Entrypoint ?? []), ...(opts.args ?? image.config.Cmd ?? [])];
  const mountArgs = (opts.mounts ?? []).flatMap((m) => [
    m.source,
    resolveInRoot(image.rootfs, m.target),
    m.readOnly ? "ro" : "rw",
  ]);
  const child: ChildProcess = spawn(
    "unshare",
    [
      "--mount",
      "--pid",
      "--fork",
      "--propagation",
      "private",
      "bash",
      "-c",
      RUNNER,
      "berth-image-runner",
      image.rootfs,
      user,
      image.config.WorkingDir || "/",
      ...mountArgs,
      "--",
      ...[...env].map(([k, v]) => `${k}=${v}`),
      ...command,
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  child.stdout!.on("data", (c: Buffer) => (output += String(c)));
  child.stderr!.on("data", (c: Buffer) => (output += String(c)));
  const exited = new Promise<number | string>((res) => child.on("exit", (code, signal) => res(code ?? signal ?? -1)));
  const pid = (): number | undefined => {
    try {
      const children = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, "utf8").trim();
      return children ? Number(children.split(" ")[0]) : undefined;
    } catch {
      return undefined;
    }
  };
  return {
    pid,
    output: () => output,
    exited,
    async stop(graceMs = 30_000) {
      const init = pid();
      if (init) process.kill(init, "SIGTERM");
      const timer = setTimeout(() => {
        const p = pid();
        if (p) process.kill(p, "SIGKILL");
        child.kill("SIGKILL");
      }, graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** Host pids of `pid`'s descendants (e.g. node under tini), depth first. */
export function descendants(pid: number): number[] {
  const out: number[] = [];
  let kids: string;
  try {
    kids = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim();
  } catch {
    return out;
  }
  for (const k of kids.split(" ").filter(Boolean).map(Number)) out.push(k, ...descendants(k));
  return out;
}

/** Uid, gid and command line of a host pid (from /proc). */
export function processInfo(pid: number): { uid: number; gid: number; cmdline: string[] } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]);
  const gid = Number(/^Gid:\s+(\d+)/m.exec(status)?.[1]);
  const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
  return { uid, gid, cmdline };
}

export type { ChildProcess };
