#!/usr/bin/env node
import { EXIT } from "./exit-codes.js";
import { run } from "./program.js";

/** Process concerns only: streams, environment, Ctrl-C, the exit code. The command line is program.ts. */

const interrupt = new AbortController();
process.on("SIGINT", () => {
  // The first Ctrl-C lets a command stop cleanly (a watch puts the cursor back and keeps its last frame);
  // a second one, or a command that does not finish within 2 s, ends at once.
  if (interrupt.signal.aborted) process.exit(EXIT.interrupted);
  interrupt.abort();
  setTimeout(() => process.exit(EXIT.interrupted), 2000).unref();
});
// A reader that went away (`berth get teams | head`) is not an error.
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") process.exit(EXIT.ok);
});

const code = await run(process.argv, {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  cwd: process.cwd(),
  signal: interrupt.signal,
});
process.exitCode = code;
