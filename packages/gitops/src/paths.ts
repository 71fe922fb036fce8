import { GitOpsError } from "./errors.js";

/**
 * Paths in the Flux repo. Writes are held to a conservative character set so a path can never be read by
 * git (or a fast-import stream, or a shell) as anything but a literal path; reads accept any path a repo
 * can hold except ones that would break the object-reader protocol.
 */

const MAX_PATH = 1024;
const MAX_SEGMENT = 255;
/** Letters, digits and `._-+=@,~`; a segment never starts with `-`. */
const WRITE_SEGMENT = /^[A-Za-z0-9._+=@,~][A-Za-z0-9._+=@,~-]*$/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

function invalid(path: string, why: string): never {
  throw new GitOpsError("invalid-change", `invalid repo path ${JSON.stringify(path.slice(0, 200))}: ${why}`);
}

function checkCommon(path: unknown): string[] {
  if (typeof path !== "string") invalid(String(path), "not a string");
  if (path.length === 0) invalid(path, "empty");
  if (path.length > MAX_PATH) invalid(path, `longer than ${MAX_PATH} characters`);
  if (CONTROL.test(path)) invalid(path, "contains a control character");
  if (path.includes("\\")) invalid(path, "contains a backslash (paths are POSIX)");
  if (path.startsWith("/")) invalid(path, "absolute");
  const segments = path.split("/");
  for (const s of segments) {
    if (s === "") invalid(path, "empty segment (leading, trailing or doubled '/')");
    if (s === "." || s === "..") invalid(path, `'${s}' segment`);
  }
  return segments;
}

/** A path a RepoChange may write or delete: relative, POSIX, literal, outside `.git`. */
export function assertWritablePath(path: string): void {
  const segments = checkCommon(path);
  if (path.startsWith("-")) invalid(path, "starts with '-'");
  for (const s of segments) {
    if (s.length > MAX_SEGMENT) invalid(path, `segment longer than ${MAX_SEGMENT} characters`);
    if (!WRITE_SEGMENT.test(s)) invalid(path, "segment outside [A-Za-z0-9._+=@,~-] or starting with '-'");
    if (s.toLowerCase() === ".git") invalid(path, "'.git' segment");
  }
}

/** A path RepoTree.read accepts. */
export function assertReadablePath(path: string): void {
  checkCommon(path);
}

/** A folder RepoTree.list accepts; "" / "." / "/" mean the repo root. Returns it without a trailing '/'. */
export function normalizeDir(dir: string): string {
  if (typeof dir !== "string") invalid(String(dir), "not a string");
  let d = dir;
  if (d === "." || d === "/" || d === "./") return "";
  while (d.endsWith("/")) d = d.slice(0, -1);
  if (d === "") return "";
  checkCommon(d);
  return d;
}

/** Every proper parent folder of a path: `a/b/c` → `a`, `a/b`. */
export function parents(path: string): string[] {
  const out: string[] = [];
  let i = path.indexOf("/");
  while (i !== -1) {
    out.push(path.slice(0, i));
    i = path.indexOf("/", i + 1);
  }
  return out;
}
