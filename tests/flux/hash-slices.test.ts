/**
 * Hash slices with real Flux (ADR 0034): a platform with `layout.slices: { by: hash, count: 32 }`, its slices written
 * as `berth cluster add` writes them (globs over shard folders, `a[01234567]*`; team folders at teams/<hh>/<team>/;
 * source-watcher's pathPattern with two captures, {shard} and {team}):
 *
 *   1. a team onboarded through the API reaches the cluster through its slice, its team artifact holding its folder at
 *      the repository's path;
 *   2. a team in another slice reconciles that slice and not the first team's, nor the first team (kustomize-
 *      controller's own reconcile count);
 *   3. (per-slice) the first team's slice, polled after the second team's commit, fetches nothing: its GitRepository
 *      follows the slice's own branch, which the API moved for the second team's slice alone;
 *   4. offboarding one prunes its objects and leaves the other.
 *
 * Both ways a platform can have its slices fetch (platform.layout.slices.fetch): `whole`, GitRepository berth-teams cut
 * by source-watcher, and `per-slice` (ADR 0036), each slice's own sparse GitRepository on its own branch, woken by the real Receiver only
 * for the shards the API names in its signed notification: the first team's slice does not even fetch the second
 * team's commit (with a 10-minute poll, a slice not woken would not fetch within the test).
 */
// needs: cluster dist
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sliceBranch, sliceFluxFiles, sliceHolding, teamShard } from "@berth/core";
import { kustomizationReconciles, reconciledSince } from "../support/flux.js";
import {
  appliedBy,
  ASO_NAMESPACE,
  requestReconcile,
  startFluxPlatform,
  type FluxPlatform,
} from "../support/flux-platform.js";
import { eventually } from "../support/wait.js";

const OWNER = "0b9a3c1e-1111-4222-8333-444455556666";
const COUNT = 32;
const sliceOf = (team: string) => sliceHolding({ by: "hash", count: COUNT }, team).id;
/** The slice's own branch (per-slice fetch) at a commit of it. */
const onBranch = (team: string) => new RegExp(`^${sliceBranch("aks-dev-weu", sliceOf(team))}@sha1:[0-9a-f]{40}$`);
/** The first name of the form `<stem>-<n>` whose slice passes `ok`: names picked by their hash, not by hand. */
const nameWhere = (stem: string, ok: (slice: string) => boolean) => {
  for (let n = 0; ; n++) if (ok(sliceOf(`${stem}-${n}`))) return `${stem}-${n}`;
};
// One team in a slice cut by the lower half of its first digit's shards, one in an upper half: both globs' forms.
const FIRST = nameWhere("alpha", (slice) => /^[0-9a-f][0-7]-/.test(slice));
const SECOND = nameWhere("bravo", (slice) => /^[0-9a-f][89a-f]-/.test(slice) && slice !== sliceOf(FIRST));

describe.each(["whole", "per-slice"] as const)(
  "hash slices with real Flux, fetched %s: teams reach the cluster through their shard's slice",
  (fetch) => {
    let platform: FluxPlatform;
    /** The first and the second team's commits. */
    let firstRevision = "";
    let secondRevision = "";

    beforeAll(async () => {
      platform = await startFluxPlatform({ pollInterval: "10m", hashSlices: COUNT, sliceFetch: fetch });
    }, 300_000);

    afterAll(async () => {
      await platform?.stop();
    });

    it(`a team onboarded through the API is applied by its slice (${FIRST} in ${sliceOf(FIRST)})`, async () => {
      const res = await platform.request("POST", "/v1/teams", { name: FIRST, owners: [OWNER], environments: ["dev"] });
      expect(res.statusCode, res.body).toBe(201);
      const revision = res.json.revision as string;
      firstRevision = revision;
      await platform.waitKustomizationReady(ASO_NAMESPACE, `team-${FIRST}`, revision, 180_000);
      await platform.waitKustomizationReady(ASO_NAMESPACE, `berth-teams-${sliceOf(FIRST)}`, revision, 60_000);
      expect(await platform.admin.get("v1", "Namespace", undefined, FIRST)).toBeDefined();
      const team = await platform.kustomization(ASO_NAMESPACE, `team-${FIRST}`);
      // Its path is its folder's in the repository, which its artifact keeps.
      expect((team?.spec as { path: string }).path).toBe(`./teams/${teamShard(FIRST)}/${FIRST}/clusters/aks-dev-weu`);
      expect(appliedBy(team)).toBe(`berth-teams-${sliceOf(FIRST)}`);
    }, 300_000);

    it(`a team in another slice (${SECOND} in ${sliceOf(SECOND)}) reconciles neither the first team nor its slice`, async () => {
      const counts0 = await kustomizationReconciles(platform.flux);
      expect(counts0.get(`${ASO_NAMESPACE}/team-${FIRST}`)).toBeGreaterThan(0);

      const res = await platform.request("POST", "/v1/teams", { name: SECOND, owners: [OWNER], environments: ["dev"] });
      expect(res.statusCode, res.body).toBe(201);
      const revision = res.json.revision as string;
      secondRevision = revision;
      await platform.waitKustomizationReady(ASO_NAMESPACE, `team-${SECOND}`, revision, 180_000);
      await platform.waitKustomizationReady(ASO_NAMESPACE, `berth-teams-${sliceOf(SECOND)}`, revision, 60_000);
      // Whatever the commit queued has run by now; give a straggler time to show.
      await new Promise((r) => setTimeout(r, 10_000));

      const moved = await reconciledSince(platform.flux, counts0);
      expect(moved).toContain(`${ASO_NAMESPACE}/team-${SECOND}`);
      expect(moved).toContain(`${ASO_NAMESPACE}/berth-teams-${sliceOf(SECOND)}`);
      expect(moved).not.toContain(`${ASO_NAMESPACE}/team-${FIRST}`);
      expect(moved).not.toContain(`${ASO_NAMESPACE}/berth-teams-${sliceOf(FIRST)}`);
      if (fetch === "per-slice") {
        // The Receiver woke the second team's slice alone, on its branch: the first one's source is where it was.
        const source = (name: string) =>
          platform.admin.get("source.toolkit.fluxcd.io/v1", "GitRepository", "flux-system", `berth-teams-${name}`);
        const revisionOf = (o: Awaited<ReturnType<typeof source>>) =>
          (o?.status as { artifact?: { revision?: string } } | undefined)?.artifact?.revision;
        // On the slice's branch, at a commit holding only the slice's folders, which stands for the team's commit.
        const second = revisionOf(await source(sliceOf(SECOND)));
        expect(second).toMatch(onBranch(SECOND));
        expect(await platform.fleetRevisions.of(second!)).toBe(revision);
        const first = revisionOf(await source(sliceOf(FIRST)));
        expect(first).toMatch(onBranch(FIRST));
        expect(await platform.fleetRevisions.of(first!)).toBe(firstRevision);
        // Nor does GitRepository berth-teams, suspended: each slice copies its URL and credentials.
        const whole = await platform.admin.get(
          "source.toolkit.fluxcd.io/v1",
          "GitRepository",
          "flux-system",
          "berth-teams",
        );
        expect((whole?.spec as { suspend?: boolean }).suspend).toBe(true);
      }
    }, 300_000);

    // Per-slice only: fetched whole, a slice has no GitRepository of its own to poll.
    if (fetch === "per-slice")
      it("the first team's slice polled after that commit fetches nothing: the API did not move its branch", async () => {
        const fluxFiles = async () => {
          const o = await platform.admin.get(
            "source.toolkit.fluxcd.io/v1",
            "ExternalArtifact",
            ASO_NAMESPACE,
            sliceFluxFiles(sliceOf(FIRST)),
          );
          return (o?.status as { artifact?: { revision: string; metadata?: Record<string, string> } } | undefined)
            ?.artifact;
        };
        const before = await fluxFiles();
        expect(before?.revision).toMatch(/^latest@sha256:/);
        const counts0 = await kustomizationReconciles(platform.flux);
        // What the slice's poll does after a commit elsewhere: its branch is where the first team's commit left it.
        const fetched = await requestReconcile(
          platform.admin,
          "source.toolkit.fluxcd.io/v1",
          "GitRepository",
          "flux-system",
          `berth-teams-${sliceOf(FIRST)}`,
        );
        expect(secondRevision).not.toBe(firstRevision);
        expect(fetched).toMatch(onBranch(FIRST));
        expect(await platform.fleetRevisions.of(fetched!)).toBe(firstRevision);
        // Whatever the poll queued has run by now; give a straggler time to show: nothing cut, nothing applied.
        await new Promise((r) => setTimeout(r, 10_000));
        const after = await fluxFiles();
        expect(after?.revision).toBe(before?.revision);
        expect(after?.metadata?.["org.opencontainers.image.revision"]).toBe(fetched);
        expect(await reconciledSince(platform.flux, counts0)).toEqual([]);
      }, 120_000);

    it("offboarding a team prunes its objects and leaves the other team's", async () => {
      const res = await platform.request("DELETE", `/v1/teams/${SECOND}`);
      expect(res.statusCode, res.body).toBe(200);
      await eventually(
        `namespace ${SECOND} and its team Kustomization gone`,
        async () =>
          !(await platform.admin.get("v1", "Namespace", undefined, SECOND)) &&
          !(await platform.kustomization(ASO_NAMESPACE, `team-${SECOND}`)),
        300_000,
      );
      expect(await platform.admin.get("v1", "Namespace", undefined, FIRST)).toBeDefined();
      expect(await platform.kustomization(ASO_NAMESPACE, `team-${FIRST}`)).toBeDefined();
    }, 400_000);
  },
);
