/**
 * The whole suite's runs (scripts/test-phases.mjs): each starts as soon as its components are built and the runs it
 * follows have ended, not when the run before it in the list ends; a failed build blocks what needs it and counts
 * once.
 */
import { describe, expect, it } from "vitest";
import { runPhases, totalCounts, type PhaseCounts, type TestPhase } from "../../scripts/test-phases.mjs";

/** A promise and the function that settles it, to play a build stage or a run that ends when the test says. */
function gate<T>(): { promise: Promise<T>; open(value: T): void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  return { promise, open };
}

const counts = (passed: number, failed = 0): PhaseCounts => ({
  status: failed ? 1 : 0,
  passed,
  failed,
  skipped: 0,
  notPassed: failed ? [`failed ${failed}`] : [],
});

/** Lets every settled promise's callbacks run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

type Stage = Promise<boolean>;

describe("the suite's runs", () => {
  it("the cluster's run starts once the cluster is built, while the first run is still going; the last waits for it", async () => {
    const clusterBuilt = gate<boolean>();
    const lastBuilt = gate<boolean>();
    const runs = new Map<string, ReturnType<typeof gate<PhaseCounts>>>();
    const started: string[] = [];
    const phases: Array<TestPhase<Stage>> = [
      { name: "plain", files: ["a"] },
      { name: "cluster", files: ["b"], ready: clusterBuilt.promise },
      { name: "aso", files: ["c"], ready: lastBuilt.promise, after: ["cluster"] },
    ];
    const done = runPhases(phases, {
      componentsReady: (stage) => stage,
      run: (phase) => {
        started.push(phase.name);
        runs.set(phase.name, gate<PhaseCounts>());
        return runs.get(phase.name)!.promise;
      },
    });
    await settle();
    expect(started).toEqual(["plain"]);

    clusterBuilt.open(true);
    await settle();
    expect(started).toEqual(["plain", "cluster"]);

    lastBuilt.open(true);
    await settle();
    // Built, but ASO's tests follow the cluster's, which have not ended.
    expect(started).toEqual(["plain", "cluster"]);

    runs.get("cluster")!.open(counts(20, 1));
    await settle();
    expect(started).toEqual(["plain", "cluster", "aso"]);

    runs.get("aso")!.open(counts(5));
    runs.get("plain")!.open(counts(100));
    const total = totalCounts(await done);
    expect(total).toEqual({ status: 1, passed: 125, failed: 1, skipped: 0, notPassed: ["failed 1"] });
  });

  it("a failed build counts one failure and blocks the runs after it; the others still count", async () => {
    const ran: string[] = [];
    const outcomes = await runPhases(
      [
        { name: "plain", files: ["a"] },
        { name: "cluster", files: ["b"], ready: Promise.resolve(false) },
        { name: "aso", files: ["c"], ready: Promise.resolve(false), after: ["cluster"] },
        { name: "none", files: [] },
      ] satisfies Array<TestPhase<Stage>>,
      {
        componentsReady: (stage) => stage,
        run: async (phase) => {
          ran.push(phase.name);
          return counts(7);
        },
      },
    );
    expect(ran).toEqual(["plain"]);
    expect(outcomes).toEqual([
      { counts: counts(7) },
      { blocked: true },
      { blocked: true, inherited: true },
      { empty: true },
    ]);
    expect(totalCounts(outcomes)).toMatchObject({ passed: 7, failed: 1 });
  });

  it("refuses a run that follows one not before it", async () => {
    await expect(
      runPhases([{ name: "aso", files: ["c"], after: ["cluster"] }], {
        componentsReady: async () => true,
        run: async () => counts(1),
      }),
    ).rejects.toThrow(/"aso" follows "cluster", which is not before it/);
  });
});
