import { ROLLOUT_TRAILER, type ChangeOrigin, type FleetPlan, type Rollout } from "@berth/core";

// How a rollout's commits read (the service's and the engine's alike): target, body, the trailer naming it.

export function withRolloutTrailer(origin: ChangeOrigin, id: string): ChangeOrigin {
  return { ...origin, trailers: [...(origin.trailers ?? []), { key: ROLLOUT_TRAILER, value: id }] };
}

export function describeTarget(version: string | undefined): string {
  return version ? `to templates ${version}` : "re-rendered on their own templates";
}

/** Commit body: the description and the teams (bounded by the commit-message rules). */
export function rolloutBody(r: Rollout, plan?: FleetPlan): string[] {
  const lines = r.spec.description ? [r.spec.description] : [];
  for (const w of r.spec.waves) lines.push(`wave ${w.name}: ${w.teams.join(", ") || "(no teams)"}`);
  if (plan?.gone.length) lines.push(`gone (skipped): ${plan.gone.join(", ")}`);
  return lines;
}

/** A wave's team files, as its commit (direct mode) or its pull request (pull-request mode) describes them. */
export function waveMessage(
  id: string,
  wave: { name: string; teams: readonly string[] },
  plan: Pick<FleetPlan, "gone">,
  target: string | undefined,
): { subject: string; body: string[] } {
  return {
    subject: `berth: rollout ${id} wave ${wave.name}: ${wave.teams.length - plan.gone.length} team(s) ${describeTarget(target)}`,
    body: [
      `wave ${wave.name}: ${wave.teams.join(", ")}`,
      ...(plan.gone.length ? [`gone (skipped): ${plan.gone.join(", ")}`] : []),
    ],
  };
}
