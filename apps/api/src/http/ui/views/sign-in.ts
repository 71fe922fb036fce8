import { html, type Html } from "../html.js";

export type SignInMode =
  | { kind: "dev" }
  | { kind: "oidc"; issuerHost: string }
  /** oidc auth without api.ui.oidc: the page cannot offer a sign-in. */
  | { kind: "unconfigured" };

export function signInMain(mode: SignInMode, next: string, error?: string): Html {
  const notice = error ? html`<p class="notice" role="alert">${error}</p>` : "";
  if (mode.kind === "dev") {
    return html`<div class="sign-in">
<h1>Sign in to Berth</h1>
${notice}
<p>Development mode: sign in with the development token (<code>npm start</code> keeps it in <code>.berth/dev-token</code>).</p>
<form method="post" action="/ui/sign-in">
  <input type="hidden" name="next" value="${next}">
  <input type="text" name="username" value="developer" autocomplete="username" hidden>
  <label for="token">Development token</label>
  <input id="token" name="token" type="password" autocomplete="current-password" required>
  <button class="primary" type="submit">Sign in</button>
</form>
</div>`;
  }
  if (mode.kind === "oidc") {
    return html`<div class="sign-in">
<h1>Sign in to Berth</h1>
${notice}
<p>You sign in with your organisation account at <strong>${mode.issuerHost}</strong>. Reading the status page needs the Berth read role.</p>
<p><a class="button primary" href="/ui/auth/login?next=${encodeURIComponent(next)}">Sign in with ${mode.issuerHost}</a></p>
</div>`;
  }
  return html`<div class="sign-in">
<h1>Sign-in is not configured</h1>
${notice}
<p>The API checks tokens from an OIDC issuer, but the status page has no OIDC client: set <code>api.ui.oidc.clientId</code> (or <code>BERTH_UI_CLIENT_ID</code>). See docs/operations.md.</p>
</div>`;
}

export function errorMain(
  status: number,
  title: string,
  detail: string,
  action?: { href: string; text: string },
): Html {
  return html`<h1>${title}</h1>
<p class="notice" role="alert">${detail}</p>
<p>${action ? html`<a href="${action.href}">${action.text}</a> · ` : ""}<a href="/ui">Back to the fleet</a></p>
<p class="none">HTTP ${status}</p>`;
}
