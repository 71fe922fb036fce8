/** Visible width of a string: ANSI colour codes take no room. */
export function visibleWidth(text: string): number {
  // eslint-disable-next-line no-control-regex -- a colour code starts with ESC
  return [...text.replace(/\u001b\[[0-9;]*m/g, "")].length;
}

/**
 * Columns aligned like kubectl's: upper-case headers, each column as wide as its widest cell, three
 * spaces between columns, no trailing spaces.
 */
export function formatTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(visibleWidth(h), ...rows.map((r) => visibleWidth(r[i] ?? ""))));
  // A cell beyond the headers has no width to fill: it is not padded.
  const pad = (cell: string, width = 0) => cell + " ".repeat(Math.max(0, width - visibleWidth(cell)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : pad(cell, widths[i])))
      .join("   ")
      .trimEnd();
  return [line(headers.map((h) => h.toUpperCase())), ...rows.map(line)].join("\n");
}
