import { createHash } from "node:crypto";

/** A weak ETag naming the content (weak: equal meaning, the bytes may be re-encoded on the way). */
export function etagOf(content: string): string {
  return `W/"${createHash("sha256").update(content).digest("base64url").slice(0, 27)}"`;
}

/** RFC 9110 If-None-Match (weak comparison): `*` or any listed tag equal to ours. */
export function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, "");
  return header.split(",").some((tag) => tag.trim() === "*" || opaque(tag) === opaque(etag));
}
