/** What a command may touch of its process: streams, environment, clock. Tests hand in their own. */
export interface Io {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Aborted on Ctrl-C: long waits (status --watch) stop and clean up. */
  signal: AbortSignal;
}

/** SGR codes (open, close); a fixed handful, so no colour library and no Node-version differences. */
const STYLES = {
  red: [31, 39],
  green: [32, 39],
  yellow: [33, 39],
  blue: [34, 39],
  magenta: [35, 39],
  cyan: [36, 39],
  gray: [90, 39],
  bold: [1, 22],
  dim: [2, 22],
} as const;
export type Style = keyof typeof STYLES;

/** Colour only when asked for or when stdout is a terminal; NO_COLOR and FORCE_COLOR as everywhere. */
export function colorEnabled(io: Io, flag: boolean | undefined): boolean {
  if (flag === false) return false;
  if (io.env.NO_COLOR) return false;
  if (io.env.FORCE_COLOR !== undefined) return io.env.FORCE_COLOR !== "0";
  return Boolean(io.stdout.isTTY) && io.env.TERM !== "dumb";
}

export type Paint = (style: Style, text: string) => string;

export function painter(enabled: boolean): Paint {
  return enabled
    ? (style, text) => `\u001b[${STYLES[style][0]}m${text}\u001b[${STYLES[style][1]}m`
    : (_style, text) => text;
}

export function writeLine(stream: NodeJS.WritableStream, line = ""): void {
  stream.write(`${line}\n`);
}
