/**
 * startFakeAzure(): one HTTPS server on 127.0.0.1 that answers as both Microsoft Entra ID and
 * Azure Resource Manager, plus (optionally) a CONNECT proxy that routes the real host names to it.
 *
 * See docs/testing-fake-azure.md for usage, coverage and known differences from Azure.
 */
import { Agent as HttpsAgent, createServer as createHttpsServer, type Server } from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { TokenCredentialOptions } from "@azure/identity";
import {
  FakeArm,
  ArmError,
  NotImplementedByFake,
  classifyArm,
  type ArmRoute,
  type ClusterSeed,
  type LroTiming,
  type PageSizes,
  type RoleDefinitionSeed,
} from "./arm.js";
import { DEFAULT_SERVER_NAMES, sharedCa, type LocalCa } from "./ca.js";
import { FakeEntra, type AppRegistration, type IssueTokenOptions } from "./entra.js";
import { FaultController, ruleFromJson, Stats, type FaultAction, type Service } from "./faults.js";
import { startConnectProxy, type FakeProxy } from "./proxy.js";
import { guid, readBody, send, sleep, type ResponseSpec } from "./util.js";

export const ARM_SCOPE = "https://management.azure.com/.default";
export const ARM_HOST = "management.azure.com";
export const LOGIN_HOST = "login.microsoftonline.com";

export interface FakeAzureOptions {
  /** Default tenant (GUID). Generated when omitted. */
  tenantId?: string;
  /** Subscriptions the fake knows (default: one random subscription in the default tenant). */
  subscriptions?: Array<{ subscriptionId: string; tenantId?: string; displayName?: string }>;
  /** App registrations (service principals) that can get tokens with a client secret or a federated assertion. */
  apps?: AppRegistration[];
  /** Extra role definitions on top of the built-ins (Contributor, Reader, Owner, Azure Service Bus Data Owner, ...). */
  roleDefinitions?: RoleDefinitionSeed[];
  /** Items per page for list operations (one number for all, or per collection). Default 100. */
  pageSize?: number | Partial<PageSizes>;
  /** Resource group deletion LRO timing (default: one 202 poll, Retry-After 1; real ARM sends 15). */
  lro?: LroTiming;
  /** How long a federated identity credential write holds the per-identity lock (default 25 ms). */
  ficWriteLatencyMs?: number;
  /** How long a new identity's principal is unknown to role-assignment writes (PrincipalNotFound; default 0). */
  principalReplicationMs?: number;
  maxFederatedCredentialsPerIdentity?: number;
  /** Access token lifetime in seconds (default 3599). */
  tokenLifetimeSeconds?: number;
  /** Reject unknown api-versions like the real service (default true). */
  strictApiVersions?: boolean;
  /** Also start a CONNECT proxy for management.azure.com / login.microsoftonline.com (default false). */
  proxy?: boolean;
  /** Reuse a CA (e.g. to keep one NODE_EXTRA_CA_CERTS file across fakes). */
  ca?: LocalCa;
  /** Log every request to stderr. */
  verbose?: boolean;
}

type AdditionalPolicy = NonNullable<TokenCredentialOptions["additionalPolicies"]>[number];

export interface FakeAzure {
  /** `https://127.0.0.1:{port}` — ARM endpoint and Entra authority host in direct mode. */
  readonly url: string;
  readonly port: number;
  readonly tenantId: string;
  /** First subscription. */
  readonly subscriptionId: string;
  readonly ca: LocalCa;
  /** CA certificate file for NODE_EXTRA_CA_CERTS. */
  readonly caFile: string;
  /** `http://127.0.0.1:{port}` when started with `proxy: true`. */
  readonly proxyUrl: string | undefined;
  readonly proxy: FakeProxy | undefined;

  readonly entra: FakeEntra;
  readonly arm: FakeArm;
  readonly faults: FaultController;
  readonly stats: Stats;

  // ---- seeding helpers
  addApp(app: AppRegistration): { clientId: string; objectId: string; tenantId: string };
  seedResourceGroup(o: {
    subscriptionId?: string;
    name: string;
    location?: string;
    tags?: Record<string, string>;
  }): void;
  seedManagedCluster(seed: ClusterSeed): { id: string; issuerURL: string | undefined };
  setOidcIssuer(o: {
    subscriptionId?: string;
    resourceGroup: string;
    name: string;
    enabled?: boolean;
    issuerURL?: string;
  }): void;
  /** Mint an ARM access token directly (skips the token endpoint). */
  issueToken(o?: Partial<IssueTokenOptions>): Promise<string>;

  // ---- SDK wiring (direct mode)
  /** Pipeline policy for direct mode: an https.Agent trusting the fake's CA (bypasses env proxies). */
  readonly trustPolicy: AdditionalPolicy;
  /** Same, through `requestOverrides.ca` — survives the SDK's proxy agent (in-process proxy mode). */
  readonly proxyTrustPolicy: AdditionalPolicy;
  /** Options for @azure/identity credentials: authorityHost + disableInstanceDiscovery + CA trust. */
  credentialOptions<T extends object>(
    extra?: T,
  ): T & {
    authorityHost: string;
    disableInstanceDiscovery: true;
    additionalPolicies: AdditionalPolicy[];
  };
  /** Options for core-client ARM clients (arm-msi, arm-resources, arm-authorization, arm-resources-subscriptions). */
  armClientOptions<T extends object>(
    extra?: T,
  ): T & { endpoint: string; credentialScopes: string[]; additionalPolicies: AdditionalPolicy[] };
  /** Options for the modular @azure/arm-containerservice client (scopes live under `credentials`). */
  containerServiceOptions<T extends object>(
    extra?: T,
  ): T & {
    endpoint: string;
    credentials: { scopes: string[] };
    additionalPolicies: AdditionalPolicy[];
  };
  /** Environment for a child process in proxy mode (NODE_EXTRA_CA_CERTS, HTTPS_PROXY, NO_PROXY cleared). */
  proxyEnv(): Record<string, string>;

  close(): Promise<void>;
}

function pageSizes(p: FakeAzureOptions["pageSize"]): PageSizes {
  const d = typeof p === "number" ? p : 100;
  const o = typeof p === "object" ? p : {};
  return {
    resourceGroups: o.resourceGroups ?? d,
    userAssignedIdentities: o.userAssignedIdentities ?? d,
    federatedIdentityCredentials: o.federatedIdentityCredentials ?? d,
    managedClusters: o.managedClusters ?? d,
    roleDefinitions: o.roleDefinitions ?? d,
    roleAssignments: o.roleAssignments ?? d,
    subscriptions: o.subscriptions ?? d,
  };
}

function classifyEntra(method: string, segs: string[]): string {
  const l = segs.map((s) => s.toLowerCase());
  const m = method.toUpperCase();
  if (m === "GET" && l.length === 4 && l[1] === "v2.0" && l[2] === ".well-known" && l[3] === "openid-configuration")
    return "Entra_OpenIdConfiguration";
  if (m === "GET" && l.length === 3 && l[0] === "common" && l[1] === "discovery" && l[2] === "instance")
    return "Entra_InstanceDiscovery";
  if (m === "GET" && l[1] === "discovery" && l[l.length - 1] === "keys") return "Entra_Keys";
  if (m === "POST" && l.length === 4 && l[1] === "oauth2" && l[2] === "v2.0" && l[3] === "token") return "Entra_Token";
  return "Entra_Unknown";
}

function faultBody(
  service: Service,
  status: number,
  action: Extract<FaultAction, { type: "status" }>,
  subscriptionId?: string,
): unknown {
  if (action.body !== undefined) return action.body;
  if (service === "entra") {
    const code = status === 429 ? 50196 : 90033;
    return {
      error: action.code ?? (status === 429 || status >= 500 ? "temporarily_unavailable" : "invalid_request"),
      error_description: `AADSTS${code}: ${action.message ?? "A transient error has occurred. Please try again."} Trace ID: ${guid()} Correlation ID: ${guid()} Timestamp: ${new Date().toISOString()}`,
      error_codes: [code],
    };
  }
  const defaults: Record<number, [string, string]> = {
    429: [
      "SubscriptionRequestsThrottled",
      `Number of 'read' requests for subscription '${subscriptionId ?? "unknown"}' exceeded. Please try again after '${action.retryAfter ?? 5}' seconds after additional tokens are available. Refer to https://aka.ms/arm-throttling`,
    ],
    500: [
      "InternalServerError",
      `Encountered internal server error. Diagnostic information: timestamp '${new Date().toISOString()}', tracking id '${guid()}'.`,
    ],
    502: ["BadGateway", "The gateway did not receive a response from the resource provider."],
    503: ["ServiceUnavailable", "The service is temporarily unavailable. Please try again later."],
    504: [
      "GatewayTimeout",
      "The gateway did not receive a response from 'Microsoft.ManagedIdentity' within the specified time period.",
    ],
  };
  const [code, message] = defaults[status] ?? ["FaultInjected", `Fault injected by the fake (status ${status}).`];
  return { error: { code: action.code ?? code, message: action.message ?? message } };
}

export async function startFakeAzure(opts: FakeAzureOptions = {}): Promise<FakeAzure> {
  const tenantId = (opts.tenantId ?? guid()).toLowerCase();
  const subscriptions = opts.subscriptions ?? [{ subscriptionId: guid(), tenantId }];
  const shared = opts.ca ? undefined : sharedCa();
  const ca = opts.ca ?? shared!.ca;
  const caFile = shared?.file ?? ca.writeCaFile();
  const cert = shared?.cert ?? ca.issueServerCert([...DEFAULT_SERVER_NAMES]);
  const faults = new FaultController();
  const stats = new Stats();

  const entra = new FakeEntra({
    tenants: [tenantId, ...subscriptions.map((s) => (s.tenantId ?? tenantId).toLowerCase())],
    tokenLifetimeSeconds: opts.tokenLifetimeSeconds ?? 3599,
    // Asked only while issuing a token, so never before `arm` below exists.
    lookupIdentityByClientId: (clientId) => arm.findIdentityByClientId(clientId),
  });
  const caDer = ca.certPem.replace(/-----[^-]+-----|\s/g, "");
  const arm: FakeArm = new FakeArm(
    {
      subscriptions: subscriptions.map((s) => ({ ...s, tenantId: (s.tenantId ?? tenantId).toLowerCase() })),
      defaultTenantId: tenantId,
      pageSize: pageSizes(opts.pageSize),
      lro: opts.lro ?? {},
      ficWriteLatencyMs: opts.ficWriteLatencyMs ?? 25,
      principalReplicationMs: opts.principalReplicationMs ?? 0,
      maxFederatedCredentialsPerIdentity: opts.maxFederatedCredentialsPerIdentity ?? 20,
      roleDefinitions: opts.roleDefinitions ?? [],
      strictApiVersions: opts.strictApiVersions ?? true,
      operationCertificate: Buffer.from(caDer, "base64").toString("base64url"),
    },
    entra,
  );
  for (const app of opts.apps ?? []) entra.addApp(app);

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const started = Date.now();
    const hostHeader = req.headers.host ?? "127.0.0.1";
    // Parse the path by hand: `new URL("//subscriptions/...")` would read a doubled slash (which
    // the SDK produces for scopes that start with "/") as a host name.
    const rawUrl = req.url ?? "/";
    const q = rawUrl.indexOf("?");
    const url = {
      pathname: q >= 0 ? rawUrl.slice(0, q) : rawUrl,
      search: q >= 0 ? rawUrl.slice(q) : "",
      searchParams: new URLSearchParams(q >= 0 ? rawUrl.slice(q + 1) : ""),
      hostname: hostHeader.replace(/:\d+$/, "").replace(/^\[|\]$/g, ""),
    };
    const base = `https://${hostHeader}`;
    const method = (req.method ?? "GET").toUpperCase();
    let segments: string[];
    try {
      segments = url.pathname
        .split("/")
        .filter(Boolean)
        .map((s) => decodeURIComponent(s));
    } catch {
      segments = url.pathname.split("/").filter(Boolean);
    }
    const first = (segments[0] ?? "").toLowerCase();
    const hostname = url.hostname.toLowerCase();
    const service: Service =
      first === "__fake"
        ? "control"
        : hostname === LOGIN_HOST
          ? "entra"
          : hostname === ARM_HOST || first === "subscriptions" || first === "providers" || first === "tenants"
            ? "arm"
            : "entra";
    let armRoute: ArmRoute | undefined;
    let operation: string;
    if (service === "arm") {
      armRoute = classifyArm(method, segments);
      operation = armRoute.operation;
    } else if (service === "entra") operation = classifyEntra(method, segments);
    else operation = "Control";

    let faultType: FaultAction["type"] | undefined;
    // A request the fake has no answer for: recorded as such, so the test that caused it fails (Stats.unknown()).
    let unknown = operation === "Unknown" || operation === "Entra_Unknown";
    let recorded = false;
    // Who made an ARM call: set once the bearer token is accepted, so every answer after that records it.
    const caller: { appid?: string } = {};
    // Recorded synchronously when the answer is written (not on "finish"), so a test that
    // awaits an SDK call and then reads the stats never races the server's bookkeeping.
    const record = (status: number | "reset" | "aborted") => {
      if (recorded || service === "control") return;
      recorded = true;
      stats.record({
        at: started,
        service,
        operation,
        method,
        host: hostHeader,
        path: url.pathname,
        query: url.search,
        status,
        ...(faultType ? { fault: faultType } : {}),
        ...(unknown ? { unknown: true as const } : {}),
        ...(caller.appid ? { appid: caller.appid } : {}),
        durationMs: Date.now() - started,
      });
      if (unknown)
        process.stderr.write(
          `[fake-azure] no answer for ${method} ${hostHeader}${url.pathname}${url.search} (${operation}): the test fails\n`,
        );
      if (opts.verbose)
        process.stderr.write(
          `[fake-azure] ${method} ${hostHeader}${url.pathname}${url.search} -> ${status} (${operation})\n`,
        );
    };
    const reply = (spec: ResponseSpec) => {
      record(spec.status);
      send(res, spec);
    };
    // The client gave up (timeout / abort) before we answered.
    res.on("close", () => {
      if (!res.writableFinished) record("aborted");
    });

    const fault = service === "control" ? undefined : faults.take({ service, operation, method, path: url.pathname });
    if (fault) {
      faultType = fault.type;
      if (fault.type === "reset") {
        if (fault.delayMs) await sleep(fault.delayMs);
        record("reset");
        req.socket.destroy();
        return;
      }
      if (fault.type === "delay") {
        await sleep(fault.ms);
      } else {
        if (fault.delayMs) await sleep(fault.delayMs);
        await readBody(req).catch(() => Buffer.alloc(0));
        const headers: Record<string, string> =
          service === "arm" ? arm.commonHeaders(method, armRoute?.subscriptionId, undefined) : {};
        if (fault.retryAfter !== undefined) headers["Retry-After"] = String(fault.retryAfter);
        if (fault.retryAfterMs !== undefined) headers["retry-after-ms"] = String(fault.retryAfterMs);
        if (service === "arm") headers["x-ms-failure-cause"] = "gateway";
        reply({
          status: fault.status,
          headers: { ...headers, ...fault.headers },
          body: faultBody(service, fault.status, fault, armRoute?.subscriptionId),
        });
        return;
      }
    }

    let body: Buffer;
    try {
      body = await readBody(req);
    } catch {
      return; // client went away mid-request (e.g. aborted during an injected delay)
    }
    if (res.destroyed) return;
    if (service === "control") {
      reply(await control(method, segments, body));
      return;
    }
    if (service === "entra") {
      const tenant = segments[0] ?? "";
      let spec: ResponseSpec;
      switch (operation) {
        case "Entra_OpenIdConfiguration":
          spec = await entra.openIdConfiguration(tenant, base);
          break;
        case "Entra_InstanceDiscovery":
          spec = entra.instanceDiscovery(base, url.searchParams, [`127.0.0.1:${port}`, LOGIN_HOST]);
          break;
        case "Entra_Keys":
          spec = { status: 200, body: await entra.jwks() };
          break;
        case "Entra_Token":
          spec = await entra.token(tenant, req, body.toString("utf8"));
          break;
        default:
          spec = {
            status: 404,
            body: { error: "not_found", error_description: `The fake has no Entra endpoint ${url.pathname}` },
          };
      }
      reply(spec);
      return;
    }

    // ARM
    const route = armRoute!;
    const correlation = req.headers["x-ms-correlation-request-id"];
    const common = arm.commonHeaders(
      method,
      route.subscriptionId,
      typeof correlation === "string" ? correlation : undefined,
    );
    const check = await entra.checkArmToken(req.headers.authorization);
    if (!check.ok) {
      const subTenant = route.subscriptionId
        ? arm.subscriptions.get(route.subscriptionId.toLowerCase())?.tenantId
        : undefined;
      reply({
        status: 401,
        headers: {
          ...common,
          "x-ms-failure-cause": "gateway",
          "WWW-Authenticate": `Bearer authorization_uri="https://login.windows.net/${subTenant ?? ""}", error="invalid_token", error_description="${check.description}"`,
        },
        body: { error: { code: check.code, message: check.message } },
      });
      return;
    }
    caller.appid = String(check.claims.appid ?? check.claims.oid).toLowerCase();
    let spec: ResponseSpec;
    try {
      const request = { method, segments, query: url.searchParams, body, base, claims: check.claims, route };
      arm.precheck(route, url.searchParams, segments, check.claims);
      arm.authorize(request);
      spec = await arm.handle(request);
    } catch (err) {
      if (err instanceof NotImplementedByFake) unknown = true;
      if (err instanceof ArmError) {
        spec = { status: err.status, headers: err.headers, body: { error: { code: err.code, message: err.message } } };
      } else {
        process.stderr.write(`[fake-azure] internal error on ${method} ${url.pathname}: ${(err as Error).stack}\n`);
        spec = {
          status: 500,
          body: { error: { code: "InternalServerError", message: `Fake internal error: ${(err as Error).message}` } },
        };
      }
    }
    if (method === "HEAD") spec = { ...spec, body: undefined };
    reply({ ...spec, headers: { ...common, ...spec.headers } });
  };

  const control = async (method: string, segs: string[], body: Buffer): Promise<ResponseSpec> => {
    const what = `${method} ${segs.slice(1).join("/")}`;
    const json = () => (body.length ? (JSON.parse(body.toString("utf8")) as Record<string, unknown>) : {});
    try {
      switch (what) {
        case "GET stats":
          return { status: 200, body: { byOperation: stats.byOperation(), requests: stats.requests } };
        case "DELETE stats":
          stats.reset();
          return { status: 204 };
        case "POST faults": {
          const h = faults.add(ruleFromJson(json()));
          return { status: 201, body: { id: h.id } };
        }
        case "DELETE faults":
          faults.clear();
          return { status: 204 };
        case "POST clusters": {
          const c = arm.seedManagedCluster(json() as unknown as ClusterSeed);
          return { status: 201, body: { issuerURL: c.issuerURL ?? null } };
        }
        case "POST oidc-issuer":
          arm.setClusterOidcIssuer(json() as unknown as { resourceGroup: string; name: string; issuerURL?: string });
          return { status: 204 };
        case "POST apps": {
          const a = entra.addApp(json() as unknown as AppRegistration);
          return { status: 201, body: { clientId: a.clientId, objectId: a.objectId, tenantId: a.tenantId } };
        }
        case "GET proxy":
          return { status: 200, body: { connects: proxy?.connects ?? [], byTarget: proxy?.countByTarget() ?? {} } };
        case "GET ca":
          return { status: 200, headers: { "Content-Type": "application/x-pem-file" }, body: ca.certPem };
        default:
          return { status: 404, body: { error: `unknown control route ${what}` } };
      }
    } catch (err) {
      return { status: 400, body: { error: (err as Error).message } };
    }
  };

  const server: Server = createHttpsServer({ cert: cert.certPem, key: cert.keyPem, keepAlive: true }, (req, res) => {
    handle(req, res).catch((err: unknown) => {
      process.stderr.write(`[fake-azure] handler crashed: ${(err as Error).stack}\n`);
      if (!res.headersSent)
        send(res, { status: 500, body: { error: { code: "InternalServerError", message: String(err) } } });
      else res.destroy();
    });
  });
  server.on("tlsClientError", () => {
    /* clients that do not trust the CA just disconnect */
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const url = `https://127.0.0.1:${port}`;
  const proxy = opts.proxy
    ? await startConnectProxy({ upstreamPort: port, routedHosts: [ARM_HOST, LOGIN_HOST] })
    : undefined;

  // Direct mode: give every request an https.Agent that trusts the fake's CA. The SDK's proxy
  // policy runs before "perCall" policies and may already have put an HttpsProxyAgent on the
  // request (ambient HTTPS_PROXY); overwriting it keeps 127.0.0.1 traffic direct. (Setting
  // request.tlsSettings instead would be ignored as soon as a proxy is in play.)
  const directAgent = new HttpsAgent({ ca: ca.certPem, keepAlive: true });
  const trustPolicy: AdditionalPolicy = {
    position: "perCall",
    policy: {
      name: "fakeAzureTrustPolicy",
      sendRequest(request, next) {
        request.agent = directAgent;
        return next(request);
      },
    },
  };
  const proxyTrustPolicy: AdditionalPolicy = {
    position: "perCall",
    policy: {
      name: "fakeAzureProxyTrustPolicy",
      sendRequest(request, next) {
        request.requestOverrides = { ...request.requestOverrides, ca: ca.certPem };
        return next(request);
      },
    },
  };

  const fake: FakeAzure = {
    url,
    port,
    tenantId,
    subscriptionId: arm.defaultSubscriptionId(),
    ca,
    caFile,
    proxyUrl: proxy?.url,
    proxy,
    entra,
    arm,
    faults,
    stats,
    addApp(app) {
      const a = entra.addApp(app);
      return { clientId: a.clientId, objectId: a.objectId, tenantId: a.tenantId };
    },
    seedResourceGroup(o) {
      arm.seedResourceGroup(o);
    },
    seedManagedCluster(seed) {
      const c = arm.seedManagedCluster(seed);
      return {
        id: `/subscriptions/${c.subscriptionId}/resourcegroups/${c.resourceGroup}/providers/Microsoft.ContainerService/managedClusters/${c.name}`,
        issuerURL: c.issuerURL,
      };
    },
    setOidcIssuer(o) {
      arm.setClusterOidcIssuer(o);
    },
    issueToken(o = {}) {
      return entra.issueToken({ tenantId, oid: guid(), ...o });
    },
    trustPolicy,
    proxyTrustPolicy,
    credentialOptions: (extra) =>
      sdkOptions(extra, trustPolicy, { authorityHost: url, disableInstanceDiscovery: true as const }),
    armClientOptions: (extra) => sdkOptions(extra, trustPolicy, { endpoint: url, credentialScopes: [ARM_SCOPE] }),
    containerServiceOptions: (extra) =>
      sdkOptions(extra, trustPolicy, { endpoint: url, credentials: { scopes: [ARM_SCOPE] } }),
    proxyEnv() {
      if (!proxy) throw new Error("start the fake with { proxy: true } to use proxy mode");
      return {
        NODE_EXTRA_CA_CERTS: caFile,
        HTTPS_PROXY: proxy.url,
        https_proxy: proxy.url,
        NO_PROXY: "",
        no_proxy: "",
      };
    },
    async close() {
      arm.close();
      directAgent.destroy();
      await proxy?.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}

/** A caller's SDK options with the fake's over them, and the fake's CA trust ahead of the caller's own policies. */
function sdkOptions<T extends object, O extends object>(
  extra: T | undefined,
  trust: AdditionalPolicy,
  ours: O,
): T & O & { additionalPolicies: AdditionalPolicy[] } {
  const theirs: { additionalPolicies?: AdditionalPolicy[] } = extra ?? {};
  // `extra` may be undefined, which spreads to nothing.
  return { ...(extra as T), ...ours, additionalPolicies: [trust, ...(theirs.additionalPolicies ?? [])] };
}
