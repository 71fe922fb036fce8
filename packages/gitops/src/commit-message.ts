import type { ChangeOrigin, RepoChange, Trailer } from "@berth/core";
import { GitOpsError } from "./errors.js";

/**
 * Commit messages. Request data (subject, body, actor, request id) only ever reaches git as the bytes of
 * a message stream, never as an argument; it is still cleaned so one request cannot forge lines (a fake
 * trailer, a second subject) or bloat the history.
 */

const MAX_SUBJECT = 200;
const MAX_BODY_LINE = 500;
const MAX_BODY_LINES = 100;
/** The longest trailer value kept whole; a longer one is cut. */
export const MAX_TRAILER_VALUE = 200;

export const TRAILER_ACTOR = "Berth-Requested-By";
export const TRAILER_REQUEST_ID = "Berth-Request-Id";
/** Trailer keys Berth writes: a fixed prefix keeps them apart from anyone else's (Signed-off-by, ...). */
export const TRAILER_KEY = /^Berth(-[A-Za-z0-9]+)+$/;
const MAX_TRAILERS = 20;

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

/** A trailer value as it is written to (and so as it must be looked up in) a commit message. */
export function trailerValue(value: unknown): string {
  return sanitizeLine(value, MAX_TRAILER_VALUE);
}

/** The origin's extra trailers, checked: Berth-* keys, no key twice (the fixed two included), bounded. */
function extraTrailers(origin: ChangeOrigin): Trailer[] {
  const given = origin?.trailers ?? [];
  if (given.length > MAX_TRAILERS) throw new GitOpsError("invalid-change", `at most ${MAX_TRAILERS} extra trailers`);
  const seen = new Set([TRAILER_ACTOR.toLowerCase(), TRAILER_REQUEST_ID.toLowerCase()]);
  const out: Trailer[] = [];
  for (const { key, value } of given) {
    if (typeof key !== "string" || !TRAILER_KEY.test(key) || key.length > 60) {
      throw new GitOpsError(
        "invalid-change",
        `invalid trailer key ${JSON.stringify(String(key).slice(0, 80))}: must match ${TRAILER_KEY}`,
      );
    }
    if (seen.has(key.toLowerCase())) throw new GitOpsError("invalid-change", `trailer ${key} given twice`);
    seen.add(key.toLowerCase());
    const clean = trailerValue(value);
    if (clean !== "") out.push({ key, value: clean });
  }
  return out;
}

/**
 * Trailers from git's `%(trailers:only,unfold)` output (one `Key: value` per line). Keys keep their case;
 * compare them case-insensitively, as git does.
 */
export function parseTrailers(text: string): Trailer[] {
  const out: Trailer[] = [];
  for (const line of text.split("\n")) {
    const [, key, value] = /^([A-Za-z0-9-]+):\s?(.*)$/.exec(line.trimEnd()) ?? [];
    if (key !== undefined && value !== undefined) out.push({ key, value });
  }
  return out;
}

export function buildCommitMessage(change: RepoChange, origin: ChangeOrigin): string {
  const extra = extraTrailers(origin);
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
    `${TRAILER_ACTOR}: ${sanitizeLine(origin?.actor, MAX_TRAILER_VALUE) || "unknown"}`,
    `${TRAILER_REQUEST_ID}: ${sanitizeLine(origin?.requestId, MAX_TRAILER_VALUE) || "unknown"}`,
    ...extra.map((t) => `${t.key}: ${t.value}`),
  );
  return `${lines.join("\n")}\n`;
}
