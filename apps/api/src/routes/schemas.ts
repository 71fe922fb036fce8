import { teamSchema, teamSpecSchema } from "@berth/core";

/** HTTP shapes of the teams API live in @berth/api-contract, shared with the CLI; the team model is @berth/core's. */
export {
  deleteResponse,
  fileChangeSchema,
  fleetResponse,
  previewResponse,
  problemSchema as problemResponse,
  statusResponse,
  teamListResponse,
  teamNameParams,
  teamResponse,
  writeResponse,
} from "@berth/api-contract";

export { teamSchema as createTeamBody, teamSpecSchema as updateTeamBody };
