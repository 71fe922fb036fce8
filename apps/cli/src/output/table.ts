/** Visible width of a string: ANSI colour codes take no room. */
export function visibleWidth(text: string): number {
  // eslint-disable-next-line no-control-regex
  return [...text.replace(/\u001b\[[0-9;]*m/g, "")].length;
}

/**
 * Columns aligned like kubectl's: upper-case headers, each column as wide as its widest cell, three
 * spaces between columns, no trailing spaces.
 */
export function formatTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(visibleWidth(h), ...rows.map((r) => visibleWidth(r[i] ?? ""))));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell + " ".repeat(widths[i]! - visibleWidth(cell))))
      .join("   ")
      .trimEnd();
  return [line(headers.map((h) => h.toUpperCase())), ...rows.map(line)].join("\n");
}
