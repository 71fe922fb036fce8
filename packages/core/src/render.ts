import { clusterContext, clustersOf, teamContext } from "./context.js";
import { RenderError, TeamValidationError } from "./errors.js";
import { repoLayout, TEAM_SPEC_FILE } from "./layout.js";
import { CORE_PLATFORM_VARS, type Platform } from "./platform.js";
import { fluxVariables, resolvePlaceholders, type Context } from "./placeholders.js";
import { GENERATED_HEADER, toYamlFile } from "./serialize.js";
import { serializeTeamFile } from "./team-file.js";
import type { LooseKubeObject, Team } from "./team.js";
import type { TemplateEntry, TemplateSet } from "./template-set.js";
import { parseAllDocuments } from "yaml";

/** Every file of one team, by repo path. Aggregate files shared by teams are built in onboarding.ts. */
export type RenderedFiles = Map<string, string>;

/** platform-vars keys a template may reference: guaranteed by the controller or declared by the platform. */
export function knownPlatformVars(platform: Platform): Set<string> {
  return new Set([...Object.keys(CORE_PLATFORM_VARS), ...Object.keys(platform.platformVars)]);
}

function renderEntry(entry: TemplateEntry, templates: TemplateSet, context: Context, known: Set<string>): unknown[] {
  const source = `templates/${templates.version}/${entry.template}`;
  const tree = templates.templates.get(entry.template);
  const { forEach, as } = entry;
  let items: Context[] = [context];
  if (forEach !== undefined) {
    if (as === undefined) throw new RenderError("forEach needs as", source); // (the index schema refuses one without the other)
    items = listOf(context, forEach, source).map((item) => ({ ...context, [as]: item }));
  }
  return items.map((ctx) => {
    const obj = resolvePlaceholders(tree, ctx, source);
    // Flux 2.9 substitutes strictly: a reference platform-vars may not define would fail the whole build.
    for (const name of fluxVariables(obj)) {
      if (!known.has(name)) {
        throw new RenderError(
          `references \${${name}}, which is not a platform-vars key (known: ${[...known].sort().join(", ")})`,
          source,
        );
      }
    }
    return obj;
  });
}

function listOf(context: Context, path: string, source: string): unknown[] {
  const value = resolvePlaceholders(`{{ ${path} }}`, context, source);
  if (!Array.isArray(value)) throw new RenderError(`forEach: {{ ${path} }} is not a list`, source);
  return value;
}

function kustomizeFile(resources: string[]): string {
  return toYamlFile(
    [{ apiVersion: "kustomize.config.k8s.io/v1beta1", kind: "Kustomization", resources }],
    [GENERATED_HEADER],
  );
}

export function renderTeam(team: Team, platform: Platform, templates: TemplateSet): RenderedFiles {
  const layout = repoLayout(platform);
  const known = knownPlatformVars(platform);
  const files: RenderedFiles = new Map();
  const teamSpec = layout.teamSpec(team.name);
  const header = (entries: TemplateEntry[]) => [
    GENERATED_HEADER,
    `Source: ${teamSpec} + ${entries.map((e) => `templates/${templates.version}/${e.template}`).join(", ")}`,
  ];

  /** Renders a group into `dir`; entries that share an output become one multi-document file. Returns its outputs. */
  const renderGroup = (entries: TemplateEntry[], context: Context, dir: string): string[] => {
    const outputs = new Map<string, { entries: TemplateEntry[]; objects: unknown[] }>();
    for (const entry of entries) {
      const objects = renderEntry(entry, templates, context, known);
      if (objects.length === 0) continue;
      const name = entry.output ?? entry.template;
      const file = outputs.get(name) ?? { entries: [], objects: [] };
      file.entries.push(entry);
      file.objects.push(...objects);
      outputs.set(name, file);
    }
    for (const [name, file] of outputs) files.set(`${dir}/${name}`, toYamlFile(file.objects, header(file.entries)));
    return [...outputs.keys()];
  };

  // The spec is a resource of the base too: Flux applies it as the cluster-scoped Team object, first. It
  // records the version it was rendered with, whatever the caller's team said.
  files.set(teamSpec, serializeTeamFile({ ...team, templateVersion: templates.version }));

  // `template.version`: which version rendered an object (v3 and later label every object with it).
  const template = { version: templates.version };
  const baseDir = layout.baseDir(team.name);
  const baseFiles = renderGroup(templates.team, { ...teamContext(team, platform, layout), template }, baseDir);
  const extras = team.extraManifests ?? [];
  const extraFile = (dir: string, cluster: string | undefined): string[] => {
    const objects = extras.filter((e) => e.cluster === cluster).map((e) => e.object);
    if (objects.length === 0) return [];
    files.set(
      `${dir}/${EXTRA_MANIFESTS_FILE}`,
      toYamlFile(objects, [GENERATED_HEADER, `Source: ${teamSpec} spec.extraManifests (the team's own manifests)`]),
    );
    return [EXTRA_MANIFESTS_FILE];
  };
  files.set(
    `${baseDir}/kustomization.yaml`,
    kustomizeFile([TEAM_SPEC_FILE, ...baseFiles, ...extraFile(baseDir, undefined)]),
  );

  for (const cluster of clustersOf(team, platform)) {
    const context = { ...clusterContext(team, cluster, platform, layout), template };
    const clusterDir = layout.clusterDir(team.name, cluster.name);
    const clusterFiles = renderGroup(templates.cluster, context, clusterDir);
    files.set(
      `${clusterDir}/kustomization.yaml`,
      kustomizeFile(["../../base", ...clusterFiles, ...extraFile(clusterDir, cluster.name)]),
    );

    const [fluxEntry] = templates.flux;
    if (fluxEntry === undefined)
      throw new RenderError("a template set has exactly one flux entry", `templates/${templates.version}`); // (the index schema says so)
    files.set(
      layout.fluxKustomization(cluster.name, team.name),
      toYamlFile(renderEntry(fluxEntry, templates, context, known), header([fluxEntry])),
    );
  }
  if (extras.length) assertExtrasAreTheTeams(files, extras);
  return files;
}

/** The file of a team's extra manifests, in its base and in each cluster folder; no template may render into it. */
export const EXTRA_MANIFESTS_FILE = "extra.yaml";

/** An extra manifest may not be an object Berth renders itself: Flux would apply two versions of it. */
function assertExtrasAreTheTeams(files: RenderedFiles, extras: NonNullable<Team["extraManifests"]>): void {
  const id = (o: LooseKubeObject) =>
    `${String(o.apiVersion).split("/")[0]}|${o.kind}|${o.metadata?.namespace ?? ""}|${o.metadata?.name}`;
  const rendered = new Set<string>();
  for (const [path, text] of files) {
    if (path.endsWith(`/${EXTRA_MANIFESTS_FILE}`)) continue;
    for (const doc of parseAllDocuments(text)) {
      const o = doc.toJS() as LooseKubeObject | null;
      if (o && typeof o === "object") rendered.add(id(o));
    }
  }
  const issues = extras.flatMap((e: { object: LooseKubeObject }, i) =>
    rendered.has(id(e.object))
      ? [
          {
            field: `extraManifests.${i}.object`,
            rule: `is ${e.object.kind} ${e.object.metadata?.namespace}/${e.object.metadata?.name}, which Berth renders itself: change it through the team's fields`,
          },
        ]
      : [],
  );
  if (issues.length) throw new TeamValidationError(issues);
}

/** `clusters/<cluster>/teams/<shard>/kustomization.yaml`: the Flux files of the shard's teams, sorted. */
export function renderShardIndex(teams: Iterable<string>): string {
  return kustomizeFile([...new Set(teams)].sort().map((t) => `${t}.yaml`));
}

/**
 * `clusters/<cluster>/teams/kustomization.yaml`: the shard folders that hold a team, and the Flux files
 * still at the folder's top (written before shards; each team's next write moves its own), sorted.
 */
export function renderClusterTeamsIndex(shards: Iterable<string>, flatTeams: Iterable<string> = []): string {
  return kustomizeFile([...new Set([...shards, ...[...flatTeams].map((t) => `${t}.yaml`)])].sort());
}
