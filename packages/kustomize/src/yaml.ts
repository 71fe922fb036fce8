import type { DocumentOptions, ParseOptions, SchemaOptions } from "yaml";

/**
 * How Berth parses YAML it reads (templates, team files, hand-written trees): YAML 1.1 as Kubernetes reads it,
 * but with the `<<` merge tag removed, so `<<` stays a plain key (the renderer gives it its own meaning) and no
 * anchor/alias tricks apply. The yaml package ignores `merge: false` under 1.1, hence the tag filter.
 */
export const YAML_PARSE_OPTIONS: ParseOptions & DocumentOptions & SchemaOptions = {
  version: "1.1",
  uniqueKeys: true,
  prettyErrors: true,
  customTags: (tags) => tags.filter((tag) => typeof tag !== "object" || tag.tag !== "tag:yaml.org,2002:merge"),
};
