/**
 * The package's errors: one base class and a closed set of kinds. A caller that answers for them (adoption, in
 * core) maps each kind onto its own vocabulary; nothing here knows of HTTP or of the domain's codes.
 */
export type KustomizeErrorKind =
  /** A bound of the BuildBudget was reached: the work stopped there. */
  | "limit"
  /** The folder cannot be built, or not the way kustomize would. */
  | "build";

export abstract class KustomizeError extends Error {
  abstract readonly kind: KustomizeErrorKind;
}
