import { gzipSync } from "node:zlib";
import { negotiate } from "@fastify/accept-negotiator";

/**
 * A body serialized once and sent to many readers, as is and gzip-compressed. Compressed once when cached, not per
 * reply (what @fastify/compress does): a whole list of 5,000 teams is about 1.4 MB of JSON and 50 KB gzipped, so
 * twenty readers of one revision cost one compression and 1 MB less on the wire, not twenty compressions.
 */
export interface EncodedBody {
  identity: Buffer;
  gzip: Buffer;
}

export type ContentCoding = keyof EncodedBody;

export function encodeBody(json: string): EncodedBody {
  const identity = Buffer.from(json, "utf8");
  return { identity, gzip: gzipSync(identity) };
}

/** Bytes an EncodedBody holds (for a size-bounded cache). */
export const encodedSize = (body: EncodedBody) => body.identity.length + body.gzip.length;

/** RFC 9110 Accept-Encoding: gzip when the reader accepts it (q > 0), else the body as is. */
export function contentCodingFor(acceptEncoding: string | undefined): ContentCoding {
  return acceptEncoding && negotiate(acceptEncoding, ["gzip", "identity"]) === "gzip" ? "gzip" : "identity";
}
