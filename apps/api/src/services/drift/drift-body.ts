import { driftResponse, encodeContinue, type DriftResponse } from "@berth/api-contract";
import type { DriftPage } from "./drift-index.js";

/** A page as GET /v1/fleet/drift answers it: `fix` is the rollout that puts the page's drifted teams back. */
export function driftResponseOf(page: DriftPage): DriftResponse {
  const drifted = page.teams.map((t) => t.team);
  return {
    revision: page.revision ?? null,
    summary: page.summary,
    teams: page.teams,
    layout: page.layout,
    failed: page.failed,
    fix: drifted.length ? { selector: { names: drifted } } : null,
    ...(page.lastOfPage ? { continue: encodeContinue(page.lastOfPage) } : {}),
  };
}

/**
 * The page's HTTP body, checked against the contract and serialized where the page was computed: in the drift
 * worker, a page of 1 MB then costs the API's event loop a copy and a socket write, not a clone, a schema check
 * and a JSON.stringify of its objects (ADR 0026).
 */
export function driftBody(page: DriftPage): Uint8Array {
  return Buffer.from(JSON.stringify(driftResponse.parse(driftResponseOf(page))));
}
