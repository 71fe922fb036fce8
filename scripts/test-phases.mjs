// When each run of the whole suite starts (scripts/run.mjs): as soon as what it waits for is there, not when the run
// before it ends. On a new machine the cluster's tests used to wait minutes for the files that need no Go component
// to finish after the cluster's components were built (docs/operations-test-cluster.md).

/**
 * Runs `phases`, each once its components are built (`ready`, a promise for the build stage) and the phases named in
 * its `after` have ended; phases that wait for nothing of each other overlap. `componentsReady(stage)` says whether a
 * stage built (false after printing why); `run(phase, index)` runs one phase's files and resolves with its counts.
 * A phase whose components failed to build counts one failure and blocks the phases after it; the others still run.
 * Resolves with every phase's outcome, in order: `{ counts }`, `{ blocked: true }` or `{ empty: true }`.
 */
export async function runPhases(phases, { componentsReady, run }) {
  const outcomes = new Map();
  const start = async (phase, index) => {
    const before = await Promise.all((phase.after ?? []).map((name) => outcomes.get(name)));
    if (before.some((o) => o.blocked)) return { blocked: true, inherited: true };
    if (phase.files.length === 0) return { empty: true };
    if (phase.ready && !(await componentsReady(phase.ready))) return { blocked: true };
    return { counts: await run(phase, index) };
  };
  for (const [index, phase] of phases.entries()) {
    if (outcomes.has(phase.name)) throw new Error(`two test phases named "${phase.name}"`);
    for (const name of phase.after ?? [])
      if (!outcomes.has(name)) throw new Error(`test phase "${phase.name}" follows "${name}", which is not before it`);
    outcomes.set(phase.name, start(phase, index));
  }
  return Promise.all(outcomes.values());
}

/** The suite's counts from `runPhases`' outcomes: a build that failed is one failed test. */
export function totalCounts(outcomes) {
  const total = { passed: 0, failed: 0, skipped: 0, status: 0, notPassed: [] };
  for (const outcome of outcomes) {
    if (outcome.blocked && !outcome.inherited) total.failed += 1;
    if (!outcome.counts) continue;
    for (const key of ["passed", "failed", "skipped"]) total[key] += outcome.counts[key];
    if (outcome.counts.status !== 0) total.status = outcome.counts.status;
    total.notPassed.push(...outcome.counts.notPassed);
  }
  return total;
}
