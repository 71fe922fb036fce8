/**
 * The status page's only script (served as /ui/assets/live.js, built by apps/api's tsconfig.ui.json).
 *
 * Live refresh: every few seconds it asks for the page's <main> again (`?fragment=main`) with the ETag it
 * holds; the server answers 304 while nothing changed (and reads clusters through its shared cache, so
 * many open pages cost the clusters nothing more). On 200 it swaps <main>'s content, keeping open <details>
 * open; on 401 (the session ended) it reloads, which leads to the sign-in page. Hidden tabs do not poll.
 *
 * Live filter: typing in the fleet's filter form updates the URL and refreshes at once.
 *
 * CSP allows this file only ('self'), and Trusted Types only the "berth" policy below: the HTML it inserts
 * is the server's own, escaped by the server's templates.
 */

interface TrustedTypePolicyLike {
  createHTML(input: string): unknown;
}
interface TrustedTypesLike {
  createPolicy(name: string, rules: { createHTML(input: string): string }): TrustedTypePolicyLike;
}

// TypeScript's DOM library does not declare Trusted Types yet: the two casts below reach them by their shape.
const trustedTypes = (window as unknown as { trustedTypes?: TrustedTypesLike }).trustedTypes;
const policy = trustedTypes?.createPolicy("berth", { createHTML: (input) => input });

function setHtml(element: Element, markup: string): void {
  (element as unknown as { innerHTML: unknown }).innerHTML = policy ? policy.createHTML(markup) : markup;
}

function start(): void {
  const main = document.getElementById("main");
  if (!main) return;
  const seconds = Number(main.dataset.refreshSeconds);
  if (!Number.isFinite(seconds) || seconds <= 0) return;

  let etag = main.dataset.etag ?? null;
  let timer: number | undefined;
  let inFlight: AbortController | undefined;
  let refreshes = 0;

  const fragmentUrl = (): string => {
    const url = new URL(window.location.href);
    url.searchParams.set("fragment", "main");
    return url.pathname + url.search;
  };

  /** A timer tick skips while a request is out; a changed filter (`force`) replaces that request. */
  const refresh = async (force = false): Promise<void> => {
    if (inFlight && !force) return;
    inFlight?.abort();
    const request = new AbortController();
    inFlight = request;
    try {
      const response = await fetch(fragmentUrl(), {
        headers: etag ? { "if-none-match": etag } : {},
        credentials: "same-origin",
        cache: "no-store",
        signal: request.signal,
      });
      if (response.status === 401) {
        window.location.reload();
        return;
      }
      if (response.status === 200) {
        const markup = await response.text();
        if (request.signal.aborted) return;
        etag = response.headers.get("etag");
        const open = new Set(
          Array.from(main.querySelectorAll<HTMLDetailsElement>("details[open]")).map((d) => d.dataset.path),
        );
        setHtml(main, markup);
        for (const details of Array.from(main.querySelectorAll<HTMLDetailsElement>("details"))) {
          if (open.has(details.dataset.path)) details.open = true;
        }
      }
      refreshes += 1;
      main.dataset.refreshes = String(refreshes);
      main.removeAttribute("aria-busy");
    } catch {
      // Replaced by a newer request, offline, or the API restarting: the next tick tries again.
    } finally {
      if (inFlight === request) inFlight = undefined;
    }
  };

  const schedule = (): void => {
    window.clearTimeout(timer);
    timer = window.setTimeout(async () => {
      if (!document.hidden) await refresh();
      schedule();
    }, seconds * 1000);
  };

  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) void refresh();
  });

  const form = document.querySelector<HTMLFormElement>("form[data-live-filter]");
  if (form) {
    let debounce: number | undefined;
    const apply = (): void => {
      const params = new URLSearchParams();
      for (const [key, value] of new FormData(form).entries()) {
        if (typeof value === "string" && value !== "") params.set(key, value);
      }
      const query = params.toString();
      window.history.replaceState(null, "", query ? `${window.location.pathname}?${query}` : window.location.pathname);
      etag = null;
      main.setAttribute("aria-busy", "true");
      void refresh(true);
    };
    form.addEventListener("input", () => {
      window.clearTimeout(debounce);
      debounce = window.setTimeout(apply, 250);
    });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      apply();
    });
  }

  schedule();
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
