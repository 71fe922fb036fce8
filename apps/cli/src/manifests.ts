import { readdir, readFile, stat } from "node:fs/promises";
import { join, relative, resolve } from "node:path";
import {
  rolloutRequestSchema,
  TEAM_API_VERSION,
  TEAM_KIND,
  teamSchema,
  toFieldIssues,
  YAML_PARSE_OPTIONS,
  type RolloutRequest,
  type Team,
} from "@berth/core";
import { parseAllDocuments } from "yaml";
import { CliError, EXIT } from "./exit-codes.js";

/**
 * Team files for `apply` and `diff`: YAML (one or several documents) or JSON, named one by one, a folder
 * (its *.yaml, *.yml and *.json files; -R for sub-folders), or `-` for stdin. A document is either the
 * team as the API takes it ({ name, owners, ... }) or the Team object Berth keeps in the Flux repo
 * ({ apiVersion: berth.dev/v1alpha1, kind: Team, metadata: { name }, spec }), which `berth get -o yaml`
 * prints; a TeamList holds several. Every team is checked with the API's own schema before anything is sent.
 */

export interface TeamDocument {
  /** Where it came from, for messages: `teams/payments.yaml`, `teams/all.yaml#2`, `-`. */
  source: string;
  team: Team;
}

const FILE_PATTERN = /\.(ya?ml|json)$/i;

async function filesIn(dir: string, recursive: boolean): Promise<string[]> {
  const out: string[] = [];
  for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (recursive) out.push(...(await filesIn(path, true)));
    } else if (FILE_PATTERN.test(entry.name)) {
      out.push(path);
    }
  }
  return out;
}

async function readStdin(stdin: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString("utf8");
}

/** The documents of one file's text: JSON when it starts like JSON, YAML (multi-document) otherwise. */
export function parseDocuments(text: string, source: string): Array<{ source: string; value: unknown }> {
  const trimmed = text.trimStart();
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw new CliError(`${source}: not valid JSON: ${(err as Error).message}`, EXIT.invalid);
    }
    const values = Array.isArray(value) ? value : [value];
    return values.map((v, i) => ({ source: values.length > 1 ? `${source}#${i + 1}` : source, value: v }));
  }
  const docs = parseAllDocuments(text, YAML_PARSE_OPTIONS);
  const list = Array.isArray(docs) ? docs : [docs];
  const out: Array<{ source: string; value: unknown }> = [];
  list.forEach((doc, i) => {
    const where = list.length > 1 ? `${source}#${i + 1}` : source;
    const [err] = doc.errors;
    if (err) {
      const line = err.linePos?.[0] ? ` (line ${err.linePos[0].line})` : "";
      throw new CliError(`${where}: not valid YAML${line}: ${err.message.split("\n")[0]}`, EXIT.invalid);
    }
    const value: unknown = doc.toJS();
    if (value !== null && value !== undefined) out.push({ source: where, value });
  });
  return out;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The API's team shape from either form; the Team object's envelope must be exactly Berth's. */
function teamInput(value: unknown, source: string): unknown[] {
  if (!isObject(value) || !("kind" in value || "apiVersion" in value)) return [value];
  if (value.kind === "TeamList" && Array.isArray(value.items))
    return value.items.flatMap((item) => teamInput(item, source));
  if (value.apiVersion !== TEAM_API_VERSION || value.kind !== TEAM_KIND) {
    throw new CliError(
      `${source}: not a Berth team (apiVersion ${String(value.apiVersion)}, kind ${String(value.kind)}); expected apiVersion ${TEAM_API_VERSION}, kind ${TEAM_KIND}`,
      EXIT.invalid,
    );
  }
  const extra = Object.keys(value).filter((k) => !["apiVersion", "kind", "metadata", "spec", "status"].includes(k));
  if (extra.length)
    throw new CliError(
      `${source}: unknown field ${extra[0]} in a Team (apiVersion, kind, metadata, spec)`,
      EXIT.invalid,
    );
  const metadata = isObject(value.metadata) ? value.metadata : {};
  return [{ name: metadata.name, ...(isObject(value.spec) ? value.spec : {}) }];
}

export function toTeamDocuments(docs: Array<{ source: string; value: unknown }>): TeamDocument[] {
  const teams: TeamDocument[] = [];
  const problems: string[] = [];
  for (const doc of docs) {
    for (const input of teamInput(doc.value, doc.source)) {
      const parsed = teamSchema.safeParse(input);
      if (!parsed.success) {
        const name = isObject(input) && typeof input.name === "string" ? ` (team ${input.name})` : "";
        problems.push(...toFieldIssues(parsed.error).map((i) => `${doc.source}${name}: ${i.field}: ${i.rule}`));
        continue;
      }
      const twice = teams.find((t) => t.team.name === parsed.data.name);
      if (twice) problems.push(`${doc.source}: team ${parsed.data.name} is also defined in ${twice.source}`);
      else teams.push({ source: doc.source, team: parsed.data });
    }
  }
  if (problems.length)
    throw new CliError(`invalid team file${problems.length > 1 ? "s" : ""}: nothing was sent`, EXIT.invalid, problems);
  return teams;
}

/** Every team in the given paths (files, folders, or - for stdin), validated. */
export async function readTeamDocuments(
  paths: string[],
  options: { recursive: boolean; cwd: string; stdin: NodeJS.ReadableStream },
): Promise<TeamDocument[]> {
  if (paths.length === 0) throw new CliError("no files: pass -f FILE, -f FOLDER or -f -", EXIT.usage);
  const docs: Array<{ source: string; value: unknown }> = [];
  for (const path of paths) {
    if (path === "-") {
      docs.push(...parseDocuments(await readStdin(options.stdin), "-"));
      continue;
    }
    const full = resolve(options.cwd, path);
    let isDir: boolean;
    try {
      isDir = (await stat(full)).isDirectory();
    } catch {
      throw new CliError(`${path}: no such file or folder`, EXIT.usage);
    }
    const files = isDir ? await filesIn(full, options.recursive) : [full];
    if (isDir && files.length === 0)
      throw new CliError(
        `${path}: no .yaml, .yml or .json files${options.recursive ? "" : " (-R reads sub-folders)"}`,
        EXIT.usage,
      );
    for (const file of files) {
      const source = relative(options.cwd, file) || file;
      docs.push(...parseDocuments(await readFile(file, "utf8"), source.startsWith("..") ? file : source));
    }
  }
  const teams = toTeamDocuments(docs);
  if (teams.length === 0) throw new CliError("the files hold no team", EXIT.invalid);
  return teams;
}

/**
 * A rollout request for `berth rollout preview|start -f`: one YAML or JSON document (a path, or - for
 * stdin) shaped as the API takes it (description, target, selector, waves, gate), checked with the API's
 * own schema before anything is sent.
 */
export async function readRolloutRequest(
  path: string,
  options: { cwd: string; stdin: NodeJS.ReadableStream },
): Promise<RolloutRequest> {
  let text: string;
  if (path === "-") text = await readStdin(options.stdin);
  else {
    try {
      text = await readFile(resolve(options.cwd, path), "utf8");
    } catch {
      throw new CliError(`${path}: no such file`, EXIT.usage);
    }
  }
  const docs = parseDocuments(text, path);
  const [doc] = docs;
  if (doc === undefined || docs.length !== 1)
    throw new CliError(`${path}: a rollout file holds exactly one document, not ${docs.length}`, EXIT.invalid);
  return parseRolloutRequest(doc.value, path);
}

/** A rollout request checked with the API's schema; a CliError listing every problem otherwise. */
export function parseRolloutRequest(value: unknown, source: string): RolloutRequest {
  const parsed = rolloutRequestSchema.safeParse(value);
  if (!parsed.success)
    throw new CliError(
      `invalid rollout request: nothing was sent`,
      EXIT.invalid,
      toFieldIssues(parsed.error).map((i) => `${source}: ${i.field}: ${i.rule}`),
    );
  return parsed.data;
}
