/**
 * The one logging surface every package takes. A pino logger satisfies it (the apps pass theirs); no package
 * creates a logger of its own, so log level and destination stay the app's choice.
 */
export interface LogFn {
  (obj: object, msg?: string): void;
  (msg: string): void;
}

export interface Logger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  child(bindings: Record<string, unknown>): Logger;
}

const noop: LogFn = () => {};

/** Drops everything: the default when no logger is passed. */
export const silentLogger: Logger = {
  debug: noop,
  info: noop,
  warn: noop,
  error: noop,
  child: () => silentLogger,
};
