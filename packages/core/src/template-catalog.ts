import { RenderError } from "./errors.js";
import type { TemplateSet } from "./template-set.js";

/**
 * A team file written before Berth recorded template versions was rendered with v1: the only version
 * there was. Such a team reads as a v1 team (never as "the current default", which may move on).
 */
export const LEGACY_TEMPLATE_VERSION = "v1";

/**
 * Every template version Berth can render with (templates/v1/, templates/v3/, ... side by side), and the
 * default one new teams get (`platform.templateVersion`).
 */
export class TemplateCatalog {
  private readonly sets: ReadonlyMap<string, TemplateSet>;

  constructor(
    sets: Iterable<TemplateSet>,
    readonly defaultVersion: string,
  ) {
    const byVersion = new Map<string, TemplateSet>();
    for (const set of sets) {
      if (byVersion.has(set.version)) throw new RenderError(`template version ${set.version} is given twice`);
      byVersion.set(set.version, set);
    }
    this.sets = byVersion;
    if (!byVersion.has(defaultVersion)) {
      throw new RenderError(
        `the default template version ${defaultVersion} is not among the template folders (${this.versions().join(", ") || "none"})`,
      );
    }
  }

  /** One version only (tests, tools): it is also the default. */
  static of(set: TemplateSet): TemplateCatalog {
    return new TemplateCatalog([set], set.version);
  }

  /** Versions in numeric order (v3 before v10). */
  versions(): string[] {
    return [...this.sets.keys()].sort(compareVersions);
  }

  has(version: string): boolean {
    return this.sets.has(version);
  }

  get default(): TemplateSet {
    return this.get(this.defaultVersion); // (the constructor checked it is there)
  }

  /** The set of `version`; a version without a folder is a RenderError (the team cannot be rendered). */
  get(version: string): TemplateSet {
    const set = this.sets.get(version);
    if (!set)
      throw new RenderError(
        `template version ${version} does not exist (available: ${this.versions().join(", ")})`,
        `templates/${version}`,
      );
    return set;
  }
}

/** Orders `v3` before `v10`; anything else after, by code point. */
export function compareVersions(a: string, b: string): number {
  const na = /^v(\d+)$/.exec(a)?.[1];
  const nb = /^v(\d+)$/.exec(b)?.[1];
  if (na !== undefined && nb !== undefined) return Number(na) - Number(nb);
  return a < b ? -1 : a > b ? 1 : 0;
}
