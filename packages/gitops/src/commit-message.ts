import type { ChangeOrigin, RepoChange } from "@berth/core";
import { GitOpsError } from "./errors.js";

/**
 * Commit messages. Request data (subject, body, actor, request id) only ever reaches git as the bytes of
 * a message stream, never as an argument; it is still cleaned so one request cannot forge lines (a fake
 * trailer, a second subject) or bloat the history.
 */

const MAX_SUBJECT = 200;
const MAX_BODY_LINE = 500;
const MAX_BODY_LINES = 100;
const MAX_TRAILER = 200;

export const TRAILER_ACTOR = "Berth-Requested-By";
export const TRAILER_REQUEST_ID = "Berth-Request-Id";
/** What an extra trailer key (ChangeOrigin.trailers) may be: a Berth- name, never one of the two above. */
const TRAILER_KEY = /^Berth-[A-Za-z0-9][A-Za-z0-9-]{0,40}$/;
const MAX_EXTRA_TRAILERS = 10;

// Control characters (C0, DEL, C1) and Unicode line/paragraph separators and bidi controls.
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g;

/** One line of plain text: control characters become spaces, runs of spaces collapse, bounded length. */
export function sanitizeLine(value: unknown, max: number): string {
  const text = (typeof value === "string" ? value : String(value ?? ""))
    .replace(UNSAFE, " ")
    .replace(/\s+/g, " ")
    .trim();
  if (text.length <= max) return text;
  return `${text.slice(0, max - 1).trimEnd()}…`;
}

export function buildCommitMessage(change: RepoChange, origin: ChangeOrigin): string {
  const subject = sanitizeLine(change.subject, MAX_SUBJECT) || "berth: update";
  const lines = [subject];
  const body = (Array.isArray(change.body) ? change.body : [])
    .slice(0, MAX_BODY_LINES)
    .map((l) => sanitizeLine(l, MAX_BODY_LINE));
  // Blank body lines would split the body into paragraphs; keep it one paragraph, drop empty lines.
  const kept = body.filter((l) => l !== "");
  if (kept.length > 0) lines.push("", ...kept);
  lines.push(
    "",
    `${TRAILER_ACTOR}: ${sanitizeLine(origin?.actor, MAX_TRAILER) || "unknown"}`,
    `${TRAILER_REQUEST_ID}: ${sanitizeLine(origin?.requestId, MAX_TRAILER) || "unknown"}`,
    ...extraTrailers(origin?.trailers),
  );
  return `${lines.join("\n")}\n`;
}

/**
 * The origin's extra trailers as lines. Keys come from code, so a bad one is a programming error and fails
 * the transaction (GitOpsError invalid-change) rather than being dropped silently.
 */
function extraTrailers(trailers: ChangeOrigin["trailers"]): string[] {
  if (trailers === undefined) return [];
  if (!Array.isArray(trailers) || trailers.length > MAX_EXTRA_TRAILERS) {
    throw new GitOpsError("invalid-change", `trailers must be a list of at most ${MAX_EXTRA_TRAILERS}`);
  }
  return trailers.map(({ key, value }) => {
    if (typeof key !== "string" || !TRAILER_KEY.test(key) || key === TRAILER_ACTOR || key === TRAILER_REQUEST_ID) {
      throw new GitOpsError("invalid-change", `invalid trailer key ${JSON.stringify(String(key).slice(0, 60))}: a Berth- name other than ${TRAILER_ACTOR} and ${TRAILER_REQUEST_ID}`);
    }
    return `${key}: ${sanitizeLine(value, MAX_TRAILER) || "unknown"}`;
  });
}
