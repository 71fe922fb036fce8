/**
 * A throw-away certificate authority for the fake Azure endpoints.
 *
 * Keys come from node:crypto (native RSA key generation); certificates are built and signed with
 * node-forge. Nothing is cached on disk except the CA certificate written by `writeCaFile()` so
 * that child processes can trust it through NODE_EXTRA_CA_CERTS.
 */
import { generateKeyPairSync, randomBytes, sign as nodeSign } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { isIP } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import forge from "node-forge";

/** Host names the fake answers for by default (direct mode and proxy mode). */
export const DEFAULT_SERVER_NAMES = [
  "127.0.0.1",
  "localhost",
  "::1",
  "management.azure.com",
  "login.microsoftonline.com",
] as const;

export interface IssuedCertificate {
  /** PEM chain: leaf certificate followed by the CA certificate. */
  certPem: string;
  keyPem: string;
  names: string[];
}

export interface LocalCa {
  certPem: string;
  keyPem: string;
  /** Issue a TLS server certificate for the given DNS names / IP addresses. */
  issueServerCert(names: readonly string[]): IssuedCertificate;
  /** Write the CA certificate to a temp file (for NODE_EXTRA_CA_CERTS) and return its path. */
  writeCaFile(dir?: string): string;
}

function newKeyPair(): { pem: string; publicKey: forge.pki.rsa.PublicKey } {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  });
  return { pem: privateKey, publicKey: forge.pki.publicKeyFromPem(publicKey) as forge.pki.rsa.PublicKey };
}

/** Sign with node:crypto (native) instead of forge's pure-JS RSA: ~100x faster. */
function signCert(cert: forge.pki.Certificate, issuerKeyPem: string): void {
  const oid = forge.pki.oids.sha256WithRSAEncryption!;
  cert.siginfo.algorithmOid = oid;
  cert.signatureOid = oid;
  // getTBSCertificate exists at runtime but is missing from @types/node-forge.
  const getTbs = (forge.pki as unknown as { getTBSCertificate(c: forge.pki.Certificate): forge.asn1.Asn1 })
    .getTBSCertificate;
  const tbs = forge.asn1.toDer(getTbs(cert)).getBytes();
  cert.signature = nodeSign("sha256", Buffer.from(tbs, "binary"), issuerKeyPem).toString("binary");
}

function serialNumber(): string {
  // Positive 16-byte serial (clear the top bit so DER does not read it as negative).
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  return bytes.toString("hex");
}

export function createLocalCa(commonName = "Berth fake Azure test CA"): LocalCa {
  const caKeys = newKeyPair();
  const caCert = forge.pki.createCertificate();
  caCert.publicKey = caKeys.publicKey;
  caCert.serialNumber = serialNumber();
  const now = Date.now();
  caCert.validity.notBefore = new Date(now - 60 * 60 * 1000);
  caCert.validity.notAfter = new Date(now + 7 * 24 * 60 * 60 * 1000);
  const caSubject = [
    { name: "commonName", value: commonName },
    { name: "organizationName", value: "Berth tests" },
  ];
  caCert.setSubject(caSubject);
  caCert.setIssuer(caSubject);
  caCert.setExtensions([
    { name: "basicConstraints", cA: true, critical: true },
    { name: "keyUsage", keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: "subjectKeyIdentifier" },
  ]);
  signCert(caCert, caKeys.pem);
  const caPem = forge.pki.certificateToPem(caCert);

  return {
    certPem: caPem,
    keyPem: caKeys.pem,
    issueServerCert(names) {
      if (names.length === 0) throw new Error("issueServerCert needs at least one name");
      const leafKeys = newKeyPair();
      const cert = forge.pki.createCertificate();
      cert.publicKey = leafKeys.publicKey;
      cert.serialNumber = serialNumber();
      cert.validity.notBefore = new Date(Date.now() - 60 * 60 * 1000);
      cert.validity.notAfter = new Date(Date.now() + 2 * 24 * 60 * 60 * 1000);
      const cn = names.find((n) => isIP(n) === 0) ?? names[0]!;
      cert.setSubject([{ name: "commonName", value: cn }]);
      cert.setIssuer(caCert.subject.attributes);
      const altNames = names.map((n) => (isIP(n) === 0 ? { type: 2 as const, value: n } : { type: 7 as const, ip: n }));
      cert.setExtensions([
        { name: "basicConstraints", cA: false, critical: true },
        { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
        { name: "extKeyUsage", serverAuth: true },
        { name: "subjectAltName", altNames },
        { name: "subjectKeyIdentifier" },
        { name: "authorityKeyIdentifier", keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes() },
      ]);
      signCert(cert, caKeys.pem);
      return { certPem: forge.pki.certificateToPem(cert) + caPem, keyPem: leafKeys.pem, names: [...names] };
    },
    writeCaFile(dir) {
      const target = dir ?? mkdtempSync(join(tmpdir(), "fake-azure-ca-"));
      const file = join(target, "ca.pem");
      writeFileSync(file, caPem, { mode: 0o644 });
      return file;
    },
  };
}

let shared: { ca: LocalCa; cert: IssuedCertificate; file: string } | undefined;

/** One CA + server certificate per process (key generation is the slow part of starting a fake). */
export function sharedCa(): { ca: LocalCa; cert: IssuedCertificate; file: string } {
  if (!shared) {
    const ca = createLocalCa();
    shared = { ca, cert: ca.issueServerCert([...DEFAULT_SERVER_NAMES]), file: ca.writeCaFile() };
  }
  return shared;
}
