import { html, type Html } from "../html.js";
import type { UiSession } from "../../plugins/session.js";

export interface PageOptions {
  title: string;
  /** Who is signed in; absent on the sign-in pages. */
  session?: UiSession | undefined;
  /** Seconds between refreshes of <main>; absent: the page does not refresh itself. */
  refreshSeconds?: number | undefined;
  /** The ETag of <main>'s content, so the first refresh can already answer 304. */
  etag?: string | undefined;
  /** Content above <main>, kept while <main> refreshes (e.g. a filter form keeps its focus). */
  before?: Html | undefined;
  main: Html;
  /** Where the assets are served (versioned URLs: a new build gets new URLs). */
  assets: { css: string; js: string };
}

/** The page shell: no inline script or style anywhere (CSP), one stylesheet, one deferred script. */
export function page(options: PageOptions): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${options.title} · Berth</title>
<link rel="icon" href="/ui/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${options.assets.css}">
<script src="${options.assets.js}" defer></script>
</head>
<body>
<header class="top">
  <a class="brand" href="/ui">Berth</a>
  <nav aria-label="Main"><a href="/ui">Fleet</a> <a href="/ui/rollouts">Rollouts</a></nav>
  ${
    options.session
      ? html`<span class="who">Signed in as <strong>${options.session.actor}</strong></span>
  <form method="post" action="/ui/sign-out"><button type="submit">Sign out</button></form>`
      : ""
  }
</header>
<div class="page">
${options.before ?? ""}
<main id="main"${options.refreshSeconds ? html` data-refresh-seconds="${options.refreshSeconds}"` : ""}${options.etag ? html` data-etag="${options.etag}"` : ""}>
${options.main}
</main>
</div>
</body>
</html>
`;
}
