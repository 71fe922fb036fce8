import type { BuildLimitError, BuildLimits } from "@berth/kustomize";
import { z } from "zod";
import { DomainError, type FieldIssue } from "../errors.js";
import type { RepoChange } from "../repo.js";
import { teamSpecSchema, type Team } from "../team.js";

/** What an adoption request may say, what an adoption plan reports, and how adoption refuses. */

/** A field with its default removed: a field the request leaves out must stay "not given". */
function withoutDefault(field: z.ZodType): z.ZodType {
  return field instanceof z.ZodDefault ? (field.unwrap() as z.ZodType) : field;
}

/**
 * The team fields a request may set instead of inferring them. Built from the team spec without its
 * defaults: a default would override what was inferred.
 */
const specOverridesSchema = z
  .object(
    Object.fromEntries(
      Object.entries(teamSpecSchema.omit({ templateVersion: true, azureNames: true, extraManifests: true }).shape).map(
        ([key, field]) => [key, withoutDefault(field).optional()],
      ),
    ),
  )
  .strict();

export const adoptionRequestSchema = z
  .object({
    keepAzureNames: z
      .boolean()
      .default(false)
      .describe(
        "Keep the resource group and identity names the team has in Azure (recorded in spec.azureNames); without it, a rename is refused",
      ),
    spec: specOverridesSchema
      .optional()
      .describe("Fields to set instead of what is inferred (e.g. owners when no RoleBinding names them)"),
  })
  .strict();
export type AdoptionRequest = z.infer<typeof adoptionRequestSchema>;

export interface AzureNameChange {
  cluster: string;
  kind: "ResourceGroup" | "UserAssignedIdentity";
  object: string;
  /** The name the resource has in Azure today. */
  from: string;
  /** What Berth's render names it. */
  to: string;
  /** true: the name stays (keepAzureNames); false: Azure would create a new resource. */
  kept: boolean;
}

export interface AdoptedObject {
  /** `Kind namespace/name` of the hand-written object, and where it came from. */
  ref: string;
  source: string;
  cluster: string;
  /**
   * updated: Berth's render has the same object (applied in place); carried: kept as the team's own
   * manifest (spec.extraManifests), applied in place; controller: the aso-credential Secret, which Berth's
   * controller writes now; left-behind: Berth renders it under another name.
   */
  fate: "updated" | "carried" | "controller" | "left-behind";
  note?: string;
}

/** How a hand-written RoleAssignment was matched to a catalog role. */
export interface RoleMatch {
  cluster: string;
  object: string;
  role: string;
  /** team-resource-group; exact: the entry's ARM id with known values; pattern: some variables matched any value. */
  scope: "team-resource-group" | "exact" | "pattern";
  /** For a pattern match: each variable Berth does not know, and the value the hand-written id has there. */
  variables?: Record<string, string>;
}

/** Where a spec field's value came from. */
export interface MappedField {
  field: string;
  from: string;
}

export interface AdoptionPlan {
  team: Team;
  change: RepoChange;
  report: {
    /** The hand-written Flux Kustomizations adopted, per cluster. */
    kustomizations: Array<{
      cluster: string;
      path: string;
      name: string;
      namespace: string;
      fate: "replaced" | "suspended";
    }>;
    /** Where each spec field came from. */
    mapped: MappedField[];
    /** Each hand-written RoleAssignment and the catalog role it matched, and how. */
    roles: RoleMatch[];
    azureNames: AzureNameChange[];
    objects: AdoptedObject[];
    warnings: string[];
    /** Hand-written files no longer used, to delete once every cluster applied the adoption commit. */
    cleanup: string[];
    /**
     * The team's suspended Kustomizations in files that hold other documents too (another team's Kustomization):
     * remove the document, keep the file.
     */
    cleanupDocuments: Array<{ path: string; kind: string; namespace: string; name: string }>;
  };
}

/** Input that cannot be mapped onto a team: each problem, never a guess. */
export class AdoptionUnmappableError extends DomainError {
  override readonly name = "AdoptionUnmappableError";
  readonly code = "adoption-unmappable";
  constructor(
    readonly team: string,
    private readonly fieldIssues: FieldIssue[],
  ) {
    super(
      `cannot adopt team "${team}": ${fieldIssues.length} thing(s) cannot be mapped onto a Berth team: ${fieldIssues
        .slice(0, 3)
        .map((i) => `${i.field}: ${i.rule}`)
        .join("; ")}${fieldIssues.length > 3 ? "; ..." : ""}`,
    );
  }

  override get issues(): FieldIssue[] {
    return this.fieldIssues;
  }
}

/** The hand-written tree is beyond a bound of adoption's work: the build's limit, named as the domain answers it. */
export class AdoptionLimitError extends DomainError {
  override readonly name = "AdoptionLimitError";
  readonly code = "adoption-limit";
  readonly limit: keyof BuildLimits;
  private readonly issue: FieldIssue;

  constructor(reached: BuildLimitError) {
    super(reached.message, { cause: reached });
    this.limit = reached.limit;
    this.issue = { field: reached.limit, rule: `limit ${reached.value}` };
  }

  override get issues(): FieldIssue[] {
    return [this.issue];
  }
}

/** Berth's render would rename resources in Azure (a new resource group or identity): refused. */
export class AdoptionRecreatesError extends DomainError {
  override readonly name = "AdoptionRecreatesError";
  readonly code = "adoption-recreates-azure-resources";
  constructor(
    readonly team: string,
    readonly changes: AzureNameChange[],
  ) {
    super(
      `adopting team "${team}" would rename ${changes.length} Azure resource(s), and Azure would create new ones: ` +
        changes.map((c) => `${c.kind} ${c.from} → ${c.to} on ${c.cluster}`).join("; ") +
        "; adopt with keepAzureNames: true to keep the names",
    );
  }

  override get issues(): FieldIssue[] {
    return this.changes.map((c) => ({
      field: `${c.cluster} ${c.kind} ${c.object} spec.azureName`,
      rule: `is ${c.from} in Azure; Berth would name it ${c.to}, and Azure would create a new ${c.kind === "ResourceGroup" ? "(empty) resource group" : "identity (new client and principal id)"}: adopt with keepAzureNames: true`,
    }));
  }
}

/**
 * What cannot be mapped, collected across a step so the refusal lists every problem at once. Each step
 * ends with `refuseIfAny`: a later step never works on a half-mapped team.
 */
export class Unmappable {
  private readonly list: FieldIssue[] = [];

  /** Records one problem (a bound function, handed to the helpers of each step). */
  readonly add = (field: string, rule: string): void => {
    this.list.push({ field, rule });
  };

  get size(): number {
    return this.list.length;
  }

  refuseIfAny(team: string): void {
    if (this.list.length) throw new AdoptionUnmappableError(team, this.list);
  }
}
