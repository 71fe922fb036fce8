/**
 * How a live response from the fake is compared with a recorded ARM response.
 *
 * Everything is compared exactly except values that real Azure generates per call or per
 * resource, which are compared by format (and, for ids, by consistency across the cassette):
 *
 *  - JSON fields `principalId`, `clientId` (and `tenantId` when the fake's tenant differs):
 *    must be GUIDs, and the recorded → fake mapping must be one-to-one over the whole cassette
 *    (the identity created in interaction 3 must keep the same ids in interaction 17).
 *  - JSON fields `etag` (quoted/opaque string) and timestamps (`createdOn`, `updatedOn`,
 *    `createdAt`, `lastModifiedAt`, `timestamp`...): format only (RFC 3339). Not present in the
 *    current cassettes, kept for future recordings. `tags` are user data and never normalised.
 *  - The `Location` header of a long-running operation: same path (the operation id is
 *    deterministic, see rgDeletionOperationId), same `api-version`; the signing parameters
 *    ARM appends (`t` = .NET ticks, `c` = certificate, `s` = signature, `h` = hash) by format
 *    only; the recorded host management.azure.com stands for the fake's host.
 *  - `Content-Length`: exact (ids keep their length, so it must match byte for byte).
 * After the field checks, the fake's body — with every mapped value swapped back for its
 * recorded counterpart — must equal the recorded body string exactly (key order included).
 */
import { GUID_RE } from "./util.js";

export const COMPARED_HEADERS = [
  "cache-control",
  "content-length",
  "content-type",
  "expires",
  "location",
  "pragma",
  "retry-after",
  "strict-transport-security",
  "vary",
  "x-content-type-options",
  "x-ms-failure-cause",
] as const;

const GUID_FIELDS = new Set(["principalid", "clientid"]);
const TIME_FIELDS = new Set([
  "createdon",
  "updatedon",
  "createdat",
  "lastmodifiedat",
  "timestamp",
  "createdtime",
  "changedtime",
]);
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const SIGNED_PARAMS: Record<string, RegExp> = {
  t: /^\d{18}$/,
  c: /^[A-Za-z0-9_-]{100,}$/,
  s: /^[A-Za-z0-9_-]{100,}$/,
  h: /^[A-Za-z0-9_-]{43}$/,
};

export class Normaliser {
  /** recorded value → fake value */
  readonly mapping = new Map<string, string>();
  private readonly reverse = new Map<string, string>();
  /** Per-body substitutions that need no cross-interaction consistency (timestamps). */
  private loose: Array<[string, string]> = [];

  constructor(
    private readonly fakeBase: string,
    private readonly extraGuidFields: string[] = [],
  ) {}

  private map(recorded: string, actual: string, where: string, errors: string[]): void {
    const known = this.mapping.get(recorded);
    const knownReverse = this.reverse.get(actual);
    if (known !== undefined && known !== actual) {
      errors.push(`${where}: recorded ${recorded} was ${known} earlier but is ${actual} now`);
      return;
    }
    if (knownReverse !== undefined && knownReverse !== recorded) {
      errors.push(`${where}: fake value ${actual} already stands for ${knownReverse}, not ${recorded}`);
      return;
    }
    this.mapping.set(recorded, actual);
    this.reverse.set(actual, recorded);
  }

  compareJson(recorded: unknown, actual: unknown, where: string, errors: string[], inTags = false): void {
    if (Array.isArray(recorded)) {
      if (!Array.isArray(actual) || actual.length !== recorded.length) {
        errors.push(`${where}: expected array of ${recorded.length}, got ${JSON.stringify(actual)}`);
        return;
      }
      recorded.forEach((r, i) => this.compareJson(r, actual[i], `${where}[${i}]`, errors, inTags));
      return;
    }
    if (recorded !== null && typeof recorded === "object") {
      if (actual === null || typeof actual !== "object" || Array.isArray(actual)) {
        errors.push(`${where}: expected object, got ${JSON.stringify(actual)}`);
        return;
      }
      const rk = Object.keys(recorded);
      const ak = Object.keys(actual);
      const missing = rk.filter((k) => !ak.includes(k));
      const extra = ak.filter((k) => !rk.includes(k));
      if (missing.length) errors.push(`${where}: missing keys ${missing.join(", ")}`);
      if (extra.length) errors.push(`${where}: unexpected keys ${extra.join(", ")}`);
      for (const k of rk) {
        if (!ak.includes(k)) continue;
        this.compareValue(
          k,
          (recorded as Record<string, unknown>)[k],
          (actual as Record<string, unknown>)[k],
          `${where}.${k}`,
          errors,
          inTags || k === "tags",
        );
      }
      return;
    }
    if (recorded !== actual)
      errors.push(`${where}: expected ${JSON.stringify(recorded)}, got ${JSON.stringify(actual)}`);
  }

  private compareValue(
    key: string,
    recorded: unknown,
    actual: unknown,
    where: string,
    errors: string[],
    inTags: boolean,
  ): void {
    const k = key.toLowerCase();
    if (!inTags && typeof recorded === "string" && (GUID_FIELDS.has(k) || this.extraGuidFields.includes(k))) {
      if (typeof actual !== "string" || !GUID_RE.test(actual)) {
        errors.push(`${where}: expected a GUID, got ${JSON.stringify(actual)}`);
        return;
      }
      this.map(recorded, actual, where, errors);
      return;
    }
    if (!inTags && typeof recorded === "string" && TIME_FIELDS.has(k) && RFC3339.test(recorded)) {
      if (typeof actual !== "string" || !RFC3339.test(actual))
        errors.push(`${where}: expected an RFC 3339 timestamp, got ${JSON.stringify(actual)}`);
      else this.loose.push([recorded, actual]);
      return;
    }
    if (!inTags && k === "etag" && typeof recorded === "string") {
      if (typeof actual !== "string" || actual.length === 0)
        errors.push(`${where}: expected an etag, got ${JSON.stringify(actual)}`);
      else this.map(recorded, actual, where, errors);
      return;
    }
    this.compareJson(recorded, actual, where, errors, inTags);
  }

  /** Compare bodies: JSON field by field, then byte for byte after mapping ids back. */
  compareBody(recorded: string, actual: string, where: string): string[] {
    const errors: string[] = [];
    this.loose = [];
    if (recorded === "") {
      if (actual !== "") errors.push(`${where}: expected an empty body, got ${actual.slice(0, 200)}`);
      return errors;
    }
    let r: unknown;
    let a: unknown;
    try {
      r = JSON.parse(recorded);
    } catch {
      if (recorded !== actual) errors.push(`${where}: non-JSON body differs`);
      return errors;
    }
    try {
      a = JSON.parse(actual);
    } catch {
      errors.push(`${where}: expected JSON, got ${actual.slice(0, 200)}`);
      return errors;
    }
    this.compareJson(r, a, where, errors);
    if (errors.length === 0) {
      const back = this.unmap(actual);
      if (back !== recorded)
        errors.push(
          `${where}: body differs byte-wise after normalisation:\n  recorded: ${recorded}\n  fake:     ${back}`,
        );
    }
    return errors;
  }

  /** Swap every fake value that stands for a recorded one back to the recorded value. */
  unmap(text: string): string {
    let out = text;
    for (const [recorded, actual] of [...this.mapping, ...this.loose]) out = out.split(actual).join(recorded);
    return out;
  }

  compareLocation(recorded: string, actual: string | undefined, where: string): string[] {
    if (actual === undefined) return [`${where}: Location missing`];
    if (recorded.startsWith("/"))
      return recorded === actual ? [] : [`${where}: Location expected ${recorded}, got ${actual}`];
    const errors: string[] = [];
    const r = new URL(recorded);
    const a = new URL(actual);
    const expectedOrigin = r.host === "management.azure.com" ? this.fakeBase : r.origin;
    if (a.origin !== expectedOrigin) errors.push(`${where}: Location origin ${a.origin}, expected ${expectedOrigin}`);
    if (a.pathname !== r.pathname) errors.push(`${where}: Location path ${a.pathname}, expected ${r.pathname}`);
    for (const [k, v] of r.searchParams) {
      const got = a.searchParams.get(k);
      const fmt = SIGNED_PARAMS[k];
      if (fmt) {
        if (got === null || !fmt.test(got)) errors.push(`${where}: Location ${k}=${got} does not look like ARM's ${k}`);
      } else if (got !== v) errors.push(`${where}: Location ${k}=${got}, expected ${v}`);
    }
    for (const [k, v] of a.searchParams) {
      if (r.searchParams.has(k)) continue;
      const fmt = SIGNED_PARAMS[k];
      if (!fmt) errors.push(`${where}: Location has unexpected parameter ${k}`);
      else if (!fmt.test(v)) errors.push(`${where}: Location ${k}=${v} does not look like ARM's ${k}`);
    }
    return errors;
  }

  compareHeaders(recorded: Record<string, string[]>, actual: Record<string, string>, where: string): string[] {
    const errors: string[] = [];
    const rec = new Map(Object.entries(recorded).map(([k, v]) => [k.toLowerCase(), v[0] ?? ""]));
    for (const name of COMPARED_HEADERS) {
      const r = rec.get(name);
      const a = actual[name];
      if (r === undefined && a === undefined) continue;
      if (r === undefined) {
        errors.push(`${where}: unexpected header ${name}: ${a}`);
        continue;
      }
      if (a === undefined) {
        errors.push(`${where}: missing header ${name} (recorded ${r})`);
        continue;
      }
      if (name === "location") errors.push(...this.compareLocation(r, a, where));
      else if (r.toLowerCase() !== a.toLowerCase()) errors.push(`${where}: header ${name} is ${a}, recorded ${r}`);
    }
    return errors;
  }
}
