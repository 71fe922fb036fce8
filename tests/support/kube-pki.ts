/**
 * Minimal X.509 issuance with node:crypto only (no openssl, no node-forge), for the test
 * kube-apiserver: a throwaway CA, a serving certificate for 127.0.0.1/localhost, and client
 * certificates (CN = user, O = groups) so that `kubeConfigFor(user, groups)` works for any
 * user/group combination without restarting the apiserver.
 *
 * Keys are ECDSA P-256 (generation takes well under a millisecond); certificates are
 * signed with ecdsa-with-SHA256. Only the fields Go's and OpenSSL's verifiers need are emitted.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, sign, type KeyObject } from "node:crypto";
import { isIP } from "node:net";

// ---- DER encoding ----------------------------------------------------------------------------

function derLength(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), derLength(content.length), content]);
}

const seq = (...items: Buffer[]): Buffer => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]): Buffer => tlv(0x31, Buffer.concat(items));
const explicit = (n: number, inner: Buffer): Buffer => tlv(0xa0 + n, inner);
const octets = (b: Buffer): Buffer => tlv(0x04, b);
const bitString = (b: Buffer): Buffer => tlv(0x03, Buffer.concat([Buffer.from([0]), b]));
const utf8 = (s: string): Buffer => tlv(0x0c, Buffer.from(s, "utf8"));
const bool = (v: boolean): Buffer => tlv(0x01, Buffer.from([v ? 0xff : 0]));

function integer(b: Buffer): Buffer {
  let i = 0;
  while (i < b.length - 1 && b[i] === 0) i++;
  let v = b.subarray(i);
  if ((v[0] ?? 0) & 0x80) v = Buffer.concat([Buffer.from([0]), v]);
  return tlv(0x02, v);
}

function oid(dotted: string): Buffer {
  const parts = dotted.split(".").map(Number);
  const out: number[] = [40 * (parts[0] ?? 0) + (parts[1] ?? 0)];
  for (const p of parts.slice(2)) {
    const chunk: number[] = [p & 0x7f];
    for (let v = Math.floor(p / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift((v & 0x7f) | 0x80);
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

function time(d: Date): Buffer {
  // UTCTime (YYMMDDHHMMSSZ) up to 2049, GeneralizedTime afterwards (RFC 5280 4.1.2.5).
  const iso = d.toISOString().replace(/[-:T]/g, "").slice(0, 14) + "Z"; // YYYYMMDDHHMMSSZ
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(iso.slice(2))) : tlv(0x18, Buffer.from(iso));
}

const OID = {
  ecdsaWithSHA256: "1.2.840.10045.4.3.2",
  commonName: "2.5.4.3",
  organization: "2.5.4.10",
  basicConstraints: "2.5.29.19",
  keyUsage: "2.5.29.15",
  extKeyUsage: "2.5.29.37",
  subjectAltName: "2.5.29.17",
  serverAuth: "1.3.6.1.5.5.7.3.1",
  clientAuth: "1.3.6.1.5.5.7.3.2",
} as const;

function name(cn: string, orgs: readonly string[] = []): Buffer {
  // One RDN per attribute; Kubernetes reads every O as a group.
  return seq(...orgs.map((o) => set(seq(oid(OID.organization), utf8(o)))), set(seq(oid(OID.commonName), utf8(cn))));
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return critical ? seq(oid(id), bool(true), octets(value)) : seq(oid(id), octets(value));
}

/** KeyUsage bits: digitalSignature(0), keyEncipherment(2), keyCertSign(5), cRLSign(6). */
function keyUsage(bits: number[]): Buffer {
  let byte = 0;
  for (const b of bits) byte |= 0x80 >> b;
  return tlv(0x03, Buffer.from([0, byte]));
}

// ---- certificates -----------------------------------------------------------------------------

export interface KeyPairPem {
  certPem: string;
  keyPem: string;
}

interface Signer {
  name: Buffer;
  key: KeyObject;
}

export interface CertificateAuthority extends KeyPairPem {
  /** Issues a leaf certificate signed by this CA. */
  issue(opts: LeafOptions): KeyPairPem;
}

export interface LeafOptions {
  commonName: string;
  organizations?: readonly string[];
  /** DNS names and IP addresses for subjectAltName (server certificates). */
  hosts?: readonly string[];
  usage: "server" | "client";
  days?: number;
}

function newKey(): { privateKey: KeyObject; publicKey: KeyObject } {
  return generateKeyPairSync("ec", { namedCurve: "prime256v1" });
}

function buildCert(subject: Buffer, subjectKey: KeyObject, issuer: Signer, days: number, extensions: Buffer[]): string {
  const algorithm = seq(oid(OID.ecdsaWithSHA256));
  const now = Date.now();
  const serial = randomBytes(16);
  serial[0] = (serial[0] ?? 0) & 0x7f;
  const tbs = seq(
    explicit(0, integer(Buffer.from([2]))), // v3
    integer(serial),
    algorithm,
    issuer.name,
    seq(time(new Date(now - 60 * 60 * 1000)), time(new Date(now + days * 24 * 60 * 60 * 1000))),
    subject,
    subjectKey.export({ type: "spki", format: "der" }),
    explicit(3, seq(...extensions)),
  );
  const signature = sign("sha256", tbs, issuer.key); // DER-encoded ECDSA signature
  const der = seq(tbs, algorithm, bitString(signature));
  const b64 = der
    .toString("base64")
    .replace(/(.{64})/g, "$1\n")
    .trimEnd();
  return `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`;
}

function sanExtension(hosts: readonly string[]): Buffer {
  const names = hosts.map((h) => {
    const family = isIP(h);
    if (family === 4) return tlv(0x87, Buffer.from(h.split(".").map(Number)));
    if (family === 6) {
      // Expand the address to 16 bytes.
      const [head = "", tail = ""] = h.split("::");
      const hs = head ? head.split(":") : [];
      const ts = h.includes("::") ? (tail ? tail.split(":") : []) : [];
      const groups = [...hs, ...Array<string>(8 - hs.length - ts.length).fill("0"), ...ts];
      const buf = Buffer.alloc(16);
      groups.forEach((g, i) => buf.writeUInt16BE(parseInt(g, 16), i * 2));
      return tlv(0x87, buf);
    }
    return tlv(0x82, Buffer.from(h, "ascii"));
  });
  return seq(...names);
}

export function createCertificateAuthority(commonName = "berth-test-cluster-ca", days = 365): CertificateAuthority {
  const { privateKey, publicKey } = newKey();
  const caName = name(commonName);
  const certPem = buildCert(caName, publicKey, { name: caName, key: privateKey }, days, [
    extension(OID.basicConstraints, true, seq(bool(true))),
    extension(OID.keyUsage, true, keyUsage([0, 5, 6])),
  ]);
  const keyPem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  const signer: Signer = { name: caName, key: privateKey };
  return {
    certPem,
    keyPem,
    issue(opts: LeafOptions): KeyPairPem {
      const leaf = newKey();
      const exts = [
        extension(OID.basicConstraints, true, seq()),
        extension(OID.keyUsage, true, keyUsage([0, 2])),
        extension(OID.extKeyUsage, false, seq(oid(opts.usage === "server" ? OID.serverAuth : OID.clientAuth))),
      ];
      if (opts.hosts?.length) exts.push(extension(OID.subjectAltName, false, sanExtension(opts.hosts)));
      return {
        certPem: buildCert(name(opts.commonName, opts.organizations), leaf.publicKey, signer, opts.days ?? days, exts),
        keyPem: leaf.privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
      };
    },
  };
}

/** Re-exported for callers that want to sanity-check a PEM key. */
export function publicKeyPemOf(privateKeyPem: string): string {
  return createPublicKey(createPrivateKey(privateKeyPem)).export({ type: "spki", format: "pem" }).toString();
}
