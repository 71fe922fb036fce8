import * as client from "openid-client";

/**
 * The status page's sign-in: OpenID Connect authorization code flow with PKCE (S256), state and nonce,
 * against the issuer the API already trusts (api.auth.issuer), through openid-client. The server is the
 * OIDC client (a "backend for frontend"): the code, the verifier and the tokens never reach page script.
 */

export interface OidcSignInConfig {
  issuer: string;
  clientId: string;
  clientSecret?: string | undefined;
  scopes: string[];
}

export interface SignInStart {
  url: string;
  state: string;
  nonce: string;
  verifier: string;
}

export class OidcSignInError extends Error {
  override readonly name = "OidcSignInError";
}

/** Plain http is allowed only to a loopback issuer (a test or local issuer); anything else must be https. */
function isLoopback(url: URL): boolean {
  return url.protocol === "http:" && ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname);
}

export class OidcSignIn {
  private configuration: Promise<client.Configuration> | undefined;

  constructor(private readonly config: OidcSignInConfig) {}

  get issuerHost(): string {
    return new URL(this.config.issuer).host;
  }

  private discover(): Promise<client.Configuration> {
    this.configuration ??= (async () => {
      const issuer = new URL(this.config.issuer);
      const auth = this.config.clientSecret ? client.ClientSecretPost(this.config.clientSecret) : client.None();
      return client.discovery(issuer, this.config.clientId, undefined, auth, {
        timeout: 10,
        ...(isLoopback(issuer) ? { execute: [client.allowInsecureRequests] } : {}),
      });
    })().catch((err: unknown) => {
      this.configuration = undefined; // try discovery again on the next sign-in
      throw new OidcSignInError(`cannot read the issuer's OpenID configuration: ${(err as Error).message}`);
    });
    return this.configuration;
  }

  async start(redirectUri: string): Promise<SignInStart> {
    const configuration = await this.discover();
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(configuration, {
      redirect_uri: redirectUri,
      scope: this.config.scopes.join(" "),
      response_type: "code",
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state,
      nonce,
    });
    return { url: url.href, state, nonce, verifier };
  }

  /**
   * Exchanges the code from the callback URL for tokens, checking state, nonce and the ID token's issuer,
   * audience and lifetime. Returns the access token, which the caller verifies like any API token.
   */
  async finish(
    callbackUrl: URL,
    expected: { state: string; nonce: string; verifier: string },
  ): Promise<{ accessToken: string }> {
    const configuration = await this.discover();
    try {
      const tokens = await client.authorizationCodeGrant(configuration, callbackUrl, {
        pkceCodeVerifier: expected.verifier,
        expectedState: expected.state,
        expectedNonce: expected.nonce,
        idTokenExpected: true,
      });
      return { accessToken: tokens.access_token };
    } catch (err) {
      const e = err as Error & { error?: string; error_description?: string };
      throw new OidcSignInError(
        e.error ? `${e.error}${e.error_description ? `: ${e.error_description}` : ""}` : e.message,
      );
    }
  }
}
