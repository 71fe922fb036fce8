import { createHash } from "node:crypto";
import type { Team } from "../team.js";
import type { TeamSelector, WaveRequest } from "./model.js";

/** Which teams a rollout selects, and how they are split into waves (canaries first by a stable hash). */

export function matchesSelector(team: Team, selector: TeamSelector): boolean {
  if (selector.names && !selector.names.includes(team.name)) return false;
  const { environments, onlyEnvironments } = selector;
  if (environments && !team.environments.some((e) => environments.includes(e))) return false;
  if (onlyEnvironments && !team.environments.every((e) => onlyEnvironments.includes(e))) return false;
  if (selector.labels && !Object.entries(selector.labels).every(([k, v]) => team.labels[k] === v)) return false;
  if (selector.templateVersions && !selector.templateVersions.includes(team.templateVersion ?? "")) return false;
  return true;
}

/** A team's place in the canary order: a stable hash of its name, so the same teams go first every time. */
function canaryKey(name: string): string {
  return createHash("sha256").update(name).digest("hex");
}

/**
 * Splits `teams` into the requested waves, in order: each wave takes, from the teams no earlier wave took,
 * those its selector matches, then keeps `percent` of them (rounded up, at least one). Teams no wave takes
 * are returned as `unassigned` (the caller refuses such a request).
 */
export function assignWaves(
  teams: readonly Team[],
  waves: readonly WaveRequest[],
): { waves: Array<{ name: string; teams: string[] }>; unassigned: string[] } {
  const remaining = new Map(teams.map((t) => [t.name, t]));
  const out = waves.map((wave) => {
    let matched = [...remaining.values()].filter((t) => matchesSelector(t, wave.selector ?? {})).map((t) => t.name);
    if (wave.percent !== undefined && matched.length > 0) {
      const keep = Math.max(1, Math.ceil((matched.length * wave.percent) / 100));
      matched = matched
        .map((name) => ({ name, key: canaryKey(name) }))
        .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
        .slice(0, keep)
        .map((m) => m.name);
    }
    for (const name of matched) remaining.delete(name);
    return { name: wave.name, teams: matched.sort() };
  });
  return { waves: out, unassigned: [...remaining.keys()].sort() };
}
