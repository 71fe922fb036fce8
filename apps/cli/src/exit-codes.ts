/**
 * Exit codes, documented in docs/cli.md. Like `kubectl diff`, 1 means "the answer is no" (differences
 * found, or the team failed); errors are 2 and above, one per kind so scripts can tell them apart.
 */
export const EXIT = {
  ok: 0,
  /** `diff`: the files would change. `status --watch`: the team failed on a cluster. */
  no: 1,
  /** Bad flags or arguments, or a question that needs a TTY or --yes. */
  usage: 2,
  /** The team file is invalid (checked before sending), or the API refused it (400/413/415/422). */
  invalid: 3,
  notFound: 4,
  /** No token, or the API refused it (401), or the role is missing (403). */
  unauthorized: 5,
  /** The team exists already, or the change touches files the team does not own (409). */
  conflict: 6,
  /** The API cannot be reached, or answered 5xx, or cannot see the team's clusters. */
  unavailable: 7,
  /** `status --watch --timeout` ran out. */
  timeout: 8,
  /** Ctrl-C. */
  interrupted: 130,
  /** A bug in the CLI (sysexits' EX_SOFTWARE); please report it with the message. */
  internal: 70,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error the CLI reports as-is: a message, optional detail lines, and its exit code. */
export class CliError extends Error {
  override readonly name = "CliError";
  constructor(
    message: string,
    readonly exitCode: ExitCode,
    readonly details: string[] = [],
  ) {
    super(message);
  }
}
