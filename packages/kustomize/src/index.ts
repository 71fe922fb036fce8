export * from "./build.js";
export * from "./errors.js";
export * from "./flux-substitute.js";
export { YAML_PARSE_OPTIONS } from "./yaml.js";
