/** Small wording helpers shared by the commands' one-line reports. */

/** A commit as people quote it: its first 7 hex digits ("none" when there is none). */
export const shortSha = (sha: string | null | undefined): string => (sha ? sha.slice(0, 7) : "none");

/** "1 team", "3 teams". */
export const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? "" : "s"}`;

/**
 * C0 and C1 control characters and DEL, except tab and newline: what a terminal would act on (move the
 * cursor, change the title, erase the screen, hide text) rather than show.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is this pattern's job
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** Text from the server made safe to print: each control character becomes its visible `\xHH` escape. */
export function visibleText(text: string): string {
  return text.replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

/** Every string in a parsed answer (keys too) through visibleText: no command prints a server's raw bytes. */
export function withVisibleText(value: unknown): unknown {
  if (typeof value === "string") return visibleText(value);
  if (Array.isArray(value)) return value.map(withVisibleText);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [visibleText(k), withVisibleText(v)]),
    );
  }
  return value;
}
