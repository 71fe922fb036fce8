import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { parseTemplateSet, TEMPLATE_VERSION, TemplateCatalog, type TemplateSet } from "@berth/core";

/** Reads templates/<version>/ from disk; parsing and checks are the domain's (parseTemplateSet). */
export async function loadTemplateSet(templatesDir: string, version: string): Promise<TemplateSet> {
  const dir = join(templatesDir, version);
  const names = (await readdir(dir)).filter((n) => n.endsWith(".yaml"));
  const files = new Map(await Promise.all(names.map(async (n) => [n, await readFile(join(dir, n), "utf8")] as const)));
  return parseTemplateSet(version, files);
}

/**
 * Every version folder under templatesDir (`v1`, `v3`, ...: other folders are ignored), side by side, with
 * `defaultVersion` (platform.templateVersion) as the version new teams get. A folder that does not parse,
 * or a default without a folder, fails the load: Berth must not start with templates it cannot render.
 */
export async function loadTemplateCatalog(templatesDir: string, defaultVersion: string): Promise<TemplateCatalog> {
  const entries = await readdir(templatesDir, { withFileTypes: true });
  const versions = entries.filter((e) => e.isDirectory() && TEMPLATE_VERSION.test(e.name)).map((e) => e.name);
  const sets = await Promise.all(versions.map((v) => loadTemplateSet(templatesDir, v)));
  return new TemplateCatalog(sets, defaultVersion);
}
