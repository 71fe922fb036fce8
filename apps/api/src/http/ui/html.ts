/**
 * HTML built from a tagged template that escapes every interpolated value unless it is already Html
 * (another template's result). Pages are small and server-rendered, so this is the whole "framework":
 * nothing reaches the page unescaped by accident, and no text is ever concatenated into markup.
 */

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
  "`": "&#96;",
};
/** The characters ESCAPES covers (none is special in a character class), so the two cannot drift apart. */
const SPECIAL = new RegExp(`[${Object.keys(ESCAPES).join("")}]`, "g");

export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

type Interpolation = Html | string | number | boolean | null | undefined | readonly Interpolation[];

export function escapeHtml(text: string): string {
  return text.replace(SPECIAL, (c) => ESCAPES[c] ?? c);
}

function render(value: Interpolation): string {
  if (value === null || value === undefined || value === false) return "";
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return value.map(render).join("");
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Interpolation[]): Html {
  // The literal parts with each rendered value between them (String.raw interleaves, here over cooked text).
  return new Html(String.raw({ raw: strings }, ...values.map(render)));
}
