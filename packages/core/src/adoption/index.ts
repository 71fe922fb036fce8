/**
 * Adoption (docs/adoption.md), one step per file: discover.ts finds and builds the team's hand-written Flux
 * Kustomizations, map.ts maps their objects onto the team spec, plan.ts turns that into Berth's layout and
 * the adoption commit; model.ts holds what the request and the report say, manifests.ts how objects are read.
 */
export { Adoption, type AdoptionOptions } from "./plan.js";
export { matchArmId } from "./map.js";
export {
  AdoptionLimitError,
  AdoptionRecreatesError,
  AdoptionUnmappableError,
  adoptionRequestSchema,
  type AdoptedObject,
  type AdoptionPlan,
  type AdoptionRequest,
  type AzureNameChange,
  type MappedField,
  type RoleMatch,
} from "./model.js";
