export { startFakeAzure, ARM_SCOPE, ARM_HOST, LOGIN_HOST, type FakeAzure, type FakeAzureOptions } from "./server.js";
export { createLocalCa, sharedCa, type LocalCa } from "./ca.js";
export {
  BUILT_IN_ROLES,
  rgDeletionOperationId,
  type ClusterSeed,
  type LroTiming,
  type RoleDefinitionSeed,
} from "./arm.js";
export { TOKEN_EXCHANGE_AUDIENCE, type AppRegistration, type FederatedCredential } from "./entra.js";
export {
  FaultController,
  Stats,
  type FaultAction,
  type FaultMatch,
  type FaultRule,
  type RequestRecord,
} from "./faults.js";
export { createServiceAccountIssuer, type ServiceAccountIssuer } from "./workload.js";
export { createRawClient, type RawResponse } from "./client.js";
