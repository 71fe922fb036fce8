export interface PhaseCounts {
  status: number;
  passed: number;
  failed: number;
  skipped: number;
  notPassed: string[];
}
export interface TestPhase<Stage = unknown> {
  name: string;
  files: unknown[];
  /** The build stage this phase's files need. */
  ready?: Stage;
  /** Phases (earlier in the list) that must end first. */
  after?: string[];
}
export type PhaseOutcome = { counts: PhaseCounts } | { blocked: true; inherited?: true } | { empty: true };
export function runPhases<Phase extends TestPhase>(
  phases: Phase[],
  hooks: {
    componentsReady(stage: NonNullable<Phase["ready"]>): Promise<boolean>;
    run(phase: Phase, index: number): Promise<PhaseCounts>;
  },
): Promise<PhaseOutcome[]>;
export function totalCounts(outcomes: PhaseOutcome[]): PhaseCounts;
