import { createInterface } from "node:readline/promises";
import {
  deleteResponse,
  fleetResponse,
  PHASE_LABELS,
  phaseOf,
  previewResponse,
  pullRequestSchema,
  reviewListResponse,
  reviewResponse,
  teamResponse,
  writeResponse,
  type FleetTeam,
  type Phase,
  type PreviewResponse,
  type ReviewListResponse,
} from "@berth/api-contract";
import { TEAM_API_VERSION, TEAM_KIND, teamObject, type Team } from "@berth/core";
import { stringify } from "yaml";
import { ApiError, DEFAULT_CHUNK_SIZE, listAllTeams, type BerthClient, type RequestOptions } from "../client.js";
import { CliError, EXIT } from "../exit-codes.js";
import { readTeamDocuments, type TeamDocument } from "../manifests.js";
import { colorDiff } from "../output/diff.js";
import { reportError } from "../output/errors.js";
import { formatTable } from "../output/table.js";
import { plural, shortSha } from "../output/text.js";
import { PHASE_STYLES } from "../watch.js";
import type { Runtime } from "../runtime.js";

export type OutputFormat = "table" | "wide" | "json" | "yaml" | "name";

const teamPath = (name: string) => `/v1/teams/${encodeURIComponent(name)}`;
/** A write's answer: 200/201, or 202 in pull-request mode with the pull request the change waits in. */
const writeAnswer = writeResponse.extend({ pullRequest: pullRequestSchema.optional() });
type WriteAnswer = typeof writeAnswer._output;
/** "proposed in pull request #7 (url)": the change applies once a reviewer merges it. */
const inReview = (pr: { number: number; url: string }) => `in pull request #${pr.number} (${pr.url})`;
const specOf = ({ name: _name, ...spec }: Team) => spec;

/** A team as `get -o yaml|json` prints it: the Team object Berth keeps in the Flux repo (apply takes it back). */
const manifest = (team: Team) => teamObject(team);

/** Prints one team (`get team <name>`) as its object, a listing as a list of them. */
function printObjects(rt: Runtime, format: "json" | "yaml", found: Team | Team[]): void {
  if (format === "json") {
    const value = Array.isArray(found)
      ? { apiVersion: TEAM_API_VERSION, kind: `${TEAM_KIND}List`, items: found.map(manifest) }
      : manifest(found);
    rt.out(JSON.stringify(value, null, 2));
    return;
  }
  const teams = Array.isArray(found) ? found : [found];
  // Several documents, so `berth get teams -o yaml > all.yaml && berth apply -f all.yaml` round-trips.
  rt.io.stdout.write(teams.map((t) => stringify(manifest(t), { version: "1.1" })).join("---\n"));
}

/** A request's answer body: undefined only for a status the request lists in `empty`, and these requests list none. */
async function requestBody<T>(
  client: BerthClient,
  method: string,
  path: string,
  options: RequestOptions<T>,
): Promise<T> {
  const { body } = await client.request(method, path, options);
  if (body === undefined) throw new CliError(`the API answered ${method} ${path} with no body`, EXIT.unavailable);
  return body;
}

/** Runs `each` over the teams, reporting a failure and going on with the next; returns the first failure's exit code. */
async function forEachTeam(
  rt: Runtime,
  docs: TeamDocument[],
  each: (doc: TeamDocument) => Promise<number>,
): Promise<number> {
  let result: number = EXIT.ok;
  for (const doc of docs) {
    try {
      const code = await each(doc);
      if (result === EXIT.ok) result = code;
    } catch (err) {
      const code = reportError(rt.io, rt.paint, err, `team/${doc.team.name} (${doc.source}): `);
      if (result === EXIT.ok || result === EXIT.no) result = code;
    }
  }
  return result;
}

// ---- apply ---------------------------------------------------------------------------------------

async function createOrUpdate(client: BerthClient, team: Team): Promise<{ created: boolean; result: WriteAnswer }> {
  // Update first (the common case once a team exists), create on 404, update again if someone created it meanwhile.
  try {
    const result = await requestBody(client, "PUT", teamPath(team.name), { body: specOf(team), schema: writeAnswer });
    return { created: false, result };
  } catch (err) {
    if (!(err instanceof ApiError && err.kind === "team-not-found")) throw err;
  }
  try {
    const result = await requestBody(client, "POST", "/v1/teams", { body: team, schema: writeAnswer });
    return { created: true, result };
  } catch (err) {
    if (!(err instanceof ApiError && err.kind === "team-exists")) throw err;
    const result = await requestBody(client, "PUT", teamPath(team.name), { body: specOf(team), schema: writeAnswer });
    return { created: false, result };
  }
}

/** What committing the team would change, without committing: an update's preview, or a new team's. */
async function preview(client: BerthClient, team: Team): Promise<{ exists: boolean; preview: PreviewResponse }> {
  try {
    const answer = await requestBody(client, "POST", `${teamPath(team.name)}/preview`, {
      body: specOf(team),
      schema: previewResponse,
    });
    return { exists: true, preview: answer };
  } catch (err) {
    if (!(err instanceof ApiError && err.kind === "team-not-found")) throw err;
  }
  const answer = await requestBody(client, "POST", "/v1/teams/preview", { body: team, schema: previewResponse });
  return { exists: false, preview: answer };
}

export interface FileOptions {
  filename: string[];
  recursive: boolean;
}

export async function apply(
  rt: Runtime,
  options: FileOptions & { dryRun: boolean; output?: "name" | undefined },
): Promise<number> {
  const docs = await readTeamDocuments(options.filename, {
    recursive: options.recursive,
    cwd: rt.io.cwd,
    stdin: rt.io.stdin,
  });
  const client = await rt.client();
  return forEachTeam(rt, docs, async ({ team }) => {
    const label = `team/${team.name}`;
    if (options.output === "name") {
      if (options.dryRun) await preview(client, team);
      else await createOrUpdate(client, team);
      rt.out(label);
      return EXIT.ok;
    }
    if (options.dryRun) {
      const { exists, preview: p } = await preview(client, team);
      const verb = !exists ? "created" : p.files.length ? "configured" : "unchanged";
      rt.out(`${label} ${verb} (dry run)${p.files.length ? `: ${plural(p.files.length, "file")} would change` : ""}`);
      return EXIT.ok;
    }
    const { created, result } = await createOrUpdate(client, team);
    if (result.pullRequest)
      rt.out(
        `${label} ${result.committed ? "proposed" : "unchanged, still"} ${inReview(result.pullRequest)}: applied once merged`,
      );
    else if (!result.committed) rt.out(`${label} unchanged`);
    else
      rt.out(
        `${label} ${created ? "created" : "configured"} (commit ${shortSha(result.revision)}, ${plural(result.files.length, "file")} ${created ? "written" : "changed"})`,
      );
    return EXIT.ok;
  });
}

// ---- diff ----------------------------------------------------------------------------------------

export async function diff(rt: Runtime, options: FileOptions): Promise<number> {
  const docs = await readTeamDocuments(options.filename, {
    recursive: options.recursive,
    cwd: rt.io.cwd,
    stdin: rt.io.stdin,
  });
  const client = await rt.client();
  let different = false;
  const code = await forEachTeam(rt, docs, async ({ team }) => {
    const { preview: p } = await preview(client, team);
    if (p.files.length === 0 || !p.diff) return EXIT.ok;
    different = true;
    rt.io.stdout.write(colorDiff(p.diff.endsWith("\n") ? p.diff : `${p.diff}\n`, rt.paint));
    return EXIT.ok;
  });
  if (code !== EXIT.ok) return code;
  return different ? EXIT.no : EXIT.ok;
}

// ---- get -----------------------------------------------------------------------------------------

const PHASE_ORDER: Phase[] = ["failed", "unreachable", "progressing", "waiting", "unobserved", "ready"];

/** READY (n/m clusters) and STATUS (the worst phase across clusters) of one team. */
function readiness(status: FleetTeam | undefined): { ready: string; phase: Phase | undefined } {
  if (!status) return { ready: "?", phase: undefined };
  const phases = status.clusters.map(phaseOf);
  const ready = phases.filter((p) => p === "ready").length;
  return { ready: `${ready}/${phases.length}`, phase: PHASE_ORDER.find((p) => phases.includes(p)) ?? "waiting" };
}

function colorPhase(rt: Runtime, phase: Phase | undefined): string {
  return phase ? rt.paint(PHASE_STYLES[phase], PHASE_LABELS[phase]) : "?";
}

/** Every team's status; empty (READY shows "?") when the API cannot say right now or has no fleet view. */
async function fleetStatus(rt: Runtime, client: BerthClient): Promise<Map<string, FleetTeam>> {
  try {
    const fleet = await requestBody(client, "GET", "/v1/status", { schema: fleetResponse });
    return new Map(fleet.teams.map((t) => [t.team, t]));
  } catch (err) {
    if (!(err instanceof CliError) || err.exitCode === EXIT.interrupted) throw err;
    if (!(err instanceof ApiError && err.status === 404))
      rt.err(`warning: no status for the READY column: ${err.message}`);
    return new Map();
  }
}

/** Pull-request mode: the teams whose change waits in an open pull request; none from a direct-mode or older API. */
async function teamsInReview(rt: Runtime, client: BerthClient): Promise<ReviewListResponse["items"]> {
  try {
    return (await requestBody(client, "GET", "/v1/reviews", { schema: reviewListResponse })).items;
  } catch (err) {
    if (!(err instanceof CliError) || err.exitCode === EXIT.interrupted) throw err;
    if (!(err instanceof ApiError && err.status === 404))
      rt.err(`warning: no list of the teams in review: ${err.message}`);
    return [];
  }
}

/** Below the table: each change that applies once a reviewer merges it (a new team, an update or an offboarding). */
function printInReview(rt: Runtime, reviews: ReviewListResponse["items"]): void {
  if (reviews.length === 0) return;
  rt.out("");
  rt.out(`In review (${plural(reviews.length, "pull request")}; each applies once merged):`);
  rt.out(
    formatTable(
      ["name", "pull request", "review", "url"],
      reviews.map((r) => [r.team, `#${r.pullRequest.number}`, r.pullRequest.state, r.pullRequest.url]),
    ),
  );
}

function printTable(rt: Runtime, teams: Team[], status: Map<string, FleetTeam>, wide: boolean): void {
  const headers = wide
    ? ["name", "environments", "ready", "status", "roles", "owners", "clusters", "description"]
    : ["name", "environments", "ready", "status", "description"];
  const rows = teams.map((t) => {
    const s = status.get(t.name);
    const { ready, phase } = readiness(s);
    const description = t.description.length > 50 && !wide ? `${t.description.slice(0, 49)}…` : t.description;
    const base = [t.name, t.environments.join(","), ready, colorPhase(rt, phase)];
    if (!wide) return [...base, description];
    const clusters = s ? s.clusters.map((c) => `${c.cluster}=${phaseOf(c)}`).join(",") : "?";
    return [
      ...base,
      t.roleAssignments.map((r) => r.role).join(",") || "<none>",
      String(t.owners.length),
      clusters,
      description,
    ];
  });
  rt.out(formatTable(headers, rows));
}

export async function getTeams(
  rt: Runtime,
  name: string | undefined,
  output: OutputFormat,
  chunkSize = DEFAULT_CHUNK_SIZE,
): Promise<number> {
  const client = await rt.client();
  let found: Team | Team[];
  if (name) {
    found = (await requestBody(client, "GET", teamPath(name), { schema: teamResponse })).team;
  } else {
    const listed = await listAllTeams(client, chunkSize);
    found = listed.teams;
    // On stderr: the listing on stdout stays what `apply -f -` takes back.
    for (const b of listed.broken)
      rt.err(`warning: team ${b.team} is left out: its team file cannot be read: ${b.error}`);
  }
  if (output === "json" || output === "yaml") {
    printObjects(rt, output, found);
    return EXIT.ok;
  }
  const teams = Array.isArray(found) ? found : [found];
  if (output === "name") {
    for (const t of teams) rt.out(`team/${t.name}`);
    return EXIT.ok;
  }
  // One team asked for by name is the Flux repo's; its review is in `berth status`.
  const reviews = name ? [] : await teamsInReview(rt, client);
  if (teams.length === 0) rt.err("No teams found.");
  else printTable(rt, teams, await fleetStatus(rt, client), output === "wide");
  printInReview(rt, reviews);
  return EXIT.ok;
}

// ---- delete --------------------------------------------------------------------------------------

async function confirm(rt: Runtime, name: string): Promise<boolean> {
  const rl = createInterface({ input: rt.io.stdin, output: rt.io.stdout, terminal: true });
  // readline takes Ctrl-C for itself on a terminal: hand it to the process, which aborts io.signal.
  rl.on("SIGINT", () => process.kill(process.pid, "SIGINT"));
  try {
    rt.out(
      `Deleting team ${rt.paint("bold", name)} offboards it from every cluster it lands on: its namespace, workload identity and role assignments go.`,
    );
    const answer = await rl.question(`Type the team name to confirm: `, { signal: rt.io.signal });
    return answer.trim() === name;
  } catch (err) {
    if ((err as Error).name === "AbortError") throw new CliError("interrupted: nothing was deleted", EXIT.interrupted);
    throw err;
  } finally {
    rl.close();
  }
}

export async function deleteTeam(
  rt: Runtime,
  name: string,
  options: { yes: boolean; ignoreNotFound: boolean },
): Promise<number> {
  const client = await rt.client();
  if (!options.yes) {
    if (!rt.isInteractive)
      throw new CliError(
        `refusing to delete team ${name} without confirmation: pass --yes (stdin is not a terminal)`,
        EXIT.usage,
      );
    // Fail before asking when there is nothing to delete: no team, and (pull-request mode) no onboarding in review.
    try {
      await client.request("GET", teamPath(name), { schema: teamResponse });
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 404)) throw err;
      const inReviewOnly = await client.request("GET", `${teamPath(name)}/review`, { schema: reviewResponse }).then(
        () => true,
        (reviewErr: unknown) => {
          if (reviewErr instanceof ApiError && reviewErr.status === 404) return false;
          throw reviewErr;
        },
      );
      if (!inReviewOnly) {
        if (options.ignoreNotFound) return EXIT.ok;
        throw err;
      }
    }
    if (!(await confirm(rt, name))) {
      rt.err("Not deleted: the name did not match.");
      return EXIT.usage;
    }
  }
  try {
    const deleted = await requestBody(client, "DELETE", teamPath(name), { schema: deleteResponse });
    if (deleted.pullRequest?.state === "closed")
      rt.out(
        `team/${name} was only in review: closed pull request #${deleted.pullRequest.number} (${deleted.pullRequest.url}) without merge; nothing of it was applied`,
      );
    else if (deleted.pullRequest)
      rt.out(`team/${name} deletion proposed ${inReview(deleted.pullRequest)}: applied once merged`);
    else
      rt.out(
        `team/${name} deleted (commit ${shortSha(deleted.revision)}, ${plural(deleted.files.length, "file")} removed)`,
      );
    return EXIT.ok;
  } catch (err) {
    if (options.ignoreNotFound && err instanceof ApiError && err.status === 404) return EXIT.ok;
    throw err;
  }
}
