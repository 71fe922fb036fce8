import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { parseTemplateSet, type TemplateSet } from "@berth/core";

/** Reads templates/<version>/ from disk; parsing and checks are the domain's (parseTemplateSet). */
export async function loadTemplateSet(templatesDir: string, version: string): Promise<TemplateSet> {
  const dir = join(templatesDir, version);
  const names = (await readdir(dir)).filter((n) => n.endsWith(".yaml"));
  const files = new Map(await Promise.all(names.map(async (n) => [n, await readFile(join(dir, n), "utf8")] as const)));
  return parseTemplateSet(version, files);
}
