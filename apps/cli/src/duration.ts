import { CliError, EXIT } from "./exit-codes.js";

/** "90s", "10m", "1h30m", "500ms" or plain seconds. */
export function parseDuration(text: string): number {
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) * 1000;
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
  if (!parts.length || parts.map((p) => p[0]).join("") !== text)
    throw new CliError(`"${text}" is not a duration (e.g. 90s, 10m, 1h)`, EXIT.usage);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
  return parts.reduce((ms, p) => ms + Number(p[1]) * unit[p[2] as keyof typeof unit], 0);
}
