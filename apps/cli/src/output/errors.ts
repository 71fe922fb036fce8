import { CliError, EXIT } from "../exit-codes.js";
import { writeLine, type Io, type Paint } from "../io.js";

/** Prints an error the way every command does: `error: message`, then indented detail lines. */
export function reportError(io: Io, paint: Paint, err: unknown, prefix = ""): number {
  if (err instanceof CliError) {
    writeLine(io.stderr, `${paint("red", "error:")} ${prefix}${err.message}`);
    for (const line of err.details) writeLine(io.stderr, `  ${line}`);
    return err.exitCode;
  }
  writeLine(io.stderr, `${paint("red", "error:")} ${prefix}${(err as Error)?.stack ?? String(err)}`);
  return EXIT.internal;
}
