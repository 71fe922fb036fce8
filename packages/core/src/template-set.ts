import { parseAllDocuments } from "yaml";
import { z } from "zod";
import { RenderError } from "./errors.js";
import { TEAM_SPEC_FILE } from "./layout.js";
import { YAML_PARSE_OPTIONS } from "./serialize.js";

/**
 * A versioned set of templates (templates/<version>/): an index, `templateset.yaml`, naming the templates
 * rendered per team, per team and cluster, and per cluster into the cluster's Flux folder.
 */

const entrySchema = z
  .object({
    template: z.string().regex(/^[a-z0-9][a-z0-9-]*\.yaml$/, "must be a .yaml file name in the template folder"),
    /**
     * Output file name; defaults to the template's. Entries of one group that share an output are written, in
     * their order, as the documents of one file (templates v5: one file per folder, fewer files for Flux to copy).
     */
    output: z
      .string()
      .regex(/^[a-z0-9][a-z0-9-]*\.yaml$/)
      .optional(),
    /** Render once per element of this context list, bound to `as`; no file when the list is empty. */
    forEach: z
      .string()
      .regex(/^[a-zA-Z][a-zA-Z0-9_.]*$/)
      .optional(),
    as: z
      .string()
      .regex(/^[a-zA-Z][a-zA-Z0-9_]*$/)
      .optional(),
  })
  .strict()
  .refine((e) => (e.forEach === undefined) === (e.as === undefined), "forEach and as go together");

export const templateSetIndexSchema = z
  .object({
    apiVersion: z.literal("berth.dev/v1alpha1"),
    kind: z.literal("TemplateSet"),
    metadata: z.object({ name: z.string() }).strict(),
    spec: z
      .object({
        /** Rendered once per team into <teamsDir>/<team>/base/. */
        team: z.array(entrySchema).min(1),
        /** Rendered once per team and cluster into <teamsDir>/<team>/clusters/<cluster>/. */
        cluster: z.array(entrySchema).default([]),
        /** Rendered once per team and cluster into <clustersDir>/<cluster>/teams/<team>.yaml (one entry). */
        flux: z.array(entrySchema).length(1),
      })
      .strict(),
  })
  .strict();

export type TemplateEntry = z.infer<typeof entrySchema>;

export interface TemplateSet {
  version: string;
  team: TemplateEntry[];
  cluster: TemplateEntry[];
  flux: TemplateEntry[];
  /** Parsed template trees by file name. */
  templates: ReadonlyMap<string, unknown>;
}

export const TEMPLATE_INDEX = "templateset.yaml";

function parseSingleDocument(text: string, source: string): unknown {
  const docs = parseAllDocuments(text, YAML_PARSE_OPTIONS);
  if (!Array.isArray(docs)) throw new RenderError("not a YAML stream", source);
  const [doc] = docs;
  if (doc === undefined || docs.length !== 1)
    throw new RenderError(`must hold exactly one YAML document, found ${docs.length}`, source);
  const [error] = doc.errors;
  if (error) throw new RenderError(error.message, source);
  try {
    return doc.toJS({ maxAliasCount: 0 });
  } catch (err) {
    // e.g. an alias: templates may not use anchors and aliases.
    throw new RenderError((err as Error).message, source);
  }
}

/** Parses a template folder's files (name → text). Pure: the caller reads the folder. */
export function parseTemplateSet(version: string, files: ReadonlyMap<string, string>): TemplateSet {
  const indexText = files.get(TEMPLATE_INDEX);
  if (indexText === undefined) throw new RenderError(`missing ${TEMPLATE_INDEX}`, `templates/${version}`);
  const index = templateSetIndexSchema.safeParse(
    parseSingleDocument(indexText, `templates/${version}/${TEMPLATE_INDEX}`),
  );
  if (!index.success) {
    const [first] = index.error.issues; // a failed parse has at least one
    throw new RenderError(
      first ? `${first.path.join(".")}: ${first.message}` : index.error.message,
      `templates/${version}/${TEMPLATE_INDEX}`,
    );
  }
  const templates = new Map<string, unknown>();
  const entries = [...index.data.spec.team, ...index.data.spec.cluster, ...index.data.spec.flux];
  for (const entry of entries) {
    const text = files.get(entry.template);
    if (text === undefined)
      throw new RenderError(`names ${entry.template}, which does not exist`, `templates/${version}/${TEMPLATE_INDEX}`);
    templates.set(entry.template, parseSingleDocument(text, `templates/${version}/${entry.template}`));
  }
  const outputs = (list: TemplateEntry[]) => list.map((e) => e.output ?? e.template);
  // Berth writes each folder's kustomization.yaml itself.
  if ([...outputs(index.data.spec.team), ...outputs(index.data.spec.cluster)].includes("kustomization.yaml")) {
    throw new RenderError("output kustomization.yaml is Berth's own file", `templates/${version}/${TEMPLATE_INDEX}`);
  }
  // The base and cluster folders also hold the team's extra manifests (render.ts EXTRA_MANIFESTS_FILE).
  if ([...outputs(index.data.spec.team), ...outputs(index.data.spec.cluster)].includes("extra.yaml")) {
    throw new RenderError(
      "output extra.yaml is the file of a team's extra manifests, no template may render into it",
      `templates/${version}/${TEMPLATE_INDEX}`,
    );
  }
  // The base folder also holds the team spec (layout.teamSpec).
  if (outputs(index.data.spec.team).includes(TEAM_SPEC_FILE)) {
    throw new RenderError(
      `spec.team: output ${TEAM_SPEC_FILE} is the team spec's file, no template may render into it`,
      `templates/${version}/${TEMPLATE_INDEX}`,
    );
  }
  return { version, ...index.data.spec, templates };
}
