import type { ChangeOrigin, RepoChange } from "@berth/core";

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
  );
  return `${lines.join("\n")}\n`;
}
