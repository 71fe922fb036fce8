import { PHASE_LABELS, type Phase } from "@berth/api-contract";
import { html, type Html } from "../html.js";

export { PHASE_LABELS };

export function phaseBadge(phase: Phase, title?: string): Html {
  return html`<span class="badge ${phase}"${title ? html` title="${title}"` : ""}>${PHASE_LABELS[phase]}</span>`;
}

/** A short commit id in monospace, the full one in the title. */
/** Who asked: the token's identity, after whom it said it acted for (`jane via backstage`) when it did. */
export function requester(actor: string, onBehalfOf: string | undefined): string {
  return onBehalfOf ? `${onBehalfOf} via ${actor}` : actor;
}

export function shortSha(sha: string | null | undefined): Html {
  if (!sha) return html`<span class="none">none</span>`;
  return html`<code title="${sha}">${sha.slice(0, 7)}</code>`;
}

export function timestamp(iso: string | undefined): Html {
  if (!iso) return html``;
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return html`${iso}`;
  return html`<time datetime="${date.toISOString()}">${date
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d+Z$/, " UTC")}</time>`;
}
