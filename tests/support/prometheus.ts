/** Every sample of `name` in a Prometheus text exposition (`name{labels} value`), with its labels. */
export function samples(exposition: string, name: string): Array<{ labels: Record<string, string>; value: number }> {
  const out: Array<{ labels: Record<string, string>; value: number }> = [];
  for (const line of exposition.split("\n")) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const labels = Object.fromEntries(
      [...(match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!]),
    );
    out.push({ labels, value: Number(match[3]) });
  }
  return out;
}

const having = (labels: Record<string, string>) => (s: { labels: Record<string, string> }) =>
  Object.entries(labels).every(([k, v]) => s.labels[k] === v);

/** The value of one sample of `name` whose labels include `labels`, undefined when absent. */
export function sample(exposition: string, name: string, labels: Record<string, string> = {}): number | undefined {
  return samples(exposition, name).find(having(labels))?.value;
}

/** Sum of the samples of `name` whose labels include `labels` (0 when none). */
export function metricSum(exposition: string, name: string, labels: Record<string, string> = {}): number {
  return samples(exposition, name)
    .filter(having(labels))
    .reduce((sum, s) => sum + s.value, 0);
}
