/**
 * Fake Microsoft Entra ID (v2.0 endpoints) for the confidential-client flows the Azure SDK uses:
 * client credentials with a client secret, and client credentials with a client assertion
 * (workload identity federation). Access tokens are RS256 JWTs signed by a key the fake holds;
 * the ARM side of the fake verifies them.
 */
import { generateKeyPairSync, randomUUID, type KeyObject } from "node:crypto";
import type { IncomingMessage } from "node:http";
import {
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  exportJWK,
  jwtVerify,
  SignJWT,
  type JSONWebKeySet,
  type JWK,
} from "jose";
import { guid, type ResponseSpec } from "./util.js";

export const ARM_AUDIENCES = [
  "https://management.azure.com/",
  "https://management.azure.com",
  "https://management.core.windows.net/",
  "https://management.core.windows.net",
];
export const TOKEN_EXCHANGE_AUDIENCE = "api://AzureADTokenExchange";
const JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

export interface FederatedCredential {
  issuer: string;
  subject: string;
  audiences: string[];
}

export interface AppRegistration {
  clientId: string;
  /** Tenant the app (service principal) lives in; defaults to the fake's tenant. */
  tenantId?: string;
  /** Object id of the service principal (the `oid` claim); generated when omitted. */
  objectId?: string;
  clientSecret?: string;
  displayName?: string;
  /** Federated credentials on the app registration itself. */
  federatedCredentials?: FederatedCredential[];
}

/** What the token endpoint needs to know about a user-assigned identity (looked up by clientId). */
export interface IdentityPrincipal {
  clientId: string;
  principalId: string;
  tenantId: string;
  resourceId: string;
  federatedCredentials: FederatedCredential[];
}

export interface EntraOptions {
  tenants: string[];
  tokenLifetimeSeconds: number;
  lookupIdentityByClientId(clientId: string): IdentityPrincipal | undefined;
}

export interface IssueTokenOptions {
  tenantId: string;
  oid: string;
  appId?: string;
  audience?: string;
  lifetimeSeconds?: number;
  /** Seconds relative to now for exp (negative = already expired). Overrides lifetimeSeconds. */
  expiresInSeconds?: number;
  extraClaims?: Record<string, unknown>;
}

/** An access token the token endpoint issued, and how the client proved who it is. */
export interface IssuedToken {
  at: number;
  tenantId: string;
  clientId: string;
  audience: string;
  /** The federated assertion's issuer, subject and audiences (workload identity); absent for a client secret. */
  assertion?: { issuer: string; subject: string; audiences: string[] };
}

export type TokenCheck =
  | { ok: true; claims: Record<string, unknown> & { tid: string; oid: string } }
  | { ok: false; code: string; message: string; description: string };

interface StoredApp extends Required<Omit<AppRegistration, "clientSecret" | "federatedCredentials" | "displayName">> {
  clientSecret?: string;
  displayName: string;
  federatedCredentials: FederatedCredential[];
}

function aadError(
  status: number,
  error: string,
  code: number,
  description: string,
  correlationId?: string,
): ResponseSpec {
  const traceId = randomUUID();
  const corr = correlationId ?? randomUUID();
  const timestamp = new Date()
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d+Z$/, "Z");
  return {
    status,
    headers: { "Cache-Control": "no-store, no-cache", Pragma: "no-cache", "x-ms-request-id": traceId },
    body: {
      error,
      error_description: `AADSTS${code}: ${description} Trace ID: ${traceId} Correlation ID: ${corr} Timestamp: ${timestamp}`,
      error_codes: [code],
      timestamp,
      trace_id: traceId,
      correlation_id: corr,
      error_uri: `https://login.microsoftonline.com/error?code=${code}`,
    },
  };
}

export class FakeEntra {
  readonly tenants = new Set<string>();
  readonly apps = new Map<string, StoredApp>();
  /** Other principals (users, groups) that role assignments may name. */
  readonly principals = new Map<string, { id: string; type: "User" | "Group" | "ServicePrincipal" }>();
  private readonly privateKey: KeyObject;
  private readonly publicKey: KeyObject;
  readonly kid = randomUUID().replace(/-/g, "");
  private readonly issuerKeys = new Map<string, ReturnType<typeof createLocalJWKSet>>();
  /** Every access token the token endpoint issued, in order. */
  readonly issued: IssuedToken[] = [];
  private publicJwk?: JWK;

  constructor(private readonly opts: EntraOptions) {
    for (const t of opts.tenants) this.tenants.add(t.toLowerCase());
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    this.privateKey = privateKey;
    this.publicKey = publicKey;
  }

  addApp(app: AppRegistration): StoredApp {
    const tenantId = (app.tenantId ?? this.opts.tenants[0]!).toLowerCase();
    this.tenants.add(tenantId);
    const stored: StoredApp = {
      clientId: app.clientId.toLowerCase(),
      tenantId,
      objectId: (app.objectId ?? guid()).toLowerCase(),
      displayName: app.displayName ?? `app-${app.clientId.slice(0, 8)}`,
      federatedCredentials: [...(app.federatedCredentials ?? [])],
      ...(app.clientSecret !== undefined ? { clientSecret: app.clientSecret } : {}),
    };
    this.apps.set(stored.clientId, stored);
    this.principals.set(stored.objectId, { id: stored.objectId, type: "ServicePrincipal" });
    return stored;
  }

  /** Trust an external OIDC issuer's keys for client assertions (otherwise signatures are not checked). */
  trustIssuer(issuer: string, jwks: JSONWebKeySet): void {
    this.issuerKeys.set(issuer, createLocalJWKSet(jwks));
  }

  async jwks(): Promise<JSONWebKeySet> {
    this.publicJwk ??= { ...(await exportJWK(this.publicKey)), kid: this.kid, use: "sig", alg: "RS256" };
    return { keys: [this.publicJwk] };
  }

  async issueToken(o: IssueTokenOptions): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const exp = now + (o.expiresInSeconds ?? o.lifetimeSeconds ?? this.opts.tokenLifetimeSeconds);
    const tid = o.tenantId.toLowerCase();
    return new SignJWT({
      aio: randomUUID(),
      appid: o.appId ?? o.oid,
      appidacr: "2",
      idp: `https://sts.windows.net/${tid}/`,
      idtyp: "app",
      oid: o.oid,
      rh: "0.fake.",
      sub: o.oid,
      tid,
      uti: randomUUID().replace(/-/g, "").slice(0, 22),
      ver: "1.0",
      ...o.extraClaims,
    })
      .setProtectedHeader({ alg: "RS256", typ: "JWT", kid: this.kid, x5t: this.kid })
      .setAudience(o.audience ?? "https://management.azure.com/")
      .setIssuer(`https://sts.windows.net/${tid}/`)
      .setIssuedAt(now - 5 * 60)
      .setNotBefore(now - 5 * 60)
      .setExpirationTime(exp)
      .sign(this.privateKey);
  }

  /** Validate an ARM bearer token (signature, expiry, audience). Tenant checks are left to ARM. */
  async checkArmToken(authorization: string | undefined): Promise<TokenCheck> {
    if (!authorization) {
      return {
        ok: false,
        code: "AuthenticationFailed",
        message: "Authentication failed. The 'Authorization' header is missing.",
        description: "The authentication failed because of missing 'Authorization' header.",
      };
    }
    const m = /^Bearer\s+(\S+)$/i.exec(authorization.trim());
    if (!m) {
      return {
        ok: false,
        code: "AuthenticationFailed",
        message: "Authentication failed. The 'Authorization' header is provided in an invalid format.",
        description: "The authentication failed because of invalid 'Authorization' header.",
      };
    }
    const invalid: TokenCheck = {
      ok: false,
      code: "InvalidAuthenticationToken",
      message: "The access token is invalid.",
      description: "The access token is invalid.",
    };
    let unverified: Record<string, unknown>;
    try {
      unverified = decodeJwt(m[1]!) as Record<string, unknown>;
    } catch {
      return invalid;
    }
    try {
      const { payload } = await jwtVerify(m[1]!, this.publicKey, { algorithms: ["RS256"], clockTolerance: 0 });
      const aud = payload.aud;
      const auds = Array.isArray(aud) ? aud : [aud];
      if (!auds.some((a) => typeof a === "string" && ARM_AUDIENCES.includes(a))) {
        return {
          ok: false,
          code: "InvalidAuthenticationTokenAudience",
          message: `The access token has been obtained for wrong audience or resource '${String(aud)}'. It should exactly match with one of the allowed audiences '${ARM_AUDIENCES.join("','")}'.`,
          description: "The access token has been obtained from wrong audience or resource.",
        };
      }
      if (typeof payload.tid !== "string" || typeof payload.oid !== "string") return invalid;
      return { ok: true, claims: payload as Record<string, unknown> & { tid: string; oid: string } };
    } catch (err) {
      if ((err as { code?: string }).code === "ERR_JWT_EXPIRED") {
        const exp = typeof unverified.exp === "number" ? new Date(unverified.exp * 1000) : new Date(0);
        return {
          ok: false,
          code: "ExpiredAuthenticationToken",
          message: `The access token expiry UTC time '${exp.toUTCString()}' is earlier than current UTC time '${new Date().toUTCString()}'.`,
          description: "The access token expiry UTC time is earlier than current UTC time.",
        };
      }
      return invalid;
    }
  }

  async openIdConfiguration(tenant: string, base: string): Promise<ResponseSpec> {
    const t = tenant.toLowerCase();
    const generic = t === "common" || t === "organizations" || t === "consumers";
    if (!generic && !this.tenants.has(t)) {
      return aadError(
        400,
        "invalid_tenant",
        90002,
        `Tenant '${tenant}' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud. Check with your subscription administrator, this may happen if there are no active subscriptions for the tenant.`,
      );
    }
    const tid = generic ? "{tenantid}" : t;
    const pathTenant = generic ? tenant : t;
    return {
      status: 200,
      headers: { "Cache-Control": "max-age=86400, private", "Access-Control-Allow-Origin": "*" },
      body: {
        token_endpoint: `${base}/${pathTenant}/oauth2/v2.0/token`,
        token_endpoint_auth_methods_supported: ["client_secret_post", "private_key_jwt", "client_secret_basic"],
        jwks_uri: `${base}/${pathTenant}/discovery/v2.0/keys`,
        response_modes_supported: ["query", "fragment", "form_post"],
        subject_types_supported: ["pairwise"],
        id_token_signing_alg_values_supported: ["RS256"],
        response_types_supported: ["code", "id_token", "code id_token", "id_token token"],
        scopes_supported: ["openid", "profile", "email", "offline_access"],
        issuer: `${base}/${tid}/v2.0`,
        request_uri_parameter_supported: false,
        userinfo_endpoint: "https://graph.microsoft.com/oidc/userinfo",
        authorization_endpoint: `${base}/${pathTenant}/oauth2/v2.0/authorize`,
        device_authorization_endpoint: `${base}/${pathTenant}/oauth2/v2.0/devicecode`,
        http_logout_supported: true,
        frontchannel_logout_supported: true,
        end_session_endpoint: `${base}/${pathTenant}/oauth2/v2.0/logout`,
        claims_supported: [
          "sub",
          "iss",
          "cloud_instance_name",
          "cloud_instance_host_name",
          "cloud_graph_host_name",
          "msgraph_host",
          "aud",
          "exp",
          "iat",
          "auth_time",
          "acr",
          "nonce",
          "preferred_username",
          "name",
          "tid",
          "ver",
          "at_hash",
          "c_hash",
          "email",
        ],
        kerberos_endpoint: `${base}/${pathTenant}/kerberos`,
        tenant_region_scope: "NA",
        cloud_instance_name: "microsoftonline.com",
        cloud_graph_host_name: "graph.windows.net",
        msgraph_host: "graph.microsoft.com",
        rbac_url: "https://pas.windows.net",
      },
    };
  }

  /**
   * `GET /common/discovery/instance` as Entra answers it: the tenant discovery endpoint on the host of the
   * `authorization_endpoint` asked about (MSAL validates an authority it does not know this way, e.g. Go's MSAL for
   * a custom AZURE_AUTHORITY_HOST), when that host is one the fake answers for; otherwise 400 invalid_instance.
   */
  instanceDiscovery(base: string, query: URLSearchParams, ownHosts: readonly string[]): ResponseSpec {
    const authEndpoint = query.get("authorization_endpoint") ?? `${base}/common/oauth2/v2.0/authorize`;
    let authority: URL;
    try {
      authority = new URL(authEndpoint);
    } catch {
      return aadError(400, "invalid_instance", 50049, "Unknown or invalid instance.");
    }
    const host = authority.host.toLowerCase();
    if (![new URL(base).host.toLowerCase(), ...ownHosts.map((h) => h.toLowerCase())].includes(host)) {
      return aadError(400, "invalid_instance", 50049, "Unknown or invalid instance.");
    }
    const tenant = authority.pathname.split("/").filter(Boolean)[0] ?? "common";
    return {
      status: 200,
      body: {
        tenant_discovery_endpoint: `https://${host}/${tenant}/v2.0/.well-known/openid-configuration`,
        "api-version": "1.1",
        metadata: [
          { preferred_network: host, preferred_cache: host, aliases: [host] },
          {
            preferred_network: "login.microsoftonline.com",
            preferred_cache: "login.windows.net",
            aliases: ["login.microsoftonline.com", "login.windows.net", "login.microsoft.com", "sts.windows.net"],
          },
        ],
      },
    };
  }

  async token(tenant: string, req: IncomingMessage, rawBody: string): Promise<ResponseSpec> {
    const correlationId = (req.headers["client-request-id"] as string | undefined) ?? undefined;
    const t = tenant.toLowerCase();
    if (!this.tenants.has(t)) {
      return aadError(
        400,
        "invalid_request",
        90002,
        `Tenant '${tenant}' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud. Check with your subscription administrator, this may happen if there are no active subscriptions for the tenant.`,
        correlationId,
      );
    }
    const form = new URLSearchParams(rawBody);
    // client_secret_basic
    const basic = /^Basic\s+(\S+)$/i.exec(String(req.headers.authorization ?? ""));
    if (basic) {
      const [id, secret] = Buffer.from(basic[1]!, "base64").toString().split(":");
      if (id && !form.has("client_id")) form.set("client_id", decodeURIComponent(id));
      if (secret && !form.has("client_secret")) form.set("client_secret", decodeURIComponent(secret));
    }
    const grantType = form.get("grant_type");
    if (grantType !== "client_credentials") {
      return aadError(
        400,
        "unsupported_grant_type",
        70003,
        `The app requested an unsupported grant type '${grantType ?? ""}'.`,
        correlationId,
      );
    }
    const clientId = form.get("client_id");
    if (!clientId) {
      return aadError(
        400,
        "invalid_request",
        900144,
        "The request body must contain the following parameter: 'client_id'.",
        correlationId,
      );
    }
    const scope = form.get("scope");
    if (!scope) {
      return aadError(
        400,
        "invalid_request",
        900144,
        "The request body must contain the following parameter: 'scope'.",
        correlationId,
      );
    }
    const resourceScope = scope.split(" ").find((s) => s.endsWith("/.default"));
    if (!resourceScope) {
      return aadError(
        400,
        "invalid_scope",
        1002012,
        `The provided value for scope ${scope} is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI).`,
        correlationId,
      );
    }
    let audience = resourceScope.slice(0, -"/.default".length);
    if (audience === "https://management.azure.com" || audience === "https://management.core.windows.net")
      audience += "/";

    const app = this.apps.get(clientId.toLowerCase());
    const identity = app ? undefined : this.opts.lookupIdentityByClientId(clientId.toLowerCase());
    const clientTenant = app?.tenantId ?? identity?.tenantId.toLowerCase();
    if ((!app && !identity) || clientTenant !== t) {
      return aadError(
        400,
        "unauthorized_client",
        700016,
        `Application with identifier '${clientId}' was not found in the directory '${tenant}'. This can happen if the application has not been installed by the administrator of the tenant or consented to by any user in the tenant. You may have sent your authentication request to the wrong tenant.`,
        correlationId,
      );
    }
    const secret = form.get("client_secret");
    const assertionType = form.get("client_assertion_type");
    const assertion = form.get("client_assertion");
    let appidacr = "1";
    let proof: IssuedToken["assertion"];
    if (secret !== null) {
      if (!app || app.clientSecret === undefined || app.clientSecret !== secret) {
        return aadError(
          401,
          "invalid_client",
          7000215,
          `Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '${clientId}'.`,
          correlationId,
        );
      }
    } else if (assertion !== null) {
      if (assertionType !== JWT_BEARER) {
        return aadError(400, "invalid_request", 50027, "Invalid client_assertion_type.", correlationId);
      }
      const fics = app?.federatedCredentials ?? identity?.federatedCredentials ?? [];
      const failure = await this.checkAssertion(assertion, fics, correlationId);
      if (failure) return failure;
      const claims = decodeJwt(assertion);
      proof = {
        issuer: String(claims.iss),
        subject: String(claims.sub),
        audiences: (Array.isArray(claims.aud) ? claims.aud : [claims.aud]).map(String),
      };
      appidacr = "2";
    } else {
      return aadError(
        401,
        "invalid_client",
        7000218,
        "The request body must contain the following parameter: 'client_assertion' or 'client_secret'.",
        correlationId,
      );
    }
    const lifetime = this.opts.tokenLifetimeSeconds;
    this.issued.push({
      at: Date.now(),
      tenantId: t,
      clientId: clientId.toLowerCase(),
      audience,
      ...(proof ? { assertion: proof } : {}),
    });
    const accessToken = await this.issueToken({
      tenantId: t,
      oid: app?.objectId ?? identity!.principalId,
      appId: clientId.toLowerCase(),
      audience,
      lifetimeSeconds: lifetime,
      extraClaims: { appidacr, ...(identity ? { xms_mirid: identity.resourceId } : {}) },
    });
    return {
      status: 200,
      headers: {
        "Cache-Control": "no-store, no-cache",
        Pragma: "no-cache",
        "x-ms-request-id": randomUUID(),
        ...(correlationId ? { "client-request-id": correlationId } : {}),
      },
      body: { token_type: "Bearer", expires_in: lifetime, ext_expires_in: lifetime, access_token: accessToken },
    };
  }

  private async checkAssertion(
    assertion: string,
    fics: FederatedCredential[],
    correlationId?: string,
  ): Promise<ResponseSpec | undefined> {
    let claims: Record<string, unknown>;
    try {
      decodeProtectedHeader(assertion);
      claims = decodeJwt(assertion) as Record<string, unknown>;
    } catch {
      return aadError(400, "invalid_client", 50027, "JWT token is invalid or malformed.", correlationId);
    }
    const now = Math.floor(Date.now() / 1000);
    if (
      typeof claims.exp !== "number" ||
      claims.exp < now - 300 ||
      (typeof claims.nbf === "number" && claims.nbf > now + 300)
    ) {
      return aadError(
        400,
        "invalid_client",
        700024,
        "Client assertion is not within its valid time range.",
        correlationId,
      );
    }
    const iss = String(claims.iss ?? "");
    const sub = String(claims.sub ?? "");
    const auds = (Array.isArray(claims.aud) ? claims.aud : [claims.aud]).map(String);
    const match = fics.find((f) => f.issuer === iss && f.subject === sub && f.audiences.some((a) => auds.includes(a)));
    if (!match) {
      return aadError(
        400,
        "invalid_request",
        70021,
        `No matching federated identity record found for presented assertion. Assertion Issuer: '${iss}'. Assertion Subject: '${sub}'. Assertion Audience: '${auds.join(",")}'. https://docs.microsoft.com/azure/active-directory/develop/workload-identity-federation`,
        correlationId,
      );
    }
    const keys = this.issuerKeys.get(iss);
    if (keys) {
      try {
        await jwtVerify(assertion, keys, { issuer: iss });
      } catch {
        return aadError(
          400,
          "invalid_client",
          5002738,
          `Invalid JWT token. The token signature could not be validated for issuer '${iss}'.`,
          correlationId,
        );
      }
    }
    return undefined;
  }

  isKnownPrincipal(id: string): boolean {
    return this.principals.has(id.toLowerCase());
  }
}
